package baselines

import (
	"math"
	"slices"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// llm-d's four KEDA + endpoint-picker autoscaling paths
// (https://llm-d.ai/docs/guide, "Workload Autoscaling": "KEDA with EPP
// Metrics", "keda-epp-token-aware", "SLO-Aware Autoscaling with KEDA and
// Predicted Latency"; manifests in llm-d/llm-d guides/workload-autoscaling
// and docs/architecture/autoscaling/slo-aware-keda.md). Each is a
// ScaledObject whose triggers read the EPP's metrics (epp.go) from
// Prometheus with AverageValue targets; KEDA hands them to the HPA, which
// takes the largest trigger's count (GetExternalPerPodMetricReplicas: the
// current count within the tolerance, else ceil(value / target)), then
// applies the ScaledObject's spec.behavior and replica bounds every sync
// period (behavior.go).
//
// The guides scale one Deployment per InferencePool. A scenario model with
// several variants is one pool: its one HPA counts the replicas of all its
// variants, and a change of its count goes to the cheapest variant with
// room and comes from the dearest (the most a user could do with pool-wide
// metrics; one ScaledObject per variant on the same pool metric would
// count the demand once per variant).

// trigger is one ScaledObject trigger's value and AverageValue target.
type trigger struct{ value, target float64 }

// kedaEPP is one of the four paths: an HPA per model fed by its triggers.
type kedaEPP struct {
	name string
	cfg  scenario.EPPScaler
	// triggers reads model m's triggers from the view (ok false: no
	// metric yet, the HPA keeps the count); current is the model's spec
	// count, ready its ready replicas.
	triggers func(v *sim.View, m int, current, ready int) ([]trigger, bool)
	hpa      []hpaState
	order    [][]int // per model: its variants' view indices, cheapest first
	// spec is, per view variant, the replica count it last set (the
	// Deployments' spec.replicas, which the HPA reads as the current
	// count): replicas the inventory holds back stay asked for, as pending
	// pods do, and start when room frees.
	spec []int
}

// Name implements Autoscaler.
func (k *kedaEPP) Name() string { return k.name }

// Interval implements Autoscaler.
func (k *kedaEPP) Interval() float64 { return k.cfg.SyncSeconds }

func (k *kedaEPP) ReadsEPP() {}

var _ sim.EPPReader = (*kedaEPP)(nil)

// Decide implements Autoscaler.
func (k *kedaEPP) Decide(v *sim.View) []int {
	if k.order == nil {
		k.order = modelOrder(v)
		k.hpa = make([]hpaState, len(k.order))
		k.spec = make([]int, len(v.Variants))
		for i, vv := range v.Variants {
			k.spec[i] = min(max(vv.Current, vv.MinReplicas), vv.MaxReplicas)
		}
	}
	out := slices.Clone(k.spec)
	for m, idx := range k.order {
		cur, ready, lo, hi := 0, 0, 0, 0
		for _, i := range idx {
			vv := &v.Variants[i]
			cur, ready = cur+out[i], ready+vv.Ready
			lo, hi = lo+vv.MinReplicas, hi+vv.MaxReplicas
		}
		lo = min(max(lo, k.cfg.MinReplicaCount, 1), hi)
		if k.cfg.MaxReplicaCount > 0 {
			hi = max(min(hi, k.cfg.MaxReplicaCount), lo)
		}
		n := cur
		if ts, ok := k.triggers(v, m, cur, ready); ok && cur > 0 {
			desired := 0
			for _, t := range ts {
				desired = max(desired, averageValueReplicas(t.value, t.target, k.cfg.Tolerance, cur))
			}
			n = k.hpa[m].normalize(v.Now, *k.cfg.Behavior, cur, desired, lo, hi)
		}
		// KEDA keeps the target within minReplicaCount and maxReplicaCount
		// (a fleet below its minimum, e.g. at start, is raised at once).
		n = min(max(n, lo), hi)
		adjust(v, idx, n-cur, out)
	}
	k.spec = out
	return out
}

// modelOrder lists each model's variants (their indices in the view),
// cheapest per replica first, ties in the scenario's order.
func modelOrder(v *sim.View) [][]int {
	out := make([][]int, len(v.Scenario.Models))
	for i, vv := range v.Variants {
		out[vv.Model] = append(out[vv.Model], i)
	}
	for _, idx := range out {
		slices.SortStableFunc(idx, func(a, b int) int {
			ca, cb := v.Variants[a].Cost, v.Variants[b].Cost
			switch {
			case ca < cb:
				return -1
			case ca > cb:
				return 1
			}
			return 0
		})
	}
	return out
}

// adjust applies a model's change of count to its variants' counts (out,
// by view index) and leaves the rest as they are: replicas are added to
// the cheapest variant with room — below its maximum and, under an
// inventory, with accelerators free of what every variant asks — then to
// the cheapest below its maximum; they are removed from the dearest first,
// down to each variant's minimum.
func adjust(v *sim.View, idx []int, delta int, out []int) {
	if delta < 0 {
		for _, i := range slices.Backward(idx) {
			take := min(-delta, out[i]-v.Variants[i].MinReplicas)
			out[i] -= max(take, 0)
			delta += max(take, 0)
		}
		return
	}
	free := freeAccelerators(v, out)
	for pass := 0; pass < 2 && delta > 0; pass++ {
		for _, i := range idx {
			vv := &v.Variants[i]
			add := min(delta, vv.MaxReplicas-out[i])
			if f, limited := free[vv.Accelerator]; limited && pass == 0 {
				add = min(add, f/max(vv.AcceleratorsPerReplica, 1))
			}
			if add <= 0 {
				continue
			}
			out[i] += add
			delta -= add
			if _, limited := free[vv.Accelerator]; limited {
				free[vv.Accelerator] -= add * vv.AcceleratorsPerReplica
			}
		}
	}
}

// freeAccelerators is, per type the inventory limits, what the counts
// asked for (out) leave free.
func freeAccelerators(v *sim.View, out []int) map[string]int {
	free := map[string]int{}
	for acc, n := range v.Scenario.Inventory {
		free[acc] = n
	}
	for i, vv := range v.Variants {
		if _, ok := free[vv.Accelerator]; ok {
			free[vv.Accelerator] -= out[i] * vv.AcceleratorsPerReplica
		}
	}
	return free
}

func init() {
	reg := func(name, summary string, order int, knobs map[string]sim.Knob, build func(*scenario.Scenario) *kedaEPP) {
		sim.RegisterBaseline(sim.Baseline{Name: name, Order: order, Sweep: true, Summary: summary, Knobs: knobs,
			New: func(sc *scenario.Scenario, _ string) (sim.Autoscaler, error) { return build(sc), nil }})
	}
	queue := func(a *scenario.Autoscalers) *scenario.EPPScaler { return &a.KEDAQueue.EPPScaler }
	reg("keda-queue", "llm-d's KEDA guide on the endpoint picker's queued and running requests", 31,
		map[string]sim.Knob{
			"queueThreshold":         {Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDAQueue.QueueThreshold }, Check: sim.FromZero(1e6, true, false)},
			"runningThreshold":       {Grid: []float64{4, 8, 16, 32}, Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDAQueue.RunningThreshold }, Check: sim.FromZero(1e6, true, false)},
			"scaleUpWindowSeconds":   {Grid: []float64{0, 300}, Field: scaleWindow(queue, scenario.QueueBehavior, true), Check: sim.FromZero(3600, false, false)},
			"scaleDownWindowSeconds": {Field: scaleWindow(queue, scenario.QueueBehavior, false), Check: sim.FromZero(3600, false, false)},
		}, newKEDAQueue)
	sat := func(a *scenario.Autoscalers) *scenario.EPPScaler { return &a.KEDASaturation.EPPScaler }
	reg("keda-saturation", "llm-d's KEDA guide on the endpoint picker's pool saturation and running requests", 32,
		map[string]sim.Knob{
			"saturationThreshold":    {Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDASaturation.SaturationThreshold }, Check: sim.FromZero(1e6, true, false)},
			"runningThreshold":       {Grid: []float64{4, 8, 16, 32}, Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDASaturation.RunningThreshold }, Check: sim.FromZero(1e6, true, false)},
			"scaleUpWindowSeconds":   {Grid: []float64{0, 300}, Field: scaleWindow(sat, scenario.QueueBehavior, true), Check: sim.FromZero(3600, false, false)},
			"scaleDownWindowSeconds": {Field: scaleWindow(sat, scenario.QueueBehavior, false), Check: sim.FromZero(3600, false, false)},
		}, newKEDASaturation)
	tok := func(a *scenario.Autoscalers) *scenario.EPPScaler { return &a.KEDATokens.EPPScaler }
	reg("keda-tokens", "llm-d's token-aware KEDA guide: seconds of prefill backlog and KV-cache usage", 33,
		map[string]sim.Knob{
			"backlogSeconds":         {Grid: []float64{0.5, 1, 1.5, 3}, Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDATokens.BacklogSeconds }, Check: sim.FromZero(3600, true, false)},
			"kvThreshold":            {Grid: []float64{0.5, 0.8}, Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDATokens.KVThreshold }, Check: sim.FromZero(1, true, false)},
			"scaleUpWindowSeconds":   {Field: scaleWindow(tok, scenario.TokensBehavior, true), Check: sim.FromZero(3600, false, false)},
			"scaleDownWindowSeconds": {Field: scaleWindow(tok, scenario.TokensBehavior, false), Check: sim.FromZero(3600, false, false)},
		}, newKEDATokens)
	slo := func(a *scenario.Autoscalers) *scenario.EPPScaler { return &a.KEDASLO.EPPScaler }
	reg("keda-slo", "llm-d's SLO-aware KEDA guide: P90 TTFT and TPOT against the SLO, through its control law", 34,
		map[string]sim.Knob{
			"thetaUp":                {Grid: []float64{0.45, 0.55, 0.7, 0.85}, Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDASLO.ThetaUp }, Check: sim.FromZero(10, true, false)},
			"thetaDown":              {Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDASLO.ThetaDown }, Check: sim.FromZero(10, true, false)},
			"quantile":               {Field: func(a *scenario.Autoscalers) *float64 { return &a.KEDASLO.Quantile }, Check: sim.FromZero(1, true, true)},
			"scaleUpWindowSeconds":   {Field: scaleWindow(slo, scenario.SLOBehavior, true), Check: sim.FromZero(3600, false, false)},
			"scaleDownWindowSeconds": {Field: scaleWindow(slo, scenario.SLOBehavior, false), Check: sim.FromZero(3600, false, false)},
		}, newKEDASLO)
}

