package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// tuneWindow is how many accepted updates make learned parameters usable
// for sizing: the tuner's warm-up (its default Window).
const tuneWindow = 5

// tuneProvisional is how many accepted updates make learned parameters
// usable for adding replicas before the warm-up ends (provisional sizing:
// the saturation analysis decides, the model may only raise its target).
const tuneProvisional = 3

// tuneCandidates finds the variants whose tuner can step this cycle: those
// not held, with mature pods with traffic (the WVA queueing-model guide §4;
// pods younger than the transient delay are skipped), outside a backlog's
// clearing. scheduleTuning then picks which of them step.
func (c *cycle) tuneCandidates(ms *modelState) {
	for _, vs := range ms.variants {
		if vs.held {
			continue
		}
		if ms.finished > 0 {
			// Its latencies are those of the backlog's requests, its rates
			// the backlog's clearing: no steady state at any load.
			vs.note("tuner skipped: the pods finished %.3g requests/s while %.3g arrived and %.0f waited: a backlog clearing", ms.finished, ms.m.ArrivalRateRPS, ms.waiting)
			continue
		}
		_, vs.tuneNow = c.observation(vs)
	}
}

// scheduleTuning keeps at most Config.TunerBudget of the candidates'
// steps: when more variants want one, those whose tuner stepped longest
// ago (never first) step, ties in key order, so that every variant steps
// at least once every ⌈candidates / budget⌉ cycles. The others keep what
// their tuners stored, and say so.
func (c *cycle) scheduleTuning() {
	last := c.e.state.TunerSteps
	type candidate struct {
		at time.Time // the last step (zero: never, which sorts first)
		vs *variantState
	}
	var cands []candidate
	for _, vs := range c.all {
		if vs.tuneNow {
			cands = append(cands, candidate{last[vs.key], vs})
		}
	}
	if budget := c.cfg.TunerBudget; len(cands) > budget {
		slices.SortFunc(cands, func(a, b candidate) int {
			if order := a.at.Compare(b.at); order != 0 {
				return order
			}
			return strings.Compare(a.vs.key, b.vs.key)
		})
		// The deferred variants share a few last-step times (the cycles
		// they last stepped in): one note each.
		notes := map[time.Time]string{}
		for _, cd := range cands[budget:] {
			cd.vs.tuneNow = false
			n, ok := notes[cd.at]
			if !ok {
				n = fmt.Sprintf("tuner step deferred: %d variants wanted one, tuning-budget allows %d a cycle", len(cands), budget)
				if !cd.at.IsZero() {
					n += fmt.Sprintf(" (last step %.0f s ago)", c.now.Sub(cd.at).Seconds())
				}
				notes[cd.at] = n
			}
			cd.vs.notes = append(cd.vs.notes, n)
		}
		c.tunerDeferred = len(cands) - budget
		cands = cands[:budget]
	}
	for _, cd := range cands {
		last[cd.vs.key] = c.now
	}
	// Forget variants no longer planned, so that the map stays the
	// fleet's size.
	if len(last) > 2*len(c.all) {
		now := make(map[string]bool, len(c.all))
		for _, vs := range c.all {
			now[vs.key] = true
		}
		for k := range last {
			if !now[k] {
				delete(last, k)
			}
		}
	}
}

// tune runs one tuner step for each variant scheduleTuning picked.
func (c *cycle) tune(ms *modelState) {
	for _, vs := range ms.variants {
		if !vs.tuneNow {
			continue
		}
		obs, _ := c.observation(vs)
		key := tuner.Key{Namespace: ms.m.Namespace, Model: ms.m.ID, Variant: vs.v.Name}
		cfg := c.cfg.Tuner
		cfg.ServiceModel, cfg.MaxQueueSize = vs.v.serviceModel(), c.cfg.MaxQueueSize
		tu, err := c.restoreTuner(key, cfg, obs, vs.v.Params)
		if err != nil {
			vs.note("tuner: %v", err)
			continue
		}
		st, err := tu.Step(obs)
		// The tuner is rebuilt from its record next cycle: its caches go
		// back to the pool for the next variant's.
		tu.Release()
		if err != nil {
			vs.note("tuner: %v", err)
			continue
		}
		vs.paramsSD = stdDevOf(st.Covariance.Rows())
		rec := tu.Record(c.now)
		if err := c.e.store.Put(key, rec); err != nil {
			vs.note("tuner: storing parameters: %v", err)
		} else {
			stored := tuner.SummaryOf(rec)
			vs.stored = &stored
		}
		if !st.Accepted {
			vs.note("tuner %s", st.Reason)
		}
	}
}

