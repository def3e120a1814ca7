package alloc

import (
	"math"
	"slices"
	"testing"
)

// heteroServers: a 70B model that runs only on H100 (4 per replica), a
// 14B one on H100 or A100 and an 8B one on H100, A100 or L40S, at the
// capacities and costs of examples/scenarios/hetero-fleet.yaml, the 70B
// with the lowest priority.
func heteroServers(bigDemand float64) []Server {
	return []Server{
		{Name: "70b", Priority: 3, Demand: bigDemand, Options: []Option{
			{Name: "70b-h100", Accelerator: "H100", Units: 4, Cost: 9.6, Capacity: 4.5, Max: 3}}},
		{Name: "14b", Priority: 1, Demand: 6, Options: []Option{
			{Name: "14b-h100", Accelerator: "H100", Units: 1, Cost: 2.4, Capacity: 10, Max: 4},
			{Name: "14b-a100", Accelerator: "A100", Units: 1, Cost: 1, Capacity: 2.7, Max: 4}}},
		{Name: "8b", Priority: 2, Demand: 14, Options: []Option{
			{Name: "8b-h100", Accelerator: "H100", Units: 1, Cost: 2.4, Capacity: 30, Max: 4},
			{Name: "8b-a100", Accelerator: "A100", Units: 1, Cost: 1, Capacity: 8, Max: 4},
			{Name: "8b-l40s", Accelerator: "L40S", Units: 1, Cost: 0.36, Capacity: 5.5, Max: 4}}},
	}
}