// scaleWindow is a knob's field: a stabilization window of a path's
// behaviour (up or down). Each call gives the configuration a behaviour of
// its own, so sweep points copied from one scenario share none.
func scaleWindow(get func(*scenario.Autoscalers) *scenario.EPPScaler, def func() scenario.Behavior, up bool) func(*scenario.Autoscalers) *float64 {
	return func(a *scenario.Autoscalers) *float64 {
		e := get(a)
		e.Behavior = scenario.CompleteBehavior(e.Behavior, def())
		b := e.Behavior
		if up {
			return b.ScaleUp.StabilizationWindowSeconds
		}
		return b.ScaleDown.StabilizationWindowSeconds
	}
}

func newKEDAQueue(sc *scenario.Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDAQueue
	return &kedaEPP{name: "keda-queue", cfg: c.EPPScaler, triggers: func(v *sim.View, m, _, _ int) ([]trigger, bool) {
		queue, running, _, _, _, ok := v.EPP.Gauges(m)
		return []trigger{{queue, c.QueueThreshold}, {running, c.RunningThreshold}}, ok
	}}
}

func newKEDASaturation(sc *scenario.Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDASaturation
	return &kedaEPP{name: "keda-saturation", cfg: c.EPPScaler, triggers: func(v *sim.View, m, _, _ int) ([]trigger, bool) {
		_, running, saturation, _, _, ok := v.EPP.Gauges(m)
		return []trigger{{saturation, c.SaturationThreshold}, {running, c.RunningThreshold}}, ok
	}}
}