// restoreTuner resumes a variant's tuner from its record; without one it
// starts from the variant's profile as a prior with a variance
// (tuner.NewProfiled), else cold from the first observation.
func (c *cycle) restoreTuner(key tuner.Key, cfg tuner.Config, obs tuner.Observation, profile *tuner.Params) (*tuner.Tuner, error) {
	rec, ok, err := c.e.store.Get(key)
	if err != nil {
		return nil, err
	}
	if ok && rec.ServiceModel == cfg.ServiceModel {
		if t, err := tuner.Restore(cfg, rec); err == nil {
			return t, nil
		}
	}
	if profile != nil {
		if t, err := tuner.NewProfiled(cfg, *profile); err == nil {
			return t, nil
		}
	}
	t, _, err := tuner.NewCold(cfg, obs)
	return t, err
}

// observation aggregates a variant's mature pods with traffic into one
// per-replica observation, arrival-weighted.
func (c *cycle) observation(vs *variantState) (tuner.Observation, bool) {
	var rate, in, out, ttft, itl, waiting, preempt, running float64
	n, batch := 0, 0
	for _, p := range vs.pods {
		if p.ArrivalRateRPS <= 0 || (p.AgeSeconds > 0 && p.AgeSeconds < c.cfg.TransientDelaySeconds) {
			continue
		}
		r := p.ArrivalRateRPS
		rate += r
		in += r * p.AvgInputTokens
		out += r * p.AvgOutputTokens
		ttft += r * p.AvgTTFTMs
		itl += r * p.AvgITLMs
		// One waiting request is an arrival that waits for the next engine
		// step (vLLM lists it as waiting until the scheduler admits it), and
		// the figure is a maximum over the window: only the rest queues.
		waiting += math.Max(p.WaitingRequests-1, 0)
		preempt += p.PreemptionsPerSec
		running += p.RunningRequests
		batch = max(batch, p.MaxBatchSize)
		n++
	}
	if n == 0 {
		return tuner.Observation{}, false
	}
	obs := tuner.Observation{RateRPS: rate / float64(n), InputTokens: in / rate, OutputTokens: out / rate,
		TTFTMs: ttft / rate, ITLMs: itl / rate, WaitingRequests: waiting / float64(n), PreemptionsPerSec: preempt / float64(n),
		RunningRequests: running / float64(n)}
	obs.MaxBatchSize = c.effectiveBatch(vs, c.maxBatch(vs, batch), obs.InputTokens, obs.OutputTokens)
	return obs, obs.Validate() == nil
}

// maxBatch is the variant's N: configured, else reported by its pods, else 256.
func (c *cycle) maxBatch(vs *variantState, fromPods int) int {
	switch {
	case vs.v.MaxBatchSize > 0:
		return vs.v.MaxBatchSize
	case fromPods > 0:
		return fromPods
	}
	for _, p := range vs.pods {
		fromPods = max(fromPods, p.MaxBatchSize)
	}
	if fromPods > 0 {
		return fromPods
	}
	return DefaultMaxBatchSize
}

// effectiveBatch is the most requests a replica can run at once: its batch
// size N, or fewer when its KV cache (blocks × block size, as its pods
// report) cannot hold N requests of the average size (input + output
// tokens, the most a request holds). Beyond the WVA guide: without it a
// KV-bound server (a small cache, long requests) looks far faster to the
// queueing model than it is.
func (c *cycle) effectiveBatch(vs *variantState, n int, in, out float64) int {
	kv := 0
	for _, p := range vs.pods {
		if invalidCache(p) == nil { // a pod with an invalid cache holds; never multiply its figures
			kv = max(kv, p.KVBlocks*p.BlockSize)
		}
	}
	if kv == 0 || in+out <= 0 {
		return n
	}
	return max(1, min(n, int(float64(kv)/(in+out))))
}

// params returns the variant's parameters for sizing: learned once the
// tuner has warmed up, else profiled, else none.
func (c *cycle) params(vs *variantState) (*tuner.Params, string, string) {
	key := tuner.Key{Namespace: vs.model.m.Namespace, Model: vs.model.m.ID, Variant: vs.v.Name}
	tuning := ""
	if c.cfg.TuningEnabled {
		if rec, ok := c.tuningOf(key, vs); ok && rec.ServiceModel == vs.v.serviceModel() {
			if rec.Updates >= tuneWindow {
				p := rec.Params
				return &p, "learned", fmt.Sprintf("%d updates", rec.Updates)
			}
			tuning = fmt.Sprintf("warming up (%d of %d updates)", rec.Updates, tuneWindow)
			if rec.Updates >= tuneProvisional && vs.v.Params == nil {
				p := rec.Params
				return &p, "provisional", tuning + ": it may only add replicas"
			}
		} else {
			tuning = "no observations yet"
		}
	}
	if vs.v.Params != nil {
		return vs.v.Params, "profiled", tuning
	}
	return nil, "", tuning
}

