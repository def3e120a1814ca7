package sim

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// The endpoint picker's (EPP's) metrics, as llm-d's KEDA guides read them
// through Prometheus: the simulated gateway keeps the signals the EPP
// exports and Prometheus scrapes them every scrape.eppIntervalSeconds (the
// router chart's ServiceMonitor: 10 s). Names and definitions follow
// llm-d/llm-d-router v0.10.0 (pkg/epp/metrics/llm_d_router_metrics.go; the
// flow-control, saturation-detector and in-flight-load plugins):
//   - llm_d_epp_flow_control_queue_size: requests the gateway holds;
//   - llm_d_epp_request_running: requests dispatched to a pod and not
//     finished;
//   - llm_d_epp_flow_control_pool_saturation: the mean over the pool's
//     endpoints of max(waiting / queueDepthThreshold, KV usage /
//     kvCacheUtilThreshold), 1 for an empty pool;
//   - llm_d_epp_inflight_tokens: the prompt tokens, less the prefix the
//     picker found cached, of requests dispatched and not yet at their
//     first token;
//   - llm_d_epp_request_ttft_seconds and
//     llm_d_epp_request_streaming_tpot_seconds: histograms observed once
//     per request at its end, TTFT from arrival to first token and TPOT
//     (e2e − TTFT) / (output tokens − 1), with the EPP's buckets;
//   - sum(vllm:kv_cache_usage_perc) over the model's pods, which the
//     token-aware guide reads beside the EPP's metrics (sampled here at the
//     EPP's scrape rather than the pods' own).

// The EPP's histogram buckets, in seconds (llm_d_router_metrics.go).
var (
	eppTTFTBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60, 120}
	eppTPOTBuckets = []float64{0.0005, 0.00205, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 2}
)

// eppSample is one scrape of the EPP's metrics for one model.
type eppSample struct {
	t              float64
	queue          float64
	running        float64
	saturation     float64
	inflightTokens float64
	kvSum          float64
	// ttft and tpot are the histograms' cumulative bucket counts (the
	// last entry is +Inf), shared with no other sample.
	ttft, tpot []float64
}

func (x eppSample) at() float64 { return x.t }

// eppModel is one model's EPP state: the live gauges it keeps between
// scrapes and the scrapes Prometheus stored.
type eppModel struct {
	inflightTokens float64
	ttft, tpot     []float64 // cumulative bucket counts, +Inf last
	samples        []eppSample
}

// eppState holds every model's EPP metrics for a run whose autoscaler
// reads them (nil otherwise, so other runs pay nothing).
type eppState struct {
	models []eppModel
	// keep is how long scrapes are kept: the longest range an autoscaler
	// reads (keda-slo's rate window over its average, by default a minute
	// and 45 s; at least 5 minutes) plus the pipeline's delay and two
	// scrapes.
	keep float64
}

// An EPPReader is an autoscaler that reads the EPP's metrics: the run
// keeps them and scrapes them.
type EPPReader interface{ ReadsEPP() }

func newEPPState(sc *scenario.Scenario) *eppState {
	slo := sc.Autoscalers.KEDASLO
	keep := math.Max(300, slo.WindowSeconds+slo.AverageSeconds+slo.RuleSeconds) + sc.Scrape.DelaySeconds + 2*sc.Scrape.EPPIntervalSeconds
	e := &eppState{models: make([]eppModel, len(sc.Models)), keep: keep}
	for m := range e.models {
		e.models[m].ttft = make([]float64, len(eppTTFTBuckets)+1)
		e.models[m].tpot = make([]float64, len(eppTPOTBuckets)+1)
	}
	return e
}

// eppDispatched counts a dispatched request's uncached prompt tokens in
// its model's in-flight tokens (c: the candidate it went to, with the
// prefix the picker found there).
func (s *Sim) eppDispatched(q *request, c candidate) {
	if s.epp == nil {
		return
	}
	blocks := c.blocks
	if q.Prefix >= 0 && s.sc.Gateway.Weights.Prefix == 0 && s.gate == nil {
		blocks, _ = c.r.PrefixMatch(&q.Request) // the picker's prefix index, which candidates skipped
	}
	q.eppTokens = float64(max(0, q.Input-blocks*c.r.v.cfg.BlockSize))
	s.epp.models[q.model].inflightTokens += q.eppTokens
}

