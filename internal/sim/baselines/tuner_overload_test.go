package baselines

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// capacityPoint is one cycle's per-replica capacity: the engine's, with
// the parameters it used, and the same sizing with the true parameters.
type capacityPoint struct {
	now, demand, learned, truth float64
	source                      string
	params                      string
}

// trackCapacity runs WVA on the scenario and sizes, every cycle, the
// variant with the true parameters at the workload the engine sized at.
func trackCapacity(t *testing.T, name string) []capacityPoint {
	t.Helper()
	sc := simtest.Builtin(t, name, 0)
	a, err := sim.NewAutoscaler("wva", &sc)
	if err != nil {
		t.Fatal(err)
	}
	truth := sc.Models[0].Variants[0].Params
	var out []capacityPoint
	a.(*WVA).trace = func(now float64, plan *engine.Plan) {
		if len(plan.Variants) == 0 || plan.Variants[0].Queueing == nil || len(plan.Models) == 0 {
			return
		}
		q, m := plan.Variants[0].Queueing, plan.Models[0]
		if q.CapacityPerReplicaRPS == 0 || q.Params == nil {
			return
		}
		size := func(p queueing.Iteration) float64 {
			an, err := queueing.NewAnalyzer(queueing.Config{Model: p, Workload: queueing.Workload{InputTokens: q.InputTokens, OutputTokens: q.OutputTokens},
				MaxBatchSize: q.MaxBatchSize, MaxQueueSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			sz, err := an.Size(queueing.Targets{TTFTMs: m.SLOTTFTMs, ITLMs: m.SLOITLMs})
			if err != nil {
				t.Fatal(err)
			}
			return sz.CapacityRPS
		}
		learned := size(queueing.Iteration{Alpha: q.Params.Alpha, Beta: q.Params.Beta, Gamma: q.Params.Gamma})
		if math.Abs(learned/q.CapacityPerReplicaRPS-1) > 1e-6 {
			t.Fatalf("t=%.0f: the engine sized %.4g, redone %.4g: the test does not size as the engine does", now, q.CapacityPerReplicaRPS, learned)
		}
		out = append(out, capacityPoint{now: now, demand: m.DemandRPS, learned: q.CapacityPerReplicaRPS,
			truth: size(queueing.Iteration{Alpha: truth.Alpha, Beta: truth.Beta, Gamma: truth.Gamma}), source: q.ParamsSource,
			params: fmtParams(q.Params.Alpha, q.Params.Beta, q.Params.Gamma)})
	}
	sim.New(sc, a).Run(context.Background(), nil)
	return out
}

func fmtParams(a, b, g float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	return "α " + f(a) + " β " + f(b) + " γ " + f(g)
}

// TestTunerThroughOverload runs WVA on step-slow-start (8 → 40 → 8
// requests/s, 240-s start-up, at most 8 replicas; the tuner starts cold,
// no profile) and follows the capacity it sizes with against the same
// sizing with the true parameters (issue 30; docs/tuner.md §7).
//
// What keeps it there: the tuner reads the server as it runs its steps
// (queueing.Iteration.ServerSteps: TTFT and ITL within a few per cent of
// the simulator's at the true parameters, where the guide's formulas were
// 8–25 % off); a cycle whose replicas queue keeps its ITL, read at a full
// batch, and drops its TTFT (the queue); cycles whose averages span a
// change of load or a queue's end are skipped; and the process noise is
// 1 % a cycle, so that what one load taught is not forgotten while another
// is seen (α and γ trade off at any one load). Before, the learned
// capacity fell 48 % below the truth before the step, 22–35 % during the
// overload and ended 17–35 % above it.
//
// Measured (seed 1): within 3.2 % before the step; +5 % to +12 % from 750
// to 930 s, while the first replicas' queue grows (the estimate from one
// load, corrected by the full batch's ITL alone); within 3.5 % from 960 s
// on, and the final parameters within 2 % of the truth. The test bounds
// those with a margin: the 5 % through the whole overload is not
// met in its first three minutes.
func TestTunerThroughOverload(t *testing.T) {
	sc := simtest.Builtin(t, "step-slow-start", 0)
	truth := sc.Models[0].Variants[0].Params
	points := trackCapacity(t, "step-slow-start")
	if len(points) < 60 {
		t.Fatalf("%d sized cycles: the run no longer sizes the variant throughout", len(points))
	}
	for _, p := range points {
		e := p.learned/p.truth - 1
		t.Logf("t=%5.0f demand %6.2f learned %6.2f truth %6.2f (%+.1f %%) %s", p.now, p.demand, p.learned, p.truth, 100*e, p.params)
		bound := 0.05
		if p.now >= 600 && p.now < 960 {
			bound = 0.15
		}
		if math.Abs(e) > bound {
			t.Errorf("t=%.0f: learned capacity %+.1f %% off the truth (bound %.0f %%)", p.now, 100*e, 100*bound)
		}
	}
	last := points[len(points)-1]
	var a, b, g float64
	if _, err := fmt.Sscanf(last.params, "α %g β %g γ %g", &a, &b, &g); err != nil {
		t.Fatalf("parameters %q: %v", last.params, err)
	}
	for _, c := range []struct {
		name        string
		got, truthV float64
	}{{"α", a, truth.Alpha}, {"β", b, truth.Beta}, {"γ", g, truth.Gamma}} {
		if math.Abs(c.got/c.truthV-1) > 0.05 {
			t.Errorf("final %s %.4g, truth %.4g", c.name, c.got, c.truthV)
		}
	}
}
