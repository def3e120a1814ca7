package queueing

import (
	"fmt"
	"math"
)

// DefaultMaxQueueSize is the queue length Q assumed when none is known
// (the WVA queueing-model guide §8).
const DefaultMaxQueueSize = 100

// maxRateFraction keeps the largest analysed rate just below μ(N), where the
// queue would fill up: λmax = 0.999·μ(N) (docs/queueing.md).
const maxRateFraction = 0.999

// Config describes one replica of a model variant.
type Config struct {
	Model        ServiceModel // Linear or Iteration
	Workload     Workload
	MaxBatchSize int // N, vLLM --max-num-seqs (≥ 1)
	MaxQueueSize int // Q, requests that may wait for a batch slot (≥ 0)
}

// Analyzer evaluates and sizes one replica. The service rates μ(n) do not
// depend on the arrival rate; they are fixed here, and building an Analyzer
// costs O(1), so the tuner can afford one per parameter vector it tries.
type Analyzer struct {
	cfg   Config
	queue *Queue // rates in requests per ms, times in ms
}

// NewAnalyzer validates cfg and sets up the service rates μ(n) = n/τ(n).
func NewAnalyzer(cfg Config) (*Analyzer, error) {
	if cfg.Model == nil {
		panic("queueing: NewAnalyzer called with a nil service model")
	}
	base, slope, err := serviceLine(cfg)
	if err != nil {
		return nil, err
	}
	q, err := newAffineQueue(base, slope, cfg.MaxBatchSize, cfg.MaxQueueSize)
	if err != nil {
		return nil, err
	}
	return &Analyzer{cfg: cfg, queue: q}, nil
}

// Evaluate is NewAnalyzer(cfg) followed by Analyze(rateRPS) without
// keeping the analyzer: it builds the queue on the stack and, when cfg.Model
// is held by pointer (*Iteration, *Linear) or does not escape, does not
// allocate. It computes exactly what the two calls compute; the tuner
// evaluates hundreds of parameter vectors per cycle through it.
func Evaluate(cfg Config, rateRPS float64) (Metrics, error) {
	if cfg.Model == nil {
		panic("queueing: Evaluate called with a nil service model")
	}
	base, slope, err := serviceLine(cfg)
	if err != nil {
		return Metrics{}, err
	}
	if err := checkAffineQueue(cfg.MaxBatchSize, cfg.MaxQueueSize); err != nil {
		return Metrics{}, err
	}
	if err := checkRate(rateRPS); err != nil {
		return Metrics{}, err
	}
	q := affineQueue(base, slope, cfg.MaxBatchSize, cfg.MaxQueueSize)
	return metricsOf(cfg, maxRateFraction*q.Capacity()*1000, rateRPS, q.solve(rateRPS/1000)), nil
}

// serviceLine validates cfg's model, workload and batch size and returns
// the service time's line: both service models are affine in the batch
// size, τ(n) = τ(0) + n·(τ(1) − τ(0)), so the queue needs only those two
// numbers; nothing is tabulated.
func serviceLine(cfg Config) (base, slope float64, err error) {
	if err := cfg.Model.Validate(cfg.Workload); err != nil {
		return 0, 0, err
	}
	if cfg.MaxBatchSize < 1 || cfg.MaxBatchSize > MaxStates {
		return 0, 0, &ParamError{Param: "max-batch-size", Value: float64(cfg.MaxBatchSize),
			Reason: fmt.Sprintf("must be between 1 and %d", MaxStates)}
	}
	base = cfg.Model.ServiceTime(cfg.Workload, 0)
	slope = cfg.Model.ServiceTime(cfg.Workload, 1) - base
	tau1, tauN := base+slope, base+slope*float64(cfg.MaxBatchSize)
	if !finite(base) || !finite(slope) || !finite(tau1) {
		// Not the batch size's fault: the parameters with these token
		// counts overflow for a single request.
		return 0, 0, fmt.Errorf("queueing: the service model's parameters with %v input and %v output tokens give a service time of %v ms for one request: "+
			"too large to compute (parameters are in ms)", cfg.Workload.InputTokens, cfg.Workload.OutputTokens, tau1)
	}
	if !(base >= 0 && slope >= 0 && tau1 > 0 && tauN <= math.MaxFloat64) { // also false for NaN
		return 0, 0, &ParamError{Param: "max-batch-size", Value: float64(cfg.MaxBatchSize),
			Reason: fmt.Sprintf("service times %v ms (batch of 1) to %v ms (full batch) are not positive and finite", tau1, tauN)}
	}
	return base, slope, nil
}

