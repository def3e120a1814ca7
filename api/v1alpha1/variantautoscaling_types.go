package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Actuators: how a decision reaches the workload.
const (
	// ActuatorMetricsOnly publishes the decision as metrics
	// (inferno_desired_replicas) for HPA or KEDA to apply. The default.
	ActuatorMetricsOnly = "metrics-only"
	// ActuatorDirect also patches the target's /scale subresource.
	ActuatorDirect = "direct"
)

// Condition types (the WVA CRD reference; the MetricsAvailable gate of the
// WVA paper §IV.H; docs/engine.md §5).
const (
	ConditionTargetResolved    = "TargetResolved"
	ConditionMetricsAvailable  = "MetricsAvailable"
	ConditionOptimizationReady = "OptimizationReady"
	ConditionActuationComplete = "ActuationComplete"
	ConditionTuningActive      = "TuningActive"
	// ConditionConfigValid is False while a configuration ConfigMap this
	// variant depends on is invalid (the last good configuration is used).
	ConditionConfigValid = "ConfigValid"
	// ConditionServerSettings says where the variant's batch size,
	// token budget and accelerators per replica come from (the
	// VariantAutoscaling, the workload's pod template, or the defaults);
	// False when the two disagree (the VariantAutoscaling's value is used).
	ConditionServerSettings = "ServerSettingsConsistent"
	// ConditionAttainmentReachable reports the attainment feedback
	// (docs/engine.md §3 item 11) for the variant's model: True while the
	// feedback can still move the model's capacity towards its target,
	// False when the last window it counted missed the target with its
	// capacity factor at the floor (the target may be out of reach). Not
	// set while the feedback does not run (disabled, no traffic, no
	// latency histograms).
	ConditionAttainmentReachable = "AttainmentReachable"
)

// Condition reasons.
const (
	ReasonTargetFound           = "TargetFound"
	ReasonTargetNotFound        = "TargetNotFound"
	ReasonTargetConflict        = "TargetConflict"
	ReasonMetricsFound          = "MetricsFound"
	ReasonMetricsMissing        = "MetricsMissing"
	ReasonMetricsStale          = "MetricsStale"
	ReasonMetricsInvalid        = "MetricsInvalid"
	ReasonMetricsImplausible    = "MetricsImplausible"
	ReasonPrometheusError       = "PrometheusError"
	ReasonPodListForbidden      = "PodListForbidden"
	ReasonPodListFailed         = "PodListFailed"
	ReasonOptimizationSucceeded = "OptimizationSucceeded"
	ReasonMetricsUnavailable    = "MetricsUnavailable"
	ReasonOptimizationFailed    = "OptimizationFailed"
	ReasonAwaitingCycle         = "AwaitingOptimization"
	ReasonApplied               = "ReplicasApplied"
	ReasonPublished             = "MetricsPublished"
	ReasonScaling               = "ScalingInProgress"
	ReasonActuationFailed       = "ActuationFailed"
	ReasonTuning                = "Tuning"
	ReasonProfiled              = "ProfiledParameters"
	ReasonTuningDisabled        = "TuningDisabled"
	ReasonConfigValid           = "ConfigurationValid"
	ReasonConfigInvalid         = "ConfigurationInvalid"
	ReasonSettingsMatch         = "ServerSettingsMatch"
	ReasonSettingsFromWorkload  = "ServerSettingsFromWorkload"
	ReasonSettingsDefault       = "ServerSettingsDefault"
	ReasonSettingsDisagree      = "ServerSettingsDisagree"
	ReasonAttainmentFeedback    = "AttainmentFeedback"
	ReasonAttainmentOutOfReach  = "AttainmentOutOfReach"
)

