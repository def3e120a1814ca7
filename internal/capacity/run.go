package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// Settings size the model's runs. A run offers Requests' worth of
// arrivals at a constant rate (for at least MinSeconds, unless that brings
// ten times as many; at most MaxSeconds), then lets what is in flight
// finish for at most DrainSeconds. A search brackets the rate by doubling
// and bisects it Bisections times.
type Settings struct {
	Requests     int
	MinSeconds   float64
	MaxSeconds   float64
	DrainSeconds float64
	Bisections   int
	Seed         uint64
	// MaxRate bounds a search, in requests/s: a fleet that keeps up
	// beyond it reports it.
	MaxRate float64
}

// DefaultSettings are the model's usual runs: 4 000 requests (at the 99th
// percentile, 40 misses to count), 8 bisections (the rate to within 0.4 %
// of the bracket).
func DefaultSettings() Settings {
	return Settings{Requests: 4000, MinSeconds: 120, MaxSeconds: 1800, DrainSeconds: 600, Bisections: 8, Seed: 0x5eed, MaxRate: 1e4}
}

// SettingsFor are the default settings for a search at attainment p: runs
// long enough to count about 1 500 misses at the target (150 000 requests
// at 0.99, 15 000 at 0.9; at least 4 000, at most 200 000), since a share
// of misses is only as precise as their count allows — and near capacity
// the misses come in bursts, so fewer than their count suggests are
// independent (docs/queueing.md §7 measures the spread).
func SettingsFor(p float64) Settings {
	s := DefaultSettings()
	if p > 0 && p < 1 {
		s.Requests = int(math.Min(math.Max(math.Ceil(1500/(1-p)-1e-6), 4000), 200_000))
	} else if p >= 1 {
		s.Requests = 200_000
	}
	s.MaxSeconds = 1e5
	return s
}

// maxRequests bounds one run's arrivals.
const maxRequests = 1_000_000

// Validate reports settings that would run nothing or forever.
func (s Settings) Validate() error {
	switch {
	case s.Requests < 1 || s.Requests > maxRequests:
		return fmt.Errorf("capacity: requests per run must be between 1 and %d, got %d", maxRequests, s.Requests)
	case !(s.MinSeconds >= 0) || !(s.MaxSeconds > 0) || s.MaxSeconds > 1e6 || s.MinSeconds > s.MaxSeconds:
		return fmt.Errorf("capacity: run length must satisfy 0 ≤ minSeconds (%g) ≤ maxSeconds (%g) ≤ 1e6", s.MinSeconds, s.MaxSeconds)
	case !(s.DrainSeconds >= 0) || s.DrainSeconds > 1e6:
		return fmt.Errorf("capacity: drainSeconds must be between 0 and 1e6, got %g", s.DrainSeconds)
	case s.Bisections < 0 || s.Bisections > 60:
		return fmt.Errorf("capacity: bisections must be between 0 and 60, got %d", s.Bisections)
	case !(s.MaxRate > 0) || math.IsInf(s.MaxRate, 0):
		return fmt.Errorf("capacity: maxRate must be a positive finite rate, got %g", s.MaxRate)
	}
	return nil
}

// Outcome is one run at a constant rate.
type Outcome struct {
	RateRPS float64
	// Arrived requests; Completed of them; WithinSLO of those met both
	// TTFT and ITL; Failed were shed, rejected, timed out at the gateway
	// or could never fit a replica's KV cache. Requests still in flight
	// when the run ends count against the attainment.
	Arrived, Completed, WithinSLO, Failed int
	// Attainment is WithinSLO/Arrived (1 when nothing arrived).
	Attainment float64
	// Stopped: the run stopped early, once more requests had missed the
	// SLO than the target allows (Attainment is then 0).
	Stopped bool
	// Latency percentiles of the completed requests, in ms (Analyze only).
	TTFT, ITL Percentiles
}

// Percentiles of a latency, in ms.
type Percentiles struct {
	P50, P90, P95, P99, Max float64
}

// errTooLong: a run's events outgrew their bound (it cannot, unless the
// server model changes its rules).
var errTooLong = errors.New("capacity: a run exceeded its event bound")

