package engine

import (
	"time"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Action is the direction of a decision.
type Action string

// Actions.
const (
	ActionScaleUp   Action = "scale-up"
	ActionScaleDown Action = "scale-down"
	ActionNoChange  Action = "no-change"
)

// Reason is a machine-readable cause of a decision.
type Reason string

// Reasons, in the order the engine applies its rules.
const (
	ReasonSaturationScaleUp   Reason = "saturation-scale-up"
	ReasonSaturationScaleDown Reason = "saturation-scale-down"
	ReasonSaturationSteady    Reason = "saturation-steady"
	ReasonModelScaleUp        Reason = "model-scale-up"
	ReasonModelScaleDown      Reason = "model-scale-down"
	ReasonModelSteady         Reason = "model-steady"
	ReasonConsensus           Reason = "consensus"
	ReasonCapacityVeto        Reason = "capacity-veto"
	ReasonSafetyBlock         Reason = "safety-block"
	ReasonModelUnavailable    Reason = "model-analysis-unavailable"
	ReasonSLOMiss             Reason = "slo-miss"
	ReasonHoldMetrics         Reason = "hold-metrics-unavailable"
	ReasonScaleToZero         Reason = "scale-to-zero"
	ReasonScaleFromZero       Reason = "scale-from-zero"
	ReasonIdleRetention       Reason = "idle-retention"
	ReasonMinReplicas         Reason = "min-replicas"
	ReasonMaxReplicas         Reason = "max-replicas"
	ReasonStabilized          Reason = "scale-down-stabilized"
	ReasonInventoryLimited    Reason = "inventory-limited"
	ReasonScaleUpLimited      Reason = "scale-up-limited"
)

// HoldCause says why a variant's metrics could not be used.
type HoldCause string

// Hold causes.
const (
	HoldInvalid HoldCause = "invalid" // NaN, infinite, negative or out of range
	HoldMissing HoldCause = "missing" // no series, or a pod without metrics
	HoldStale   HoldCause = "stale"   // older than MetricsMaxAgeSeconds
	// HoldImplausible: finite values no server could produce, such as a
	// pod completing far more requests per second than its batch and
	// speed allow.
	HoldImplausible HoldCause = "implausible"
	// HoldPrometheusError: the metrics source could not be read at all
	// (the controller sets it; the engine never sees such a model).
	HoldPrometheusError HoldCause = "prometheus-error"
)

// severity orders the causes when a variant's pods have several: invalid
// values, then stale samples, then missing ones.
func (h HoldCause) severity() int {
	switch h {
	case HoldPrometheusError:
		return 5
	case HoldImplausible:
		return 4
	case HoldInvalid:
		return 3
	case HoldStale:
		return 2
	case HoldMissing:
		return 1
	}
	return 0
}

// Plan is the engine's answer for one cycle.
type Plan struct {
	Time     time.Time          `json:"time"`
	Mode     Mode               `json:"mode"`
	Variants []VariantDecision  `json:"variants"`
	Models   []ModelSummary     `json:"models"`
	Usage    map[string]GPUUsed `json:"acceleratorUsage,omitempty"`
	// TunerDeferred counts the variants whose tuner step this cycle the
	// tuning budget (Config.TunerBudget) deferred to a later cycle.
	TunerDeferred int `json:"tunerDeferred,omitempty"`
}

// GPUUsed is the accelerator use of a type before and after the plan.
type GPUUsed struct {
	Current   int `json:"current"`
	Desired   int `json:"desired"`
	Available int `json:"available,omitempty"` // the inventory (limited mode)
}

// ModelSummary is the model-level figures behind the variants' decisions.
type ModelSummary struct {
	Model     string  `json:"model"`
	Namespace string  `json:"namespace,omitempty"`
	DemandRPS float64 `json:"demandRps"`
	// PlannedRPS is the demand the queueing model sized for: DemandRPS
	// raised to the forecast's quantile over HorizonSeconds.
	PlannedRPS     float64 `json:"plannedRps,omitempty"`
	HorizonSeconds float64 `json:"horizonSeconds,omitempty"`
	// SpareQuantile is the forecast's quantile PlannedRPS is: the
	// configured one, else the one the model's attainment target gives
	// (SpareQuantileFor).
	SpareQuantile float64 `json:"spareQuantile,omitempty"`
	// SpareHeld: the scale-down window keeps the forecast's spare like the
	// rest of the target, as it does for a target above the default 0.99
	// (SpareHeld); false where the spare leaves as soon as the forecast
	// drops.
	SpareHeld bool `json:"spareHeld,omitempty"`
	// SurgeRatio is the model's declared surge (Config.SurgeRatio,
	// Model.SurgeRatio) when above 1: PlannedRPS is at least SurgeRatio
	// times DemandRPS.
	SurgeRatio float64 `json:"surgeRatio,omitempty"`
	// SpareCost is the price of the forecast's spare: the spare replicas
	// the queueing model planned over covering the measured demand, at
	// each variant's cost per replica (the units of
	// accelerator-unit-costs); 0 without a spare.
	SpareCost float64 `json:"spareCost,omitempty"`
	// CostBreakdown is CostAfter split by the rule that asks for each
	// replica (Breakdown): the model's need for the demand now, and the
	// headroom every other rule holds, priced.
	CostBreakdown *Breakdown `json:"costBreakdown,omitempty"`
	// SLO used by the queueing-model analyzer and where it came from:
	// "explicit", "service-class", "inferred" (k·α) or "observed" (1.5×).
	SLOSource  string  `json:"sloSource,omitempty"`
	SLOTTFTMs  float64 `json:"sloTtftMs,omitempty"`
	SLOITLMs   float64 `json:"sloItlMs,omitempty"`
	SLOTPS     float64 `json:"sloTps,omitempty"`
	ModelError string  `json:"modelError,omitempty"`
	// AttainmentTarget is the share of requests the model sizes to keep
	// within both targets; ObservedAttainment the share the pods'
	// histograms show over the window (of ObservedRequests requests);
	// CapacityFactor the attainment feedback's factor on the capacity per
	// replica, and FeedbackNote why this window did not move it, or what
	// bounded its rise, or that the target may be out of reach
	// (docs/engine.md §3 item 11).
	AttainmentTarget   float64 `json:"attainmentTarget,omitempty"`
	ObservedAttainment float64 `json:"observedAttainment,omitempty"`
	ObservedRequests   float64 `json:"observedRequests,omitempty"`
	CapacityFactor     float64 `json:"capacityFactor,omitempty"`
	FeedbackNote       string  `json:"feedbackNote,omitempty"`
	// AttainmentOutOfReach: the last window the feedback counted missed
	// the target with the capacity factor at its floor (½): more capacity
	// has not brought the attainment up; or every variant has been at its
	// maxReplicas, all Ready, for the whole window that missed it: the
	// configuration allows no more capacity. FeedbackNote says which.
	AttainmentOutOfReach bool `json:"attainmentOutOfReach,omitempty"`
	// Saturation analysis per role ("" when the model has one role).
	Saturation []SaturationDetail `json:"saturation,omitempty"`
	CostBefore float64            `json:"costBefore"`
	CostAfter  float64            `json:"costAfter"`
}

// VariantDecision is the decision for one variant, with its explanation.
type VariantDecision struct {
	Model       string `json:"model"`
	Namespace   string `json:"namespace,omitempty"`
	Variant     string `json:"variant"`
	Accelerator string `json:"accelerator"`
	Current     int    `json:"current"`
	Ready       int    `json:"ready"`
	Pending     int    `json:"pending"`
	Desired     int    `json:"desired"`
	Action      Action `json:"action"`
	Reason      Reason `json:"reason"`
	// Hold is why the metrics were unusable, when the variant is held
	// (Reason hold-metrics-unavailable): the most severe pod's cause.
	Hold HoldCause `json:"hold,omitempty"`
	// Explanation is one line for a person.
	Explanation string `json:"explanation"`
	// CapacityTarget and ModelTarget are the two analyzers' proposals
	// (-1 when the analyzer did not run or failed).
	CapacityTarget int          `json:"capacityTarget"`
	ModelTarget    int          `json:"modelTarget"`
	Queueing       *ModelDetail `json:"queueing,omitempty"`
	// Victims are the pods to remove first when the plan scales the
	// variant down (least-loaded, never saturated); the actuator marks
	// them with controller.kubernetes.io/pod-deletion-cost.
	Victims []string `json:"victims,omitempty"`
	// Breakdown is Desired split by the rule that asks for each replica:
	// the model's need, the forecast's spare, a backlog's transient
	// replicas, the saturation analysis, its safety block, the scale-down
	// window, other rules; all unsized where the queueing model did not
	// size the variant, all held while its metrics are unusable.
	Breakdown *Breakdown `json:"breakdown,omitempty"`
	// Draining is how many replicas are out of the gateway's rotation,
	// draining before the scale-down removes them; Desired is then the
	// count the drain allows now (the controller sets it, docs/controller.md).
	Draining int `json:"draining,omitempty"`
}

// SaturationDetail are the saturation analyzer's figures (docs/engine.md §2).
type SaturationDetail struct {
	Role          string  `json:"role,omitempty"`
	Replicas      int     `json:"replicas"`
	Saturated     int     `json:"saturated"`
	AvgSpareKV    float64 `json:"avgSpareKv"`
	AvgSpareQueue float64 `json:"avgSpareQueue"`
	ScaleUp       bool    `json:"scaleUp"`
	ScaleDownSafe bool    `json:"scaleDownSafe"`
	// LoadKV is the KV demand (tokens in use plus queued requests' tokens,
	// or the sum of usage fractions when block counts are unknown) and
	// SupplyKV the usable KV capacity of ready and pending replicas at
	// threshold minus trigger (the WVA paper, Eq. 4).
	LoadKV        float64 `json:"loadKv"`
	SupplyKV      float64 `json:"supplyKv"`
	LoadQueue     float64 `json:"loadQueue"`
	SupplyQueue   float64 `json:"supplyQueue"`
	ExtraReplicas int     `json:"extraReplicas"`
	Removable     int     `json:"removableReplicas"`
	Note          string  `json:"note,omitempty"`
}

// ModelDetail are the queueing-model analyzer's figures for a variant.
type ModelDetail struct {
	ParamsSource string        `json:"paramsSource,omitempty"` // "profiled", "learned" or "provisional" (a warming tuner's: it may only add replicas)
	Params       *tuner.Params `json:"params,omitempty"`
	// ParamsStdDev is the tuner's standard deviation of each learned
	// parameter after this cycle's step (learned parameters only).
	ParamsStdDev *tuner.Params `json:"paramsStdDev,omitempty"`
	// InputTokens, OutputTokens and MaxBatchSize are the request and the
	// batch limit the variant was sized at (the model's average tokens, the
	// variant's effective batch), so that a reader can redo the sizing.
	InputTokens           float64 `json:"inputTokens,omitempty"`
	OutputTokens          float64 `json:"outputTokens,omitempty"`
	MaxBatchSize          int     `json:"maxBatchSize,omitempty"`
	RateStarRPS           float64 `json:"rateStarRps"`
	CapacityPerReplicaRPS float64 `json:"capacityPerReplicaRps"`
	SupplyRPS             float64 `json:"supplyRps"` // ready replicas × capacity
	Binding               string  `json:"binding,omitempty"`
	Error                 string  `json:"error,omitempty"`
	Tuning                string  `json:"tuning,omitempty"`
	// CapacityModel is what sized the variant when Config.CapacityModel
	// is "fleet": "fleet", or "queueing" while its curve is computed (or
	// cannot be); FleetReplicas and FleetRateRPS are the fewest replicas
	// of it alone that cover the demand and their capacity; FleetNote says
	// why the fleet model did not size it.
	CapacityModel string  `json:"capacityModel,omitempty"`
	FleetReplicas int     `json:"fleetReplicas,omitempty"`
	FleetRateRPS  float64 `json:"fleetRateRps,omitempty"`
	FleetNote     string  `json:"fleetNote,omitempty"`
	// FeedbackFactor is the attainment feedback's factor already in
	// CapacityPerReplicaRPS (absent when 1; docs/engine.md §3 item 11).
	FeedbackFactor float64 `json:"feedbackFactor,omitempty"`
}
