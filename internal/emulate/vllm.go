package emulate

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llm-d-incubation/wva/internal/servermetrics"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// The vLLM metric sets an emulated server can serve (--vllm-metrics): the
// default families of a pinned servermetrics fixture.
const (
	// MetricsCurrent is what vLLM ≥ 0.15 exports.
	MetricsCurrent = "current"
	// MetricsLegacy is what vLLM 0.9 and 0.10 exported (time per output
	// token, gpu_cache_usage_perc beside kv_cache_usage_perc).
	MetricsLegacy = "legacy"
)

// metricSets map a set's name to its fixture.
var metricSets = map[string]string{MetricsCurrent: servermetrics.FixtureVLLMCurrent, MetricsLegacy: servermetrics.FixtureVLLMLegacy}

// MetricSet returns the families a server serves for a set name ("" is
// current).
func MetricSet(name string) ([]servermetrics.Family, error) {
	if name == "" {
		name = MetricsCurrent
	}
	fx, ok := metricSets[name]
	if !ok {
		return nil, fmt.Errorf("unknown vLLM metric set %q: want %s or %s", name, MetricsCurrent, MetricsLegacy)
	}
	return servermetrics.MustFixture(fx).Default(), nil
}

// vLLM's histogram buckets (vllm/v1/metrics/loggers.py): TTFT, inter-token
// latency, request latencies (end to end, queue, prefill, decode,
// inference), in seconds; token counts in 1-2-5 steps
// (build_1_2_5_buckets) up to max_model_len, here 100 000; tokens per engine
// step; the n parameter; prefill time per token (before 0.11).
var (
	ttftBuckets = server.TTFTBucketBounds[:]
	tpotBuckets = server.TPOTBucketBounds[:]
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
		240.0, 480.0, 960.0, 1920.0, 7680.0}
	tokenBuckets     = oneTwoFive(100000)
	iterationBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	nBuckets         = []float64{1, 2, 5, 10, 20}
	perTokenBuckets  = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0}
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

// The histograms of a server, by family name without the vllm: prefix.
const (
	hTTFT          = "time_to_first_token_seconds"
	hITL           = "inter_token_latency_seconds"
	hTPOT          = "time_per_output_token_seconds"
	hReqTPOT       = "request_time_per_output_token_seconds"
	hE2E           = "e2e_request_latency_seconds"
	hQueue         = "request_queue_time_seconds"
	hInference     = "request_inference_time_seconds"
	hPrefill       = "request_prefill_time_seconds"
	hDecode        = "request_decode_time_seconds"
	hPrompt        = "request_prompt_tokens"
	hGen           = "request_generation_tokens"
	hKVComputed    = "request_prefill_kv_computed_tokens"
	hIteration     = "iteration_tokens_total"
	hMaxGen        = "request_max_num_generation_tokens"
	hParamsN       = "request_params_n"
	hParamsMax     = "request_params_max_tokens"
	hPrefillPerTok = "time_per_prefill_token_request_seconds"
)

// histBuckets are each histogram's buckets.
var histBuckets = map[string][]float64{
	hTTFT: ttftBuckets, hITL: tpotBuckets, hTPOT: tpotBuckets, hReqTPOT: tpotBuckets,
	hE2E: e2eBuckets, hQueue: e2eBuckets, hInference: e2eBuckets, hPrefill: e2eBuckets, hDecode: e2eBuckets,
	hPrompt: tokenBuckets, hGen: tokenBuckets, hKVComputed: tokenBuckets, hMaxGen: tokenBuckets, hParamsMax: tokenBuckets,
	hIteration: iterationBuckets, hParamsN: nBuckets, hPrefillPerTok: perTokenBuckets,
}

// podHists are one server's vLLM histograms, by name.
type podHists map[string]*hist

func newPodHists() podHists {
	p := make(podHists, len(histBuckets))
	for name, b := range histBuckets {
		h := newHist(b)
		p[name] = &h
	}
	return p
}

// clone copies the histograms (a page is rendered outside the fleet's
// lock).
func (p podHists) clone() podHists {
	out := make(podHists, len(p))
	for name, h := range p {
		c := h.clone()
		out[name] = &c
	}
	return out
}