// tuningOf returns what the store holds for the variant: what this
// cycle's tuner step stored, else the summary of the store's record (a
// tuner that did not step this cycle: idle between tuner periods,
// deferred by the tuning budget, skipped, or held).
func (c *cycle) tuningOf(key tuner.Key, vs *variantState) (tuner.Summary, bool) {
	if vs.stored != nil {
		return *vs.stored, true
	}
	sum, ok, err := tuner.SummaryFrom(c.e.store, key)
	if err != nil || !ok {
		return tuner.Summary{}, false
	}
	return sum, true
}

// stdDevOf is the standard deviation of each parameter: the square root of
// the covariance's diagonal, in the order of tuner.Params (α, β, γ, δ).
func stdDevOf(cov [][]float64) *tuner.Params {
	var sd [4]float64
	for i := 0; i < len(cov) && i < len(sd); i++ {
		if i < len(cov[i]) {
			sd[i] = math.Sqrt(math.Max(cov[i][i], 0))
		}
	}
	return &tuner.Params{Alpha: sd[0], Beta: sd[1], Gamma: sd[2], Delta: sd[3]}
}

// errNoParams: a variant cannot be sized without parameters.
var errNoParams = errors.New("no performance parameters (profile the variant or enable tuning)")

// analyzeModel is the queueing-model analyzer (the WVA queueing-model
// guide; docs/engine.md §3): SLO resolution,
// then λ* and the per-replica capacity of every variant. A variant that
// cannot be sized gets a zero-capacity placeholder; the model fails only if
// every variant fails.
func (c *cycle) analyzeModel(ms *modelState) {
	if ms.reporting == 0 && ms.current > 0 {
		// Replicas exist but none reports yet (all starting, or not yet
		// scraped): the demand is unknown, not zero. No opinion, so the
		// model is not scaled down to its minimum before it is measured.
		ms.sum.ModelError = fmt.Sprintf("no replica reports metrics yet (%d starting or unscraped)", ms.current)
		return
	}
	slo, source, err := c.resolveSLO(ms)
	ms.sum.SLOSource = source
	ms.sum.SLOTTFTMs, ms.sum.SLOITLMs, ms.sum.SLOTPS = slo.TTFTMs, slo.ITLMs, slo.TPS
	if err != nil {
		ms.sum.ModelError = err.Error()
		return
	}
	if ms.outTok > 0 {
		ms.tpsFloor = slo.TPS / ms.outTok
	}
	if source == "explicit" || source == "service-class" {
		// Targets stated per request are judged per request.
		slo.TTFTAttainment = c.cfg.TTFTAttainment
	}
	ms.slo = slo
	ok, provisional := 0, 0
	for _, vs := range ms.variants {
		vs.detail = &ModelDetail{}
		p, src, tuning := c.params(vs)
		vs.detail.ParamsSource, vs.detail.Params, vs.detail.Tuning = src, p, tuning
		if src == "learned" || src == "provisional" {
			vs.detail.ParamsStdDev = vs.paramsSD
		}
		if err := c.size(ms, vs, p, slo); err != nil {
			vs.detail.Error = err.Error()
			vs.noParams = p == nil
			continue
		}
		ok++
		if src == "provisional" {
			vs.provisional = true
			provisional++
		}
	}
	ms.modelOK = ok > 0 || ms.demand == 0
	// A model sized only provisionally leaves the backlog to the
	// saturation analyzer (drain.go plansBacklog).
	ms.provisional = ok > 0 && provisional == ok
	if !ms.modelOK {
		ms.sum.ModelError = "no variant could be sized"
	}
	c.forecast(ms)
	c.fleetCapacity(ms)
	c.feedback(ms)
}

