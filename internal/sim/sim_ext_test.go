package sim_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/capmodel"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"

	// The registry-looping tests of package sim_test run every autoscaler:
	// they link the baselines, which register themselves.
	_ "github.com/llm-d-incubation/wva/internal/sim/baselines"
)

// TestDeterministic: the same scenario and seed give byte-identical JSON,
// and another seed, for the same autoscalers, another run of each (the
// seed recorded in the JSON set aside: a run that ignored its seed would
// otherwise differ by that field alone).
func TestDeterministic(t *testing.T) {
	defer capmodel.SmallMeasurements()()
	sc := simtest.Builtin(t, "bursty", 900)
	names := sim.ExampleNames() // every registered autoscaler
	run := func(seed uint64) []*sim.Result {
		t.Helper()
		c := sc
		c.Seed = seed
		rs, err := sim.Compare(context.Background(), c, names, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != len(names) {
			t.Fatalf("seed %d: %d results for %d autoscalers", seed, len(rs), len(names))
		}
		return rs
	}
	first, again := sim.ResultsJSON(t, run(1)...), sim.ResultsJSON(t, run(1)...)
	if !bytes.Equal(first, again) {
		t.Errorf("two runs with seed 1 differ from byte %d", sim.FirstDifference(first, again))
	}
	one, two := run(1), run(2)
	for i, name := range names {
		if one[i].Seed != 1 || two[i].Seed != 2 {
			t.Errorf("%s: results record seeds %d and %d, want 1 and 2", name, one[i].Seed, two[i].Seed)
		}
		two[i].Seed = one[i].Seed
		if bytes.Equal(sim.ResultsJSON(t, one[i]), sim.ResultsJSON(t, two[i])) {
			t.Errorf("%s: seeds 1 and 2 gave the same run", name)
		}
	}
}

// TestInvariants runs every shipped scenario under every autoscaler and
// checks after each event: the clock never goes back; requests are
// conserved (arrived = completed + failed + in flight); each replica's KV
// blocks are held by exactly the running requests that reference them
// (checkKV); causality of every request. Each runs for 1200 s, or less
// when its own duration is shorter or its peak rate would bring more than
// invariantRequests requests (the admission scenarios' hundreds of
// requests per second); under the race detector, which slows a run about
// tenfold, for 600 s and a quarter of the requests.
func TestInvariants(t *testing.T) {
	// A run is bounded by its requests and by its output tokens (a
	// scenario of long generations has an event per token and batch).
	invariantRequests, invariantTokens, horizon := 30_000.0, 15_000_000.0, 1200.0
	if sim.RaceBuild {
		invariantRequests, invariantTokens, horizon = 8_000, 4_000_000, 600
	}
	defer capmodel.SmallMeasurements()()
	for _, name := range scenario.BuiltinNames(scenarios.FS) {
		for _, as := range sim.ExampleNames() {
			t.Run(name+"/"+as, func(t *testing.T) {
				sc := simtest.Builtin(t, name, 0)
				peak, tokens := 0.0, 0.0
				for _, m := range sc.Models {
					r := m.Workload.Rate.Peak(sc.DurationSeconds)
					peak += r
					tokens += r * max(m.Workload.Output.Mean, 1)
				}
				sc.DurationSeconds = min(sc.DurationSeconds, horizon, invariantRequests/peak, invariantTokens/tokens)
				a, err := sim.NewAutoscaler(as, &sc)
				if err != nil {
					t.Fatal(err)
				}
				s := sim.New(sc, a)
				last := 0.0
				n := 0
				sim.SetCheck(s, func(s *sim.Sim, et float64) {
					n++
					if et < last {
						t.Fatalf("clock went back from %v to %v", last, et)
					}
					last = et
					if n%1009 != 0 {
						return
					}
					sim.CheckConservation(t, s)
				})
				res := s.Run(context.Background(), nil)
				sim.CheckConservation(t, s)
				if res.Arrived != res.Completed+res.Failed+res.InFlight {
					t.Errorf("arrived %d ≠ completed %d + failed %d + in flight %d", res.Arrived, res.Completed, res.Failed, res.InFlight)
				}
				if res.Arrived == 0 {
					t.Error("no requests")
				}
			})
		}
	}
}
