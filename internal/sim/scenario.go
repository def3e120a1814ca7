package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

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
	// RecordSeconds is the time-series resolution (default 15).
	RecordSeconds float64 `json:"recordSeconds,omitempty"`
	// DrainSeconds > 0 keeps the run going after the arrivals end
	// (durationSeconds, or every model's numRequests) until no request is
	// left or DrainSeconds have passed; 0 ends the run at durationSeconds.
	DrainSeconds float64 `json:"drainSeconds,omitempty"`
}

// Model is one served model: its SLO, workload and variants.
type Model struct {
	Name     string    `json:"name"`
	SLO      SLO       `json:"slo"`
	Priority int       `json:"priority,omitempty"`
	Workload Workload  `json:"workload"`
	Variants []Variant `json:"variants"`
}

// SLO are the latency targets a request is judged against, in ms.
type SLO struct {
	TTFTMs float64 `json:"ttftMs"`
	ITLMs  float64 `json:"itlMs"`
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

	rows []traceRow // the loaded trace
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
}

// requestPriority is the gateway priority of the class's requests.
func (c Class) requestPriority() int {
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
	// Diurnal: Mean ± Amplitude over PeriodSeconds (a sine starting at the mean).
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
	// relative path is read from the scenario file's folder.
	File string `json:"file,omitempty"`

	loaded bool // Values were read from File
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
	// cached).
	Weights *ScorerWeights `json:"weights,omitempty"`
	// Saturation, when set, turns on the endpoint picker's saturation-based
	// admission: when every ready pod of a model is saturated, requests of
	// priority < 0 are rejected and the others wait at the gateway.
	Saturation *Saturation `json:"saturation,omitempty"`
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

// ScorerWeights weigh the router's scorers.
type ScorerWeights struct {
	KV     float64 `json:"kv"`
	Queue  float64 `json:"queue"`
	Batch  float64 `json:"batch"`
	Prefix float64 `json:"prefix"`
}

// Scrape is the Prometheus-like metrics pipeline.
type Scrape struct {
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"` // default 15
	WindowSeconds   float64 `json:"windowSeconds,omitempty"`   // rate and max_over_time window, default 60
	DelaySeconds    float64 `json:"delaySeconds,omitempty"`    // query delay, default 15
}

// Autoscalers configures the autoscalers a run may compare.
type Autoscalers struct {
	WVA  WVAConfig  `json:"wva,omitempty"`
	HPA  HPAConfig  `json:"hpa,omitempty"`
	KEDA KEDAConfig `json:"keda,omitempty"`
	// OracleIntervalSeconds: how often the oracle and the clairvoyant
	// bound re-provision (default 60).
	OracleIntervalSeconds float64 `json:"oracleIntervalSeconds,omitempty"`
	// ClairvoyantMargin: the clairvoyant bound provisions for its peak
	// rate times 1 + margin (default 0).
	ClairvoyantMargin float64 `json:"clairvoyantMargin,omitempty"`
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
	// Surge makes the fast loop run an extra cycle when the gateway's
	// queue or arrival rate outruns the last plan (the controller's
	// WVA_SURGE; default false).
	Surge                         bool    `json:"surge,omitempty"`
	TTFTAttainment                float64 `json:"ttftAttainment,omitempty"`
	ProvisioningSeconds           float64 `json:"provisioningSeconds,omitempty"`
	ScaleDownStabilizationSeconds float64 `json:"scaleDownStabilizationSeconds,omitempty"`
	// MinNonSaturatedReplicas overrides the saturation analyzer's
	// minNonSaturatedReplicasForScaleDown.
	MinNonSaturatedReplicas int `json:"minNonSaturatedReplicas,omitempty"`
	// KVCacheThreshold overrides the saturation analyzer's
	// kvCacheThreshold (the KV-cache usage at which a replica counts as
	// saturated; default 0.8).
	KVCacheThreshold float64 `json:"kvCacheThreshold,omitempty"`
	// ScaleFromZeroIntervalSeconds: the period of the fast loop that
	// wakes a model at zero with requests waiting (default 2, the
	// controller's WVA_SCALE_FROM_ZERO_INTERVAL).
	ScaleFromZeroIntervalSeconds float64 `json:"scaleFromZeroIntervalSeconds,omitempty"`
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

func (s *Scenario) withDefaults() Scenario {
	c := *s
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.RecordSeconds, 15)
	def(&c.Gateway.TimeoutSeconds, 120)
	def(&c.Scrape.IntervalSeconds, 15)
	def(&c.Scrape.WindowSeconds, 60)
	def(&c.Scrape.DelaySeconds, 15)
	def(&c.Autoscalers.OracleIntervalSeconds, 60)
	def(&c.Autoscalers.WVA.IntervalSeconds, 30)
	def(&c.Autoscalers.WVA.ScaleFromZeroIntervalSeconds, 2)
	def(&c.Autoscalers.HPA.SyncSeconds, 15)
	def(&c.Autoscalers.HPA.QueueTarget, 3)
	def(&c.Autoscalers.HPA.KVTarget, 0.5)
	def(&c.Autoscalers.HPA.Tolerance, 0.1)
	def(&c.Autoscalers.HPA.StabilizationSeconds, 300)
	def(&c.Autoscalers.KEDA.PollingSeconds, 30)
	def(&c.Autoscalers.KEDA.CooldownSeconds, 300)
	def(&c.Autoscalers.KEDA.StabilizationSecs, 300)
	def(&c.Autoscalers.KEDA.ThresholdFraction, 1)
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Gateway.Router == "" {
		c.Gateway.Router = "least-loaded"
	}
	if c.Gateway.Weights == nil {
		c.Gateway.Weights = &ScorerWeights{KV: 1, Queue: 1, Batch: 1, Prefix: 1}
	}
	if g := c.Gateway.Saturation; g != nil {
		g2 := *g
		if g2.QueueThreshold == 0 {
			g2.QueueThreshold = 5
		}
		def(&g2.KVThreshold, 0.8)
		c.Gateway.Saturation = &g2
	}
	if c.Autoscalers.WVA.Mode == "" {
		c.Autoscalers.WVA.Mode = "hybrid"
	}
	if c.Autoscalers.WVA.Optimizer == "" {
		c.Autoscalers.WVA.Optimizer = "unlimited"
	}
	if len(c.Autoscalers.Default) == 0 {
		c.Autoscalers.Default = []string{"wva", "hpa", "clairvoyant"}
	}
	c.Models = make([]Model, len(s.Models))
	for i, m := range s.Models {
		m.Variants = append([]Variant(nil), m.Variants...)
		if m.Workload.Arrival == "" {
			m.Workload.Arrival = "poisson"
		}
		for j := range m.Variants {
			m.Variants[j].withDefaults(&m.Workload)
		}
		c.Models[i] = m
	}
	return c
}

// withDefaults fills a variant's unset fields (w: its model's workload).
func (v *Variant) withDefaults(w *Workload) {
	if v.AcceleratorsPerReplica == 0 {
		v.AcceleratorsPerReplica = 1
	}
	if v.LatencyModel == "" {
		v.LatencyModel = "iteration"
	}
	if v.MaxBatchSize == 0 {
		v.MaxBatchSize = 256
	}
	if v.MaxBatchedTokens == 0 {
		v.MaxBatchedTokens = 2048
	}
	if v.Shutdown == "" {
		v.Shutdown = "abort"
	}
	if v.TerminationGracePeriodSeconds == nil {
		g := 30.0
		v.TerminationGracePeriodSeconds = &g
	}
	if v.BlockSize == 0 {
		v.BlockSize = 16
	}
	if v.KVBlocks == 0 {
		longest := w.Input.upper() + w.Output.upper()
		v.KVBlocks = int(math.Ceil(float64(v.MaxBatchSize)*longest/float64(v.BlockSize))) + 1
	}
	if v.MaxReplicas == 0 {
		v.MaxReplicas = 10
	}
	if v.StartupSeconds == 0 {
		v.StartupSeconds = 120
	}
	if v.StartupJitterSeconds == 0 {
		v.StartupJitterSeconds = 30
	}
}

// upper is the largest token count the distribution draws.
func (t Tokens) upper() float64 {
	if t.Max > 0 {
		return t.Max
	}
	if t.Dist == "empirical" {
		m := 1.0
		for _, v := range t.Values {
			m = math.Max(m, v)
		}
		return m
	}
	if t.Dist == "" || t.Dist == "constant" {
		return t.Mean
	}
	return t.Mean + 4*t.SD
}

// Validate reports every problem, each naming its field.
func (s *Scenario) Validate() error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if !(s.DurationSeconds > 0 && s.DurationSeconds <= MaxDurationSeconds) {
		add("durationSeconds", "must be > 0 seconds and at most %g (30 days), got %v", float64(MaxDurationSeconds), s.DurationSeconds)
	}
	s.validatePeriods(add)
	if !(s.DrainSeconds >= 0 && s.DrainSeconds <= MaxDurationSeconds) {
		add("drainSeconds", "must be ≥ 0 seconds and at most %g (30 days), got %v", float64(MaxDurationSeconds), s.DrainSeconds)
	}
	if len(s.Models) == 0 {
		add("models", "must list at least one model")
	}
	names := map[string]int{}
	for i, m := range s.Models {
		p := "models[" + strconv.Itoa(i) + "]"
		if j, dup := names[m.Name]; dup && m.Name != "" {
			add(p+".name", "duplicates models[%d].name %q", j, m.Name)
		}
		names[m.Name] = i
		validateModel(p, m, add)
	}
	validateGateway(s.Gateway, add)
	validateWVA("autoscalers.wva", s.Autoscalers.WVA, add)
	validateBaselines(s.Autoscalers, add)
	if m := s.Autoscalers.ClairvoyantMargin; !(m >= 0 && m <= MaxClairvoyantMargin) {
		add("autoscalers.clairvoyantMargin", "must be a number between 0 and %d, got %v", MaxClairvoyantMargin, m)
	}
	if len(s.Autoscalers.Default) > 0 {
		if err := CheckAutoscalers(s.Autoscalers.Default); err != nil {
			add("autoscalers.default", "%v", err)
		}
	}
	if len(errs) == 0 {
		s.checkSize(add) // on valid values only: the sizes of bad ones mean nothing
	}
	return errors.Join(errs...)
}

