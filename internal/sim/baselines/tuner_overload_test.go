package baselines

import (
	"context"
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
// requests/s, 240-s start-up, at most 8 replicas) and follows the capacity
// it sizes with against the same sizing with the true parameters. While the
// first replicas carry the step alone (from the step's first cycle until
// the replicas it ordered are ready, 240 s later) their queue grows, and the
// server gate must keep every such cycle out of the tuner: the learned
// parameters do not move. Before the gate (issue 30) the tuner fitted those
// cycles and its capacity fell to half the truth.
//
// Issue 30 asks for more: the learned capacity within 5 % of the truth
// through the whole overload. That is not met yet — see docs/tuner.md §7:
// before the step the tuner has seen one load only, where α and γ trade
// off, and when WVA spreads the load over more replicas the lighter load
// contradicts the split and the re-anchoring refits on it alone: the
// re-anchoring's joint refit (docs/tuner.md §3 item 5) is rejected by its
// F-test here, because the queueing model does not explain both loads of
// this server with any one parameter set (its TTFT is ~60 % low at the
// true parameters).
func TestTunerThroughOverload(t *testing.T) {
	points := trackCapacity(t, "step-slow-start")
	var frozen string
	for _, p := range points {
		t.Logf("t=%5.0f demand %6.2f learned %6.2f truth %6.2f (%+.1f %%) %s", p.now, p.demand, p.learned, p.truth, 100*(p.learned/p.truth-1), p.params)
		if p.now < 660 || p.now > 840 {
			continue
		}
		if frozen == "" {
			frozen = p.params
		}
		if p.params != frozen {
			t.Errorf("t=%.0f: the parameters moved while the replicas queued: %s → %s", p.now, frozen, p.params)
		}
	}
	if frozen == "" {
		t.Fatal("no sized cycle between 660 and 840 s")
	}
}
