package emulate

import (
	"math"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// vLLM's histogram buckets (vllm/v1/metrics/loggers.py): TTFT, time per
// output token, end-to-end latency, in seconds; token counts in 1-2-5
// steps (build_1_2_5_buckets) up to 100 000.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
		20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
		20.0, 40.0, 80.0}
	e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
		240.0, 480.0, 960.0, 1920.0, 7680.0}
	tokenBuckets = oneTwoFive(100000)
)

func oneTwoFive(upTo float64) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*exp > upTo {
				return out
			}
			out = append(out, m*exp)
		}
	}
}

// hist is a Prometheus histogram's state: counts per bucket (not
// cumulative), sum and count.
type hist struct {
	bounds []float64
	counts []uint64
	sum    float64
	n      uint64
}

func newHist(bounds []float64) hist {
	return hist{bounds: bounds, counts: make([]uint64, len(bounds))}
}

// add observes x, n times.
func (h *hist) add(x float64, n int) {
	if n <= 0 {
		return
	}
	if i := sort.SearchFloat64s(h.bounds, x); i < len(h.bounds) {
		h.counts[i] += uint64(n)
	}
	h.sum += x * float64(n)
	h.n += uint64(n)
}

// cumulative is the buckets as client_golang takes them.
func (h *hist) cumulative() map[float64]uint64 {
	out := make(map[float64]uint64, len(h.bounds))
	var c uint64
	for i, b := range h.bounds {
		c += h.counts[i]
		out[b] = c
	}
	return out
}

// podHists are one server's vLLM histograms.
type podHists struct {
	ttft, tpot, e2e, prompt, gen hist
}

func newPodHists() *podHists {
	return &podHists{ttft: newHist(ttftBuckets), tpot: newHist(tpotBuckets), e2e: newHist(e2eBuckets),
		prompt: newHist(tokenBuckets), gen: newHist(tokenBuckets)}
}

// observe adds a request's observation; latencies are divided by div (the
// time scale when metrics are in wall seconds, else 1). The time per
// output token is observed once per output token after the first, at the
// request's mean (vLLM observes each interval; the sum and count are the
// same, the buckets are those of the mean).
func (p *podHists) observe(o sim.Observation, div float64) {
	switch o.Kind {
	case sim.FirstToken:
		p.ttft.add(o.TTFTSeconds/div, 1)
	case sim.Finished:
		p.e2e.add(o.E2ESeconds/div, 1)
		p.tpot.add(o.ITLSeconds/div, o.OutputTokens-1)
		p.prompt.add(float64(o.InputTokens), 1)
		p.gen.add(float64(o.OutputTokens), 1)
	}
}

// The metric descriptions: vLLM's names and help texts; every series but
// cache_config_info has the labels engine and model_name.
var (
	vllmLabels   = []string{"engine", "model_name"}
	descRunning  = prometheus.NewDesc("vllm:num_requests_running", "Number of requests in model execution batches.", vllmLabels, nil)
	descWaiting  = prometheus.NewDesc("vllm:num_requests_waiting", "Number of requests waiting to be processed.", vllmLabels, nil)
	descKV       = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", vllmLabels, nil)
	descPreempt  = prometheus.NewDesc("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", vllmLabels, nil)
	descPrompt   = prometheus.NewDesc("vllm:prompt_tokens_total", "Number of prefill tokens processed.", vllmLabels, nil)
	descGen      = prometheus.NewDesc("vllm:generation_tokens_total", "Number of generation tokens processed.", vllmLabels, nil)
	descPQueries = prometheus.NewDesc("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", vllmLabels, nil)
	descPHits    = prometheus.NewDesc("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", vllmLabels, nil)
	descSuccess  = prometheus.NewDesc("vllm:request_success_total", "Count of successfully processed requests.",
		[]string{"finished_reason", "engine", "model_name"}, nil)
	descPromptH = prometheus.NewDesc("vllm:request_prompt_tokens", "Number of prefill tokens processed.", vllmLabels, nil)
	descGenH    = prometheus.NewDesc("vllm:request_generation_tokens", "Number of generation tokens processed.", vllmLabels, nil)
	descTTFT    = prometheus.NewDesc("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", vllmLabels, nil)
	descTPOT    = prometheus.NewDesc("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", vllmLabels, nil)
	descE2E     = prometheus.NewDesc("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", vllmLabels, nil)
	descCache   = prometheus.NewDesc("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
		[]string{"block_size", "cache_dtype", "enable_prefix_caching", "engine", "num_gpu_blocks"}, nil)
)

// podMetrics renders one server's page: its gauges and counters from the
// simulator, its histograms from the observations. It is a
// prometheus.Collector over a snapshot taken under the fleet's lock.
type podMetrics struct {
	model string
	st    sim.ReplicaStats
	h     podHists
}

var _ prometheus.Collector = (*podMetrics)(nil)

// Describe implements prometheus.Collector (unchecked: the page is built
// per scrape).
func (p *podMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (p *podMetrics) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, t prometheus.ValueType, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, append(extra, "0", p.model)...)
	}
	st := &p.st
	g(descRunning, prometheus.GaugeValue, float64(st.Running))
	g(descWaiting, prometheus.GaugeValue, float64(st.Waiting))
	g(descKV, prometheus.GaugeValue, math.Min(st.KVUsage, 1))
	g(descPreempt, prometheus.CounterValue, st.Preempted)
	g(descPrompt, prometheus.CounterValue, st.PromptTokens)
	g(descGen, prometheus.CounterValue, st.GenerationTokens)
	g(descPQueries, prometheus.CounterValue, st.PrefixQueries)
	g(descPHits, prometheus.CounterValue, st.PrefixHits)
	// Every emulated request runs to its output length.
	g(descSuccess, prometheus.CounterValue, st.Completed, "length")
	for _, x := range []struct {
		d *prometheus.Desc
		h *hist
	}{{descPromptH, &p.h.prompt}, {descGenH, &p.h.gen}, {descTTFT, &p.h.ttft}, {descTPOT, &p.h.tpot}, {descE2E, &p.h.e2e}} {
		ch <- prometheus.MustNewConstHistogram(x.d, x.h.n, x.h.sum, x.h.cumulative(), "0", p.model)
	}
	ch <- prometheus.MustNewConstMetric(descCache, prometheus.GaugeValue, 1,
		strconv.Itoa(st.BlockSize), "auto", "True", "0", strconv.Itoa(st.KVBlocks))
}