// observe adds a request's or an engine step's observation; latencies are
// divided by div (the time scale when metrics are in wall seconds, else
// 1). The inter-token latency is observed once per output token after the
// first, at the request's mean (vLLM observes each step's interval; the
// sum and count are the same, the buckets are those of the mean); the
// per-request figures once, at the request's end, as vLLM does:
// queue = scheduled − queued, prefill = first token − scheduled,
// decode = last token − first token, inference = last token − scheduled.
func (p podHists) observe(o sim.Observation, div float64) {
	switch o.Kind {
	case sim.FirstToken:
		p[hTTFT].add(o.TTFTSeconds/div, 1)
	case sim.Iteration:
		if o.Tokens > 0 {
			p[hIteration].add(float64(o.Tokens), 1)
		}
	case sim.Finished:
		decode := o.ITLSeconds * float64(o.OutputTokens-1)
		prefill := max(o.TTFTSeconds-o.QueueSeconds, 0)
		p[hE2E].add(o.E2ESeconds/div, 1)
		p[hITL].add(o.ITLSeconds/div, o.OutputTokens-1)
		p[hTPOT].add(o.ITLSeconds/div, o.OutputTokens-1)
		p[hReqTPOT].add(o.ITLSeconds/div, 1)
		p[hQueue].add(o.QueueSeconds/div, 1)
		p[hPrefill].add(prefill/div, 1)
		p[hDecode].add(decode/div, 1)
		p[hInference].add((prefill+decode)/div, 1)
		if o.InputTokens > 0 {
			p[hPrefillPerTok].add(prefill/div/float64(o.InputTokens), 1)
		}
		// The emulated client asks for max_tokens = the output length, n = 1.
		for name, v := range map[string]int{hPrompt: o.InputTokens, hGen: o.OutputTokens, hMaxGen: o.OutputTokens,
			hParamsMax: o.OutputTokens, hKVComputed: o.InputTokens - o.CachedTokens, hParamsN: 1} {
			p[name].add(float64(v), 1)
		}
	}
}

// sample is one series of a family: its labels beyond engine and
// model_name, and a value or a histogram.
type sample struct {
	labels map[string]string
	value  float64
	hist   *hist
}

// producers render each family a server can serve from its state. A
// family of the fixture without a producer is a test failure
// (TestServesFixtureFamilies).
var producers = map[string]func(p *podMetrics) []sample{
	"vllm:num_requests_running": func(p *podMetrics) []sample { return one(float64(p.st.Running)) },
	"vllm:num_requests_waiting": func(p *podMetrics) []sample { return one(float64(p.st.Waiting)) },
	"vllm:num_requests_waiting_by_reason": func(p *podMetrics) []sample {
		return []sample{{labels: map[string]string{"reason": "capacity"}, value: float64(p.st.Waiting)},
			{labels: map[string]string{"reason": "deferred"}}}
	},
	"vllm:engine_sleep_state": func(*podMetrics) []sample {
		return []sample{{labels: map[string]string{"sleep_state": "awake"}, value: 1},
			{labels: map[string]string{"sleep_state": "weights_offloaded"}}, {labels: map[string]string{"sleep_state": "discard_all"}}}
	},
	"vllm:kv_cache_usage_perc":            func(p *podMetrics) []sample { return one(math.Min(p.st.KVUsage, 1)) },
	"vllm:gpu_cache_usage_perc":           func(p *podMetrics) []sample { return one(math.Min(p.st.KVUsage, 1)) },
	"vllm:num_preemptions_total":          func(p *podMetrics) []sample { return one(p.st.Preempted) },
	"vllm:prompt_tokens_total":            func(p *podMetrics) []sample { return one(p.st.PromptTokens) },
	"vllm:generation_tokens_total":        func(p *podMetrics) []sample { return one(p.st.GenerationTokens) },
	"vllm:prefix_cache_queries_total":     func(p *podMetrics) []sample { return one(p.st.PrefixQueries) },
	"vllm:prefix_cache_hits_total":        func(p *podMetrics) []sample { return one(p.st.PrefixHits) },
	"vllm:gpu_prefix_cache_queries_total": func(p *podMetrics) []sample { return one(p.st.PrefixQueries) },
	"vllm:gpu_prefix_cache_hits_total":    func(p *podMetrics) []sample { return one(p.st.PrefixHits) },
	"vllm:prompt_tokens_cached_total":     func(p *podMetrics) []sample { return one(p.st.PrefixHits) },
	"vllm:prompt_tokens_by_source_total": func(p *podMetrics) []sample {
		return []sample{{labels: map[string]string{"source": "local_compute"}, value: math.Max(p.st.PromptTokens-p.st.PrefixHits, 0)},
			{labels: map[string]string{"source": "local_cache_hit"}, value: p.st.PrefixHits},
			{labels: map[string]string{"source": "external_kv_transfer"}}}
	},
	// Every emulated request runs to its output length; vLLM creates every
	// reason's series at 0.
	"vllm:request_success_total": func(p *podMetrics) []sample {
		out := make([]sample, 0, 1+len(p.otherReasons))
		out = append(out, sample{labels: map[string]string{"finished_reason": "length"}, value: p.st.Completed})
		for _, r := range p.otherReasons {
			out = append(out, sample{labels: map[string]string{"finished_reason": r}})
		}
		return out
	},
	"vllm:cache_config_info": func(p *podMetrics) []sample {
		return []sample{{labels: map[string]string{"block_size": strconv.Itoa(p.st.BlockSize), "num_gpu_blocks": strconv.Itoa(p.st.KVBlocks),
			"kv_cache_size_tokens": strconv.Itoa(p.st.BlockSize * p.st.KVBlocks), "cache_dtype": "auto",
			"enable_prefix_caching": "True", "gpu_memory_utilization": "0.9", "prefix_caching_hash_algo": "sha256",
			"is_attention_free": "False", "calculate_kv_scales": "False", "kv_sharing_fast_prefill": "False",
			"swap_space": "4", "cpu_offload_gb": "0", "num_cpu_blocks": "0"}, value: 1}}
	},
}

