package baselines

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/alloc"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

func init() {
	sim.RegisterBaseline(sim.Baseline{Name: "keda", Order: 30, Sweep: true,
		Summary: "threshold scaling on requests in the system, with scale to zero",
		New:     func(sc *scenario.Scenario, _ string) (sim.Autoscaler, error) { return newKEDA(sc), nil },
		Knobs: map[string]sim.Knob{
			"thresholdFraction": {Grid: []float64{0.25, 0.5, 0.75, 1}, Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDA.ThresholdFraction }, Check: sim.FromZero(100, true, false)},
			"threshold":         {Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDA.Threshold }, Check: sim.FromZero(1e6, true, false)},
		}})
}

// KEDA scales each variant on requests in the system (waiting + running,
// plus the gateway's for a variant at zero) against a per-replica
// threshold (by default the requests a replica holds at once), wakes a
// variant at zero when the metric passes the activation threshold, and
// scales it to zero after a cooldown with no requests: a ScaledObject's
// threshold, activationThreshold and cooldownPeriod
// (https://keda.sh/docs/latest/reference/scaledobject-spec/), which KEDA
// hands to the HPA above one replica.
type KEDA struct {
	cfg        scenario.KEDAConfig
	threshold  []float64 // per variant
	recs       map[int][]rec
	lastActive map[int]float64
}

// Name implements Autoscaler.
func (k *KEDA) Name() string { return "keda" }

// Interval implements Autoscaler.
func (k *KEDA) Interval() float64 { return k.cfg.PollingSeconds }

// Decide implements Autoscaler.
func (k *KEDA) Decide(v *sim.View) []int {
	out := make([]int, len(v.Variants))
	first := map[int]bool{}
	for i, vv := range v.Variants {
		metric := 0.0
		for _, p := range vv.Pods {
			metric += p.WaitingRequests + p.RunningRequests
		}
		if !first[vv.Model] {
			first[vv.Model] = true
			metric += float64(v.GatewayWaiting[vv.Model])
		}
		if metric > 0 {
			k.lastActive[i] = v.Now
		}
		lo := vv.MinReplicas
		if k.cfg.MinReplicaCount > 0 {
			lo = k.cfg.MinReplicaCount
		}
		desired := alloc.CeilCount(metric/k.threshold[i], math.MaxInt32)
		switch {
		case vv.Current == 0 && metric > k.cfg.Activation:
			desired = max(desired, 1)
		case vv.Current > 0 && desired == 0 && v.Now-k.lastActive[i] < k.cfg.CooldownSeconds:
			desired = 1
		}
		desired = max(min(desired, vv.MaxReplicas), lo)
		if desired < vv.Current && desired > 0 {
			desired = min(vv.Current, stabilized(k.recs, i, v.Now, k.cfg.StabilizationSecs, desired))
		} else {
			stabilized(k.recs, i, v.Now, k.cfg.StabilizationSecs, desired)
		}
		out[i] = desired
	}
	return out
}

// newKEDA builds KEDA for a scenario with its defaults: a threshold per
// variant, in the order of View.Variants.
func newKEDA(c *scenario.Scenario) *KEDA {
	k := &KEDA{cfg: c.Autoscalers.KEDA, recs: map[int][]rec{}, lastActive: map[int]float64{}}
	for _, m := range c.Models {
		tokens := m.Workload.Input.BoundedMean() + m.Workload.Output.BoundedMean()
		for _, v := range m.Variants {
			// Unless set, a replica's threshold is the requests it can
			// hold at once: its batch size or what its KV cache fits.
			t := c.Autoscalers.KEDA.Threshold
			if t == 0 {
				fit := math.Min(float64(v.MaxBatchSize), math.Floor(float64(v.KVBlocks*v.BlockSize)/tokens))
				t = math.Max(1, c.Autoscalers.KEDA.ThresholdFraction*fit)
			}
			k.threshold = append(k.threshold, t)
		}
	}
	return k
}
