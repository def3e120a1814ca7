// Package engine is WVA's decision engine: from one snapshot of the fleet
// (per-pod metrics, variants, inventory, configuration, the time) it decides
// how many replicas each variant should have, and says why. The controller,
// the simulator and `wva plan` all run it.
//
// A cycle is a pure function of the snapshot plus the State carried between
// cycles (learned parameters, last good decisions, recent recommendations,
// last traffic). The package imports nothing from Kubernetes or Prometheus
// and reads no clock: the time comes in the snapshot.
//
// See docs/engine.md for every rule and its source.
package engine

import (
	"time"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Mode selects the analyzers (docs/engine.md §5).
type Mode string

// Modes.
const (
	ModeCapacityOnly Mode = "capacity-only" // saturation analyzer only (the default)
	ModeModelOnly    Mode = "model-only"    // queueing-model analyzer only
	ModeHybrid       Mode = "hybrid"        // both, arbitrated (docs/engine.md §5)
)

// OptimizerKind selects the allocator (docs/engine.md §4; the WVA paper §IV.G).
type OptimizerKind string

// Optimizers.
const (
	OptimizerUnlimited OptimizerKind = "unlimited" // per model, infinite cluster capacity (the default)
	OptimizerLimited   OptimizerKind = "limited"   // global, under the accelerator inventory
)

// Snapshot is everything one decision cycle sees.
type Snapshot struct {
	Time      time.Time     `json:"time"`
	Mode      Mode          `json:"mode,omitempty"`
	Optimizer OptimizerKind `json:"optimizer,omitempty"`
	// Inventory is the number of accelerators of each type that the
	// variants may use in total (limited mode).
	Inventory map[string]int `json:"inventory,omitempty"`
	// Saturation holds the default thresholds; models may override them.
	Saturation *SaturationConfig `json:"saturation,omitempty"`
	// ServiceClasses by name (docs/configuration.md).
	ServiceClasses map[string]ServiceClass `json:"serviceClasses,omitempty"`
	Config         Config                  `json:"config,omitempty"`
	Models         []Model                 `json:"models"`
}

// Config holds the engine's settings. Zero values mean the documented
// defaults.
type Config struct {
	// SLOMultiplier k for SLO inference from learned parameters (default 3;
	// the WVA queueing-model guide §3.2).
	SLOMultiplier float64 `json:"sloMultiplier,omitempty"`
	// TuningEnabled sizes with learned parameters (once warmed up) and runs
	// the tuner on each cycle's observations.
	TuningEnabled bool `json:"tuningEnabled,omitempty"`
	// TunerIdle skips this cycle's tuner step (between tuner periods); the
	// learned parameters are still used. Only meaningful with
	// TuningEnabled.
	TunerIdle bool `json:"tunerIdle,omitempty"`
	// TransientDelaySeconds: pods younger than this are not used for tuning
	// (default 120; the WVA queueing-model guide §8).
	TransientDelaySeconds float64 `json:"transientDelaySeconds,omitempty"`
	// ScaleToZeroRetentionSeconds: a model with minReplicas 0 scales to zero
	// only after no request arrived for this long (default 600).
	ScaleToZeroRetentionSeconds float64 `json:"scaleToZeroRetentionSeconds,omitempty"`
	// ScaleDownStabilizationSeconds: a scale-down follows the highest
	// recommendation of this window (default 300, as HPA).
	ScaleDownStabilizationSeconds float64 `json:"scaleDownStabilizationSeconds,omitempty"`
	// MetricsMaxAgeSeconds: older pod metrics count as stale (default 180).
	MetricsMaxAgeSeconds float64 `json:"metricsMaxAgeSeconds,omitempty"`
	// MaxQueueSize is Q of the queueing model (default 100).
	MaxQueueSize int `json:"maxQueueSize,omitempty"`
	// AllocationAlgorithm for unlimited mode: "exact" (default) or "greedy"
	// (the reference's cost-aware greedy, kept for comparison).
	AllocationAlgorithm string `json:"allocationAlgorithm,omitempty"`
	// SaturationPolicy for limited mode: None (default), PriorityExhaustive,
	// PriorityRoundRobin or RoundRobin (docs/engine.md §4).
	SaturationPolicy string `json:"saturationPolicy,omitempty"`
	// AcceleratorPenaltyFactor φ of the transition penalty (default 0.1;
	// docs/engine.md §4).
	AcceleratorPenaltyFactor float64 `json:"acceleratorPenaltyFactor,omitempty"`
	// SpareQuantile q: the queueing-model analyzer sizes each model for the
	// q-quantile of its arrival-rate forecast over the provisioning horizon
	// (the time a new replica takes to become ready, plus one cycle), so
	// that capacity ordered now is there when the load arrives. 0 (the
	// default) derives it from each model's attainment target a:
	// SpareQuantileFor(a), 0.95 at the default 0.99 and 0.5 (the
	// forecast's mean, which still follows a trend) at 0.9 or below. A
	// value set here applies to every model.
	SpareQuantile float64 `json:"spareQuantile,omitempty"`
	// SurgeRatio r declares the surge every model's demand may make within
	// one provisioning horizon (the time a new replica takes to become
	// ready): the queueing-model analyzer plans for at least r times the
	// demand measured now, so that the fleet absorbs such a rise before
	// any replica it orders could serve (docs/engine.md §3 item 9). 0 or 1
	// (the default): none; at most MaxSurgeRatio. Model.SurgeRatio
	// overrides it.
	SurgeRatio float64 `json:"surgeRatio,omitempty"`
	// DisableForecast sizes for the measured arrival rate only.
	DisableForecast bool `json:"disableForecast,omitempty"`
	// DisableFeedback turns the attainment feedback off: the capacity the
	// model sizes is then never corrected by the attainment the pods'
	// histograms show (docs/engine.md §3 item 11).
	DisableFeedback bool `json:"disableFeedback,omitempty"`
	// ProvisioningSeconds is the time from scale-up to Ready assumed for a
	// variant until the engine has measured it (default 120).
	ProvisioningSeconds float64 `json:"provisioningSeconds,omitempty"`
	// TTFTAttainment, when set (0 < a < 1), sizes replicas so that a share
	// a of the requests is predicted to meet the TTFT target, instead of
	// the mean TTFT meeting it (0, the default, sizes for the mean). It is
	// also the attainment target (Attainment) where that is not set: an
	// alias kept from before the target existed.
	TTFTAttainment float64 `json:"ttftAttainment,omitempty"`
	// CapacityModel is how a variant's capacity is sized: "queueing" (the
	// default: one queue per replica, mean latencies or the TTFT
	// attainment above) or "fleet" (WVA's capacity model, internal/
	// capacity: the server model behind the router, each request's TTFT
	// and ITL, the fleet's pooling; docs/queueing.md §7). The fleet model's
	// curves come from the engine's capacity model (SetCapacityModel);
	// until a variant's curve is computed the queueing model sizes it.
	CapacityModel string `json:"capacityModel,omitempty"`
	// Attainment is every model's target share of requests within both the
	// TTFT and the ITL target where neither the model nor its service class
	// sets one: what the attainment feedback steers to, the forecast's
	// spare covers and the fleet model sizes for (default TTFTAttainment
	// where that is set, else 0.99).
	Attainment float64 `json:"attainment,omitempty"`
	// TokenCV is the coefficient of variation the fleet model assumes for
	// prompt and output lengths around the observed means (lognormal;
	// default 1).
	TokenCV float64 `json:"tokenCV,omitempty"`
	// MaxReplicasDefault caps a variant whose maxReplicas is unset
	// (default 1000). A variant already running more, or with a higher
	// minReplicas, keeps that many as its cap.
	MaxReplicasDefault int `json:"maxReplicasDefault,omitempty"`
	// ScaleUpLimitFactor and ScaleUpLimitReplicas bound one cycle's
	// scale-up of a variant to max(current × factor, current + replicas)
	// (defaults 4 and 8), so that no metric, however wrong, can order
	// thousands of replicas at once. A variant may set its own.
	ScaleUpLimitFactor   float64 `json:"scaleUpLimitFactor,omitempty"`
	ScaleUpLimitReplicas int     `json:"scaleUpLimitReplicas,omitempty"`
	// MaxPodArrivalRPS: a pod reporting more requests/s than this has
	// implausible metrics, and its variant holds (default 10 000). A pod
	// that reports over ImplausibleCapacityFactor (100) times what its
	// variant's known parameters let one replica serve is implausible too.
	MaxPodArrivalRPS float64 `json:"maxPodArrivalRPS,omitempty"`
	// TunerBudget is the most tuner steps one cycle runs (default
	// DefaultTunerBudget). Where more variants have an observation, those
	// whose tuner stepped longest ago step, the rest wait for a later
	// cycle and are sized with what their tuners stored: a step costs tens
	// of microseconds of CPU a variant, and the cycle's time must stay
	// bounded however large the fleet (docs/engine.md §7).
	TunerBudget int `json:"tunerBudget,omitempty"`
	// Tuner holds the tuner's settings (the controller's tuner ConfigMap);
	// the service model and queue size come from the variant and from
	// MaxQueueSize.
	Tuner tuner.Config `json:"-"`
}

// SaturationConfig are the thresholds of the saturation analyzer (the WVA
// saturation guide; the WVA paper §III.B). Zero values mean the defaults.
type SaturationConfig struct {
	KVCacheThreshold     float64 `json:"kvCacheThreshold,omitempty"`     // τ_kv (default 0.80)
	QueueLengthThreshold float64 `json:"queueLengthThreshold,omitempty"` // τ_q (default 5)
	KVSpareTrigger       float64 `json:"kvSpareTrigger,omitempty"`       // ε_kv (default 0.10)
	QueueSpareTrigger    float64 `json:"queueSpareTrigger,omitempty"`    // ε_q (default 3)
	// MinNonSaturatedReplicasForScaleDown replicas must stay non-saturated
	// after a scale-down (default 1; the WVA guide's 2 cost 17 % more on the
	// diurnal scenario at the same SLO attainment: docs/engine.md).
	MinNonSaturatedReplicasForScaleDown int `json:"minNonSaturatedReplicasForScaleDown,omitempty"`
	// KVScaleUpThreshold, where set, is τ_kv for the analyzer's scale-up
	// (which replicas count as saturated, the spare averaged against it,
	// the supply a replica adds) while the queueing model sizes the model;
	// the scale-down check keeps KVCacheThreshold, so the two leave a dead
	// band. Below KVCacheThreshold (or 0) KVCacheThreshold acts: an
	// override of one need not restate the other (docs/engine.md §2 item 2).
	KVScaleUpThreshold float64 `json:"kvScaleUpThreshold,omitempty"`
}

// ServiceClass is a named SLO and priority (docs/configuration.md).
type ServiceClass struct {
	Priority int     `json:"priority"` // 1 is the highest
	TTFTMs   float64 `json:"ttftMs,omitempty"`
	ITLMs    float64 `json:"itlMs,omitempty"`
	TPS      float64 `json:"tps,omitempty"`
	// Attainment is the class's target share of requests within both the
	// TTFT and the ITL target (0: Config.Attainment).
	Attainment float64 `json:"attainment,omitempty"`
}

// SLO are explicit per-model targets (the WVA queueing-model guide §3.1).
type SLO struct {
	TTFTMs float64 `json:"ttftMs,omitempty"`
	ITLMs  float64 `json:"itlMs,omitempty"`
	TPS    float64 `json:"tps,omitempty"`
}

// Model is one served model and its variants.
type Model struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace,omitempty"`
	// ServiceClass names an entry of Snapshot.ServiceClasses.
	ServiceClass string `json:"serviceClass,omitempty"`
	// Priority overrides the service class's (1 is the highest; default 1).
	Priority int `json:"priority,omitempty"`
	// SLO overrides the service class's targets.
	SLO *SLO `json:"slo,omitempty"`
	// SLOMultiplier overrides Config.SLOMultiplier for this model.
	SLOMultiplier float64 `json:"sloMultiplier,omitempty"`
	// Attainment overrides the service class's and Config.Attainment: the
	// model's target share of requests within both its TTFT and its ITL
	// target (0: inherit).
	Attainment float64 `json:"attainment,omitempty"`
	// SurgeRatio overrides Config.SurgeRatio for this model: the rise its
	// demand may make within one provisioning horizon, which its fleet
	// holds the capacity for (0: inherit; 1: none).
	SurgeRatio float64 `json:"surgeRatio,omitempty"`
	// Saturation overrides individual default thresholds for this model.
	Saturation *SaturationConfig `json:"saturation,omitempty"`
	// GatewayWaitingRequests are requests for this model held at the
	// gateway (no replica could take them), the signal for scale from zero.
	GatewayWaitingRequests float64 `json:"gatewayWaitingRequests,omitempty"`
	// ArrivalRateRPS, when set, is the model's arrival rate measured where
	// requests enter (the gateway, or every pod of the model including
	// those shutting down). The demand is the larger of it and the sum over
	// the pods in the snapshot, which misses the requests of pods already
	// removed. A value that is not finite and ≥ 0 is ignored.
	ArrivalRateRPS float64 `json:"arrivalRateRps,omitempty"`
	// IdleSeconds, when set, says how long ago the last request arrived
	// (for scale to zero when the engine has no history, as in `wva plan`).
	IdleSeconds *float64  `json:"idleSeconds,omitempty"`
	Variants    []Variant `json:"variants"`
}