func validateModel(p string, m Model, add func(string, string, ...any)) {
	if m.Name == "" {
		add(p+".name", "must not be empty")
	}
	if m.Priority < 0 {
		add(p+".priority", "must be ≥ 0 (1 is the highest; 0: the engine's default), got %d", m.Priority)
	}
	validateSLO(p+".slo", m.SLO, add)
	validateWorkload(p+".workload", m.Workload, add)
	if len(m.Variants) == 0 {
		add(p+".variants", "must list at least one variant")
	}
	names := map[string]int{}
	for j, v := range m.Variants {
		vp := p + ".variants[" + strconv.Itoa(j) + "]"
		if k, dup := names[v.Name]; dup && v.Name != "" {
			add(vp+".name", "duplicates variants[%d].name %q", k, v.Name)
		}
		names[v.Name] = j
		validateVariant(vp, v, add)
	}
}

// validateSLO checks latency targets: finite and > 0 ms.
func validateSLO(p string, slo SLO, add func(string, string, ...any)) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"ttftMs", slo.TTFTMs}, {"itlMs", slo.ITLMs}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			add(p+"."+f.name, "must be a finite number of ms > 0, got %v", f.v)
		}
	}
}

func validateGateway(g Gateway, add func(string, string, ...any)) {
	switch g.Router {
	case "", "least-loaded", "round-robin":
	default:
		add("gateway.router", "must be least-loaded or round-robin, got %q", g.Router)
	}
	if g.QueueThreshold < 0 {
		add("gateway.queueThreshold", "must be ≥ 0 waiting requests (0: never shed), got %d", g.QueueThreshold)
	}
	if t := g.TimeoutSeconds; !(t >= 0 && t <= MaxDurationSeconds) {
		add("gateway.timeoutSeconds", "must be ≥ 0 seconds and at most %g (0: the default 120), got %v", float64(MaxDurationSeconds), t)
	}
	if w := g.Weights; w != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"kv", w.KV}, {"queue", w.Queue}, {"batch", w.Batch}, {"prefix", w.Prefix}} {
			if !(f.v >= 0) || math.IsInf(f.v, 0) {
				add("gateway.weights."+f.name, "must be a finite number ≥ 0, got %v", f.v)
			}
		}
	}
	if s := g.Saturation; s != nil {
		if s.QueueThreshold < 0 {
			add("gateway.saturation.queueThreshold", "must be ≥ 1 waiting request (0: the default 5), got %d", s.QueueThreshold)
		}
		if !(s.KVThreshold >= 0 && s.KVThreshold <= 1) {
			add("gateway.saturation.kvThreshold", "must be a KV-cache utilisation in (0, 1] (0: the default 0.8), got %v", s.KVThreshold)
		}
	}
}