type run struct {
	f    *Fleet
	set  Settings
	rate float64
	now  float64
	end  float64 // arrivals stop
	heap []event
	seq  uint64

	hosts []host
	srv   []*server.Server
	held  []*req
	rr    int

	arrivals, tokens *rand.Rand
	nextID           int64
	draw             Request

	o        Outcome
	budget   float64 // misses allowed before the run stops (+Inf: never)
	misses   int
	keep     bool
	ttft     []float64
	itl      []float64
	events   int
	maxEvent int
}

func newRun(f *Fleet, set Settings, rate, target float64, keep bool) *run {
	r := &run{f: f, set: set, rate: rate, keep: keep,
		arrivals: rand.New(rand.NewPCG(set.Seed, 0xa771)), tokens: rand.New(rand.NewPCG(set.Seed, 0x70c5))}
	n := float64(set.Requests)
	r.end = math.Min(math.Max(n/rate, math.Min(set.MinSeconds, 10*n/rate)), set.MaxSeconds)
	r.budget = math.Inf(1)
	if target > 0 {
		// The arrivals' count varies: stop only well past what the target
		// allows.
		r.budget = (1 - target) * rate * r.end * 1.5
	}
	// Every iteration takes at least the latency model's fixed cost, so a
	// server runs at most (end + drain)/base of them; every request adds
	// an arrival, a front-end event and a timeout.
	base := f.Server.Iteration.Alpha
	if f.Server.LatencyModel == server.LatencyLinear {
		base = f.Server.Linear.Beta0
	}
	iters := (r.end + set.DrainSeconds) * 1000 / base * float64(f.Replicas)
	r.maxEvent = int(math.Min(iters*2+rate*r.end*8+1e6, math.MaxInt64/2))
	r.hosts = make([]host, f.Replicas)
	r.srv = make([]*server.Server, f.Replicas)
	for i := range r.hosts {
		r.hosts[i] = host{r: r, i: int32(i)}
		r.srv[i] = server.New(f.Server, &r.hosts[i])
	}
	return r
}