// MaxRateOf is NewAnalyzer(cfg).MaxRate() without building the analyzer
// (MaxQueueSize is not used): for callers that need only λmax.
func MaxRateOf(cfg Config) (float64, error) {
	base, slope, err := serviceLine(cfg)
	if err != nil {
		return 0, err
	}
	return maxRateFraction * (1 / (slope + base/float64(cfg.MaxBatchSize))) * 1000, nil
}

// Config returns the configuration the analyzer was built with.
func (a *Analyzer) Config() Config { return a.cfg }

// Queue returns the underlying birth–death queue, with rates in requests
// per millisecond and times in milliseconds.
func (a *Analyzer) Queue() *Queue { return a.queue }

// MaxRate returns λmax = 0.999·μ(N) in requests/s: the largest arrival rate
// that sizing considers, just below the throughput of a full batch.
func (a *Analyzer) MaxRate() float64 { return maxRateFraction * a.queue.Capacity() * 1000 }

// Metrics are the predicted steady-state figures of one replica.
type Metrics struct {
	RateRPS       float64 // offered arrival rate
	ThroughputRPS float64 // completed requests per second, λ(1 − p_K)
	TTFTMs        float64 // time to first token: wait + prefill
	ITLMs         float64 // average time between output tokens
	WaitMs        float64 // W, time waiting for a batch slot
	RespTimeMs    float64 // T, time from arrival to completion
	ServTimeMs    float64 // S, time in service
	AvgBatchSize  float64 // B̄, average number of requests in the batch
	AvgInSystem   float64 // L, average number of requests in the replica
	AvgQueued     float64 // Lq, average number waiting
	Utilization   float64 // B̄/N
	Blocking      float64 // probability that an arrival finds the queue full
	MaxRateRPS    float64 // λmax = 0.999·μ(N)
	TokensPerSec  float64 // output tokens per second, throughput × o
}

// Analyze predicts the replica's behaviour at arrival rate rateRPS
// (requests/s). Any positive finite rate is accepted, including rates far
// above MaxRate (the queue is finite, so excess arrivals are blocked).
func (a *Analyzer) Analyze(rateRPS float64) (Metrics, error) {
	if err := checkRate(rateRPS); err != nil {
		return Metrics{}, err
	}
	return a.analyze(rateRPS), nil
}

func (a *Analyzer) analyze(rateRPS float64) Metrics {
	return a.metrics(rateRPS, a.queue.solve(rateRPS/1000))
}

// metrics turns a solved queue (times in ms) into Metrics.
func (a *Analyzer) metrics(rateRPS float64, s State) Metrics {
	return metricsOf(a.cfg, a.MaxRate(), rateRPS, s)
}

// metricsOf is metrics for a configuration whose λmax is maxRateRPS.
func metricsOf(cfg Config, maxRateRPS, rateRPS float64, s State) Metrics {
	ttft, itl := cfg.Model.Latencies(cfg.Workload, s, cfg.MaxBatchSize)
	x := s.Throughput * 1000
	return Metrics{
		RateRPS:       rateRPS,
		ThroughputRPS: x,
		TTFTMs:        ttft,
		ITLMs:         itl,
		WaitMs:        s.Wait,
		RespTimeMs:    s.RespTime,
		ServTimeMs:    s.ServTime,
		AvgBatchSize:  s.AvgBatch,
		AvgInSystem:   s.AvgInSystem,
		AvgQueued:     s.AvgQueued,
		Utilization:   s.Utilization,
		Blocking:      s.Blocking,
		MaxRateRPS:    maxRateRPS,
		TokensPerSec:  x * cfg.Workload.OutputTokens,
	}
}

// MinRateRPS is the lightest load the analyzer accepts: one request in
// about 30 years. Below it the solve's Little's-law ratios lose every
// significant digit (a negative ITL at 1e-19 requests/s).
const MinRateRPS = 1e-9

// checkRate accepts a finite arrival rate of at least MinRateRPS.
func checkRate(rateRPS float64) error {
	switch {
	case !finite(rateRPS) || rateRPS <= 0:
		return &ParamError{Param: "rate", Value: rateRPS, Reason: "must be a positive finite number of requests/s"}
	case rateRPS < MinRateRPS:
		return &ParamError{Param: "rate", Value: rateRPS, Reason: fmt.Sprintf("must be at least %g requests/s (one request in about 30 years)", MinRateRPS)}
	}
	return nil
}

// ceilRatio returns ceil(num/den), forgiving a relative rounding error of
// 1e-9 so that a demand of exactly k capacities needs k replicas, not k+1.
func ceilRatio(num, den float64) int {
	return int(math.Ceil(num / den * (1 - 1e-9)))
}
