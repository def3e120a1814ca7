package admission

import (
	"math"
	"testing"
)

// rejectAll is an inner policy that sheds every request.
type rejectAll struct{}

func (rejectAll) Decide(_ float64, req Request, _ []Instance) Decision {
	return Decision{Class: req.Class, Reason: ReasonOverBudget, Instance: 4, Estimate: 1, Budget: 0.5}
}

func mustFloor(t *testing.T, inner Policy, c FloorConfig) *Floor {
	t.Helper()
	f, err := NewFloor(inner, c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// admitted counts the admissions of n requests of group g, one every dt
// seconds from t0.
func admitted(f *Floor, g uint64, n int, t0, dt float64) int {
	k := 0
	for i := range n {
		if f.Decide(t0+float64(i)*dt, Request{Class: Sheddable, Group: g}, nil).Admit {
			k++
		}
	}
	return k
}

func TestFloorGuaranteesItsShare(t *testing.T) {
	f := mustFloor(t, rejectAll{}, FloorConfig{Share: 0.1, WindowSeconds: 10, Buckets: 10})
	// A never-seen group's first request is admitted (0 of 1 is below 10 %),
	// then the 11th, 21st, …: 10 of 100 within the window.
	d := f.Decide(0, Request{Class: Sheddable, Group: 42}, nil)
	if !d.Admit || d.Reason != ReasonFloor || d.Inner != ReasonOverBudget || d.Instance != 4 || d.Estimate != 1 {
		t.Errorf("first request of a new group: %v", d)
	}
	if k := 1 + admitted(f, 42, 99, 0.01, 0.01); k != 10 {
		t.Errorf("%d of 100 admitted in the window, want 10", k)
	}
	// Requests without a group are left to the inner policy.
	if k := admitted(f, 0, 50, 1, 0.01); k != 0 {
		t.Errorf("%d ungrouped requests admitted", k)
	}
	// Another group has its own floor.
	if k := admitted(f, 43, 20, 1, 0.01); k != 2 {
		t.Errorf("group 43: %d of 20 admitted, want 2", k)
	}
}

func TestFloorWindowSlides(t *testing.T) {
	f := mustFloor(t, rejectAll{}, FloorConfig{Share: 0.5, WindowSeconds: 10, Buckets: 5})
	// 10 requests at t = 0: 5 admitted (1st, 3rd, …).
	if k := admitted(f, 1, 10, 0, 0); k != 5 {
		t.Fatalf("%d of 10 admitted, want 5", k)
	}
	// At t = 9 s the t = 0 bucket is still in the window (5 of 10 + this one):
	// 5 < 0.5 × 11, so the next request is admitted.
	if !f.Decide(9, Request{Class: Standard, Group: 1}, nil).Admit {
		t.Error("t = 9 s: want admitted")
	}
	// 10 more at t = 9 s: the window holds 6 of 11 and admits every other
	// one, so the t = 9 s bucket ends at 6 admitted of 11.
	if k := admitted(f, 1, 10, 9, 0); k != 5 {
		t.Fatalf("t = 9 s: %d of 10 admitted, want 5", k)
	}
	// At t = 10.5 s the t = 0 bucket has left the window: 6 of 11 in it, so
	// the next is not admitted (6 < 6 is false), the one after is (6 < 6.5).
	if f.Decide(10.5, Request{Group: 1}, nil).Admit || !f.Decide(10.5, Request{Group: 1}, nil).Admit {
		t.Error("t = 10.5 s: want one rejected, then one admitted")
	}
	// Long after, everything has left: the group starts over.
	if !f.Decide(1000, Request{Group: 1}, nil).Admit || f.Decide(1000, Request{Group: 1}, nil).Admit {
		t.Error("t = 1000 s: want the first admitted and the second not")
	}
	// A clock that goes back, or is NaN, counts in the latest bucket: 1 of
	// 3 (admitted), then 2 of 4 (not).
	if !f.Decide(500, Request{Group: 1}, nil).Admit || f.Decide(math.NaN(), Request{Group: 1}, nil).Admit {
		t.Error("a clock going back did not count in the latest bucket")
	}
}

func TestFloorBoundsItsGroups(t *testing.T) {
	f := mustFloor(t, rejectAll{}, FloorConfig{Share: 0.1, MaxGroups: 4})
	admitted(f, 0, 100, 0, 0) // ungrouped traffic: a fleet-wide allowance of 10 % of it
	for g := uint64(1); g <= 4; g++ {
		admitted(f, g, 5, 0, 0) // each: the first admitted
	}
	// Group 1 is still tracked: its 6th request is below no floor (1 of 6).
	if f.Decide(1, Request{Group: 1}, nil).Admit {
		t.Error("a tracked group got more than its floor")
	}
	// A fifth group evicts the least recently seen, group 2, which comes
	// back as never seen: its first request is admitted again.
	if !f.Decide(2, Request{Group: 5}, nil).Admit {
		t.Error("new group 5 not admitted")
	}
	if !f.Decide(3, Request{Group: 2}, nil).Admit {
		t.Error("evicted group 2 did not start over")
	}
	if f.groups.n != 4 {
		t.Errorf("%d groups tracked, want at most 4", f.groups.n)
	}
}

// TestFloorCannotBeGamed: a tenant that gives every request a new group
// gets no more than the floor's share of all traffic.
func TestFloorCannotBeGamed(t *testing.T) {
	f := mustFloor(t, rejectAll{}, FloorConfig{Share: 0.05})
	k := 0
	for i := range 1000 {
		if f.Decide(float64(i)*0.01, Request{Group: uint64(i + 1)}, nil).Admit {
			k++
		}
	}
	if k > 50 {
		t.Errorf("%d of 1 000 requests in fresh groups admitted, want at most 5 %%", k)
	}
	if k < 45 {
		t.Errorf("%d of 1 000 admitted: the fleet-wide allowance is 5 %%", k)
	}
}

func TestFloorCountsInnerAdmissions(t *testing.T) {
	f := mustFloor(t, AlwaysAdmit{}, FloorConfig{})
	for i := range 100 {
		if d := f.Decide(float64(i), Request{Group: 9}, nil); d.Reason != ReasonAlways {
			t.Fatalf("the floor overrode an admission: %v", d)
		}
	}
	// The group has 100 % of its arrivals admitted: the floor stays out
	// even when a rejecting policy takes over the counts.
	f.inner = rejectAll{}
	if k := admitted(f, 9, 50, 100, 0.1); k != 0 {
		t.Errorf("%d admitted by the floor though the group is far above its 5 %%", k)
	}
}

func TestFloorAllocatesNothing(t *testing.T) {
	f := mustFloor(t, mustPredictive(t, PredictiveConfig{}), FloorConfig{MaxGroups: 16})
	fleet := fleetOf(instance(0.02).waiting(0, 30), instance(0.02).waiting(0, 40))
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		f.Decide(float64(i)*0.01, Request{Class: Sheddable, Group: uint64(i%40 + 1), InputTokens: 1000}, fleet)
		i++
	})
	if n != 0 {
		t.Errorf("Decide allocates %v times", n)
	}
}

func TestFloorConfigErrors(t *testing.T) {
	wantFieldErrors(t, FloorConfig{}.Validate())
	wantFieldErrors(t, FloorConfig{Share: 1, WindowSeconds: -1, Buckets: -1, MaxGroups: -1}.Validate(),
		"fairness.share", "fairness.windowSeconds", "fairness.buckets", "fairness.maxGroups")
	wantFieldErrors(t, FloorConfig{Buckets: 5000, MaxGroups: 1 << 30}.Validate(), "fairness.buckets", "fairness.maxGroups")
	// Each within its range, together 2.1e9 counters (8.4 GB allocated at
	// once before the bound).
	wantFieldErrors(t, FloorConfig{Buckets: 1000, MaxGroups: 1 << 20}.Validate(), "fairness")
	wantFieldErrors(t, FloorConfig{Buckets: 1000, MaxGroups: 4000}.Validate())
	if _, err := NewFloor(AlwaysAdmit{}, FloorConfig{Share: -0.1}); err == nil {
		t.Error("NewFloor accepted a negative share")
	}
}