// Variant is one way of serving the model: an accelerator arrangement and
// its replicas (the WVA paper §III.A).
type Variant struct {
	Name                   string  `json:"name"`
	Accelerator            string  `json:"accelerator"`
	AcceleratorsPerReplica int     `json:"acceleratorsPerReplica,omitempty"` // default 1
	Cost                   float64 `json:"cost,omitempty"`                   // per replica (default 10)
	MinReplicas            *int    `json:"minReplicas,omitempty"`            // default 1; 0 allows scale to zero
	MaxReplicas            int     `json:"maxReplicas,omitempty"`            // 0: no limit
	CurrentReplicas        int     `json:"currentReplicas"`
	ReadyReplicas          int     `json:"readyReplicas"`
	// PendingReplicas are starting and count as anticipated supply. When
	// omitted it is CurrentReplicas − ReadyReplicas.
	PendingReplicas *int   `json:"pendingReplicas,omitempty"`
	Role            string `json:"role,omitempty"` // "prefill", "decode" or "" (both)
	// ServiceModel and Params describe the variant's speed when known
	// (profiled); otherwise they are learned (Config.TuningEnabled).
	ServiceModel string        `json:"serviceModel,omitempty"` // "iteration" (default) or "linear"
	Params       *tuner.Params `json:"params,omitempty"`
	MaxBatchSize int           `json:"maxBatchSize,omitempty"` // default: from pods, else 256
	// MaxBatchTokens is the server's token budget per engine step
	// (--max-num-batched-tokens), when known. Reported; the queueing
	// model does not use it yet.
	MaxBatchTokens int `json:"maxBatchTokens,omitempty"`
	// ScaleUpLimitFactor and ScaleUpLimitReplicas override the
	// Config's per-cycle scale-up limit for this variant (0: the Config's).
	ScaleUpLimitFactor   float64 `json:"scaleUpLimitFactor,omitempty"`
	ScaleUpLimitReplicas int     `json:"scaleUpLimitReplicas,omitempty"`
	Pods                 []Pod   `json:"pods,omitempty"`
}

