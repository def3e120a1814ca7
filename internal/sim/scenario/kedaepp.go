package scenario

import "slices"

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
func QueueBehavior() Behavior {
	// keda-epp queue and saturation overlays: both windows 300 s, at most
	// double or halve per 15 s.
	r := ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
		Policies: []ScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}}
	d := r
	return Behavior{ScaleUp: &r, ScaleDown: &d}
}

func TokensBehavior() Behavior {
	return Behavior{
		ScaleUp: &ScalingRules{StabilizationWindowSeconds: ptr(0.0), SelectPolicy: "Max",
			Policies: []ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 180}}},
		ScaleDown: &ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
			Policies: []ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 300}}}}
}

func SLOBehavior() Behavior {
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
	e.Behavior = CompleteBehavior(e.Behavior, def)
	return e
}

// CompleteBehavior is b with what it leaves unset taken from def, sharing no
// pointer with b (def itself when b is nil; def must be fresh).
func CompleteBehavior(b *Behavior, def Behavior) *Behavior {
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
	k.EPPScaler = k.EPPScaler.withDefaults(QueueBehavior())
	setDefault(&k.QueueThreshold, 1)
	setDefault(&k.RunningThreshold, 16)
	return k
}

func (k KEDASaturationConfig) withDefaults() KEDASaturationConfig {
	k.EPPScaler = k.EPPScaler.withDefaults(QueueBehavior())
	setDefault(&k.SaturationThreshold, 0.7)
	setDefault(&k.RunningThreshold, 16)
	return k
}

func (k KEDATokensConfig) withDefaults() KEDATokensConfig {
	k.EPPScaler = k.EPPScaler.withDefaults(TokensBehavior())
	setDefault(&k.BacklogSeconds, 1.5)
	setDefault(&k.KVThreshold, 0.8)
	return k
}

func (k KEDASLOConfig) withDefaults() KEDASLOConfig {
	// The guide's example keeps 3 replicas at least, a choice for its own
	// fleet; the minimum here is 1, as for the other paths.
	k.EPPScaler = k.EPPScaler.withDefaults(SLOBehavior())
	setDefault(&k.ThetaUp, 0.55)
	setDefault(&k.ThetaDown, 0.40)
	setDefault(&k.Quantile, 0.9)
	setDefault(&k.Clamp, 2)
	setDefault(&k.WindowSeconds, 60)
	setDefault(&k.AverageSeconds, 45)
	setDefault(&k.RuleSeconds, 15)
	return k
}