// MaxDurationSeconds bounds a scenario's simulated time (30 days): the
// simulator keeps every request's record in memory.
const MaxDurationSeconds = 30 * 24 * 3600

// minPeriodSeconds is the shortest period a scenario may set for a
// recurring event (recording, scraping, an autoscaler's loop): each adds
// events for the whole run.
const minPeriodSeconds = 0.1

// validatePeriods checks every recurring period and every time setting:
// finite and ≥ 0 (0 is the default), and periods not below
// minPeriodSeconds, so that no setting makes the run spin on events or
// grow without bound.
func (s *Scenario) validatePeriods(add func(string, string, ...any)) {
	a := s.Autoscalers
	for _, f := range []struct {
		name   string
		v      float64
		period bool
	}{
		{"recordSeconds", s.RecordSeconds, true}, {"scrape.intervalSeconds", s.Scrape.IntervalSeconds, true},
		{"scrape.windowSeconds", s.Scrape.WindowSeconds, true}, {"scrape.delaySeconds", s.Scrape.DelaySeconds, false},
		{"autoscalers.oracleIntervalSeconds", a.OracleIntervalSeconds, true},
		{"autoscalers.wva.intervalSeconds", a.WVA.IntervalSeconds, true},
		{"autoscalers.wva.scaleFromZeroIntervalSeconds", a.WVA.ScaleFromZeroIntervalSeconds, true},
		{"autoscalers.hpa.syncSeconds", a.HPA.SyncSeconds, true}, {"autoscalers.hpa.stabilizationSeconds", a.HPA.StabilizationSeconds, false},
		{"autoscalers.hpa.tolerance", a.HPA.Tolerance, false},
		{"autoscalers.keda.pollingSeconds", a.KEDA.PollingSeconds, true}, {"autoscalers.keda.cooldownSeconds", a.KEDA.CooldownSeconds, false},
		{"autoscalers.keda.stabilizationSeconds", a.KEDA.StabilizationSecs, false}, {"autoscalers.keda.activation", a.KEDA.Activation, false},
	} {
		switch {
		case !(f.v >= 0) || math.IsInf(f.v, 0):
			add(f.name, "must be a finite number ≥ 0 (0: the default), got %v", f.v)
		case f.period && f.v > 0 && f.v < minPeriodSeconds:
			add(f.name, "must be at least %g seconds (0: the default), got %v", minPeriodSeconds, f.v)
		}
	}
	if a.KEDA.MinReplicaCount < 0 {
		add("autoscalers.keda.minReplicaCount", "must be ≥ 0, got %d", a.KEDA.MinReplicaCount)
	}
	for _, acc := range slices.Sorted(maps.Keys(s.Inventory)) {
		if s.Inventory[acc] < 0 {
			add("inventory."+acc, "must be ≥ 0 accelerators, got %d", s.Inventory[acc])
		}
	}
}

