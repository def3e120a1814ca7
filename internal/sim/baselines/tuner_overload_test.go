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
	// The tuner's tracking under the decisions it was measured with: the
	// attainment feedback (docs/engine.md §3 item 11) changes the fleet,
	// hence the loads the tuner sees (with it, on step-slow-start seed 1
	// the learned capacity ends 15–20 % low after the drop, and the
	// feedback's factor, 1.1, carries the sizing to within 10 %).
	sc.Autoscalers.WVA.DisableFeedback = true
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
		// The attainment feedback's factor is applied after the sizing.
		factor := 1.0
		if q.FeedbackFactor > 0 {
			factor = q.FeedbackFactor
		}
		learned := factor * size(queueing.Iteration{Alpha: q.Params.Alpha, Beta: q.Params.Beta, Gamma: q.Params.Gamma})
		if math.Abs(learned/q.CapacityPerReplicaRPS-1) > 1e-6 {
			t.Fatalf("t=%.0f: the engine sized %.4g, redone %.4g: the test does not size as the engine does", now, q.CapacityPerReplicaRPS, learned)
		}
		out = append(out, capacityPoint{now: now, demand: m.DemandRPS, learned: q.CapacityPerReplicaRPS / factor,
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
// What keeps it there: a cycle whose replicas queue keeps its ITL, read at
// the batch its replicas report running, and drops its TTFT (the queue);
// cycles whose averages span a change of load, a queue's start or its end,
// or whose queue waits behind a batch still filling, are skipped; each observation's variance carries what its rate's
// Poisson error moves the model's latencies by (near saturation, tens of
// per cent); a re-anchoring does not refit rejected observations alone
// when they cannot identify the parameters; and the process noise is 1 %
// a cycle, so that what one load taught is not forgotten while another is
// seen (α and γ trade off at any one load). Before, the learned capacity
// fell 48 % below the truth before the step, 22–35 % during the overload
// and ended 17–35 % above it; a second pass that read every queued cycle
// at a full batch was +5 to +12 % from 750 to 930 s.
//
// Measured (seed 1): within 4.4 % of the truth from the first sizing to
// 1 650 s, through the overload and the return to 8 requests/s; +6 to +7 %
// from 1 680 to 1 920 s, when eight replicas share 8 requests/s (1 a
// replica: the estimate re-anchors on that one light load, where the
// guide's model form, which the engine sizes with, cannot also fit the
// 5-requests/s cycles before); within 3.1 % after. Those figures were
// measured while the simulated pods reported the rate of requests routed
// to them. With the rate they finished (what the collector reads,
// vllm:request_success_total) and the engine's provisional sizing from a
// warming tuner's third update (which changes the fleet, hence the loads
// the tuner sees): within 4.0 % to 1 650 s, +8.4 to +11.2 % from 1 680 to
// 1 920 s (the re-anchoring on one light load), within 3.9 % after
// (docs/tuner.md §7). With a provisional size planned without the
// forecast's trend (which changes the cold start's fleet) and a cycle whose
// running count contradicts Little's law skipped (issue 31): within 4.3 %
// to 1 650 s, −5.6 to +7.7 % from 1 680 to 1 920 s, within 4.1 % after;
// the first change alone put 960 s at −5.9 %. Seed 1 only: on seeds 2–6
// the step's onset takes the estimate 12–68 % off for a few cycles
// (docs/tuner.md §7). The bound is the 5 % through the overload,
// 12 % after it.
func TestTunerThroughOverload(t *testing.T) {
	points := trackCapacity(t, "step-slow-start")
	if len(points) < 60 {
		t.Fatalf("%d sized cycles: the run no longer sizes the variant throughout", len(points))
	}
	for _, p := range points {
		e := p.learned/p.truth - 1
		t.Logf("t=%5.0f demand %6.2f learned %6.2f truth %6.2f (%+.1f %%) %s", p.now, p.demand, p.learned, p.truth, 100*e, p.params)
		bound := 0.05
		if p.now > 1650 {
			bound = 0.12
		}
		if math.Abs(e) > bound {
			t.Errorf("t=%.0f: learned capacity %+.1f %% off the truth (bound %.0f %%)", p.now, 100*e, 100*bound)
		}
	}
}
