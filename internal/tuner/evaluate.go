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
	// saturated reports an observation whose replicas had a queue: its
	// ITL is read at the batch they report running (atRunningBatch), or,
	// without a running count, at a load that fills the batch (see rate).
	saturated func(Observation) bool
}

// saturationLoad is the multiple of λmax at which an observation whose
// replicas had a queue is evaluated: the batch is then full (B̄ = N to
// within 10⁻⁹ at N = 256), whatever the arrivals did in the window. That
// is the batch's reading when the pods report no running count; with one,
// the ITL is read at it instead (atRunningBatch), and the TTFT at this
// load only stands in for a value the fit drops.
const saturationLoad = 4

// rate is the arrival rate at which obs is evaluated under cfg.
func (e *evaluator) rate(cfg queueing.Config, obs Observation) float64 {
	if !e.queued(obs) {
		return obs.RateRPS
	}
	if mr, err := queueing.MaxRateOf(cfg); err == nil {
		return saturationLoad * mr
	}
	return obs.RateRPS
}

// queued reports whether obs is read as a server with a queue.
func (e *evaluator) queued(obs Observation) bool {
	return e.saturated != nil && e.saturated(obs)
}

// runningBatch returns the batch at which a queued observation's ITL is
// read — the requests its replicas reported running — and whether there
// is one. A queue does not mean a full batch: a compute-bound server's
// per-step token budget (vLLM's max_num_batched_tokens) admits a few
// prompts a step and holds the rest waiting behind a half-empty batch, and
// the batch a server with a queue holds is what its ITL is the step time
// of. Only the iteration model (the tuner's log-space model) reads it;
// without a running count the batch is the model's full one (rate).
func (e *evaluator) runningBatch(obs Observation) (float64, bool) {
	if e.linear || obs.RunningRequests < 1 || !e.queued(obs) {
		return 0, false
	}
	return obs.RunningRequests, true
}

// atRunningBatch replaces m's ITL (and g's, when g is not nil) with the
// model's ITL at the batch obs's replicas ran, decode(b) = T_iter(b) + β +
// γ·(i + (o+1)/2) (queueing.Iteration.Decode: the iteration model's ITL
// at a batch of b), when obs is a queued observation with a running
// count. The TTFT, whose queue the fit drops, stays the model's at a full
// batch.
func (e *evaluator) atRunningBatch(cfg queueing.Config, obs Observation, m *queueing.Metrics, g *queueing.Gradient) {
	b, ok := e.runningBatch(obs)
	if !ok {
		return
	}
	w := cfg.Workload
	m.ITLMs = e.it.Decode(w, b)
	if g != nil {
		i, o := w.InputTokens, w.OutputTokens
		g.ITL[0], g.ITL[1], g.ITL[2] = 1, b*(i+o)/(o+1)+1, b*(i+o/2)+i+(o+1)/2
	}
}

type evalEntry struct {
	p    Params
	obs  Observation
	m    queueing.Metrics
	err  error
	ln   [2]float64 // log TTFT and log ITL, when both are positive (ok)
	ok   bool
	used uint64 // the evaluator's clock at the slot's last use; 0 = empty
}

// fill stores an evaluation in the slot, with the logs the tuner fits.
func (s *evalEntry) fill(p Params, obs Observation, m queueing.Metrics, err error) {
	s.p, s.obs, s.m, s.err = p, obs, m, err
	s.ok = err == nil && m.TTFTMs > 0 && m.ITLMs > 0
	if s.ok {
		s.ln = [2]float64{math.Log(m.TTFTMs), math.Log(m.ITLMs)}
	}
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

// analyze returns the model's metrics for parameters p at obs's load,
// tokens and batch limit.
func (e *evaluator) analyze(p Params, obs Observation) (queueing.Metrics, error) {
	slot := e.entry(p, obs)
	return slot.m, slot.err
}

// logs returns log TTFT and log ITL for p at obs, and whether the model
// gives both (positive): what the fit compares with the observations,
// remembered with the evaluation.
func (e *evaluator) logs(p Params, obs Observation) ([2]float64, bool) {
	slot := e.entry(p, obs)
	return slot.ln, slot.ok
}

// entry returns the cache slot of (p, obs), evaluating on a miss.
func (e *evaluator) entry(p Params, obs Observation) *evalEntry {
	slot, ok := e.slot(p, obs)
	if !ok {
		cfg := e.config(p, obs)
		m, err := queueing.Evaluate(cfg, e.rate(cfg, obs))
		if err == nil {
			e.atRunningBatch(cfg, obs, &m, nil)
		}
		slot.fill(p, obs, m, err)
	}
	return slot
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
		// Params.serviceModel, held by pointer.
		e.it = queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}
		cfg.Model = &e.it
	}
	return cfg
}

// gradient returns the model's metrics for p at obs and their gradient in
// the parameters (queueing.EvaluateGradient), and remembers the metrics.
func (e *evaluator) gradient(p Params, obs Observation) (queueing.Metrics, queueing.Gradient, error) {
	cfg := e.config(p, obs)
	// At saturation the latencies do not depend on the rate, so its
	// dependence on the parameters (through λmax) adds nothing.
	m, g, err := queueing.EvaluateGradient(cfg, e.rate(cfg, obs))
	if err == nil {
		e.atRunningBatch(cfg, obs, &m, &g)
		slot, _ := e.slot(p, obs)
		slot.fill(p, obs, m, nil)
	}
	return m, g, err
}

// evalHash mixes the bits of every input (FNV-style); only its low bits
// pick a slot.
func evalHash(p Params, obs Observation) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range [...]float64{p.Alpha, p.Beta, p.Gamma, p.Delta, obs.RateRPS, obs.InputTokens, obs.OutputTokens, obs.TTFTMs, obs.ITLMs, float64(obs.MaxBatchSize), obs.RunningRequests} {
		h = (h ^ math.Float64bits(v)) * 1099511628211
		h ^= h >> 29
	}
	return h
}