// validateWVA checks the engine settings a scenario passes to WVA, so that a
// bad one is an error at load time rather than a run where every cycle
// fails.
func validateWVA(p string, w WVAConfig, add func(string, string, ...any)) {
	switch w.Mode {
	case "", "capacity-only", "model-only", "hybrid":
	default:
		add(p+".mode", "must be capacity-only, model-only or hybrid, got %q", w.Mode)
	}
	switch w.Optimizer {
	case "", "unlimited", "limited":
	default:
		add(p+".optimizer", "must be unlimited or limited, got %q", w.Optimizer)
	}
	switch w.SaturationPolicy {
	case "", "None", "PriorityExhaustive", "PriorityRoundRobin", "RoundRobin":
	default:
		add(p+".saturationPolicy", "must be None, PriorityExhaustive, PriorityRoundRobin or RoundRobin, got %q", w.SaturationPolicy)
	}
	if !(w.SpareQuantile >= 0 && w.SpareQuantile < 1) {
		add(p+".spareQuantile", "must be in (0, 1) (0: the default 0.95), got %v", w.SpareQuantile)
	}
	if !(w.TTFTAttainment >= 0 && w.TTFTAttainment < 1) {
		add(p+".ttftAttainment", "must be in (0, 1), or 0 to size for the mean TTFT, got %v", w.TTFTAttainment)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"provisioningSeconds", w.ProvisioningSeconds}, {"scaleDownStabilizationSeconds", w.ScaleDownStabilizationSeconds}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add(p+"."+f.name, "must be a finite number of seconds ≥ 0 (0: the default), got %v", f.v)
		}
	}
	if !(w.KVCacheThreshold >= 0 && w.KVCacheThreshold <= 1) {
		add(p+".kvCacheThreshold", "must be a KV-cache utilisation in (0, 1] (0: the default 0.8), got %v", w.KVCacheThreshold)
	}
	if w.MinNonSaturatedReplicas < 0 || w.MinNonSaturatedReplicas > MaxReplicasPerVariant {
		add(p+".minNonSaturatedReplicas", "must be between 0 and %d (0: the default), got %d", MaxReplicasPerVariant, w.MinNonSaturatedReplicas)
	}
}

