// Package servermetrics says which Prometheus series a model server
// exports for each figure WVA reads: a Schema per serving engine (vLLM, the
// default, and SGLang), each figure with its names in order of preference
// (the current name first, then the names older releases used), and the
// pinned fixtures of the metric families real servers export, against
// which the schemas and the emulator are tested.
//
// It is data only: the Prometheus collector turns a Schema into PromQL,
// the emulator serves a fixture's families. docs/collector.md has the
// tables.
package servermetrics

import (
	"fmt"
	"sort"
	"strings"
)

// Ratio is a figure read as rate(Sum) ÷ rate(Count): a histogram's _sum and
// _count, or two counters (SGLang's prompt tokens per request).
type Ratio struct {
	// Sum and Count are the series names as exposed (with _sum, _count or
	// _total).
	Sum, Count string
	// Family names the metric family in problems and docs.
	Family string
}

// Cache is where a server says how large its KV cache is.
type Cache struct {
	// Info is an info-style gauge (value 1) whose labels carry the
	// geometry: BlocksLabel blocks of BlockSizeLabel tokens, or
	// TokensLabel tokens in all when that label is present (vLLM's
	// kv_cache_size_tokens, exact for hybrid models where blocks × size is
	// not). The series has no model label (vLLM's cache_config_info).
	Info, BlocksLabel, BlockSizeLabel, TokensLabel string
	// TokensGauge is a gauge whose value is the cache's size in tokens,
	// with the model label (SGLang's max_total_num_tokens).
	TokensGauge string
}

// Schema is one serving engine's series for the figures WVA reads. Each
// list holds alternatives in order of preference: the collector reads the
// first one a pod exports (PromQL `or`), so one schema serves current and
// older releases of its engine.
type Schema struct {
	// Name selects the schema (WVA_METRICS_SCHEMA).
	Name string
	// Engine is the server's name for people ("vLLM").
	Engine string
	// ModelLabel is the label naming the served model.
	ModelLabel string
	// Requests are counters of finished requests: their rate is the pod's
	// throughput, which the engine reads as its arrival rate.
	Requests []string
	// PromptTokens and OutputTokens are the mean tokens per request;
	// TTFT and ITL the mean latencies in seconds.
	PromptTokens, OutputTokens, TTFT, ITL []Ratio
	// KVUsage (a fraction of the KV cache in use), Waiting and Running
	// (requests) are gauges.
	KVUsage, Waiting, Running []string
	// Cache is where the KV cache's size is read, in order of preference.
	Cache []Cache
	// Preemptions are counters of requests the server preempted (and will
	// recompute): their rate keeps the tuner from reading recompute as
	// slow service. Optional: a server without one reads as never
	// preempting.
	Preemptions []string
	// TTFTHistogram and TPOTHistogram are the histogram families whose
	// buckets give the share of requests within the SLO, for the
	// attainment feedback (docs/engine.md §3 item 11): each request's TTFT, and
	// each request's mean time per output token. Optional: without them
	// the feedback does not run (without TPOTHistogram it counts TTFT
	// alone).
	TTFTHistogram, TPOTHistogram []string
}

// histogram is the Ratio of a histogram family.
func histogram(family string) Ratio {
	return Ratio{Sum: family + "_sum", Count: family + "_count", Family: family}
}