// TestLimitedScarceAcceleratorGoesToTheModelThatNeedsIt, by hand: alone,
// the 70B needs ⌈12/4.5⌉ = 3 replicas (all 12 H100), the 14B one H100
// (2.4, against 3 A100 at 3.0) and the 8B three L40S (1.08). H100 is one
// over: the 70B cannot move, the 14B moves to three A100 for 0.6 more.
// Everyone is satisfied though the 70B has the lowest priority (the greedy
// by priority gave the 14B its H100 first and left the 70B nothing).
func TestLimitedScarceAcceleratorGoesToTheModelThatNeedsIt(t *testing.T) {
	servers := heteroServers(12)
	inv := map[string]int{"H100": 12, "A100": 4, "L40S": 4}
	want := [][]int{{3}, {0, 3}, {0, 0, 3}}
	cost := []float64{28.8, 3, 1.08}
	for _, p := range []Policy{PolicyNone, PolicyPriorityExhaustive, PolicyPriorityRoundRobin, PolicyRoundRobin} {
		for i, a := range Limited(servers, inv, p, 0.1) {
			if !slices.Equal(a.Replicas, want[i]) || !a.Satisfied || a.BestEffort || a.BeyondMax || !near(a.Cost, cost[i]) {
				t.Errorf("%s: %s got %+v, want %v at %.2f, satisfied", p, servers[i].Name, a, want[i], cost[i])
			}
			if moved := i == 1; moved != (len(a.MovedOff) > 0) || (moved && (!slices.Equal(a.MovedOff, []string{"H100"}) || !near(a.ExtraCost, 0.6))) {
				t.Errorf("%s: %s moved off %v for %.2f more; only the 14b moves, off H100, for 0.60", p, servers[i].Name, a.MovedOff, a.ExtraCost)
			}
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestLimitedBeyondMax: a demand beyond every variant at its maximum gets
// that maximum (here 3 replicas for 20 requests/s at 4.5 each), flagged,
// not nothing.
func TestLimitedBeyondMax(t *testing.T) {
	servers := heteroServers(20)
	got := Limited(servers, map[string]int{"H100": 12, "A100": 4, "L40S": 4}, PolicyNone, 0.1)
	if a := got[0]; !slices.Equal(a.Replicas, []int{3}) || a.Satisfied || !a.BeyondMax || a.BestEffort {
		t.Errorf("70b: %+v, want 3 replicas, beyond its maximum", a)
	}
	if !got[1].Satisfied || !slices.Equal(got[1].Replicas, []int{0, 3}) {
		t.Errorf("14b: %+v, want 3 A100", got[1])
	}
}

// TestLimitedShortagePolicies: two H100-only models of 3 replicas each
// (1 request/s per replica) on 4 H100; a has priority 1, b priority 2 and
// runs 2 replicas now.
func TestLimitedShortagePolicies(t *testing.T) {
	mk := func(prioB int) []Server {
		return []Server{
			{Name: "a", Priority: 1, Demand: 3, Options: []Option{{Accelerator: "H100", Units: 1, Cost: 1, Capacity: 1}}},
			{Name: "b", Priority: prioB, Demand: 3, Options: []Option{{Accelerator: "H100", Units: 1, Cost: 1, Capacity: 1, Current: 2}}},
		}
	}
	inv := map[string]int{"H100": 4}
	for _, c := range []struct {
		name     string
		policy   Policy
		prioB    int
		a, b     int
		aBE, bBE bool
	}{
		// a takes its 3; b is left 1, which it runs anyway: it keeps it.
		{"None: by priority, b keeps what it runs within what is left", PolicyNone, 2, 3, 1, false, false},
		{"PriorityExhaustive: b gets the rest", PolicyPriorityExhaustive, 2, 3, 1, false, true},
		{"PriorityRoundRobin across priorities: as exhaustive", PolicyPriorityRoundRobin, 2, 3, 1, false, true},
		{"PriorityRoundRobin within a priority: 2 and 2", PolicyPriorityRoundRobin, 1, 2, 2, true, true},
		{"RoundRobin: 2 and 2 whatever the priority", PolicyRoundRobin, 2, 2, 2, true, true},
	} {
		got := Limited(mk(c.prioB), inv, c.policy, 0.1)
		if got[0].Replicas[0] != c.a || got[1].Replicas[0] != c.b || got[0].BestEffort != c.aBE || got[1].BestEffort != c.bBE {
			t.Errorf("%s: a %+v, b %+v; want %d (best effort %v) and %d (%v)", c.name, got[0], got[1], c.a, c.aBE, c.b, c.bBE)
		}
		if got[1].Satisfied || (c.a == 2 && got[0].Satisfied) {
			t.Errorf("%s: a short model reported satisfied: %+v %+v", c.name, got[0], got[1])
		}
	}
}

// TestLimitedNoneKeepsOnlyWhatItRuns: under None a short model never grows
// (b runs 1 and 2 are left: it keeps 1).
func TestLimitedNoneKeepsOnlyWhatItRuns(t *testing.T) {
	servers := []Server{
		{Name: "a", Priority: 1, Demand: 2, Options: []Option{{Accelerator: "H100", Units: 1, Cost: 1, Capacity: 1}}},
		{Name: "b", Priority: 2, Demand: 5, Options: []Option{{Accelerator: "H100", Units: 1, Cost: 1, Capacity: 1, Current: 1}}},
	}
	got := Limited(servers, map[string]int{"H100": 4}, PolicyNone, 0.1)
	if got[0].Replicas[0] != 2 || got[1].Replicas[0] != 1 || got[1].Satisfied || got[1].BestEffort {
		t.Errorf("a %+v, b %+v: want 2, and 1 kept", got[0], got[1])
	}
}

// TestLimitedAcceleratorChange: 8 requests/s on H100 (1.9 per replica of
// capacity 8) or A100 (1 per replica of 4): the H100 is cheaper (1.9
// against 2.0), but a model running on A100 stays there while the change
// factor 0.1 makes the H100 cost 2.09; the reported cost is the real one.
func TestLimitedAcceleratorChange(t *testing.T) {
	mk := func(cur int) []Server {
		return []Server{{Name: "m", Priority: 1, Demand: 8, Options: []Option{
			{Accelerator: "H100", Units: 1, Cost: 1.9, Capacity: 8},
			{Accelerator: "A100", Units: 1, Cost: 1, Capacity: 4, Current: cur}}}}
	}
	inv := map[string]int{"H100": 4, "A100": 4}
	if a := Limited(mk(0), inv, PolicyNone, 0.1)[0]; !slices.Equal(a.Replicas, []int{1, 0}) || !near(a.Cost, 1.9) || a.Chosen != 0 {
		t.Errorf("a new model: %+v, want one H100 at 1.9", a)
	}
	if a := Limited(mk(2), inv, PolicyNone, 0.1)[0]; !slices.Equal(a.Replicas, []int{0, 2}) || !near(a.Cost, 2) || a.Chosen != 1 {
		t.Errorf("a model on A100: %+v, want two A100 at 2.0", a)
	}
}

// TestLimitedMinimumsHold: minReplicas stay even on a type that is short.
func TestLimitedMinimumsHold(t *testing.T) {
	servers := []Server{
		{Name: "a", Priority: 1, Demand: 4, Options: []Option{{Accelerator: "H100", Units: 1, Cost: 1, Capacity: 1}}},
		{Name: "b", Priority: 2, Demand: 0, Options: []Option{{Accelerator: "H100", Units: 1, Cost: 1, Capacity: 1, Min: 1}}},
	}
	got := Limited(servers, map[string]int{"H100": 4}, PolicyPriorityExhaustive, 0.1)
	if got[0].Replicas[0] != 3 || got[1].Replicas[0] != 1 || !got[0].BestEffort || !got[1].Satisfied {
		t.Errorf("a %+v, b %+v: want 3 (best effort) and b's minimum 1", got[0], got[1])
	}
}

// TestLimitedHostileInput: NaN, infinite and huge demands, capacities
// near zero, huge or negative inventories and bounds end without a panic,
// within the inventory, and with counts that stay sane.
func TestLimitedHostileInput(t *testing.T) {
	huge := int(^uint(0) >> 2)
	for _, d := range []float64{math.NaN(), math.Inf(1), -1, 1e300, 5} {
		for _, inv := range []int{-3, 0, 7, huge} {
			servers := []Server{
				{Name: "a", Priority: 1, Demand: d, Options: []Option{
					{Accelerator: "H100", Units: 0, Cost: 1, Capacity: 1e-300},
					{Accelerator: "A100", Units: -2, Cost: math.NaN(), Capacity: 2, Max: -1, Current: huge}}},
				{Name: "b", Priority: -4, Demand: d, Options: []Option{
					{Accelerator: "H100", Units: 3, Cost: 2, Capacity: math.Inf(1), Min: 1}}},
			}
			got := Limited(servers, map[string]int{"H100": inv, "A100": inv}, PolicyRoundRobin, 0.1)
			used := map[string]int{}
			for i, a := range got {
				for j, n := range a.Replicas {
					if n < 0 {
						t.Fatalf("demand %v inventory %d: %s has %d replicas", d, inv, servers[i].Name, n)
					}
					used[servers[i].Options[j].Accelerator] += n * max(servers[i].Options[j].Units, 1)
				}
			}
			for k, u := range used {
				// b's minimum (3 H100) holds whatever the inventory.
				if minimum := k == "H100" && u <= 3; u > max(inv, 0) && !minimum {
					t.Errorf("demand %v inventory %d: %s uses %d", d, inv, k, u)
				}
			}
		}
	}
}