// validateBaselines checks the HPA's and KEDA's targets (0 is their
// default).
func validateBaselines(a Autoscalers, add func(string, string, ...any)) {
	if k := a.HPA.KVTarget; !(k >= 0 && k <= 1) {
		add("autoscalers.hpa.kvTarget", "must be a KV-cache utilisation in (0, 1] (0: the default 0.5), got %v", k)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"hpa.queueTarget", a.HPA.QueueTarget}, {"keda.threshold", a.KEDA.Threshold}, {"keda.thresholdFraction", a.KEDA.ThresholdFraction}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add("autoscalers."+f.name, "must be a finite number > 0 (0: the default), got %v", f.v)
		}
	}
}

func validateWorkload(p string, w Workload, add func(string, string, ...any)) {
	switch w.Arrival {
	case "", "poisson", "constant", "gamma":
	default:
		add(p+".arrival", "must be poisson, gamma or constant, got %q", w.Arrival)
	}
	switch {
	case !(w.CV >= 0 && w.CV <= MaxCV):
		add(p+".cv", "must be a number between 0 and %d, got %v", MaxCV, w.CV)
	case w.Arrival == "gamma" && w.CV == 0:
		add(p+".cv", "gamma arrivals need a cv > 0")
	}
	if w.Trace == "" {
		validateRate(p+".rate", w.Rate, add)
	}
	validateClasses(p, w.Classes, add)
	if w.NumRequests < 0 {
		add(p+".numRequests", "must be ≥ 0 (0: no limit), got %d", w.NumRequests)
	}
	if w.PrefixGroups < 0 || w.PrefixGroups > MaxPrefixGroups {
		add(p+".prefixGroups", "must be between 0 and %d, got %d", MaxPrefixGroups, w.PrefixGroups)
	}
	if w.PrefixTokens < 0 || w.PrefixTokens > MaxTokens || (w.PrefixGroups > 0 && w.PrefixTokens == 0) {
		add(p+".prefixTokens", "must be between 0 and %d tokens, and > 0 with prefix groups, got %d", MaxTokens, w.PrefixTokens)
	}
	if w.Trace != "" {
		return // the trace gives the token counts
	}
	validateTokens(p+".input", w.Input, add)
	validateTokens(p+".output", w.Output, add)
}

