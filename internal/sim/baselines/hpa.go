package baselines

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/alloc"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

func init() {
	sim.RegisterBaseline(sim.Baseline{Name: "hpa", Order: 20, Default: true, Sweep: true,
		Summary: "the Kubernetes HPA algorithm on queue depth and KV usage",
		New: func(sc *scenario.Scenario, _ string) (sim.Autoscaler, error) {
			return &HPA{cfg: sc.Autoscalers.HPA, recs: map[int][]rec{}}, nil
		},
		Knobs: map[string]sim.Knob{
			"kvTarget":    {Grid: []float64{0.3, 0.5, 0.7, 0.9}, Field: func(a *scenario.Autoscalers) *float64 { return &a.HPA.KVTarget }, Check: sim.FromZero(1, true, false)},
			"queueTarget": {Grid: []float64{1, 3, 10}, Field: func(a *scenario.Autoscalers) *float64 { return &a.HPA.QueueTarget }, Check: sim.FromZero(1e6, true, false)},
		}})
}

// HPA is the Kubernetes Horizontal Pod Autoscaler algorithm, one per
// variant, cost-blind: desired = ceil(current × metric / target) for the
// average queue depth and KV usage (targets 3 and 0.5, the HPA baseline of
// docs/evaluation.md), the larger of the two, with a 10 % tolerance, the
// default scale-up policy (double or +4 pods per sync, whichever is more)
// and a 300 s scale-down stabilisation window. The algorithm, tolerance,
// policies and window are Kubernetes' documented defaults:
// https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details
type HPA struct {
	cfg  scenario.HPAConfig
	recs map[int][]rec
}

// Name implements Autoscaler.
func (h *HPA) Name() string { return "hpa" }

// Interval implements Autoscaler.
func (h *HPA) Interval() float64 { return h.cfg.SyncSeconds }

// Decide implements Autoscaler.
func (h *HPA) Decide(v *sim.View) []int {
	out := make([]int, len(v.Variants))
	for i, vv := range v.Variants {
		out[i] = -1
		if len(vv.Pods) == 0 || vv.Current == 0 {
			continue
		}
		var q, kv float64
		for _, p := range vv.Pods {
			q += p.WaitingRequests
			kv += p.KVCacheUsage
		}
		n := float64(len(vv.Pods))
		cur := vv.Current
		// Like the HPA controller: each metric proposes a replica count
		// (the current one when its ratio is within the tolerance) and
		// the largest proposal wins.
		desired := 0
		for _, ratio := range []float64{q / n / h.cfg.QueueTarget, kv / n / h.cfg.KVTarget} {
			d := cur
			if math.Abs(ratio-1) > h.cfg.Tolerance {
				d = alloc.CeilCount(n*ratio, math.MaxInt32) // a huge ratio is many replicas, not an overflow
			}
			desired = max(desired, d)
		}
		desired = min(desired, max(2*cur, cur+4))
		desired = max(min(desired, vv.MaxReplicas), max(vv.MinReplicas, 1))
		if desired < cur {
			desired = min(cur, stabilized(h.recs, i, v.Now, h.cfg.StabilizationSeconds, desired))
		} else {
			stabilized(h.recs, i, v.Now, h.cfg.StabilizationSeconds, desired)
		}
		out[i] = desired
	}
	return out
}