// Pod holds one replica's metrics, as a Prometheus collector reads them
// (docs/collector.md).
type Pod struct {
	Name string `json:"name"`
	// AgeSeconds since the pod became ready (for the tuner's transient
	// delay); 0 when unknown.
	AgeSeconds float64 `json:"ageSeconds,omitempty"`
	// StartupSeconds is how long the pod took from its creation to Ready
	// (0 when unknown). Until the engine has seen one of the variant's
	// scale-ups through, the pods' start-ups are its provisioning time
	// (Provisioning.seed): a fleet that was running before the engine
	// started has shown how long its replicas take. Values outside
	// (0, MaxStartupSeconds] (an hour) are ignored.
	StartupSeconds float64 `json:"startupSeconds,omitempty"`
	// SampledAt is when the metrics were read; zero means "now".
	SampledAt time.Time `json:"sampledAt,omitempty"`
	// Missing marks a pod whose metrics could not be read.
	Missing bool `json:"missing,omitempty"`

	ArrivalRateRPS  float64 `json:"arrivalRate"`
	AvgInputTokens  float64 `json:"avgInputTokens,omitempty"`
	AvgOutputTokens float64 `json:"avgOutputTokens,omitempty"`
	AvgTTFTMs       float64 `json:"avgTTFTMs,omitempty"`
	AvgITLMs        float64 `json:"avgITLMs,omitempty"`
	KVCacheUsage    float64 `json:"kvCacheUsage"` // 0..1
	WaitingRequests float64 `json:"waitingRequests"`
	RunningRequests float64 `json:"runningRequests,omitempty"`
	// PreemptionsPerSec is the rate at which the pod preempted requests
	// (vLLM's num_preemptions_total over the scrape window); the tuner
	// skips a cycle in which its pods preempted (docs/tuner.md).
	PreemptionsPerSec float64 `json:"preemptionsPerSec,omitempty"`
	KVBlocks          int     `json:"kvBlocks,omitempty"`
	BlockSize         int     `json:"blockSize,omitempty"`
	MaxBatchSize      int     `json:"maxBatchSize,omitempty"`
	MaxBatchTokens    int     `json:"maxBatchTokens,omitempty"`
	// TTFTBuckets and TPOTBuckets are the pod's TTFT histogram and its
	// per-request time-per-output-token histogram over the window (vLLM's
	// time_to_first_token_seconds and request_time_per_output_token_seconds),
	// for the attainment feedback; optional (docs/engine.md §3 item 11).
	TTFTBuckets []Bucket `json:"ttftBuckets,omitempty"`
	TPOTBuckets []Bucket `json:"tpotBuckets,omitempty"`
}