// validateRate checks every number of a rate pattern, whichever pattern
// uses it (the generator's peak rate looks at all of them): rates and
// times finite and ≥ 0.
func validateRate(p string, r Rate, add func(string, string, ...any)) {
	nonNeg := func(path string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			add(path, "must be a finite number ≥ 0, got %v", v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rps", r.RPS}, {"from", r.From}, {"to", r.To}, {"startSeconds", r.StartSeconds}, {"endSeconds", r.EndSeconds},
		{"mean", r.Mean}, {"amplitude", r.Amplitude}, {"periodSeconds", r.PeriodSeconds}} {
		nonNeg(p+"."+f.name, f.v)
	}
	if len(r.Steps) > MaxRatePoints || len(r.Spikes) > MaxRatePoints {
		add(p, "at most %d steps and %d spikes, got %d and %d", MaxRatePoints, MaxRatePoints, len(r.Steps), len(r.Spikes))
		return
	}
	for i, st := range r.Steps {
		sp := p + ".steps[" + strconv.Itoa(i) + "]"
		nonNeg(sp+".atSeconds", st.AtSeconds)
		nonNeg(sp+".rps", st.RPS)
		if i > 0 && st.AtSeconds < r.Steps[i-1].AtSeconds {
			add(sp+".atSeconds", "steps must be in time order, got %v after %v", st.AtSeconds, r.Steps[i-1].AtSeconds)
		}
	}
	for i, sk := range r.Spikes {
		sp := p + ".spikes[" + strconv.Itoa(i) + "]"
		nonNeg(sp+".atSeconds", sk.AtSeconds)
		nonNeg(sp+".durationSeconds", sk.DurationSeconds)
		nonNeg(sp+".rps", sk.RPS)
	}
	switch r.Pattern {
	case "constant", "spikes":
	case "staircase":
		if len(r.Steps) == 0 {
			add(p+".steps", "a staircase needs at least one step")
		}
	case "ramp":
		if r.EndSeconds < r.StartSeconds {
			add(p+".endSeconds", "must be ≥ startSeconds (%v), got %v", r.StartSeconds, r.EndSeconds)
		}
	case "diurnal":
		if !(r.PeriodSeconds > 0) {
			add(p+".periodSeconds", "a diurnal pattern needs a period > 0 seconds, got %v", r.PeriodSeconds)
		}
	default:
		add(p+".pattern", "must be constant, staircase, ramp, diurnal or spikes, got %q", r.Pattern)
	}
}

// tokenCount reports a token count that is not finite, below lo or above
// MaxTokens.
func tokenCount(p string, v, lo float64, add func(string, string, ...any)) {
	if !(v >= lo && v <= MaxTokens) {
		add(p, "must be a token count between %v and %d, got %v", lo, MaxTokens, v)
	}
}

func validateTokens(p string, t Tokens, add func(string, string, ...any)) {
	switch t.Dist {
	case "", "constant", "normal", "lognormal":
		tokenCount(p+".mean", t.Mean, 1, add)
	case "empirical":
		if t.Mean != 0 {
			tokenCount(p+".mean", t.Mean, 0, add)
		}
		if len(t.Values) == 0 && t.File == "" {
			add(p+".values", "an empirical distribution needs values or a file")
		}
		if len(t.Values) > 0 && t.File != "" && !t.loaded {
			add(p+".file", "give values or a file, not both")
		}
		if len(t.Values) > MaxEmpiricalValues {
			add(p+".values", "at most %d values, got %d", MaxEmpiricalValues, len(t.Values))
		}
		for i, v := range t.Values {
			if !(v >= 1 && v <= MaxTokens) {
				add(p+".values["+strconv.Itoa(i)+"]", "must be a token count between 1 and %d, got %v", MaxTokens, v)
				break
			}
		}
	default:
		add(p+".dist", "must be constant, normal, lognormal or empirical, got %q", t.Dist)
	}
	tokenCount(p+".sd", t.SD, 0, add)
	tokenCount(p+".min", t.Min, 0, add)
	tokenCount(p+".max", t.Max, 0, add)
	if t.Min > 0 && t.Max > 0 && t.Min > t.Max {
		add(p+".max", "must be ≥ min (%v), got %v", t.Min, t.Max)
	}
}

func validateClasses(p string, cs []Class, add func(string, string, ...any)) {
	if len(cs) > MaxClasses {
		add(p+".classes", "at most %d classes, got %d", MaxClasses, len(cs))
		return
	}
	share := 0.0
	names := map[string]bool{}
	for i, c := range cs {
		cp := p + ".classes[" + strconv.Itoa(i) + "]"
		if c.Name == "" || names[c.Name] {
			add(cp+".name", "must be set and unique, got %q", c.Name)
		}
		names[c.Name] = true
		if !(c.Share > 0 && c.Share <= 1) {
			add(cp+".share", "must be in (0, 1], got %v", c.Share)
		}
		validateSLO(cp+".slo", c.SLO, add)
		share += c.Share
	}
	if len(cs) > 0 && math.Abs(share-1) > 1e-6 {
		add(p+".classes", "shares must add up to 1, got %v", share)
	}
}

func validateVariant(p string, v Variant, add func(string, string, ...any)) {
	if v.Name == "" {
		add(p+".name", "must not be empty")
	}
	if v.Accelerator == "" {
		add(p+".accelerator", "must not be empty")
	}
	switch v.LatencyModel {
	case "", "iteration":
		if err := v.Params.Validate(tuner.ModelIteration); err != nil {
			add(p+".params", "%v", err)
		}
	case "linear":
		validateLinear(p+".linear", v.Linear, add)
	default:
		add(p+".latencyModel", "must be iteration or linear, got %q", v.LatencyModel)
	}
	validateVariantSizes(p, v, add)
	if g := v.TerminationGracePeriodSeconds; g != nil && (!(*g >= 0) || math.IsInf(*g, 0)) {
		add(p+".terminationGracePeriodSeconds", "must be ≥ 0 seconds, got %v", *g)
	}
	switch v.Shutdown {
	case "", "abort", "drain":
	default:
		add(p+".shutdown", "must be abort or drain, got %q", v.Shutdown)
	}
}

// validateVariantSizes checks a variant's replica bounds, its server's
// sizes and its times.
func validateVariantSizes(p string, v Variant, add func(string, string, ...any)) {
	if v.MaxReplicas < 0 || v.MaxReplicas > MaxReplicasPerVariant {
		add(p+".maxReplicas", "must be between 1 and %d (0: the default 10), got %d", MaxReplicasPerVariant, v.MaxReplicas)
	}
	maxR := v.MaxReplicas
	if maxR <= 0 {
		maxR = 10
	}
	if v.MinReplicas < 0 || v.MinReplicas > maxR {
		add(p+".minReplicas", "must be between 0 and maxReplicas (%d), got %d", maxR, v.MinReplicas)
	}
	if v.InitialReplicas < 0 || v.InitialReplicas > maxR {
		add(p+".initialReplicas", "must be between 0 and maxReplicas (%d), got %d", maxR, v.InitialReplicas)
	}
	for _, f := range []struct {
		name  string
		v     int
		limit int
	}{{"maxBatchSize", v.MaxBatchSize, MaxBatchSize}, {"maxBatchedTokens", v.MaxBatchedTokens, MaxTokens},
		{"kvBlocks", v.KVBlocks, MaxKVBlocks}, {"blockSize", v.BlockSize, MaxBlockSize},
		{"acceleratorsPerReplica", v.AcceleratorsPerReplica, MaxAcceleratorsPerReplica}} {
		if f.v < 0 || f.v > f.limit {
			add(p+"."+f.name, "must be between 1 and %d (0: the default), got %d", f.limit, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"startupSeconds", v.StartupSeconds}, {"startupJitterSeconds", v.StartupJitterSeconds}, {"cost", v.Cost}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add(p+"."+f.name, "must be a finite number ≥ 0, got %v", f.v)
		}
	}
}

// Plausible bounds of the linear model's coefficients, in ms: beyond them
// the coefficients were most likely given in BLIS's µs.
const (
	maxStepMs     = 1000 // β0, α0, α2: a second per iteration or request
	maxPerTokenMs = 10   // β1, β2, α1: 10 ms per token
)

func validateLinear(p string, l LinearStep, add func(string, string, ...any)) {
	check := func(name string, v, limit float64, unit string, positive bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (positive && v == 0):
			want := "≥ 0"
			if positive {
				want = "> 0"
			}
			add(p+"."+name, "must be %s ms%s, got %v", want, unit, v)
		case v > limit:
			add(p+"."+name, "%v ms%s is implausible (at most %v): the coefficients are in milliseconds, BLIS's in microseconds — divide those by 1000", v, unit, limit)
		}
	}
	check("beta0", l.Beta0, maxStepMs, " per iteration", true)
	check("beta1", l.Beta1, maxPerTokenMs, " per prefill token", false)
	check("beta2", l.Beta2, maxPerTokenMs, " per decode token", false)
	check("alpha0", l.Alpha0, maxStepMs, " per request", false)
	check("alpha1", l.Alpha1, maxPerTokenMs, " per input token", false)
	check("alpha2", l.Alpha2, maxStepMs, " per output token", false)
}
