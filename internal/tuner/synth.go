package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// Truth describes a synthetic variant: true parameters and its mean request.
type Truth struct {
	Name         string
	ServiceModel string
	Params       Params
	InputTokens  float64
	OutputTokens float64
	MaxBatchSize int
}

// TraceSpec describes a synthetic observation trace.
type TraceSpec struct {
	Cycles int
	// LoadMin and LoadMax bound the per-cycle load as a fraction of the
	// true λmax at the mean request (defaults 0.1 and 0.8).
	LoadMin, LoadMax float64
	// TokenSpread is the relative standard deviation of each cycle's mean
	// token counts around the truth's (default 0.1).
	TokenSpread float64
	// Noise is the relative standard deviation of the multiplicative noise
	// on the observed TTFT and ITL (0 for exact observations).
	Noise float64
	// JumpAt, when > 0, multiplies every true parameter by JumpFactor from
	// that cycle on (a slower node, a new engine version).
	JumpAt     int
	JumpFactor float64
	// MaxQueueSize is Q of the queueing model that generates the trace.
	MaxQueueSize int
	Seed         uint64
}

// MaxRate returns the truth's λmax at its mean request.
func (tr Truth) MaxRate(q int) (float64, error) {
	a, err := tr.analyzer(tr.Params, tr.InputTokens, tr.OutputTokens, q)
	if err != nil {
		return 0, err
	}
	return a.MaxRate(), nil
}

func (tr Truth) analyzer(p Params, in, out float64, q int) (*queueing.Analyzer, error) {
	return queueing.NewAnalyzer(queueing.Config{
		Model:        p.serviceModel(tr.ServiceModel),
		Workload:     queueing.Workload{InputTokens: in, OutputTokens: out},
		MaxBatchSize: tr.MaxBatchSize,
		MaxQueueSize: q,
	})
}

// Observe returns the exact observation of the truth (with parameters p) at
// a load and request size.
func (tr Truth) Observe(p Params, rate, in, out float64, q int) (Observation, error) {
	a, err := tr.analyzer(p, in, out, q)
	if err != nil {
		return Observation{}, err
	}
	m, err := a.Analyze(rate)
	if err != nil {
		return Observation{}, err
	}
	return Observation{RateRPS: rate, InputTokens: in, OutputTokens: out, MaxBatchSize: tr.MaxBatchSize, TTFTMs: m.TTFTMs, ITLMs: m.ITLMs, Steady: true}, nil
}

// Synthesize generates a trace: each cycle draws a load uniformly between
// LoadMin and LoadMax of λmax, token counts around the means, and applies
// multiplicative Gaussian noise to TTFT and ITL. The same spec and seed give
// the same trace.
func Synthesize(tr Truth, spec TraceSpec) ([]Observation, error) {
	if spec.LoadMin == 0 && spec.LoadMax == 0 {
		spec.LoadMin, spec.LoadMax = 0.1, 0.8
	}
	if spec.TokenSpread == 0 {
		spec.TokenSpread = 0.1
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x5eed))
	out := make([]Observation, 0, spec.Cycles)
	for c := range spec.Cycles {
		p := tr.ParamsAt(c, spec)
		cur := tr
		cur.Params = p
		lmax, err := cur.MaxRate(spec.MaxQueueSize)
		if err != nil {
			return nil, fmt.Errorf("tuner: truth %s: %w", tr.Name, err)
		}
		load := spec.LoadMin + (spec.LoadMax-spec.LoadMin)*rng.Float64()
		in := math.Max(1, tr.InputTokens*(1+spec.TokenSpread*clampNorm(rng)))
		outTok := math.Max(1, tr.OutputTokens*(1+spec.TokenSpread*clampNorm(rng)))
		obs, err := tr.Observe(p, load*lmax, in, outTok, spec.MaxQueueSize)
		if err != nil {
			return nil, err
		}
		obs.TTFTMs *= math.Max(0.5, 1+spec.Noise*clampNorm(rng))
		obs.ITLMs *= math.Max(0.5, 1+spec.Noise*clampNorm(rng))
		out = append(out, obs)
	}
	return out, nil
}

// ParamsAt returns the true parameters in cycle c of a trace.
func (tr Truth) ParamsAt(c int, spec TraceSpec) Params {
	if spec.JumpAt > 0 && c >= spec.JumpAt {
		return scale(tr.ServiceModel, tr.Params, spec.JumpFactor)
	}
	return tr.Params
}

// clampNorm draws a standard normal value clamped to ±3.
func clampNorm(rng *rand.Rand) float64 { return math.Max(-3, math.Min(3, rng.NormFloat64())) }

// scale multiplies every learned parameter by f.
func scale(model string, p Params, f float64) Params {
	v := p.vector(model)
	for i := range v {
		v[i] *= f
	}
	return paramsOf(model, v)
}