// size computes a variant's per-replica capacity under the SLO.
func (c *cycle) size(ms *modelState, vs *variantState, p *tuner.Params, slo queueing.Targets) error {
	if ms.demand == 0 {
		return nil // no traffic, nothing to size: the allocator keeps the minimum
	}
	if p == nil {
		return errNoParams
	}
	cfg := c.analyzerConfig(ms, vs, p)
	vs.detail.InputTokens, vs.detail.OutputTokens = cfg.Workload.InputTokens, cfg.Workload.OutputTokens
	vs.detail.MaxBatchSize = cfg.MaxBatchSize
	a, err := queueing.NewAnalyzer(cfg)
	if err != nil {
		return err
	}
	sz, err := a.SizeNear(slo, vs.hints)
	if err != nil {
		return err
	}
	vs.hints = queueing.Hints{TTFTRPS: sz.RateTTFTRPS, ITLRPS: sz.RateITLRPS}
	vs.capacity = sz.CapacityRPS
	vs.maxRate = a.MaxRate()
	vs.detail.RateStarRPS, vs.detail.CapacityPerReplicaRPS = sz.RateStarRPS, sz.CapacityRPS
	vs.detail.SupplyRPS = float64(vs.v.ReadyReplicas) * sz.CapacityRPS
	vs.detail.Binding = sz.Binding
	return nil
}

// analyzerConfig is the queueing model of one replica of the variant with
// parameters p, at the model's token counts and the variant's effective
// batch.
func (c *cycle) analyzerConfig(ms *modelState, vs *variantState, p *tuner.Params) queueing.Config {
	return c.analyzerConfigAt(vs, p, ms.inTok, math.Max(ms.outTok, 1))
}

// analyzerConfigAt is the queueing model of one replica of the variant
// with parameters p at in and out tokens per request.
func (c *cycle) analyzerConfigAt(vs *variantState, p *tuner.Params, in, out float64) queueing.Config {
	var model queueing.ServiceModel = queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}
	if vs.v.serviceModel() == tuner.ModelLinear {
		model = queueing.Linear{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma, Delta: p.Delta}
	}
	return queueing.Config{Model: model, Workload: queueing.Workload{InputTokens: in, OutputTokens: out},
		MaxBatchSize: c.effectiveBatch(vs, c.maxBatch(vs, 0), in, out), MaxQueueSize: c.cfg.MaxQueueSize}
}

// resolveSLO is SLO targeting (the WVA queueing-model guide §3): explicit
// targets (the model's, then its service class's), else k·α inferred from the variants' parameters (the
// maximum over variants), else 1.5× the observed latency capped at
// 10 000 ms / 500 ms.
func (c *cycle) resolveSLO(ms *modelState) (queueing.Targets, string, error) {
	m := ms.m
	if m.SLO != nil && (m.SLO.TTFTMs > 0 || m.SLO.ITLMs > 0) {
		return queueing.Targets{TTFTMs: m.SLO.TTFTMs, ITLMs: m.SLO.ITLMs, TPS: m.SLO.TPS}, "explicit", nil
	}
	if sc, ok := c.s.ServiceClasses[m.ServiceClass]; ok && (sc.TTFTMs > 0 || sc.ITLMs > 0) {
		return queueing.Targets{TTFTMs: sc.TTFTMs, ITLMs: sc.ITLMs, TPS: sc.TPS}, "service-class", nil
	}
	if inferred := c.inferSLO(ms); inferred.TTFTMs > 0 {
		return inferred, "inferred", nil
	}
	if ms.ttftMs > 0 && ms.itlMs > 0 {
		return queueing.Targets{TTFTMs: math.Min(FallbackHeadroom*ms.ttftMs, MaxFallbackTTFT),
			ITLMs: math.Min(FallbackHeadroom*ms.itlMs, MaxFallbackITL)}, "observed", nil
	}
	if ms.demand == 0 {
		return queueing.Targets{}, "", nil // idle: nothing to size against
	}
	return queueing.Targets{}, "", errors.New("no SLO: set targets, or provide parameters or latency metrics")
}

// inferSLO is the SLO the multiplier k implies for the model's average
// request (the WVA queueing-model guide §3.2): per iteration-model variant
// with parameters, TTFT = kα + (β+γ)i and ITL = kα + β + γ(i + (o+1)/2), the
// maximum over the variants; zero targets when none has parameters.
func (c *cycle) inferSLO(ms *modelState) queueing.Targets {
	var inferred queueing.Targets
	if ms.outTok <= 0 {
		return inferred
	}
	k := c.cfg.SLOMultiplier
	if ms.m.SLOMultiplier > 0 {
		k = ms.m.SLOMultiplier
	}
	w := queueing.Workload{InputTokens: ms.inTok, OutputTokens: ms.outTok}
	for _, vs := range ms.variants {
		p, _, _ := c.params(vs)
		if p == nil || vs.v.serviceModel() != tuner.ModelIteration {
			continue
		}
		it := queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}
		if ttft, itl, err := it.SLOForMultiplier(w, k); err == nil {
			inferred.TTFTMs, inferred.ITLMs = math.Max(inferred.TTFTMs, ttft), math.Max(inferred.ITLMs, itl)
		}
	}
	return inferred
}
