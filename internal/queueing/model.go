package queueing

import "math"

// Workload is the average request offered to a replica.
type Workload struct {
	InputTokens  float64 // i, average prompt tokens per request (≥ 0)
	OutputTokens float64 // o, average generated tokens per request (≥ 1)
}

// Validate checks that the token counts are usable.
func (w Workload) Validate() error {
	if err := checkNonNegative("input-tokens", w.InputTokens); err != nil {
		return err
	}
	if !finite(w.OutputTokens) || w.OutputTokens < 1 {
		return &ParamError{Param: "output-tokens", Value: w.OutputTokens,
			Reason: "must be a finite number ≥ 1 (every request generates at least one token)"}
	}
	return nil
}

// ServiceModel turns the hardware parameters of a server and a workload into
// the service time of a batch, and a solved queue into latencies.
type ServiceModel interface {
	// Name is the model's name on the command line: "linear" or "iteration".
	Name() string
	// Validate reports parameters the model cannot use.
	Validate(w Workload) error
	// ServiceTime returns τ(n) in ms: how long a request stays in service
	// when the batch holds n requests. μ(n) = n/τ(n). It must be affine in
	// n (both models are): the analyzer uses only τ(0) and τ(1).
	ServiceTime(w Workload, n float64) float64
	// Latencies returns TTFT and ITL in ms from a queue solved in ms.
	Latencies(w Workload, s State, maxBatch int) (ttftMs, itlMs float64)
}

var (
	_ ServiceModel = Linear{}
	_ ServiceModel = Iteration{}
)

// Linear is the linear service model (docs/queueing.md, "Gen A"): the prefill of a
// batch of n takes γ + δ·i·n and each decode step α + β·n, so a request is in
// service for τ(n) = prefill(n) + (o − 1)·decode(n). All parameters in ms.
type Linear struct {
	Alpha float64 // α, base decode time per step (> 0)
	Beta  float64 // β, decode time added per request in the batch (≥ 0)
	Gamma float64 // γ, base prefill time (> 0)
	Delta float64 // δ, prefill time per input token per request in the batch (≥ 0)
}

// Name implements ServiceModel.
func (Linear) Name() string { return "linear" }

// Validate implements ServiceModel.
func (m Linear) Validate(w Workload) error {
	for _, c := range []struct {
		name     string
		v        float64
		positive bool
	}{{"alpha", m.Alpha, true}, {"beta", m.Beta, false}, {"gamma", m.Gamma, true}, {"delta", m.Delta, false}} {
		check := checkNonNegative
		if c.positive {
			check = checkPositive
		}
		if err := check(c.name, c.v); err != nil {
			return err
		}
	}
	if err := w.Validate(); err != nil {
		return err
	}
	if w.InputTokens == 0 && w.OutputTokens == 1 {
		return &ParamError{Param: "output-tokens", Value: 1,
			Reason: "with no input tokens the linear model needs more than one output token (there is no work to model)"}
	}
	return nil
}

// Prefill returns the prefill time γ + δ·i·n in ms (0 when i = 0).
func (m Linear) Prefill(w Workload, n float64) float64 {
	if w.InputTokens == 0 {
		return 0
	}
	return m.Gamma + m.Delta*w.InputTokens*n
}

// Decode returns the decode step time α + β·n in ms.
func (m Linear) Decode(n float64) float64 { return m.Alpha + m.Beta*n }

// ServiceTime implements ServiceModel: prefill(n) + (o − 1)·decode(n).
func (m Linear) ServiceTime(w Workload, n float64) float64 {
	return m.Prefill(w, n) + (w.OutputTokens-1)*m.Decode(n)
}

// Latencies implements ServiceModel. The effective concurrency n_eff is the
// batch size whose service time equals the mean service time S of the queue,
// clamped to [0, N]; TTFT = W + prefill(n_eff) and ITL = decode(n_eff)
// (docs/queueing.md). τ is affine in n, so n_eff = (S − τ(0))/(τ(1) − τ(0));
// for i > 0 this is (S − γ − α(o−1))/(δi + β(o−1)). When τ does not
// depend on n at all, n_eff is the average batch B̄.
func (m Linear) Latencies(w Workload, s State, maxBatch int) (ttftMs, itlMs float64) {
	base := m.ServiceTime(w, 0)
	slope := m.ServiceTime(w, 1) - base
	nEff := s.AvgBatch
	if slope > 0 {
		nEff = math.Min(math.Max((s.ServTime-base)/slope, 0), float64(maxBatch))
	}
	return s.Wait + m.Prefill(w, nEff), m.Decode(nEff)
}

// Iteration is the service model of the WVA queueing-model guide §9 ("Gen B"). Each engine
// iteration costs α plus the work of every request in the batch: (β + γ)·i
// for a prefill and β + γ·(i + k) for the k-th decode step. A request takes
// part in o + 1 iterations; averaged over them it adds
// δ̄ = β(i + o)/(o + 1) + γ(i + o/2) to each, so an iteration with n requests
// takes T_iter(n) = α + n·δ̄. All parameters in ms (β and γ per token).
type Iteration struct {
	Alpha float64 // α, fixed cost of one iteration (> 0)
	Beta  float64 // β, compute time per token processed (≥ 0)
	Gamma float64 // γ, KV-cache access time per cached token (≥ 0)
}

// Name implements ServiceModel.
func (Iteration) Name() string { return "iteration" }

// Validate implements ServiceModel.
func (m Iteration) Validate(w Workload) error {
	if err := checkPositive("alpha", m.Alpha); err != nil {
		return err
	}
	if err := checkNonNegative("beta", m.Beta); err != nil {
		return err
	}
	if err := checkNonNegative("gamma", m.Gamma); err != nil {
		return err
	}
	return w.Validate()
}

// Work returns δ̄, the average work one request adds to an iteration, in ms.
func (m Iteration) Work(w Workload) float64 {
	i, o := w.InputTokens, w.OutputTokens
	return m.Beta*(i+o)/(o+1) + m.Gamma*(i+o/2)
}

// IterTime returns T_iter(n) = α + n·δ̄ in ms.
func (m Iteration) IterTime(w Workload, n float64) float64 { return m.Alpha + n*m.Work(w) }

// Prefill returns the prefill time T_iter(n) + (β + γ)·i in ms.
func (m Iteration) Prefill(w Workload, n float64) float64 {
	return m.IterTime(w, n) + (m.Beta+m.Gamma)*w.InputTokens
}

// Decode returns the average decode step time T_iter(n) + β + γ(i + (o+1)/2) in ms.
func (m Iteration) Decode(w Workload, n float64) float64 {
	return m.IterTime(w, n) + m.Beta + m.Gamma*(w.InputTokens+(w.OutputTokens+1)/2)
}

// ServiceTime implements ServiceModel: prefill(n) + o·decode(n).
func (m Iteration) ServiceTime(w Workload, n float64) float64 {
	return m.Prefill(w, n) + w.OutputTokens*m.Decode(w, n)
}

// Latencies implements ServiceModel with the mean-field reading of the WVA
// queueing-model guide §9 at the average batch B̄: TTFT = W + prefill(B̄) and ITL = (S − prefill(B̄))/o,
// the rest of the time in service spread over the o output tokens.
func (m Iteration) Latencies(w Workload, s State, _ int) (ttftMs, itlMs float64) {
	prefill := m.Prefill(w, s.AvgBatch)
	return s.Wait + prefill, (s.ServTime - prefill) / w.OutputTokens
}
