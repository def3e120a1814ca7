package tuner

import (
	"fmt"
	"math"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// Observation is one cycle of a variant's aggregated metrics.
type Observation struct {
	RateRPS      float64 // arrival rate per replica, requests/s
	InputTokens  float64 // average prompt tokens
	OutputTokens float64 // average generated tokens
	MaxBatchSize int     // N of the servers
	TTFTMs       float64 // observed average time to first token
	ITLMs        float64 // observed average inter-token latency
	// WaitingRequests is the number of requests waiting at a replica for a
	// batch slot in the cycle (vLLM's num_requests_waiting, per replica);
	// 0 when unknown. With RateRPS it gives the queueing wait by Little's
	// law, which the server gate compares with TTFTMs.
	WaitingRequests float64
	// PreemptionsPerSec is how often a replica preempted a request in the
	// cycle (the rate of vLLM's num_preemptions_total, per replica); 0 when
	// unknown or none.
	PreemptionsPerSec float64
	// RunningRequests is the number of requests a replica was running
	// (vLLM's num_requests_running, per replica); 0 when unknown. A cycle
	// with a queue (queueDominated) reads the model's ITL at this batch:
	// a queue does not mean a full batch — a compute-bound server's
	// per-step token budget holds requests back behind a half-empty one.
	RunningRequests float64 `json:",omitempty"`
	// Steady marks an observation that is a steady state by construction
	// (a synthetic trace draws each cycle's load anew), not an average
	// over a metrics window that may span a change of load: the robust
	// strategy then does not compare it with the previous cycle (see
	// Tuner.loadChanged).
	Steady bool `json:",omitempty"`
}

// Validate reports the first field that cannot be used.
func (o Observation) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate_rps", o.RateRPS}, {"output_tokens", o.OutputTokens}, {"ttft_ms", o.TTFTMs}, {"itl_ms", o.ITLMs}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("tuner: observation %s must be a positive finite number, got %v", f.name, f.v)
		}
	}
	if !(o.InputTokens >= 0) || math.IsInf(o.InputTokens, 0) {
		return fmt.Errorf("tuner: observation input_tokens must be a finite number ≥ 0, got %v", o.InputTokens)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"waiting_requests", o.WaitingRequests}, {"preemptions_per_sec", o.PreemptionsPerSec}, {"running_requests", o.RunningRequests}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("tuner: observation %s must be a finite number ≥ 0, got %v", f.name, f.v)
		}
	}
	if o.OutputTokens < 1 {
		return fmt.Errorf("tuner: observation output_tokens must be ≥ 1, got %v", o.OutputTokens)
	}
	if o.MaxBatchSize < 1 {
		return fmt.Errorf("tuner: observation max_batch_size must be ≥ 1, got %d", o.MaxBatchSize)
	}
	return nil
}

// Strategy selects how the filter is set up and gated.
type Strategy string

const (
	// StrategyRobust is WVA's tuner (the default): log-parameters, a wide
	// initial covariance, an iterated update, no gate during a warm-up and
	// for observations the estimate cannot explain, and covariance inflation
	// after consecutive rejections. See docs/tuner.md.
	StrategyRobust Strategy = "robust"
	// StrategySeed is the reference tuner's filter exactly as published (the
	// WVA queueing-model guide §4; docs/tuner.md §2): parameters in linear space, P₀ and Q at 5 % of the state, one
	// EKF update, and the NIS gate from the first step, rolling back x and P.
	// It exists to compare against; it does not converge from a wrong start.
	StrategySeed Strategy = "seed"
)

// Config configures a Tuner. The zero value of every field means its
// documented default.
type Config struct {
	// ServiceModel is "iteration" (default) or "linear".
	ServiceModel string
	// MaxQueueSize is Q of the queueing model (default 100; negative for
	// Q = 0, a server that rejects what it cannot batch at once).
	MaxQueueSize int
	// PercentChange c sets the process noise Q = diag((c·x)²): how much a
	// parameter may drift per cycle (default 0.01; docs/tuner.md §1 and
	// §7: the reference tuner's 0.05 until issue 30).
	PercentChange float64
	// ErrorLevel ε, TPercentile t and GammaFactor g set the measurement
	// noise σ = (ε/t)·z/√g (defaults 0.05, 1.96, 1; docs/tuner.md §1).
	ErrorLevel, TPercentile, GammaFactor float64
	// MaxNIS is the NIS gate (default 7.378, the 97.5 % point of χ² with
	// two degrees of freedom).
	MaxNIS float64
	// Strategy is StrategyRobust (default) or StrategySeed.
	Strategy Strategy
	// Bounds replace the built-in bounds of named parameters ("alpha",
	// "beta", "gamma", "delta") of the linear model, as [min, max] in ms
	// (docs/configuration.md, the tuner ConfigMap).
	// IterationBounds do the same for the iteration model, whose
	// parameters mean other things (γ is per token) and so need their own.
	// Bounds of parameters the model does not learn are ignored.
	Bounds, IterationBounds map[string][2]float64

	// The rest applies to StrategyRobust only.

	// InitialSpread is the standard deviation of the log-parameters at a
	// cold start: 1.5 (default) lets each start a factor 4.5 off at 1σ.
	InitialSpread float64
	// ProfileSpread is the standard deviation of the log-parameters when
	// the tuner starts from a profile (NewProfiled): 0.25 (default) says a
	// profile is right to ±28 % at 1σ and to a factor 1.65 at 2σ — see
	// docs/tuner.md §3 item 2 for why.
	ProfileSpread float64
	// Window is how many recent observations are fitted jointly (default
	// 5). The first Window observations after a cold start are fitted
	// without the NIS gate: the warm-up.
	Window int
	// MaxRejections is how many consecutive rejections make the tuner
	// assume that the parameters changed; it then inflates the covariance
	// and accepts the observation (default 3).
	MaxRejections int
	// InflationSpread is the log-standard deviation added to every
	// parameter when the covariance is inflated (default 0.5).
	InflationSpread float64
	// MaxIterations bounds the iterated update (default 10).
	MaxIterations int

	// MaxWaitShare is the server gate's threshold (both strategies): an
	// observation whose queueing wait by Little's law (WaitingRequests /
	// RateRPS) exceeds this share of its TTFT is skipped (default 0.5; see
	// gateServer). Negative turns the wait gate off.
	MaxWaitShare float64
	// KeepPreempting accepts observations of cycles in which the replicas
	// preempted (by default they are skipped; see gateServer).
	KeepPreempting bool
	// RateWindowSeconds is the window over which an observation's arrival
	// rate is counted (default 60: the collector's and the simulator's
	// one-minute rate window). The robust strategy widens each
	// observation's variance by what the Poisson error of that count,
	// 1/√(λ·W) relative, moves the model's latencies by (see rateSpread):
	// near saturation a few per cent of rate moves them by tens of per
	// cent, and such an observation must not weigh as one at light load.
	// Negative turns this off.
	RateWindowSeconds float64
}