// Defaults.
const (
	DefaultSLOMultiplier        = 3.0
	DefaultTransientDelay       = 120.0
	DefaultScaleToZeroRetention = 600.0
	DefaultStabilization        = 300.0
	DefaultMetricsMaxAge        = 180.0
	DefaultMaxBatchSize         = 256
	DefaultVariantCost          = 10.0
	DefaultAcceleratorPenalty   = 0.1
	DefaultProvisioning         = 120.0
	DefaultMaxReplicas          = 1000
	DefaultScaleUpLimitFactor   = 4.0
	DefaultScaleUpLimitReplicas = 8
	DefaultMaxPodArrivalRPS     = 10000.0
	DefaultAttainment           = 0.99
	// MaxSurgeRatio bounds a declared surge (Config.SurgeRatio,
	// Model.SurgeRatio): a hundredfold rise within one start-up.
	MaxSurgeRatio  = 100.0
	DefaultTokenCV = 1.0
	// DefaultTunerBudget is Config.TunerBudget's default: at about 20 µs
	// of CPU a step, 500 steps keep a 4 000-variant fleet's learning cycle
	// within its 50-ms budget on two cores (docs/engine.md §7), and leave
	// a fleet of up to 500 learning variants stepping every cycle.
	DefaultTunerBudget = 500
	// MaxTunerBudget bounds Config.TunerBudget.
	MaxTunerBudget = 1_000_000
	// MaxStabilizationSeconds bounds Config.ScaleDownStabilizationSeconds
	// (the controller's WVA_SCALE_DOWN_STABILIZATION), MaxRetentionSeconds
	// Config.ScaleToZeroRetentionSeconds (a week), and MaxDelaySeconds
	// Config.MetricsMaxAgeSeconds, TransientDelaySeconds and
	// ProvisioningSeconds. Beyond them a time.Duration of the window
	// overflows long before anything a user means is reached.
	MaxStabilizationSeconds = 3600.0
	MaxRetentionSeconds     = 7 * 24 * 3600.0
	MaxDelaySeconds         = 3600.0
	// MaxQueueSizeLimit bounds Config.MaxQueueSize: the queueing model's
	// memory and time grow with it.
	MaxQueueSizeLimit = 1_000_000
	// ImplausibleCapacityFactor: a pod reporting this many times what one
	// replica can serve (from the variant's known parameters) has
	// implausible metrics.
	ImplausibleCapacityFactor = 100.0
	// Fallback SLO (the WVA queueing-model guide §3.3): 1.5× observed, capped.
	FallbackHeadroom = 1.5
	MaxFallbackTTFT  = 10000.0
	MaxFallbackITL   = 500.0
)

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.SLOMultiplier, DefaultSLOMultiplier)
	def(&c.TransientDelaySeconds, DefaultTransientDelay)
	def(&c.ScaleToZeroRetentionSeconds, DefaultScaleToZeroRetention)
	def(&c.ScaleDownStabilizationSeconds, DefaultStabilization)
	def(&c.MetricsMaxAgeSeconds, DefaultMetricsMaxAge)
	def(&c.AcceleratorPenaltyFactor, DefaultAcceleratorPenalty)
	def(&c.ProvisioningSeconds, DefaultProvisioning)
	if c.Attainment == 0 && c.TTFTAttainment > 0 {
		// ttftAttainment is an alias of the attainment target where none
		// is set (issue 31): who asked for that share of requests within
		// the TTFT target asked for that target.
		c.Attainment = c.TTFTAttainment
	}
	def(&c.Attainment, DefaultAttainment)
	def(&c.TokenCV, DefaultTokenCV)
	def(&c.ScaleUpLimitFactor, DefaultScaleUpLimitFactor)
	def(&c.MaxPodArrivalRPS, DefaultMaxPodArrivalRPS)
	if c.MaxReplicasDefault == 0 {
		c.MaxReplicasDefault = DefaultMaxReplicas
	}
	if c.ScaleUpLimitReplicas == 0 {
		c.ScaleUpLimitReplicas = DefaultScaleUpLimitReplicas
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = 100
	}
	if c.TunerBudget == 0 {
		c.TunerBudget = DefaultTunerBudget
	}
	if c.AllocationAlgorithm == "" {
		c.AllocationAlgorithm = "exact"
	}
	if c.SaturationPolicy == "" {
		c.SaturationPolicy = "None"
	}
	return c
}

