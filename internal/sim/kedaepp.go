package sim

import (
	"math"
	"slices"
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

// EPPScaler is what the four KEDA + EPP paths share.
type EPPScaler struct {
	// SyncSeconds is the HPA's sync period (default 15).
	SyncSeconds float64 `json:"syncSeconds,omitempty"`
	// Tolerance is the HPA's (default 0.1).
	Tolerance float64 `json:"tolerance,omitempty"`
	// MinReplicaCount and MaxReplicaCount bound a model's replicas (the
	// ScaledObject's; defaults: the guide's minimum, raised to the sum of
	// the variants' minReplicas, and the sum of their maxReplicas). The
	// guides never scale to zero: the minimum is at least 1.
	MinReplicaCount int `json:"minReplicaCount,omitempty"`
	MaxReplicaCount int `json:"maxReplicaCount,omitempty"`
	// Behavior is the ScaledObject's advanced.horizontalPodAutoscalerConfig
	// .behavior (default: the guide's).
	Behavior *Behavior `json:"behavior,omitempty"`
}

// KEDAQueueConfig is the queue-depth path ("KEDA with EPP Metrics",
// TRIGGER=queue): sum(llm_d_epp_flow_control_queue_size) against
// QueueThreshold and sum(llm_d_epp_request_running) against
// RunningThreshold, per replica.
type KEDAQueueConfig struct {
	EPPScaler
	QueueThreshold   float64 `json:"queueThreshold,omitempty"`   // default 1
	RunningThreshold float64 `json:"runningThreshold,omitempty"` // default 16
}

// KEDASaturationConfig is the pool-saturation path (TRIGGER=saturation):
// max(llm_d_epp_flow_control_pool_saturation) against
// SaturationThreshold, and the running requests as in the queue path.
type KEDASaturationConfig struct {
	EPPScaler
	SaturationThreshold float64 `json:"saturationThreshold,omitempty"` // default 0.7
	RunningThreshold    float64 `json:"runningThreshold,omitempty"`    // default 16
}

// KEDATokensConfig is the token-backlog path (keda-epp-token-aware): the
// seconds of prefill backlog, sum(llm_d_epp_inflight_tokens) /
// PrefillTokensPerSecond, against BacklogSeconds, and
// sum(vllm:kv_cache_usage_perc) against KVThreshold.
type KEDATokensConfig struct {
	EPPScaler
	BacklogSeconds float64 `json:"backlogSeconds,omitempty"` // default 1.5
	KVThreshold    float64 `json:"kvThreshold,omitempty"`    // default 0.8
	// PrefillTokensPerSecond is V_P, the prefill speed of one replica
	// (default: the cheapest variant's, calibrated as the guide does: a
	// full chunk of prefill over the TTFT it takes at light load).
	PrefillTokensPerSecond float64 `json:"prefillTokensPerSecond,omitempty"`
}

// KEDASLOConfig is the SLO-aware path: recording rules every
// RuleSeconds compute s = avg_over_time(min(max(P90 TTFT / S_ttft, P90
// TPOT / S_tpot), Clamp)[AverageSeconds]) from the EPP's latency
// histograms over a WindowSeconds rate (the model's SLO as S_ttft and
// S_tpot), and a control law turns s into replicas: above ThetaUp,
// d = n + ceil(n (s·c / ThetaUp − 1)) with c = ready / n while replicas
// start; below ThetaDown, d = n − floor(n (1 − s / ThetaDown)); else n.
type KEDASLOConfig struct {
	EPPScaler
	ThetaUp        float64 `json:"thetaUp,omitempty"`        // default 0.55
	ThetaDown      float64 `json:"thetaDown,omitempty"`      // default 0.40
	Quantile       float64 `json:"quantile,omitempty"`       // default 0.9
	Clamp          float64 `json:"clamp,omitempty"`          // default 2
	WindowSeconds  float64 `json:"windowSeconds,omitempty"`  // the histograms' rate window, default 60
	AverageSeconds float64 `json:"averageSeconds,omitempty"` // default 45
	RuleSeconds    float64 `json:"ruleSeconds,omitempty"`    // recording rules' interval, default 15
}

// The guides' behaviours.
func queueBehavior() Behavior {
	// keda-epp queue and saturation overlays: both windows 300 s, at most
	// double or halve per 15 s.
	r := ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
		Policies: []ScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}}
	d := r
	return Behavior{ScaleUp: &r, ScaleDown: &d}
}

