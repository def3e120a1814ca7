// Package config parses and validates WVA's ConfigMaps. It works on the
// ConfigMaps' data (map[string]string) and imports nothing from Kubernetes,
// so the controller, the tests and the docs share one set of rules. Every
// problem names the ConfigMap key and what is wrong with it; the controller
// keeps the last good configuration when a ConfigMap is invalid.
//
// docs/configuration.md lists every key with its default and an example.
package config

import (
	"time"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Default ConfigMap names (the WVA repository's names, so existing manifests
// work).
// The controller's flags may change them.
const (
	MainName           = "variantautoscaling-config"
	AcceleratorsName   = "accelerator-unit-costs"
	ServiceClassesName = "service-classes-config"
	SaturationName     = "wva-saturation-scaling-config"
	QueueingModelName  = "wva-queueing-model-config"
	TunerName          = "tuner-config"
	InventoryName      = "wva-accelerator-inventory"
)

// DefaultScaleFromZeroQuery is the demand signal for models at zero
// replicas: requests held in the inference gateway's flow-control queue,
// by model. llm-d's endpoint picker exports the gauge as
// llm_d_epp_flow_control_queue_size and, deprecated, under the inference
// extension's name; `or` takes the first where both exist, so nothing is
// counted twice and either alone works. A custom query must return series
// with the labels model_name and namespace (or the collector's namespace
// label).
const DefaultScaleFromZeroQuery = `sum by (namespace, model_name) (llm_d_epp_flow_control_queue_size or inference_extension_flow_control_queue_size)`

// DefaultGatewayRateQuery is each model's arrival rate at the inference
// gateway: the endpoint picker's request counter (inference_objective_*
// since the Gateway API Inference Extension's v1 API, inference_model_*
// before), by model. Unlike the sum over the model's pods it still counts
// requests served by pods that were removed within the window. Where the
// gateway exports neither, the query returns nothing and the engine uses
// the pods' rates alone. GatewayRateQueryOff disables it.
const DefaultGatewayRateQuery = `sum by (namespace, model_name) (rate(inference_objective_request_total[1m]) or rate(inference_model_request_total[1m]))`

// GatewayRateQueryOff as WVA_GATEWAY_RATE_QUERY disables the query.
const GatewayRateQueryOff = "none"

// Problem is one invalid key.
type Problem struct {
	ConfigMap string
	Key       string
	Message   string
}

func (p Problem) String() string { return p.ConfigMap + "/" + p.Key + ": " + p.Message }

// Error lists the problems of one ConfigMap. Parse functions return it
// (as error) when anything is invalid; the parsed value is then unusable.
type Error struct {
	ConfigMap string
	Problems  []Problem
}

// Prometheus are the settings of the Prometheus metrics source.
type Prometheus struct {
	URL                       string
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
	BearerTokenFile           string
	// BearerTokenOverHTTP allows the token over http:// (an explicit
	// opt-in; PROMETHEUS_BEARER_TOKEN_OVER_HTTP).
	BearerTokenOverHTTP      bool
	Timeout                  time.Duration // 0: the source's default
	Window                   time.Duration // 0: the source's default (1m)
	NamespaceLabel, PodLabel string        // "": the source's defaults
	// MetricsSchema names the serving engine's metric names
	// (PROMETHEUS_METRICS_SCHEMA: vllm, the default, or sglang).
	MetricsSchema string
}

// Main is the main ConfigMap (MainName).
type Main struct {
	Prometheus Prometheus
	// Interval between optimisation cycles (GLOBAL_OPT_INTERVAL, default 60s).
	Interval time.Duration
	// ScaleToZero allows variants with minReplicas 0 to reach zero
	// (WVA_SCALE_TO_ZERO, default false: minReplicas 0 acts as 1).
	ScaleToZero bool
	// Mode of the engine (WVA_MODE); "" means hybrid when the queueing-model
	// ConfigMap has a default entry, capacity-only otherwise.
	Mode engine.Mode
	// Optimizer (WVA_OPTIMIZER): unlimited (default) or limited.
	Optimizer engine.OptimizerKind
	// CapacitySource for limited mode (WVA_CAPACITY_SOURCE): "nodes"
	// (default; node labels) or "configmap" (InventoryName).
	CapacitySource string
	// ScaleFromZeroInterval is the fast loop's period
	// (WVA_SCALE_FROM_ZERO_INTERVAL, default 2s); ScaleFromZeroQuery its
	// demand signal (WVA_SCALE_FROM_ZERO_QUERY, default
	// DefaultScaleFromZeroQuery).
	ScaleFromZeroInterval time.Duration
	ScaleFromZeroQuery    string
	// GatewayRateQuery is each model's arrival rate at the gateway
	// (WVA_GATEWAY_RATE_QUERY, default DefaultGatewayRateQuery; "none":
	// no query), read every cycle and by the fast loop's surge check.
	GatewayRateQuery string
	// Surge makes the fast loop run an extra cycle when a model's load
	// outruns its last plan (WVA_SURGE, default false: on the shipped
	// scenarios it gained nothing and cost SLO on one; docs/engine.md).
	Surge bool
	// PodVariantLabel, when set, is the pod label (on the vLLM series) that
	// names the pod's VariantAutoscaling (WVA_POD_VARIANT_LABEL); when
	// empty pods are mapped to variants through their Deployment.
	PodVariantLabel string
	// Drain is how a scale-down drains the pods it removes
	// (WVA_DRAIN_TIMEOUT, WVA_DRAIN_METHOD).
	Drain Drain
	// Engine holds WVA_SCALE_TO_ZERO_RETENTION, WVA_SCALE_DOWN_STABILIZATION,
	// WVA_METRICS_MAX_AGE (durations), WVA_TRANSIENT_DELAY (duration),
	// WVA_MAX_QUEUE_SIZE, WVA_ALLOCATION_ALGORITHM, WVA_SATURATION_POLICY,
	// WVA_ACCELERATOR_PENALTY_FACTOR, WVA_SLO_MULTIPLIER, WVA_SPARE_QUANTILE,
	// WVA_FORECAST, WVA_ATTAINMENT_FEEDBACK, WVA_PROVISIONING_TIME,
	// WVA_TTFT_ATTAINMENT;
	// zero fields take
	// the engine's defaults, and a 0 the user wrote is ExplicitZero.
	Engine engine.Config
}

// Drain is how a scale-down takes the pods it removes out of the
// gateway's rotation and how long it waits for them to go idle.
type Drain struct {
	// Timeout bounds the wait (WVA_DRAIN_TIMEOUT, default 5m); 0 turns
	// draining off: the count drops at once.
	Timeout time.Duration
	// Method is DrainActivePorts (the default) or DrainLabel.
	Method string
	// Label is the pool-selector label a DrainLabel drain removes.
	Label string
}

// Drain methods (WVA_DRAIN_METHOD).
const (
	// DrainActivePorts sets the endpoint picker's active-ports annotation
	// to no port: llm-d's router (llm-d.ai/active-ports, v0.9 and later)
	// and the Gateway API Inference Extension's endpoint picker
	// (inference.networking.k8s.io/active-ports, v1.4 and later) stop
	// picking the pod.
	DrainActivePorts = "active-ports"
	// DrainLabel removes a label the InferencePool selects on ("label:KEY"),
	// for any gateway that follows the pool's selector.
	DrainLabel = "label"
)

// Accelerator is one entry of the accelerator costs ConfigMap (the WVA
// configuration guide): the cost of one accelerator of the type.
type Accelerator struct {
	// Name is the accelerator type, the ConfigMap key.
	Name string `json:"name"`
	// Count is the count field of the WVA configuration guide's format (default 1, ≥ 1). It does not
	// divide Cost: Cost is always the cost of ONE accelerator.
	Count int `json:"count"`
	// Cost of one accelerator of the type (> 0), in the unit the
	// variants' costs use.
	Cost float64 `json:"cost"`
	// MemoryGB is the memory of one accelerator in GB (informational; 0
	// when absent).
	MemoryGB float64 `json:"memory"`
}

// SaturationOverride is a per-model entry of the saturation ConfigMap.
type SaturationOverride struct {
	ModelID, Namespace string
	Config             engine.SaturationConfig
}

// Saturation is the saturation ConfigMap: a default and per-model
// overrides (matched by model_id and namespace).
type Saturation struct {
	Default   engine.SaturationConfig
	Overrides []SaturationOverride
}

// QueueingModelEntry is a per-model entry of the queueing-model ConfigMap
// (the WVA queueing-model guide §2).
type QueueingModelEntry struct {
	ModelID, Namespace string
	SLOMultiplier      float64 // 0: the default's
	TargetTTFTMs       float64 // both or neither
	TargetITLMs        float64
	// Attainment is the model's target share of requests within both
	// targets (0: its service class's, else WVA_ATTAINMENT).
	Attainment float64
	// SurgeRatio is the model's declared surge (0: WVA_SURGE_RATIO's).
	SurgeRatio float64
}

// QueueingModel is the queueing-model ConfigMap.
type QueueingModel struct {
	// Present is true when the ConfigMap has a default entry (the WVA
	// queueing-model guide §1: that activates the queueing-model path).
	Present       bool
	SLOMultiplier float64 // default 3
	TuningEnabled bool    // default true
	Models        []QueueingModelEntry
}

// Tuner is the tuner ConfigMap (docs/configuration.md).
type Tuner struct {
	Enabled bool          // tuning-enabled (default true)
	Period  time.Duration // tuning-period (default: every cycle)
	Budget  int           // tuning-budget: the most tuner steps a cycle (0: engine.DefaultTunerBudget)
	Config  tuner.Config  // max-nis-threshold, percent-change, error-level, state-constraints
}