// CrossVersionObjectReference names the workload a variant scales: any
// kind with a scale subresource, as for HPA (Deployment, StatefulSet,
// leaderworkerset.x-k8s.io LeaderWorkerSet, ...).
type CrossVersionObjectReference struct {
	// Kind of the target, e.g. Deployment, StatefulSet or
	// LeaderWorkerSet. It must have a scale subresource.
	// +kubebuilder:default=Deployment
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the target, in the variant's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// APIVersion of the target: group/version (apps/v1,
	// leaderworkerset.x-k8s.io/v1), or a version of the core group.
	// +kubebuilder:default="apps/v1"
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// ConfigMapKeyRef points at one key of a ConfigMap (an SLO class of the
// service-classes ConfigMap; docs/configuration.md).
type ConfigMapKeyRef struct {
	// Name of the ConfigMap (in the controller's namespace).
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the ConfigMap: the service class.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// DecodeParms are the decode (ITL) parameters of the iteration model, in
// ms: an iteration of a batch of n requests takes alpha + beta·n. Each is
// a decimal of at most 32 characters (a bound the CEL rules' cost needs).
type DecodeParms struct {
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Alpha string `json:"alpha"`
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Beta string `json:"beta"`
}

// PrefillParms are the prefill (TTFT) parameters, in ms: gamma + delta per
// input token (times the batch; docs/queueing.md, linear model).
type PrefillParms struct {
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Gamma string `json:"gamma"`
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Delta string `json:"delta"`
}

// PerfParms are a variant's profiled performance parameters.
type PerfParms struct {
	DecodeParms  DecodeParms  `json:"decodeParms"`
	PrefillParms PrefillParms `json:"prefillParms"`
}

// AcceleratorProfile is the model's performance on one accelerator type.
type AcceleratorProfile struct {
	// Acc is the accelerator type, e.g. H100 (a key of the accelerator
	// costs ConfigMap).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Acc string `json:"acc"`
	// AccCount is the number of accelerators one replica uses. When
	// omitted, the target's pod template's accelerator resources
	// (nvidia.com/gpu and other device plugins'), else the product of its
	// server's parallel sizes, else 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	AccCount int32 `json:"accCount,omitempty"`
	// PerfParms are the profiled parameters; when absent they are learned
	// online by the tuner.
	// +optional
	PerfParms *PerfParms `json:"perfParms,omitempty"`
	// MaxBatchSize is the server's max-num-seqs. When omitted, the
	// target's pod template's --max-num-seqs (or SGLang's
	// --max-running-requests), else 256.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxBatchSize int32 `json:"maxBatchSize,omitempty"`
}

// VariantProfile is one variant's profile as the upstream llm-d autoscaler's
// newer manifests write it (spec.variantProfile): an AcceleratorProfile
// without the accelerator, which is the variant's.
type VariantProfile struct {
	// PerfParms are the profiled parameters; when absent they are learned
	// online by the tuner.
	// +optional
	PerfParms *PerfParms `json:"perfParms,omitempty"`
	// MaxBatchSize is the server's max-num-seqs.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxBatchSize int32 `json:"maxBatchSize,omitempty"`
}

// ModelProfile is the model's performance per accelerator type (the WVA
// CRD reference).
type ModelProfile struct {
	// +listType=map
	// +listMapKey=acc
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Accelerators []AcceleratorProfile `json:"accelerators,omitempty"`
}

// VariantAutoscalingSpec is what the user asks for: the model a workload
// serves, its bounds, its cost, and optionally its profile and SLO class.
//
// The upstream llm-d autoscaler's names (acceleratorType, acceleratorCount,
// variantProfile) are aliases: a field and its alias both set must agree.
// The variant's accelerator is accelerator, else acceleratorType; its
// modelProfile entry is that accelerator's (the only entry when neither
// is set).
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || !has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
// +kubebuilder:validation:XValidation:rule="(!has(self.accelerator) && !has(self.acceleratorType)) || !has(self.modelProfile) || !has(self.modelProfile.accelerators) || size(self.modelProfile.accelerators) == 0 || self.modelProfile.accelerators.exists(a, a.acc == (has(self.accelerator) ? self.accelerator : self.acceleratorType))",message="accelerator must be one of modelProfile.accelerators[].acc when a profile is given"
// +kubebuilder:validation:XValidation:rule="!has(self.acceleratorType) || !has(self.accelerator) || self.acceleratorType == self.accelerator",message="acceleratorType is another name for accelerator: set one, or both to the same value"
// +kubebuilder:validation:XValidation:rule="!has(self.acceleratorCount) || !has(self.modelProfile) || !has(self.modelProfile.accelerators) || self.modelProfile.accelerators.all(a, !(has(self.accelerator) ? a.acc == self.accelerator : (has(self.acceleratorType) ? a.acc == self.acceleratorType : size(self.modelProfile.accelerators) == 1)) || !has(a.accCount) || a.accCount == self.acceleratorCount)",message="acceleratorCount must equal accCount of the variant's accelerator in modelProfile: set one, or both to the same value"
// +kubebuilder:validation:XValidation:rule="!has(self.variantProfile) || !has(self.modelProfile) || !has(self.modelProfile.accelerators) || self.modelProfile.accelerators.all(a, !(has(self.accelerator) ? a.acc == self.accelerator : (has(self.acceleratorType) ? a.acc == self.acceleratorType : size(self.modelProfile.accelerators) == 1)) || (has(a.perfParms) == has(self.variantProfile.perfParms) && (!has(a.perfParms) || (a.perfParms.decodeParms.alpha == self.variantProfile.perfParms.decodeParms.alpha && a.perfParms.decodeParms.beta == self.variantProfile.perfParms.decodeParms.beta && a.perfParms.prefillParms.gamma == self.variantProfile.perfParms.prefillParms.gamma && a.perfParms.prefillParms.delta == self.variantProfile.perfParms.prefillParms.delta)) && (has(a.maxBatchSize) ? a.maxBatchSize : 0) == (has(self.variantProfile.maxBatchSize) ? self.variantProfile.maxBatchSize : 0)))",message="variantProfile must equal the variant's accelerator entry of modelProfile (perfParms, maxBatchSize): set one, or both to the same value"
type VariantAutoscalingSpec struct {
	// ScaleTargetRef is the Deployment serving this variant. When omitted,
	// the Deployment with the VariantAutoscaling's own name.
	// +optional
	ScaleTargetRef *CrossVersionObjectReference `json:"scaleTargetRef,omitempty"`
	// ModelID is the served model (vLLM's model_name label). Variants with
	// the same modelID and namespace share the model's load.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="modelID must not be blank"
	ModelID string `json:"modelID"`
	// MinReplicas is the lower bound; 0 allows scale to zero.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the upper bound (no bound when omitted).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// ScaleUpLimit bounds how far one optimisation cycle may scale the
	// variant up. When omitted, the controller's WVA_SCALE_UP_LIMIT_FACTOR
	// and WVA_SCALE_UP_LIMIT_REPLICAS (×4 or +8, whichever is larger).
	// +optional
	ScaleUpLimit *ScaleUpLimit `json:"scaleUpLimit,omitempty"`
	// VariantCost is the relative cost of one replica, a decimal string
	// (the WVA paper §III.E). When omitted: the accelerator's unit cost times
	// the accelerators per replica, or 10.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	VariantCost string `json:"variantCost,omitempty"`
	// Accelerator is the accelerator type this variant runs on. When
	// omitted: the target's label inference.optimization/acceleratorName,
	// else the only entry of modelProfile.accelerators.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Accelerator string `json:"accelerator,omitempty"`
	// AcceleratorType is the upstream llm-d autoscaler's name for
	// accelerator: read when accelerator is unset.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	AcceleratorType string `json:"acceleratorType,omitempty"`
	// AcceleratorCount is the number of accelerators one replica uses (the
	// upstream llm-d autoscaler's field): read when modelProfile has no
	// entry for the variant's accelerator (whose accCount says it).
	// +kubebuilder:validation:Minimum=1
	// +optional
	AcceleratorCount *int32 `json:"acceleratorCount,omitempty"`
	// ModelProfile holds the profiled parameters per accelerator.
	// +optional
	ModelProfile *ModelProfile `json:"modelProfile,omitempty"`
	// VariantProfile is the upstream llm-d autoscaler's profile of this
	// variant alone: read when modelProfile has no entry for the variant's
	// accelerator.
	// +optional
	VariantProfile *VariantProfile `json:"variantProfile,omitempty"`
	// VariantID is the upstream llm-d autoscaler's identifier of the
	// variant ({modelID}-{accelerator}-{acceleratorCount}), accepted so
	// that its manifests apply; WVA does not use it.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	VariantID string `json:"variantID,omitempty"`
	// SLOClassRef names the service class (priority and SLO targets).
	// +optional
	SLOClassRef *ConfigMapKeyRef `json:"sloClassRef,omitempty"`
	// Role of the variant's pods in disaggregated serving.
	// +kubebuilder:validation:Enum=prefill;decode;both
	// +optional
	Role string `json:"role,omitempty"`
	// Actuator: metrics-only (HPA or KEDA apply the decision; the default)
	// or direct (the controller patches the target's /scale).
	// +kubebuilder:validation:Enum=metrics-only;direct
	// +kubebuilder:default=metrics-only
	// +optional
	Actuator string `json:"actuator,omitempty"`
}

// ScaleUpLimit: one cycle scales a variant to at most
// max(current × factor, current + replicas), and never below minReplicas.
type ScaleUpLimit struct {
	// Factor is a decimal string ≥ 1, such as "2" or "1.5". When omitted,
	// the controller's.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="double(self) >= 1.0",message="factor must be at least 1"
	// +optional
	Factor string `json:"factor,omitempty"`
	// Replicas is the number of replicas a cycle may always add. When
	// omitted, the controller's.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// Allocation is what the variant has now.
type Allocation struct {
	// Accelerator type of the variant.
	// +optional
	Accelerator string `json:"accelerator,omitempty"`
	// NumReplicas are the target's replicas (starting and ready).
	NumReplicas int32 `json:"numReplicas"`
	// ReadyReplicas are the ready ones.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

// OptimizedAlloc is the engine's last decision.
type OptimizedAlloc struct {
	// LastRunTime is when the decision was made.
	// +optional
	LastRunTime metav1.Time `json:"lastRunTime,omitempty"`
	// NumReplicas is the desired replica count.
	NumReplicas int32 `json:"numReplicas"`
	// Accelerator of the decision.
	// +optional
	Accelerator string `json:"accelerator,omitempty"`
	// Reason is the engine's machine-readable cause, e.g. saturation-scale-up.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ActuationStatus says whether the decision reached the workload.
type ActuationStatus struct {
	// Applied is true when the target has the desired replica count.
	Applied bool `json:"applied"`
	// Actuator used for the last decision.
	// +optional
	Actuator string `json:"actuator,omitempty"`
	// LastUpdateTime is when the controller last patched the target (direct).
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
}

// VariantAutoscalingStatus is what the controller observed and decided.
type VariantAutoscalingStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	CurrentAlloc Allocation `json:"currentAlloc,omitempty"`
	// +optional
	DesiredOptimizedAlloc OptimizedAlloc `json:"desiredOptimizedAlloc,omitempty"`
	// +optional
	Actuation ActuationStatus `json:"actuation,omitempty"`
	// Conditions: TargetResolved, MetricsAvailable, OptimizationReady,
	// ActuationComplete, TuningActive, ConfigValid, ServerSettingsConsistent,
	// AttainmentReachable.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VariantAutoscaling binds one way of serving a model (a Deployment on an
// accelerator type) to WVA's decisions.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=va,categories=wva
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.modelID`
// +kubebuilder:printcolumn:name="Accelerator",type=string,JSONPath=`.status.currentAlloc.accelerator`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.currentAlloc.numReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredOptimizedAlloc.numReplicas`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.desiredOptimizedAlloc.reason`,priority=1
// +kubebuilder:printcolumn:name="Metrics",type=string,JSONPath=`.status.conditions[?(@.type=="MetricsAvailable")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="OptimizationReady")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VariantAutoscaling struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VariantAutoscalingSpec `json:"spec"`
	// +optional
	Status VariantAutoscalingStatus `json:"status,omitempty"`
}

// TargetKind and TargetAPIVersion are the kind and API version of the
// workload the variant scales (Deployment, apps/v1 when not given).
func (va *VariantAutoscaling) TargetKind() (kind, apiVersion string) {
	kind, apiVersion = "Deployment", "apps/v1"
	if r := va.Spec.ScaleTargetRef; r != nil {
		if r.Kind != "" {
			kind = r.Kind
		}
		if r.APIVersion != "" {
			apiVersion = r.APIVersion
		}
	}
	return kind, apiVersion
}

// TargetName is the workload the variant scales.
func (va *VariantAutoscaling) TargetName() string {
	if va.Spec.ScaleTargetRef != nil && va.Spec.ScaleTargetRef.Name != "" {
		return va.Spec.ScaleTargetRef.Name
	}
	return va.Name
}

// VariantAutoscalingList is a list of VariantAutoscaling.
//
// +kubebuilder:object:root=true
type VariantAutoscalingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VariantAutoscaling `json:"items"`
}