func newKEDATokens(sc *scenario.Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDATokens
	speed := make([]float64, len(sc.Models))
	for m, mod := range sc.Models {
		speed[m] = c.PrefillTokensPerSecond
		if speed[m] == 0 {
			speed[m] = prefillSpeed(cheapest(mod.Variants))
		}
	}
	return &kedaEPP{name: "keda-tokens", cfg: c.EPPScaler, triggers: func(v *sim.View, m, _, _ int) ([]trigger, bool) {
		_, _, _, tokens, kv, ok := v.EPP.Gauges(m)
		return []trigger{{tokens / speed[m], c.BacklogSeconds}, {kv, c.KVThreshold}}, ok
	}}
}

// cheapest is the variant with the lowest cost per replica (the first of
// equals).
func cheapest(vs []scenario.Variant) scenario.Variant {
	best := vs[0]
	for _, v := range vs[1:] {
		if v.Cost < best.Cost {
			best = v
		}
	}
	return best
}

// prefillSpeed is V_P as the token-aware guide calibrates it: a full chunk
// (maxBatchedTokens) over the TTFT of a chunk-long prompt at light load,
// the chunk's prefill iteration plus the front end's overheads.
func prefillSpeed(v scenario.Variant) float64 {
	c := sim.ServerConfig(&v)
	chunk := v.MaxBatchedTokens
	ttft := c.PrefillSeconds(chunk) + c.OverheadSeconds(chunk) + c.TokenOverheadSeconds()
	if !(ttft > 0) {
		return math.Inf(1)
	}
	return float64(chunk) / ttft
}

