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
// and remembers recent evaluations in a two-way set-associative cache
// (the less recently used of a set's two slots is replaced): a cycle asks
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
	clock    uint64 // stamps each use of a slot
}

type evalEntry struct {
	p    Params
	obs  Observation
	m    queueing.Metrics
	err  error
	used uint64 // the evaluator's clock at the slot's last use; 0 = empty
}

// slot returns the cache slot holding (p, obs) and whether it does; on a
// miss, the slot to overwrite.
func (e *evaluator) slot(p Params, obs Observation) (*evalEntry, bool) {
	e.clock++
	i := evalHash(p, obs) & (evalCacheSize - 2)
	a, b := &e.cache[i], &e.cache[i+1]
	for _, s := range [2]*evalEntry{a, b} {
		if s.used != 0 && s.p == p && s.obs == obs {
			s.used = e.clock
			return s, true
		}
	}
	if b.used < a.used {
		a = b
	}
	a.used = e.clock
	return a, false
}

func newEvaluator(model string, maxQueue int) *evaluator {
	return &evaluator{linear: model == ModelLinear, maxQueue: max(maxQueue, 0)}
}

// analyze returns the model's metrics for parameters p at obs's load,
// tokens and batch limit.
func (e *evaluator) analyze(p Params, obs Observation) (queueing.Metrics, error) {
	slot, ok := e.slot(p, obs)
	if ok {
		return slot.m, slot.err
	}
	m, err := queueing.Evaluate(e.config(p, obs), obs.RateRPS)
	slot.p, slot.obs, slot.m, slot.err = p, obs, m, err
	return m, err
}

// config is the queueing configuration of p at obs; the service model is
// held by pointer in the evaluator, so building it does not allocate.
func (e *evaluator) config(p Params, obs Observation) queueing.Config {
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
	return cfg
}

// gradient returns the model's metrics for p at obs and their gradient in
// the parameters (queueing.EvaluateGradient), and remembers the metrics.
func (e *evaluator) gradient(p Params, obs Observation) (queueing.Metrics, queueing.Gradient, error) {
	cfg := e.config(p, obs)
	m, g, err := queueing.EvaluateGradient(cfg, obs.RateRPS)
	if err == nil {
		slot, _ := e.slot(p, obs)
		slot.p, slot.obs, slot.m, slot.err = p, obs, m, nil
	}
	return m, g, err
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
