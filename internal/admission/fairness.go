package admission

import "math"

// The fairness floor answers the cold-start problem of cache-aware
// admission (docs/admission.md): a prefix group that no instance has cached
// gets long prefill estimates, so it is shed, so it never gets cached. The
// floor guarantees every prefix group a minimum share of admissions over a
// sliding window, whatever the inner policy says: a group whose admitted
// share of its own arrivals in the window is below Share has its next
// rejected request admitted anyway. A never-seen group starts at 0 of 0,
// so its first request is admitted (the cold-start allowance), and then
// about one in 1/Share until the cache is warm and the inner policy admits
// it on its own.
//
// The cost is bounded twice. Per group, the floor admits at most a Share
// of the group's arrivals in a window, plus one. Fleet-wide, its admissions
// are at most a Share of all arrivals in the window (grouped or not), so a
// tenant cannot buy more by inventing groups: once that allowance is
// spent, even a never-seen group waits until the window slides. Memory is
// bounded too: at most MaxGroups groups are tracked; a new group beyond
// that evicts the least recently seen one (which, if it returns, starts
// again as never seen).

// Floor defaults.
const (
	DefaultFloorShare   = 0.05
	DefaultFloorWindow  = 60.0 // seconds
	DefaultFloorBuckets = 12
	DefaultFloorGroups  = 4096
	maxFloorBuckets     = 1000
	maxFloorGroups      = 1 << 20
	maxFloorCells       = 1 << 22 // (groups + 1) × buckets: 32 MiB of counters
)

// FloorConfig configures a Floor. A zero field means its default.
type FloorConfig struct {
	// Share is the minimum admitted share of each group's arrivals, in
	// (0, 1); 0 means DefaultFloorShare.
	Share float64
	// WindowSeconds is the sliding window's length; Buckets the number of
	// buckets it slides by (the window's resolution). 0 means the defaults.
	WindowSeconds float64
	Buckets       int
	// MaxGroups caps the groups tracked; 0 means DefaultFloorGroups.
	MaxGroups int
}

// Validate reports every problem of the configuration, joined.
func (c FloorConfig) Validate() error {
	var v validator
	if c.Share != 0 && !(c.Share > 0 && c.Share < 1) {
		v.add("fairness.share", "must be in (0, 1) (0 means the default %v), got %v", DefaultFloorShare, c.Share)
	}
	v.nonNeg("fairness.windowSeconds", c.WindowSeconds, DefaultFloorWindow)
	if c.Buckets < 0 || c.Buckets > maxFloorBuckets {
		v.add("fairness.buckets", "must be in [1, %d] (0 means the default %d), got %d", maxFloorBuckets, DefaultFloorBuckets, c.Buckets)
	}
	if c.MaxGroups < 0 || c.MaxGroups > maxFloorGroups {
		v.add("fairness.maxGroups", "must be in [1, %d] (0 means the default %d), got %d", maxFloorGroups, DefaultFloorGroups, c.MaxGroups)
	} else if cells := (or(c.MaxGroups, DefaultFloorGroups) + 1) * or(c.Buckets, DefaultFloorBuckets); c.Buckets >= 0 && c.Buckets <= maxFloorBuckets && cells > maxFloorCells {
		// Each group keeps two counters per bucket, allocated up front.
		v.add("fairness", "maxGroups × buckets must be at most %d (the window's counters take 8 bytes each), got (%d + 1) × %d",
			maxFloorCells, or(c.MaxGroups, DefaultFloorGroups), or(c.Buckets, DefaultFloorBuckets))
	}
	return v.err()
}

var _ Policy = (*Floor)(nil)

// Floor wraps a policy with the fairness floor. Requests without a group
// (Group 0) are left to the inner policy; they count in the fleet-wide
// allowance.
type Floor struct {
	inner   Policy
	share   float64
	width   float64 // one bucket, seconds
	buckets int
	groups  *lru
	all     int32 // the fleet-wide window's slot, after the groups'
	// Per slot (the groups', then the fleet-wide one): the bucket number its
	// window ends at, and buckets × (arrived, admitted) — for the fleet-wide
	// window, admitted by the floor.
	epoch  []int64
	counts []uint32
}

// NewFloor returns inner with the fairness floor.
func NewFloor(inner Policy, c FloorConfig) (*Floor, error) {
	if inner == nil {
		panic("admission: NewFloor with a nil policy")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n, nb := or(c.MaxGroups, DefaultFloorGroups), or(c.Buckets, DefaultFloorBuckets)
	return &Floor{inner: inner, share: or(c.Share, DefaultFloorShare), buckets: nb,
		width:  or(c.WindowSeconds, DefaultFloorWindow) / float64(nb),
		groups: newLRU(n), all: int32(n), //nolint:gosec // n ≤ maxFloorGroups
		epoch: make([]int64, n+1), counts: make([]uint32, 2*(n+1)*nb)}, nil
}

// Decide asks the inner policy, then admits a rejected request whose group
// is below its floor while the fleet-wide allowance lasts, and counts the
// request in its group's window and the fleet's.
func (f *Floor) Decide(now float64, req Request, fleet []Instance) Decision {
	d := f.inner.Decide(now, req, fleet)
	all := f.slide(f.all, false, now)
	cur := 2 * f.bucket(f.epoch[f.all])
	all[cur]++
	if req.Group == 0 {
		return d
	}
	s, fresh := f.groups.touch(req.Group)
	c := f.slide(s, fresh, now)
	if !d.Admit && f.below(c, 1) && f.below(all, 0) {
		d.Admit, d.Inner, d.Reason = true, d.Reason, ReasonFloor
		all[cur+1]++
	}
	i := 2 * f.bucket(f.epoch[s])
	c[i]++
	if d.Admit {
		c[i+1]++
	}
	return d
}

// below reports whether a window's admissions are fewer than Share of its
// arrivals, counting pending more arrivals (the request being decided when
// the window does not count it yet).
func (f *Floor) below(c []uint32, pending int) bool {
	arrived, admitted := pending, 0
	for b := range f.buckets {
		arrived += int(c[2*b])
		admitted += int(c[2*b+1])
	}
	return float64(admitted) < f.share*float64(arrived)
}

// slide moves slot s's window to the bucket of now, clearing the buckets it
// passes (all of them for a fresh slot), and returns its counts. A clock
// that does not advance (or is NaN) stays in the slot's latest bucket.
func (f *Floor) slide(s int32, fresh bool, now float64) []uint32 {
	nb := f.buckets
	c := f.counts[int(s)*2*nb : (int(s)+1)*2*nb]
	b := f.epoch[s]
	if e := now / f.width; e > float64(b) || fresh {
		if finite(e) && math.Abs(e) < 1<<62 {
			b = int64(math.Floor(e))
		}
	}
	if fresh || b-f.epoch[s] >= int64(nb) {
		clear(c)
	} else {
		for e := f.epoch[s] + 1; e <= b; e++ {
			i := 2 * f.bucket(e)
			c[i], c[i+1] = 0, 0
		}
	}
	f.epoch[s] = b
	return c
}

// bucket is the index of bucket number e in a slot's ring (e may be
// negative: a clock that starts before 0).
func (f *Floor) bucket(e int64) int {
	nb := int64(f.buckets)
	return int((e%nb + nb) % nb)
}