func newKEDASLO(sc *scenario.Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDASLO
	slos := make([]scenario.SLO, len(sc.Models))
	for m, mod := range sc.Models {
		slos[m] = poolSLO(mod)
	}
	return &kedaEPP{name: "keda-slo", cfg: c.EPPScaler, triggers: func(v *sim.View, m, current, ready int) ([]trigger, bool) {
		s, ok := v.EPP.SLOSignal(m, c, slos[m])
		return []trigger{{controlLaw(s, c.ThetaUp, c.ThetaDown, current, ready), 1}}, ok
	}}
}

// poolSLO is the SLO pair of a model's pool: with classes (whose SLOs
// judge the model's requests) the strictest of theirs, else the model's;
// the guide's defaults (3 s, 100 ms) where none is set.
func poolSLO(m scenario.Model) scenario.SLO {
	s := m.SLO
	if cs := m.Workload.Classes; len(cs) > 0 {
		s = cs[0].SLO
		for _, c := range cs[1:] {
			if s.TTFTMs == 0 || c.SLO.TTFTMs > 0 && c.SLO.TTFTMs < s.TTFTMs {
				s.TTFTMs = c.SLO.TTFTMs
			}
			if s.ITLMs == 0 || c.SLO.ITLMs > 0 && c.SLO.ITLMs < s.ITLMs {
				s.ITLMs = c.SLO.ITLMs
			}
		}
	}
	if s.TTFTMs == 0 {
		s.TTFTMs = 3000
	}
	if s.ITLMs == 0 {
		s.ITLMs = 100
	}
	return s
}

// controlLaw is the SLO-aware guide's law: n provisioned replicas, r of
// them ready, s the smoothed signal.
func controlLaw(s, thetaUp, thetaDown float64, n, r int) float64 {
	if n <= 0 {
		return 0
	}
	fn := float64(n)
	switch {
	case s > thetaUp:
		c := 1.0
		if r > 0 && r < n {
			c = float64(r) / fn
		}
		return fn + math.Ceil(fn*(s*c/thetaUp-1))
	case s < thetaDown:
		return fn - math.Floor(fn*(1-s/thetaDown))
	}
	return fn
}