// DefaultKVCacheThreshold is the KV-cache usage at which the saturation
// analyzer counts a replica as saturated, unless configured.
const DefaultKVCacheThreshold = 0.80

// DefaultKVSpareTrigger is the spare KV-cache share below which the
// saturation analyzer scales up, unless configured; a KV threshold must
// lie above it.
const DefaultKVSpareTrigger = 0.10

// defaultSaturation are the WVA saturation guide's thresholds.
var defaultSaturation = SaturationConfig{
	KVCacheThreshold: DefaultKVCacheThreshold, QueueLengthThreshold: 5, KVSpareTrigger: DefaultKVSpareTrigger, QueueSpareTrigger: 3,
	MinNonSaturatedReplicasForScaleDown: 1,
}

// DefaultSaturation is the saturation analyzer's thresholds where nothing
// configures them.
func DefaultSaturation() SaturationConfig { return defaultSaturation }

// saturates is Eq. 2 of the saturation analyzer: a replica with this KV
// usage and queue is saturated.
func (base SaturationConfig) saturates(kv, queue float64) bool {
	return kv >= base.KVCacheThreshold || queue >= base.QueueLengthThreshold
}

// merged returns base with the non-zero fields of o.
func (base SaturationConfig) merged(o *SaturationConfig) SaturationConfig {
	if o == nil {
		return base
	}
	if o.KVCacheThreshold != 0 {
		base.KVCacheThreshold = o.KVCacheThreshold
	}
	if o.QueueLengthThreshold != 0 {
		base.QueueLengthThreshold = o.QueueLengthThreshold
	}
	if o.KVSpareTrigger != 0 {
		base.KVSpareTrigger = o.KVSpareTrigger
	}
	if o.QueueSpareTrigger != 0 {
		base.QueueSpareTrigger = o.QueueSpareTrigger
	}
	if o.MinNonSaturatedReplicasForScaleDown != 0 {
		base.MinNonSaturatedReplicasForScaleDown = o.MinNonSaturatedReplicasForScaleDown
	}
	if o.KVScaleUpThreshold != 0 {
		base.KVScaleUpThreshold = o.KVScaleUpThreshold
	}
	return base
}