func init() {
	for name := range histBuckets {
		producers["vllm:"+name] = func(p *podMetrics) []sample { return []sample{{hist: p.h[name]}} }
	}
}

func one(v float64) []sample { return []sample{{value: v}} }

// podMetrics renders one server's page: the families of its metric set,
// gauges and counters from the simulator, histograms from the
// observations. It is a prometheus.Collector over a snapshot taken under
// the fleet's lock.
type podMetrics struct {
	model    string
	families []servermetrics.Family
	descs    []*prometheus.Desc // of families, in their order
	st       sim.ReplicaStats
	h        podHists
	// otherReasons are the finish reasons besides length the set's vLLM
	// has (their counters stay at 0).
	otherReasons []string
}

var _ prometheus.Collector = (*podMetrics)(nil)

// Describe implements prometheus.Collector (unchecked: the page is built
// per scrape).
func (p *podMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (p *podMetrics) Collect(ch chan<- prometheus.Metric) {
	for i, f := range p.families {
		produce, ok := producers[f.Name]
		if !ok {
			continue // a family the emulator cannot produce (a test fails)
		}
		desc := p.descs[i]
		for _, s := range produce(p) {
			values := make([]string, len(f.Labels))
			for i, l := range f.Labels {
				switch v, ok := s.labels[l]; {
				case ok:
					values[i] = v
				case l == "engine":
					values[i] = "0"
				case l == "model_name":
					values[i] = p.model
				default:
					values[i] = "None" // str(None): a CacheConfig field without a value
				}
			}
			switch {
			case s.hist != nil:
				ch <- prometheus.MustNewConstHistogram(desc, s.hist.n, s.hist.sum, s.hist.cumulative(), values...)
			case f.Type == "counter":
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, s.value, values...)
			default:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.value, values...)
			}
		}
	}
}

// familyDescs are the families' descriptions, built once per fleet (not
// per scrape).
func familyDescs(families []servermetrics.Family) []*prometheus.Desc {
	out := make([]*prometheus.Desc, len(families))
	for i, f := range families {
		help, ok := helpTexts[f.Name]
		if !ok {
			help = "vLLM's " + f.Name + " (emulated)."
		}
		out[i] = prometheus.NewDesc(f.Name, help, f.Labels, nil)
	}
	return out
}

// helpTexts are vLLM's help texts of the figures WVA reads; the others
// name the family.
var helpTexts = map[string]string{
	"vllm:num_requests_running":        "Number of requests in model execution batches.",
	"vllm:num_requests_waiting":        "Number of requests waiting to be processed.",
	"vllm:kv_cache_usage_perc":         "KV-cache usage. 1 means 100 percent usage.",
	"vllm:request_success_total":       "Count of successfully processed requests.",
	"vllm:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
	"vllm:inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
	"vllm:cache_config_info":           "Information of the LLMEngine CacheConfig",
}