// Resolved is c with every zero field at its documented default: what a
// tuner built from c uses.
func (c Config) Resolved() Config { return c.withDefaults() }

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if c.ServiceModel == "" {
		c.ServiceModel = ModelIteration
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = queueing.DefaultMaxQueueSize
	}
	if c.Strategy == "" {
		c.Strategy = StrategyRobust
	}
	def(&c.PercentChange, 0.01)
	def(&c.ErrorLevel, 0.05)
	def(&c.TPercentile, 1.96)
	def(&c.GammaFactor, 1)
	def(&c.MaxNIS, 7.378)
	def(&c.InitialSpread, 1.5)
	def(&c.ProfileSpread, DefaultProfileSpread)
	def(&c.InflationSpread, 0.5)
	def(&c.MaxWaitShare, DefaultMaxWaitShare)
	def(&c.RateWindowSeconds, 60)
	if c.Window == 0 {
		c.Window = 5
	}
	if c.MaxRejections == 0 {
		c.MaxRejections = 3
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = 10
	}
	return c
}

func mergedBounds(a, b map[string][2]float64) map[string][2]float64 {
	out := map[string][2]float64{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if w, ok := out[k]; ok && (w[0] <= 0 || w[1] <= w[0]) {
			continue // keep the invalid one for the error
		}
		out[k] = v
	}
	return out
}

// Validate reports the first setting that cannot be used (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.ServiceModel != ModelIteration && c.ServiceModel != ModelLinear {
		return fmt.Errorf("tuner: service model must be %q or %q, got %q", ModelIteration, ModelLinear, c.ServiceModel)
	}
	if err := validateBounds(mergedBounds(c.Bounds, c.IterationBounds)); err != nil {
		return err
	}
	if c.Strategy != StrategyRobust && c.Strategy != StrategySeed {
		return fmt.Errorf("tuner: strategy must be %q or %q, got %q", StrategyRobust, StrategySeed, c.Strategy)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"percent change", c.PercentChange}, {"error level", c.ErrorLevel}, {"t percentile", c.TPercentile},
		{"gamma factor", c.GammaFactor}, {"max NIS", c.MaxNIS}, {"initial spread", c.InitialSpread}, {"profile spread", c.ProfileSpread}, {"inflation spread", c.InflationSpread}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("tuner: %s must be a positive finite number, got %v", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"max wait share", c.MaxWaitShare}, {"rate window seconds", c.RateWindowSeconds}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("tuner: %s must be a finite number, got %v", f.name, f.v)
		}
	}
	if c.Window < 1 || c.MaxRejections < 1 || c.MaxIterations < 1 {
		return fmt.Errorf("tuner: window, max rejections and max iterations must be ≥ 1")
	}
	return nil
}

// validateBounds reports the first bound on an unknown parameter or with
// min and max not 0 < min < max < ∞.
func validateBounds(bounds map[string][2]float64) error {
	for name, b := range bounds {
		switch name {
		case "alpha", "beta", "gamma", "delta":
		default:
			return fmt.Errorf("tuner: bounds for unknown parameter %q (want alpha, beta, gamma or delta)", name)
		}
		if !(b[0] > 0) || !(b[1] > b[0]) || math.IsInf(b[1], 0) {
			return fmt.Errorf("tuner: bounds of %s must satisfy 0 < min < max < ∞, got [%v, %v]", name, b[0], b[1])
		}
	}
	return nil
}

// relNoise is the relative standard deviation of an observation,
// (ε/t)/√g (docs/tuner.md §1).
func (c Config) relNoise() float64 { return c.ErrorLevel / c.TPercentile / math.Sqrt(c.GammaFactor) }
