package scenario

import (
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Scenario describes one simulation. Zero values mean the documented
// defaults (docs/evaluation.md lists the schema).
type Scenario struct {
	Name            string  `json:"name"`
	Description     string  `json:"description,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
	Seed            uint64  `json:"seed,omitempty"`
	Models          []Model `json:"models"`
	Gateway         Gateway `json:"gateway,omitempty"`
	Scrape          Scrape  `json:"scrape,omitempty"`
	// Inventory limits accelerators per type (the WVA engine's limited
	// mode, and a hard cap on every autoscaler's replicas).
	Inventory   map[string]int `json:"inventory,omitempty"`
	Autoscalers Autoscalers    `json:"autoscalers,omitempty"`
	// Matrix, when set, is the experiment `wva simulate --matrix` runs over
	// this scenario (matrix.go); a plain run ignores it.
	Matrix *Matrix `json:"matrix,omitempty"`
	// RecordSeconds is the time-series resolution (default 15).
	RecordSeconds float64 `json:"recordSeconds,omitempty"`
	// DrainSeconds > 0 keeps the run going after the arrivals end
	// (durationSeconds, or every model's numRequests) until no request is
	// left or DrainSeconds have passed; 0 ends the run at durationSeconds.
	DrainSeconds float64 `json:"drainSeconds,omitempty"`
}

// Model is one served model: its SLO, workload and variants.
type Model struct {
	Name     string `json:"name"`
	SLO      SLO    `json:"slo"`
	Priority int    `json:"priority,omitempty"`
	// SurgeRatio is the rise this model's demand may make within one
	// start-up, which WVA holds the capacity for (the engine's
	// Model.SurgeRatio; 0: autoscalers.wva.surgeRatio). The baselines do
	// not read it.
	SurgeRatio float64   `json:"surgeRatio,omitempty"`
	Workload   Workload  `json:"workload"`
	Variants   []Variant `json:"variants"`
}

// SLO are the latency targets a request is judged against, in ms.
type SLO struct {
	TTFTMs float64 `json:"ttftMs"`
	ITLMs  float64 `json:"itlMs"`
	// Attainment, on a model's SLO, is the share of its requests that WVA
	// is asked to keep within both targets (0: autoscalers.wva.attainment).
	// The baselines do not read it; every report scores the same targets.
	Attainment float64 `json:"attainment,omitempty"`
}

// Variant is one way of serving the model, with its true speed.
type Variant struct {
	Name                   string  `json:"name"`
	Accelerator            string  `json:"accelerator"`
	AcceleratorsPerReplica int     `json:"acceleratorsPerReplica,omitempty"`
	Cost                   float64 `json:"cost"` // per replica-hour
	// LatencyModel is "iteration" (default; α + Σ per-request work) or
	// "linear" (the BLIS step model: β0 + β1·prefill tokens + β2·decode
	// tokens, plus α0 + α1·input tokens of front-end overhead and α2 per
	// output token).
	LatencyModel string       `json:"latencyModel,omitempty"`
	Params       tuner.Params `json:"params"` // iteration model, ms
	Linear       LinearStep   `json:"linear,omitempty"`
	MaxBatchSize int          `json:"maxBatchSize,omitempty"` // --max-num-seqs (default 256)
	// MaxBatchedTokens is the token budget of one iteration
	// (--max-num-batched-tokens, default 2048 as BLIS and vLLM's chunked
	// prefill); a prompt that does not fit what is left is chunked.
	MaxBatchedTokens int `json:"maxBatchedTokens,omitempty"`
	KVBlocks         int `json:"kvBlocks,omitempty"`  // default: room for the whole batch at the longest request
	BlockSize        int `json:"blockSize,omitempty"` // default 16
	MinReplicas      int `json:"minReplicas,omitempty"`
	MaxReplicas      int `json:"maxReplicas,omitempty"` // default 10
	InitialReplicas  int `json:"initialReplicas,omitempty"`
	// StartupSeconds is the time from scale-up to ready (model load),
	// StartupJitterSeconds its uniform jitter (defaults 120 and 30).
	StartupSeconds       float64 `json:"startupSeconds,omitempty"`
	StartupJitterSeconds float64 `json:"startupJitterSeconds,omitempty"`
	// TerminationGracePeriodSeconds is the pod's grace period between
	// SIGTERM and the kill (default 30, Kubernetes').
	TerminationGracePeriodSeconds *float64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Shutdown is what the server does on SIGTERM: "abort" (default, vLLM's
	// --shutdown-timeout 0) fails its requests and exits; "drain" finishes
	// them until the grace period ends.
	Shutdown string `json:"shutdown,omitempty"`
	// Profiled hands Params to WVA as the variant's profile; otherwise
	// WVA learns the parameters online.
	Profiled bool `json:"profiled,omitempty"`
	// Profile, when set, is the profile WVA is given instead: iteration-
	// model parameters (ms) that need not be the server's — a profile
	// measured on other hardware or another vLLM, for a study of a model
	// that is wrong about the world (docs/evaluation.md). With
	// autoscalers.wva.tuning false WVA sizes from it alone.
	Profile *tuner.Params `json:"profile,omitempty"`
	// SchedulingPolicy is the server's order of its waiting requests
	// (vLLM's --scheduling-policy): "fcfs" (the default) or
	// "priority-fcfs" (vLLM's "priority": the highest request priority
	// first, then the earliest arrival; server/sched.go).
	SchedulingPolicy string `json:"schedulingPolicy,omitempty"`
}

// LinearStep is the BLIS step-time model, in ms (BLIS's own coefficients
// are in µs: divide them by 1000).
type LinearStep struct {
	Beta0  float64 `json:"beta0"`
	Beta1  float64 `json:"beta1"` // per prefill token computed
	Beta2  float64 `json:"beta2"` // per decode token
	Alpha0 float64 `json:"alpha0"`
	Alpha1 float64 `json:"alpha1"` // per input token
	// Alpha2 is the per-output-token overhead, added to each reported TTFT
	// and ITL, not to the iteration.
	Alpha2 float64 `json:"alpha2,omitempty"`
}

// Workload is a model's request stream.
type Workload struct {
	// Arrival is "poisson" (default), "gamma" (CV below) or "constant".
	Arrival string  `json:"arrival,omitempty"`
	CV      float64 `json:"cv,omitempty"`
	Rate    Rate    `json:"rate"`
	Input   Tokens  `json:"input"`
	Output  Tokens  `json:"output"`
	// Trace replays a CSV file instead (arrival, rate, input and output are
	// then ignored): columns seconds,input_tokens,output_tokens and,
	// optionally, class and prefix. A relative path is read from the
	// scenario file's folder.
	Trace string `json:"trace,omitempty"`
	// Classes split the requests into SLO classes (default: one class with
	// the model's SLO).
	Classes []Class `json:"classes,omitempty"`
	// PrefixGroups > 0 gives every request one of that many shared prompt
	// prefixes of PrefixTokens tokens (system prompts, few-shot examples);
	// a replica that has a prefix in its cache skips that part of the
	// prefill.
	PrefixGroups int `json:"prefixGroups,omitempty"`
	PrefixTokens int `json:"prefixTokens,omitempty"`
	// NumRequests > 0 stops the arrivals after that many requests.
	NumRequests int `json:"numRequests,omitempty"`
	// NewPrefixGroups are prefix groups that appear during the run (a new
	// tenant, a new system prompt): from AtSeconds on, a Share of the
	// requests belong to the new group, numbered after the PrefixGroups
	// ones. They need prefixGroups > 0.
	NewPrefixGroups []NewPrefixGroup `json:"newPrefixGroups,omitempty"`

	Rows []TraceRow `json:"-"` // the loaded trace (LoadFile); not part of the schema
}

// NewPrefixGroup is a prefix group that appears at AtSeconds and takes a
// Share, in (0, 1), of the arrivals from then on.
type NewPrefixGroup struct {
	AtSeconds float64 `json:"atSeconds"`
	Share     float64 `json:"share"`
}

// Class is an SLO class within a model's traffic.
type Class struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"` // fraction of the requests
	SLO   SLO     `json:"slo"`
	// Sheddable requests are the ones the gateway rejects when a replica's
	// queue reaches gateway.queueThreshold, or when every pod is saturated;
	// the others are always admitted.
	Sheddable bool `json:"sheddable,omitempty"`
	// Priority is the class's priority at the gateway (an
	// InferenceObjective's): below 0 is sheddable. Default 0, or −1 for a
	// sheddable class.
	Priority int `json:"priority,omitempty"`
	// Criticality is the class as gateway.admission sees it: critical
	// (never rejected), standard or sheddable (shed first). Default:
	// sheddable for a sheddable class, else standard.
	Criticality string `json:"criticality,omitempty"`
}

// RequestPriority is the gateway priority of the class's requests.
func (c Class) RequestPriority() int {
	if c.Sheddable && c.Priority == 0 {
		return -1
	}
	return c.Priority
}

// Rate is the arrival-rate pattern in requests/s.
type Rate struct {
	// Pattern is constant, staircase, ramp, diurnal or spikes.
	Pattern string  `json:"pattern"`
	RPS     float64 `json:"rps,omitempty"` // constant; base of spikes
	// Steps of a staircase: the rate from each time on.
	Steps []Step `json:"steps,omitempty"`
	// Ramp from From to To between StartSeconds and EndSeconds.
	From         float64 `json:"from,omitempty"`
	To           float64 `json:"to,omitempty"`
	StartSeconds float64 `json:"startSeconds,omitempty"`
	EndSeconds   float64 `json:"endSeconds,omitempty"`
	// Diurnal: Mean ± Amplitude over PeriodSeconds (a sine starting at the
	// mean at StartSeconds, the mean before).
	Mean          float64 `json:"mean,omitempty"`
	Amplitude     float64 `json:"amplitude,omitempty"`
	PeriodSeconds float64 `json:"periodSeconds,omitempty"`
	// Spikes on top of RPS.
	Spikes []Spike `json:"spikes,omitempty"`
}

// Step of a staircase.
type Step struct {
	AtSeconds float64 `json:"atSeconds"`
	RPS       float64 `json:"rps"`
}

// Spike raises the rate to RPS for DurationSeconds.
type Spike struct {
	AtSeconds       float64 `json:"atSeconds"`
	DurationSeconds float64 `json:"durationSeconds"`
	RPS             float64 `json:"rps"`
}

// Tokens is a token-count distribution.
type Tokens struct {
	// Dist is constant (Mean), normal (Mean, SD, bounded to [Min, Max]),
	// lognormal (Mean, SD of the tokens themselves, bounded) or empirical
	// (drawn uniformly from Values).
	Dist string  `json:"dist,omitempty"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd,omitempty"`
	Min  float64 `json:"min,omitempty"`
	Max  float64 `json:"max,omitempty"`
	// Values of an empirical distribution (observed token counts).
	Values []float64 `json:"values,omitempty"`
	// File holds an empirical distribution's values instead: token counts
	// separated by newlines, commas or spaces ("#" starts a comment). A
	// relative path is read from the scenario file's folder; LoadFile
	// replaces it with the Values it holds.
	File string `json:"file,omitempty"`
}

// Gateway routes requests to replicas.
type Gateway struct {
	// Router is least-loaded (default) or round-robin.
	Router string `json:"router,omitempty"`
	// QueueThreshold sheds a request when the chosen replica already has
	// this many waiting (0: never shed).
	QueueThreshold int `json:"queueThreshold,omitempty"`
	// TimeoutSeconds a request may wait at the gateway for a ready
	// replica before it fails (default 120).
	TimeoutSeconds float64 `json:"timeoutSeconds,omitempty"`
	// Weights of the least-loaded router's scorers (default 1, 1, 1, 1):
	// KV utilisation, queue depth (waiting/5), batch occupancy, and prefix
	// affinity (minus the share of the request's prefix the replica has
	// cached); an object, or a string such as
	// "prefix-affinity:4,queue-depth:3".
	Weights *ScorerWeights `json:"weights,omitempty"`
	// Saturation, when set, turns on the endpoint picker's saturation-based
	// admission: when every ready pod of a model is saturated, requests of
	// priority < 0 are rejected and the others wait at the gateway.
	Saturation *Saturation `json:"saturation,omitempty"`
	// Admission, when set, decides on every arriving request with one of
	// internal/admission's policies (admission.go); a rejected request
	// fails with cause "admission" (HTTP 429).
	Admission *Admission `json:"admission,omitempty"`
}

// Saturation is the llm-d endpoint picker's saturation detector: a pod is
// saturated when its queue or its KV-cache use reaches a threshold.
type Saturation struct {
	// QueueThreshold: waiting requests (default 5, the detector's
	// queueDepthThreshold).
	QueueThreshold int `json:"queueThreshold,omitempty"`
	// KVThreshold: KV-cache utilisation in (0, 1] (default 0.8, its
	// kvCacheUtilThreshold).
	KVThreshold float64 `json:"kvThreshold,omitempty"`
}

// ScorerWeights weigh the router's scorers. A scenario writes them as an
// object or as a string, "prefix-affinity:4,queue-depth:3" (weights.go).
type ScorerWeights struct {
	KV     float64 `json:"kv"`
	Queue  float64 `json:"queue"`
	Batch  float64 `json:"batch"`
	Prefix float64 `json:"prefix"`

	parseErr error // the string form did not parse (Validate reports it)
}

// Scrape is the Prometheus-like metrics pipeline.
type Scrape struct {
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"` // default 15
	WindowSeconds   float64 `json:"windowSeconds,omitempty"`   // rate and max_over_time window, default 60
	DelaySeconds    float64 `json:"delaySeconds,omitempty"`    // query delay, default 15
	// EPPIntervalSeconds: how often Prometheus scrapes the endpoint
	// picker (default 10, the llm-d router chart's ServiceMonitor).
	EPPIntervalSeconds float64 `json:"eppIntervalSeconds,omitempty"`
}

// Autoscalers configures the autoscalers a run may compare.
type Autoscalers struct {
	WVA  WVAConfig  `json:"wva,omitempty"`
	HPA  HPAConfig  `json:"hpa,omitempty"`
	KEDA KEDAConfig `json:"keda,omitempty"`
	// llm-d's KEDA + endpoint-picker paths (kedaepp.go).
	KEDAQueue      KEDAQueueConfig      `json:"kedaQueue,omitempty"`
	KEDASaturation KEDASaturationConfig `json:"kedaSaturation,omitempty"`
	KEDATokens     KEDATokensConfig     `json:"kedaTokens,omitempty"`
	KEDASLO        KEDASLOConfig        `json:"kedaSlo,omitempty"`
	// OracleIntervalSeconds: how often the oracle and the clairvoyant
	// bound re-provision (default 60).
	OracleIntervalSeconds float64 `json:"oracleIntervalSeconds,omitempty"`
	// ClairvoyantMargin: the clairvoyant bound provisions for its peak
	// rate times 1 + margin (default 0).
	ClairvoyantMargin float64 `json:"clairvoyantMargin,omitempty"`
	// ClairvoyantAttainment: the share of requests within the SLO the
	// clairvoyant bound and the oracle size for (default 0.99).
	ClairvoyantAttainment float64 `json:"clairvoyantAttainment,omitempty"`
	// Default lists the autoscalers run when none is asked for
	// (default: wva, hpa, clairvoyant).
	Default []string `json:"default,omitempty"`
}

// WVAConfig runs the decision engine.
type WVAConfig struct {
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"` // default 30
	Mode            string  `json:"mode,omitempty"`            // default hybrid
	Optimizer       string  `json:"optimizer,omitempty"`       // default unlimited
	// Tuning learns the parameters online (default true; false needs
	// profiled variants for the model path).
	Tuning *bool `json:"tuning,omitempty"`
	// SaturationPolicy for limited mode.
	SaturationPolicy string `json:"saturationPolicy,omitempty"`
	// The engine's settings of the same names (docs/configuration.md);
	// zero means the engine's default.
	SpareQuantile   float64 `json:"spareQuantile,omitempty"`
	DisableForecast bool    `json:"disableForecast,omitempty"`
	// SurgeRatio declares the rise every model's demand may make within
	// one start-up, which the fleet holds the capacity for (the engine's
	// surgeRatio; 0 or 1: none; docs/engine.md §3 item 9).
	SurgeRatio float64 `json:"surgeRatio,omitempty"`
	// DisableFeedback turns the attainment feedback off (the engine's
	// disableFeedback; docs/engine.md §3 item 11).
	DisableFeedback bool `json:"disableFeedback,omitempty"`
	// Surge makes the fast loop run an extra cycle when the gateway's
	// queue or arrival rate outruns the last plan (the controller's
	// WVA_SURGE; default false).
	Surge bool `json:"surge,omitempty"`
	// TTFTAttainment sizes for that share of requests within the TTFT
	// target instead of the mean, and is the attainment target where
	// Attainment is not set (an alias; docs/engine.md §3 item 10).
	TTFTAttainment float64 `json:"ttftAttainment,omitempty"`
	// CapacityModel ("queueing" or "fleet"), Attainment and TokenCV are
	// the engine's settings of the same names: the fleet capacity model
	// (docs/queueing.md §7), its target share of requests within the SLO
	// and the token spread it assumes. The fleet model's curves are
	// computed during the run (deterministic), and shared by the runs of
	// one process.
	CapacityModel                 string  `json:"capacityModel,omitempty"`
	Attainment                    float64 `json:"attainment,omitempty"`
	TokenCV                       float64 `json:"tokenCV,omitempty"`
	ProvisioningSeconds           float64 `json:"provisioningSeconds,omitempty"`
	ScaleDownStabilizationSeconds float64 `json:"scaleDownStabilizationSeconds,omitempty"`
	// MinNonSaturatedReplicas overrides the saturation analyzer's
	// minNonSaturatedReplicasForScaleDown.
	MinNonSaturatedReplicas int `json:"minNonSaturatedReplicas,omitempty"`
	// KVCacheThreshold overrides the saturation analyzer's
	// kvCacheThreshold (the KV-cache usage at which a replica counts as
	// saturated; default 0.8).
	KVCacheThreshold float64 `json:"kvCacheThreshold,omitempty"`
	// KVScaleUpThreshold overrides the saturation analyzer's
	// kvScaleUpThreshold: τ_kv of its scale-up while the queueing model
	// sizes the model (0: kvCacheThreshold; docs/engine.md §2).
	KVScaleUpThreshold float64 `json:"kvScaleUpThreshold,omitempty"`
	// ScaleFromZeroIntervalSeconds: the period of the fast loop that
	// wakes a model at zero with requests waiting (default 2, the
	// controller's WVA_SCALE_FROM_ZERO_INTERVAL).
	ScaleFromZeroIntervalSeconds float64 `json:"scaleFromZeroIntervalSeconds,omitempty"`
	// DrainTimeoutSeconds bounds the drain before a scale-down (the
	// controller's WVA_DRAIN_TIMEOUT): the pods to remove leave the
	// gateway's rotation and go when idle or after this long. Default
	// 300; 0 turns draining off (the count drops at once).
	DrainTimeoutSeconds *float64 `json:"drainTimeoutSeconds,omitempty"`
}

// HPAConfig is the Kubernetes HPA algorithm per variant.
type HPAConfig struct {
	SyncSeconds          float64 `json:"syncSeconds,omitempty"`          // default 15
	QueueTarget          float64 `json:"queueTarget,omitempty"`          // average waiting per pod (default 3)
	KVTarget             float64 `json:"kvTarget,omitempty"`             // average KV usage (default 0.5)
	Tolerance            float64 `json:"tolerance,omitempty"`            // default 0.1
	StabilizationSeconds float64 `json:"stabilizationSeconds,omitempty"` // scale-down window, default 300
}

// KEDAConfig is threshold scaling on requests in the system.
type KEDAConfig struct {
	PollingSeconds float64 `json:"pollingSeconds,omitempty"` // default 30
	// Threshold: requests (waiting + running) per replica. Unset, it is
	// ThresholdFraction of what a replica holds at once: its batch size or
	// what its KV cache fits of a mean request, whichever is less.
	Threshold float64 `json:"threshold,omitempty"`
	// ThresholdFraction scales the default threshold (default 1).
	ThresholdFraction float64 `json:"thresholdFraction,omitempty"`
	Activation        float64 `json:"activation,omitempty"`      // requests that wake a zero-replica variant, default 0
	CooldownSeconds   float64 `json:"cooldownSeconds,omitempty"` // idle time before scale to zero, default 300
	MinReplicaCount   int     `json:"minReplicaCount,omitempty"` // default: the variant's minReplicas
	StabilizationSecs float64 `json:"stabilizationSeconds,omitempty"`
}
