package tuner

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// evalCacheSize is the number of slots of the evaluator's cache: a power of
// two comfortably above the evaluations one cycle repeats (a window of five
// observations at the current estimate, the gate's three of the newest).
const evalCacheSize = 64

// evaluator evaluates the queueing model for the tuner without allocating
// (the service model is held by pointer, the queue is built on the stack)
// and remembers recent evaluations in a direct-mapped cache: a cycle asks
// for the same parameters at the same observation several times (the
// gate's prediction and wait share, each window observation's wait share
// and the fit's first linearisation). The model is a pure function, so a
// remembered result is exactly the one it would compute again.
type evaluator struct {
	linear   bool
	maxQueue int
	it       queueing.Iteration
	lin      queueing.Linear
	cache    [evalCacheSize]evalEntry
}

type evalEntry struct {
	p   Params
	obs Observation
	m   queueing.Metrics
	err error
	set bool
}

func newEvaluator(model string, maxQueue int) *evaluator {
	return &evaluator{linear: model == ModelLinear, maxQueue: max(maxQueue, 0)}
}

// analyze returns the model's metrics for parameters p at obs's load,
// tokens and batch limit.
func (e *evaluator) analyze(p Params, obs Observation) (queueing.Metrics, error) {
	slot := &e.cache[evalHash(p, obs)&(evalCacheSize-1)]
	if slot.set && slot.p == p && slot.obs == obs {
		return slot.m, slot.err
	}
	cfg := queueing.Config{
		Workload:     queueing.Workload{InputTokens: obs.InputTokens, OutputTokens: obs.OutputTokens},
		MaxBatchSize: obs.MaxBatchSize,
		MaxQueueSize: e.maxQueue,
	}
	if e.linear {
		e.lin = queueing.Linear{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma, Delta: p.Delta}
		cfg.Model = &e.lin
	} else {
		e.it = queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}
		cfg.Model = &e.it
	}
	m, err := queueing.Evaluate(cfg, obs.RateRPS)
	*slot = evalEntry{p: p, obs: obs, m: m, err: err, set: true}
	return m, err
}

// evalHash mixes the bits of every input (FNV-style); only its low bits
// pick a slot.
func evalHash(p Params, obs Observation) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range [...]float64{p.Alpha, p.Beta, p.Gamma, p.Delta, obs.RateRPS, obs.InputTokens, obs.OutputTokens, obs.TTFTMs, obs.ITLMs, float64(obs.MaxBatchSize)} {
		h = (h ^ math.Float64bits(v)) * 1099511628211
		h ^= h >> 29
	}
	return h
}