func tokensBehavior() Behavior {
	return Behavior{
		ScaleUp: &ScalingRules{StabilizationWindowSeconds: ptr(0.0), SelectPolicy: "Max",
			Policies: []ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 180}}},
		ScaleDown: &ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
			Policies: []ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 300}}}}
}

func sloBehavior() Behavior {
	return Behavior{
		ScaleUp: &ScalingRules{StabilizationWindowSeconds: ptr(30.0), SelectPolicy: "Max",
			Policies: []ScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 60}, {Type: "Pods", Value: 4, PeriodSeconds: 60}}},
		ScaleDown: &ScalingRules{StabilizationWindowSeconds: ptr(180.0), SelectPolicy: "Max",
			Policies: []ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 120}}}}
}

// withDefaults fills the shared settings; def is the guide's behaviour.
func (e EPPScaler) withDefaults(def Behavior) EPPScaler {
	setDefault(&e.SyncSeconds, 15)
	setDefault(&e.Tolerance, 0.1)
	setDefault(&e.MinReplicaCount, 1)
	e.Behavior = completed(e.Behavior, def)
	return e
}

// completed is b with what it leaves unset taken from def, sharing no
// pointer with b (def itself when b is nil; def must be fresh).
func completed(b *Behavior, def Behavior) *Behavior {
	if b == nil {
		return &def
	}
	up, down := b.ScaleUp.withDefaults(*def.ScaleUp), b.ScaleDown.withDefaults(*def.ScaleDown)
	return &Behavior{ScaleUp: up.copied(), ScaleDown: down.copied()}
}

// copied returns a copy of r that shares no pointer with it.
func (r ScalingRules) copied() *ScalingRules {
	out := r
	if r.StabilizationWindowSeconds != nil {
		out.StabilizationWindowSeconds = ptr(*r.StabilizationWindowSeconds)
	}
	out.Policies = slices.Clone(r.Policies)
	return &out
}

func (k KEDAQueueConfig) withDefaults() KEDAQueueConfig {
	k.EPPScaler = k.EPPScaler.withDefaults(queueBehavior())
	setDefault(&k.QueueThreshold, 1)
	setDefault(&k.RunningThreshold, 16)
	return k
}

func (k KEDASaturationConfig) withDefaults() KEDASaturationConfig {
	k.EPPScaler = k.EPPScaler.withDefaults(queueBehavior())
	setDefault(&k.SaturationThreshold, 0.7)
	setDefault(&k.RunningThreshold, 16)
	return k
}

func (k KEDATokensConfig) withDefaults() KEDATokensConfig {
	k.EPPScaler = k.EPPScaler.withDefaults(tokensBehavior())
	setDefault(&k.BacklogSeconds, 1.5)
	setDefault(&k.KVThreshold, 0.8)
	return k
}

func (k KEDASLOConfig) withDefaults() KEDASLOConfig {
	// The guide's example keeps 3 replicas at least, a choice for its own
	// fleet; the minimum here is 1, as for the other paths.
	k.EPPScaler = k.EPPScaler.withDefaults(sloBehavior())
	setDefault(&k.ThetaUp, 0.55)
	setDefault(&k.ThetaDown, 0.40)
	setDefault(&k.Quantile, 0.9)
	setDefault(&k.Clamp, 2)
	setDefault(&k.WindowSeconds, 60)
	setDefault(&k.AverageSeconds, 45)
	setDefault(&k.RuleSeconds, 15)
	return k
}

// trigger is one ScaledObject trigger's value and AverageValue target.
type trigger struct{ value, target float64 }