// eppReleased takes a request out of the in-flight tokens: at its first
// token, or when it fails first.
func (s *Sim) eppReleased(q *request) {
	if s.epp == nil || q.eppTokens == 0 {
		return
	}
	g := &s.epp.models[q.model]
	g.inflightTokens = math.Max(0, g.inflightTokens-q.eppTokens)
	q.eppTokens = 0
}

// eppObserve records a completed request in its model's latency
// histograms (ttft and itl in seconds, as the results count them).
func (s *Sim) eppObserve(q *request, ttft, itl float64) {
	if s.epp == nil {
		return
	}
	g := &s.epp.models[q.model]
	g.ttft[bucketOf(eppTTFTBuckets, ttft)]++
	if q.Output > 1 {
		g.tpot[bucketOf(eppTPOTBuckets, itl)]++
	}
}

// bucketOf is the index of the first bucket whose upper bound holds v
// (len(bounds) for +Inf); the counts stored are per bucket, made
// cumulative when read.
func bucketOf(bounds []float64, v float64) int {
	for i, b := range bounds {
		if v <= b {
			return i
		}
	}
	return len(bounds)
}

// eppScrape stores one scrape of every model's EPP metrics.
func (s *Sim) eppScrape() {
	for m := range s.epp.models {
		g := &s.epp.models[m]
		x := eppSample{t: s.now, running: 0, inflightTokens: g.inflightTokens,
			ttft: append([]float64(nil), g.ttft...), tpot: append([]float64(nil), g.tpot...)}
		for _, q := range s.gateway[m] {
			if !q.failed {
				x.queue++
			}
		}
		x.running, x.saturation, x.kvSum = s.eppPool(m)
		g.samples = append(g.samples, x)
		g.samples = prune(g.samples, s.now-s.epp.keep)
	}
}

// eppPool reads a model's pool: requests on its pods, the saturation
// detector's mean over the endpoints in rotation, and their summed KV
// usage.
func (s *Sim) eppPool(m int) (running, saturation, kvSum float64) {
	qt, kt := 5.0, 0.8 // the detector's defaults
	if g := s.sc.Gateway.Saturation; g != nil {
		qt, kt = float64(g.QueueThreshold), g.KVThreshold
	}
	n := 0
	for _, v := range s.byModel[m] {
		for _, r := range v.replicas {
			running += float64(r.InFlight())
			if r.state != ready || r.draining {
				continue
			}
			n++
			saturation += math.Max(float64(r.QueueLen())/qt, r.KVUsage()/kt)
			kvSum += r.KVUsage()
		}
	}
	if n == 0 {
		return running, 1, kvSum
	}
	return running, saturation / float64(n), kvSum
}

// EPPMetrics reads the EPP's metrics of a run through Prometheus, for the
// autoscalers that use them (nil in a run whose autoscaler does not).
type EPPMetrics struct {
	st    *eppState
	now   float64
	delay float64
}

// latest is the newest scrape of model m the pipeline's delay lets
// through at time t.
func (e *EPPMetrics) latest(m int, t float64) (eppSample, bool) {
	xs := e.st.models[m].samples
	for i := len(xs) - 1; i >= 0; i-- {
		if xs[i].t <= t-e.delay {
			return xs[i], true
		}
	}
	return eppSample{}, false
}

// Gauges are a model's EPP gauges as an instant query reads them now;
// ok is false before the first scrape gets through.
func (e *EPPMetrics) Gauges(m int) (queue, running, saturation, inflightTokens, kvSum float64, ok bool) {
	x, ok := e.latest(m, e.now)
	return x.queue, x.running, x.saturation, x.inflightTokens, x.kvSum, ok
}