// scaleUp is the configuration the analyzer's scale-up reads where the
// queueing model sizes the model: KVCacheThreshold raised to
// KVScaleUpThreshold, where that is set above it.
func (base SaturationConfig) scaleUp() SaturationConfig {
	if base.KVScaleUpThreshold > base.KVCacheThreshold {
		base.KVCacheThreshold = base.KVScaleUpThreshold
	}
	return base
}

func (v Variant) minReplicas() int {
	if v.MinReplicas == nil {
		return 1
	}
	return *v.MinReplicas
}

func (v Variant) maxReplicas() int {
	if v.MaxReplicas == 0 {
		return int(^uint(0) >> 2)
	}
	return v.MaxReplicas
}

func (v Variant) pending() int {
	if v.PendingReplicas != nil {
		return *v.PendingReplicas
	}
	return max(v.CurrentReplicas-v.ReadyReplicas, 0)
}

func (v Variant) cost() float64 {
	if v.Cost == 0 {
		return DefaultVariantCost
	}
	return v.Cost
}

func (v Variant) acceleratorsPerReplica() int { return max(v.AcceleratorsPerReplica, 1) }

func (v Variant) serviceModel() string {
	if v.ServiceModel == "" {
		return tuner.ModelIteration
	}
	return v.ServiceModel
}