// kedaEPP is one of the four paths: an HPA per model fed by its triggers.
type kedaEPP struct {
	name string
	cfg  EPPScaler
	// triggers reads model m's triggers from the view (ok false: no
	// metric yet, the HPA keeps the count); current is the model's spec
	// count, ready its ready replicas.
	triggers func(v *View, m int, current, ready int) ([]trigger, bool)
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

func (k *kedaEPP) readsEPP() {}

var _ eppReader = (*kedaEPP)(nil)

// Decide implements Autoscaler.
func (k *kedaEPP) Decide(v *View) []int {
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
func modelOrder(v *View) [][]int {
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
func adjust(v *View, idx []int, delta int, out []int) {
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
func freeAccelerators(v *View, out []int) map[string]int {
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
	reg := func(name, summary string, order int, knobs map[string]knob, build func(*Scenario) *kedaEPP) {
		registerBaseline(Baseline{Name: name, Order: order, Sweep: true, Summary: summary, Knobs: knobs,
			New: func(sc *Scenario, _ string) (Autoscaler, error) { return build(sc), nil }})
	}
	queue := func(a *Autoscalers) *EPPScaler { return &a.KEDAQueue.EPPScaler }
	reg("keda-queue", "llm-d's KEDA guide on the endpoint picker's queued and running requests", 31,
		map[string]knob{
			"queueThreshold": {nil, func(a *Autoscalers) *float64 { return &a.KEDAQueue.QueueThreshold }, 0, fromZero(1e6, true, false)},
			"runningThreshold": {[]float64{4, 8, 16, 32},
				func(a *Autoscalers) *float64 { return &a.KEDAQueue.RunningThreshold }, 0, fromZero(1e6, true, false)},
			"scaleUpWindowSeconds":   {[]float64{0, 300}, scaleWindow(queue, queueBehavior, true), 0, fromZero(3600, false, false)},
			"scaleDownWindowSeconds": {nil, scaleWindow(queue, queueBehavior, false), 0, fromZero(3600, false, false)},
		}, newKEDAQueue)
	sat := func(a *Autoscalers) *EPPScaler { return &a.KEDASaturation.EPPScaler }
	reg("keda-saturation", "llm-d's KEDA guide on the endpoint picker's pool saturation and running requests", 32,
		map[string]knob{
			"saturationThreshold": {nil, func(a *Autoscalers) *float64 { return &a.KEDASaturation.SaturationThreshold }, 0, fromZero(1e6, true, false)},
			"runningThreshold": {[]float64{4, 8, 16, 32},
				func(a *Autoscalers) *float64 { return &a.KEDASaturation.RunningThreshold }, 0, fromZero(1e6, true, false)},
			"scaleUpWindowSeconds":   {[]float64{0, 300}, scaleWindow(sat, queueBehavior, true), 0, fromZero(3600, false, false)},
			"scaleDownWindowSeconds": {nil, scaleWindow(sat, queueBehavior, false), 0, fromZero(3600, false, false)},
		}, newKEDASaturation)
	tok := func(a *Autoscalers) *EPPScaler { return &a.KEDATokens.EPPScaler }
	reg("keda-tokens", "llm-d's token-aware KEDA guide: seconds of prefill backlog and KV-cache usage", 33,
		map[string]knob{
			"backlogSeconds": {[]float64{0.5, 1, 1.5, 3},
				func(a *Autoscalers) *float64 { return &a.KEDATokens.BacklogSeconds }, 0, fromZero(3600, true, false)},
			"kvThreshold": {[]float64{0.5, 0.8},
				func(a *Autoscalers) *float64 { return &a.KEDATokens.KVThreshold }, 0, fromZero(1, true, false)},
			"scaleUpWindowSeconds":   {nil, scaleWindow(tok, tokensBehavior, true), 0, fromZero(3600, false, false)},
			"scaleDownWindowSeconds": {nil, scaleWindow(tok, tokensBehavior, false), 0, fromZero(3600, false, false)},
		}, newKEDATokens)
	slo := func(a *Autoscalers) *EPPScaler { return &a.KEDASLO.EPPScaler }
	reg("keda-slo", "llm-d's SLO-aware KEDA guide: P90 TTFT and TPOT against the SLO, through its control law", 34,
		map[string]knob{
			"thetaUp": {[]float64{0.45, 0.55, 0.7, 0.85},
				func(a *Autoscalers) *float64 { return &a.KEDASLO.ThetaUp }, 0, fromZero(10, true, false)},
			"thetaDown":              {nil, func(a *Autoscalers) *float64 { return &a.KEDASLO.ThetaDown }, 0, fromZero(10, true, false)},
			"quantile":               {nil, func(a *Autoscalers) *float64 { return &a.KEDASLO.Quantile }, 0, fromZero(1, true, true)},
			"scaleUpWindowSeconds":   {nil, scaleWindow(slo, sloBehavior, true), 0, fromZero(3600, false, false)},
			"scaleDownWindowSeconds": {nil, scaleWindow(slo, sloBehavior, false), 0, fromZero(3600, false, false)},
		}, newKEDASLO)
}

// scaleWindow is a knob's field: a stabilization window of a path's
// behaviour (up or down). Each call gives the configuration a behaviour of
// its own, so sweep points copied from one scenario share none.
func scaleWindow(get func(*Autoscalers) *EPPScaler, def func() Behavior, up bool) func(*Autoscalers) *float64 {
	return func(a *Autoscalers) *float64 {
		e := get(a)
		e.Behavior = completed(e.Behavior, def())
		b := e.Behavior
		if up {
			return b.ScaleUp.StabilizationWindowSeconds
		}
		return b.ScaleDown.StabilizationWindowSeconds
	}
}

func newKEDAQueue(sc *Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDAQueue
	return &kedaEPP{name: "keda-queue", cfg: c.EPPScaler, triggers: func(v *View, m, _, _ int) ([]trigger, bool) {
		queue, running, _, _, _, ok := v.EPP.Gauges(m)
		return []trigger{{queue, c.QueueThreshold}, {running, c.RunningThreshold}}, ok
	}}
}

func newKEDASaturation(sc *Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDASaturation
	return &kedaEPP{name: "keda-saturation", cfg: c.EPPScaler, triggers: func(v *View, m, _, _ int) ([]trigger, bool) {
		_, running, saturation, _, _, ok := v.EPP.Gauges(m)
		return []trigger{{saturation, c.SaturationThreshold}, {running, c.RunningThreshold}}, ok
	}}
}

func newKEDATokens(sc *Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDATokens
	speed := make([]float64, len(sc.Models))
	for m, mod := range sc.Models {
		speed[m] = c.PrefillTokensPerSecond
		if speed[m] == 0 {
			speed[m] = prefillSpeed(cheapest(mod.Variants))
		}
	}
	return &kedaEPP{name: "keda-tokens", cfg: c.EPPScaler, triggers: func(v *View, m, _, _ int) ([]trigger, bool) {
		_, _, _, tokens, kv, ok := v.EPP.Gauges(m)
		return []trigger{{tokens / speed[m], c.BacklogSeconds}, {kv, c.KVThreshold}}, ok
	}}
}

// cheapest is the variant with the lowest cost per replica (the first of
// equals).
func cheapest(vs []Variant) Variant {
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
func prefillSpeed(v Variant) float64 {
	c := serverConfig(&v)
	chunk := v.MaxBatchedTokens
	ttft := c.PrefillSeconds(chunk) + c.OverheadSeconds(chunk) + c.TokenOverheadSeconds()
	if !(ttft > 0) {
		return math.Inf(1)
	}
	return float64(chunk) / ttft
}

func newKEDASLO(sc *Scenario) *kedaEPP {
	c := sc.Autoscalers.KEDASLO
	slos := make([]SLO, len(sc.Models))
	for m, mod := range sc.Models {
		slos[m] = poolSLO(mod)
	}
	return &kedaEPP{name: "keda-slo", cfg: c.EPPScaler, triggers: func(v *View, m, current, ready int) ([]trigger, bool) {
		s, ok := c.signal(v.EPP, m, slos[m])
		return []trigger{{controlLaw(s, c.ThetaUp, c.ThetaDown, current, ready), 1}}, ok
	}}
}

// poolSLO is the SLO pair of a model's pool: with classes (whose SLOs
// judge the model's requests) the strictest of theirs, else the model's;
// the guide's defaults (3 s, 100 ms) where none is set.
func poolSLO(m Model) SLO {
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
	setDefault(&s.TTFTMs, 3000)
	setDefault(&s.ITLMs, 100)
	return s
}

// signal is the recording rules' s for model m as KEDA reads it now: the
// newest rule evaluation the pipeline's delay lets through, averaging the
// clamped raw signal of the evaluations within AverageSeconds. ok is false
// before the first evaluation.
func (k KEDASLOConfig) signal(e *EPPMetrics, m int, slo SLO) (float64, bool) {
	last := math.Floor((e.now-e.delay)/k.RuleSeconds) * k.RuleSeconds
	if last < 0 {
		return 0, false
	}
	sum, n := 0.0, 0
	for t := last; t > last-k.AverageSeconds && t >= 0; t -= k.RuleSeconds {
		sum += math.Min(k.raw(e, m, t, slo), k.Clamp)
		n++
	}
	return sum / float64(n), true
}

// raw is the rule's raw signal at t: max(P90 TTFT / S_ttft, P90 TPOT /
// S_tpot), a quantile Prometheus returns as NaN (no traffic) counting 0.
func (k KEDASLOConfig) raw(e *EPPMetrics, m int, t float64, slo SLO) float64 {
	ttft, tpot, okT, okP := e.latencyQuantiles(m, t, k.WindowSeconds, k.Quantile)
	s := 0.0
	if okT {
		s = ttft * 1000 / slo.TTFTMs
	}
	if okP {
		s = math.Max(s, tpot*1000/slo.ITLMs)
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