// VLLM reads vLLM's V1 engine: the names of vLLM ≥ 0.11 first, then the
// names they replaced, so that 0.9 and later are read alike
// (docs/collector.md has the versions each name serves).
var VLLM = Schema{
	Name: "vllm", Engine: "vLLM", ModelLabel: "model_name",
	Requests:     []string{"vllm:request_success_total"},
	PromptTokens: []Ratio{histogram("vllm:request_prompt_tokens")},
	OutputTokens: []Ratio{histogram("vllm:request_generation_tokens")},
	TTFT:         []Ratio{histogram("vllm:time_to_first_token_seconds")},
	// inter_token_latency_seconds since 0.11 (vLLM pull request 24110);
	// time_per_output_token_seconds, the same observations under the old
	// name, hidden in 0.12 and removed by pull request 32661.
	ITL: []Ratio{histogram("vllm:inter_token_latency_seconds"), histogram("vllm:time_per_output_token_seconds")},
	// kv_cache_usage_perc since 0.9.2 (pull request 18354);
	// gpu_cache_usage_perc before, removed in 0.12 (pull request 29330).
	KVUsage: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
	Waiting: []string{"vllm:num_requests_waiting"},
	Running: []string{"vllm:num_requests_running"},
	Cache: []Cache{{Info: "vllm:cache_config_info", BlocksLabel: "num_gpu_blocks", BlockSizeLabel: "block_size", //nolint:gosec // G101: metric and label names, not credentials
		TokensLabel: "kv_cache_size_tokens"}},
	// num_preemptions_total since 0.7 (V0 and V1 alike).
	Preemptions: []string{"vllm:num_preemptions_total"},
	// request_time_per_output_token_seconds: each request's decode time
	// over its output tokens after the first (vllm/v1/metrics/loggers.py).
	TTFTHistogram: []string{"vllm:time_to_first_token_seconds"},
	TPOTHistogram: []string{"vllm:request_time_per_output_token_seconds"},
}

// SGLang reads SGLang's scheduler and tokenizer metrics (its
// --enable-metrics): prompt and generated tokens per request are counter
// ratios, the ITL histogram counts tokens (so its mean is per token), and
// the KV cache's size is max_total_num_tokens.
var SGLang = Schema{
	Name: "sglang", Engine: "SGLang", ModelLabel: "model_name",
	Requests: []string{"sglang:num_requests_total"},
	PromptTokens: []Ratio{{Sum: "sglang:prompt_tokens_total", Count: "sglang:num_requests_total",
		Family: "sglang:prompt_tokens"}},
	OutputTokens: []Ratio{{Sum: "sglang:generation_tokens_total", Count: "sglang:num_requests_total",
		Family: "sglang:generation_tokens"}},
	TTFT:    []Ratio{histogram("sglang:time_to_first_token_seconds")},
	ITL:     []Ratio{histogram("sglang:inter_token_latency_seconds")},
	KVUsage: []string{"sglang:token_usage"},
	Waiting: []string{"sglang:num_queue_reqs"},
	Running: []string{"sglang:num_running_reqs"},
	Cache:   []Cache{{TokensGauge: "sglang:max_total_num_tokens"}}, //nolint:gosec // G101: a metric name, not a credential
	// SGLang's ITL histogram counts tokens, not requests: TTFT alone.
	TTFTHistogram: []string{"sglang:time_to_first_token_seconds"},
}

// schemas are the built-in schemas by name.
var schemas = map[string]Schema{VLLM.Name: VLLM, SGLang.Name: SGLang}

// Default is the schema used when none is named.
const Default = "vllm"

// Lookup returns the schema called name ("" is Default).
func Lookup(name string) (Schema, error) {
	if name == "" {
		name = Default
	}
	s, ok := schemas[name]
	if !ok {
		return Schema{}, fmt.Errorf("unknown metrics schema %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Names are the built-in schemas' names, sorted.
func Names() []string {
	out := make([]string, 0, len(schemas))
	for n := range schemas {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Series are every series name the schema may select, sorted and without
// duplicates.
func (s Schema) Series() []string {
	set := map[string]bool{}
	for _, l := range [][]string{s.Requests, s.KVUsage, s.Waiting, s.Running, s.Preemptions} {
		for _, n := range l {
			set[n] = true
		}
	}
	for _, l := range [][]Ratio{s.PromptTokens, s.OutputTokens, s.TTFT, s.ITL} {
		for _, r := range l {
			set[r.Sum], set[r.Count] = true, true
		}
	}
	for _, c := range s.Cache {
		set[c.Info], set[c.TokensGauge] = true, true
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Alternatives names a figure's series for a message: the first, and the
// others in parentheses ("a (or b)").
func Alternatives(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return names[0] + " (or " + strings.Join(names[1:], ", ") + ")"
}