func (r *run) schedule(t float64, kind int, srv int32, q *req) {
	r.seq++
	r.heap = append(r.heap, event{t: t, key: uint64(kind)<<56 | r.seq, srv: srv, q: q}) //nolint:gosec // kind is one of the constants
	h := r.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (r *run) pop() event {
	h := r.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if l+1 < len(h) && h[l+1].before(&h[l]) {
			m = l + 1
		}
		if !h[m].before(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	r.heap = h
	return top
}

// execute runs to the end of the drain, the early stop, or ctx's end.
func (r *run) execute(ctx context.Context) error {
	r.schedule(r.f.Arrivals.gap(r.arrivals, r.rate), evArrival, -1, nil)
	stop := r.end + r.set.DrainSeconds
	for len(r.heap) > 0 && float64(r.misses) <= r.budget {
		e := r.pop()
		if e.t > stop {
			break
		}
		r.now = e.t
		r.handle(&e)
		r.events++
		if r.events&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.events > r.maxEvent {
				return errTooLong
			}
		}
	}
	r.finish()
	return nil
}

// handle runs one event.
func (r *run) handle(e *event) {
	switch e.kind() {
	case evArrival:
		r.arrive()
		if next := r.now + r.f.Arrivals.gap(r.arrivals, r.rate); next < r.end {
			r.schedule(next, evArrival, -1, nil)
		}
	case evQueued:
		r.srv[e.srv].Enqueue(&e.q.Request)
	case evStep:
		r.srv[e.srv].Step()
	case evIterationEnd:
		r.srv[e.srv].EndIteration()
	case evTimeout:
		if e.q.held {
			r.unhold(e.q)
			r.fail(e.q)
		}
	}
}

// finish fills the outcome of a run that ended.
func (r *run) finish() {
	r.o.RateRPS = r.rate
	if float64(r.misses) > r.budget {
		r.o.Stopped = true
		return
	}
	r.o.Attainment = 1
	if r.o.Arrived > 0 {
		r.o.Attainment = float64(r.o.WithinSLO) / float64(r.o.Arrived)
	}
	if r.keep {
		r.o.TTFT, r.o.ITL = percentiles(r.ttft), percentiles(r.itl)
	}
}

// arrive draws the next request and routes it.
func (r *run) arrive() {
	r.draw = Request{Prefix: -1}
	r.f.Workload.Draw(r.tokens, &r.draw)
	d := &r.draw
	r.nextID++
	q := &req{arrive: r.now, ttft: d.TTFTMs, itl: d.ITLMs, sheddable: d.Sheddable}
	q.ID, q.Owner = r.nextID, q
	q.Input, q.Output, q.Priority = max(d.Input, 1), max(d.Output, 1), d.Priority
	q.Prefix = -1
	if d.Prefix >= 0 {
		q.Prefix, q.PrefixTokens = d.Prefix, max(min(d.PrefixTokens, q.Input-1), 0)
	}
	r.o.Arrived++
	r.route(q)
}

// route sends q to a replica, holds it at the gateway or sheds it (the
// simulator's gateway, for one model whose replicas are all ready).
func (r *run) route(q *req) {
	rt := &r.f.Router
	if rt.Saturation != nil && !r.anyRoom() {
		if q.Priority < 0 {
			r.fail(q)
			return
		}
		r.hold(q)
		return
	}
	k := r.pick(q)
	s := r.srv[k]
	if rt.QueueThreshold > 0 && s.QueueLen() >= rt.QueueThreshold && q.sheddable {
		r.fail(q)
		return
	}
	s.Dispatch(&q.Request)
}

// pick is the replica with the lowest score, ties to the first; or the
// next in turn.
func (r *run) pick(q *req) int {
	rt := &r.f.Router
	if rt.RoundRobin {
		k := r.rr % len(r.srv)
		r.rr++
		return k
	}
	best, bestScore := 0, 0.0
	for i, s := range r.srv {
		sc := rt.KV*s.KVUsage() + rt.Queue*float64(s.QueueLen())/5 + rt.Batch*float64(len(s.Running()))/float64(r.f.Server.MaxBatchSize)
		if rt.Prefix != 0 && q.Prefix >= 0 {
			_, share := s.PrefixMatch(&q.Request)
			sc -= rt.Prefix * share
		}
		if i == 0 || sc < bestScore {
			best, bestScore = i, sc
		}
	}
	return best
}

func (r *run) anyRoom() bool {
	sat := r.f.Router.Saturation
	for _, s := range r.srv {
		if s.QueueLen() < sat.QueueThreshold && s.KVUsage() < sat.KVThreshold {
			return true
		}
	}
	return false
}

func (r *run) hold(q *req) {
	if !q.held {
		r.schedule(q.arrive+r.f.Router.TimeoutSeconds, evTimeout, -1, q)
	}
	q.held = true
	r.held = append(r.held, q)
}

func (r *run) unhold(q *req) {
	q.held = false
	if i := slices.Index(r.held, q); i >= 0 {
		r.held = slices.Delete(r.held, i, i+1)
	}
}

// release routes held requests, the highest priority first, then the
// oldest, while a replica has room.
func (r *run) release() {
	for len(r.held) > 0 && r.anyRoom() {
		best := 0
		for i, q := range r.held {
			if q.Priority > r.held[best].Priority {
				best = i
			}
		}
		q := r.held[best]
		r.unhold(q)
		r.route(q)
	}
}

func (r *run) fail(q *req) {
	q.done = true
	r.o.Failed++
	r.misses++
}

func (r *run) complete(q *req, a2 float64) {
	q.done = true
	r.o.Completed++
	ttft := q.FirstToken - q.arrive + a2
	itl := 0.0
	if q.Output > 1 {
		itl = (r.now-q.FirstToken)/float64(q.Output-1) + a2
	}
	if ttft*1000 <= q.ttft && itl*1000 <= q.itl {
		r.o.WithinSLO++
	} else {
		r.misses++
	}
	if r.keep {
		r.ttft = append(r.ttft, ttft*1000)
		if q.Output > 1 {
			r.itl = append(r.itl, itl*1000)
		}
	}
}

// percentiles of xs (sorted in place), nearest rank.
func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	at := func(p float64) float64 { return xs[min(len(xs)-1, int(math.Ceil(p*float64(len(xs))))-1)] }
	return Percentiles{P50: at(0.5), P90: at(0.9), P95: at(0.95), P99: at(0.99), Max: xs[len(xs)-1]}
}