// latencyQuantiles are histogram_quantile(q, sum(rate(h_bucket[window])))
// of the TTFT and TPOT histograms of model m, evaluated at time t (a
// recording rule's evaluation: the scrapes stored by then, no query
// delay). ok is false where Prometheus returns NaN: fewer than two scrapes
// in the window, or no request observed in it.
func (e *EPPMetrics) latencyQuantiles(m int, t, window, q float64) (ttft, tpot float64, okT, okP bool) {
	xs := e.st.models[m].samples
	first, last := -1, -1
	for i, x := range xs {
		if x.t <= t && x.t > t-window {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || first == last {
		return 0, 0, false, false
	}
	ttft, okT = histogramQuantile(q, eppTTFTBuckets, xs[first].ttft, xs[last].ttft)
	tpot, okP = histogramQuantile(q, eppTPOTBuckets, xs[first].tpot, xs[last].tpot)
	return ttft, tpot, okT, okP
}

// histogramQuantile is Prometheus' histogram_quantile over the increase of
// per-bucket counts from a to b (the rate's scale does not change a
// quantile): the bucket holding rank q × total, interpolated linearly
// within it from its lower bound (0 for the first bucket); a rank in the
// +Inf bucket returns the highest finite bound. ok is false for no
// observations (NaN in PromQL).
func histogramQuantile(q float64, bounds, a, b []float64) (float64, bool) {
	if len(a) != len(bounds)+1 || len(b) != len(bounds)+1 {
		return 0, false
	}
	total := 0.0
	for i := range b {
		total += b[i] - a[i]
	}
	if !(total > 0) {
		return 0, false
	}
	rank := q * total
	cum, lo := 0.0, 0.0
	for i, hi := range bounds {
		c := b[i] - a[i]
		if cum+c >= rank && c > 0 {
			return lo + (hi-lo)*(rank-cum)/c, true
		}
		cum, lo = cum+c, hi
	}
	return lo, true
}

// SLOSignal is the SLO-aware guide's recording rules' s for model m as
// KEDA reads it now (keda-slo; the rules run in Prometheus, over the EPP's
// latency histograms): the newest rule evaluation the pipeline's delay
// lets through, averaging the clamped raw signal of the evaluations within
// AverageSeconds. ok is false before the first evaluation.
func (e *EPPMetrics) SLOSignal(m int, k scenario.KEDASLOConfig, slo scenario.SLO) (float64, bool) {
	last := math.Floor((e.now-e.delay)/k.RuleSeconds) * k.RuleSeconds
	if last < 0 {
		return 0, false
	}
	sum, n := 0.0, 0
	for t := last; t > last-k.AverageSeconds && t >= 0; t -= k.RuleSeconds {
		sum += math.Min(e.sloRaw(m, k, t, slo), k.Clamp)
		n++
	}
	return sum / float64(n), true
}

// sloRaw is the rule's raw signal at t: max(P90 TTFT / S_ttft, P90 TPOT /
// S_tpot), a quantile Prometheus returns as NaN (no traffic) counting 0.
func (e *EPPMetrics) sloRaw(m int, k scenario.KEDASLOConfig, t float64, slo scenario.SLO) float64 {
	ttft, tpot, okT, okP := e.latencyQuantiles(m, t, k.WindowSeconds, k.Quantile)
	s := 0.0
	if okT {
		s = ttft * 1000 / slo.TTFTMs
	}
	if okP {
		s = math.Max(s, tpot*1000/slo.ITLMs)
	}
	return s
}

// EPPGaugeScrape is one scrape of a model's EPP gauges, made by hand
// (NewEPPMetrics).
type EPPGaugeScrape struct {
	T, Queue, Running, Saturation, InflightTokens, KVSum float64
}

// NewEPPMetrics is what an autoscaler reads at now, through a pipeline of
// the given delay, from scrapes of the gauges made by hand (scrapes[m],
// model m's in time order; no latency observations): for testing an
// autoscaler that reads the EPP on views of its own making. sc must have
// its defaults.
func NewEPPMetrics(sc *scenario.Scenario, now, delay float64, scrapes [][]EPPGaugeScrape) *EPPMetrics {
	st := newEPPState(sc)
	for m, xs := range scrapes {
		for _, x := range xs {
			st.models[m].samples = append(st.models[m].samples, eppSample{t: x.T, queue: x.Queue, running: x.Running,
				saturation: x.Saturation, inflightTokens: x.InflightTokens, kvSum: x.KVSum,
				ttft: make([]float64, len(eppTTFTBuckets)+1), tpot: make([]float64, len(eppTPOTBuckets)+1)})
		}
	}
	return &EPPMetrics{st: st, now: now, delay: delay}
}
