package prometheus

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestServerVersionsAndEngines: one real Prometheus scrapes vLLM servers
// of three generations and an SGLang server. The vllm schema reads the
// current names, the names vLLM used before 0.9.2 and 0.11 (a pod that
// exports both reads the current ones: here the old series carry other
// values, so a wrong pick shows), the cache's size in tokens where vLLM
// gives it, and holds a pod whose cache_config_info is out of range
// instead of modelling a tiny cache; the sglang schema reads SGLang's
// series.
func TestServerVersionsAndEngines(t *testing.T) {
	pod := func(pg testenv.VLLMPage) *httptest.Server {
		pg.Model, pg.RPS, pg.KV, pg.Waiting = "llama", 4, 0.42, 3
		return testenv.ServeVLLMPage(t, pg)
	}
	current := pod(testenv.VLLMPage{})
	legacy := pod(testenv.VLLMPage{Rename: testenv.LegacyVLLM})
	both := pod(testenv.VLLMPage{Extra: map[string]float64{"vllm:gpu_cache_usage_perc": 0.99,
		"vllm:time_per_output_token_seconds_sum": 0.5 * 199, "vllm:time_per_output_token_seconds_count": 199}})
	hybrid := pod(testenv.VLLMPage{CacheInfo: `block_size="16",engine="0",kv_cache_size_tokens="20000",num_gpu_blocks="1024"`})
	negative := pod(testenv.VLLMPage{CacheInfo: `block_size="-1",num_gpu_blocks="-1"`})
	huge := pod(testenv.VLLMPage{CacheInfo: `block_size="4",num_gpu_blocks="4611686018427387904"`})
	overflow := pod(testenv.VLLMPage{CacheInfo: `block_size="16",num_gpu_blocks="99999999999999999999"`})
	sglang := sglangPod(t)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	url := testenv.Prometheus(t, map[string]map[string]string{
		host(current):  {"namespace": "llm", "pod": "current"},
		host(legacy):   {"namespace": "llm", "pod": "legacy"},
		host(both):     {"namespace": "llm", "pod": "both"},
		host(hybrid):   {"namespace": "llm", "pod": "hybrid"},
		host(negative): {"namespace": "llm", "pod": "negative"},
		host(huge):     {"namespace": "llm", "pod": "huge"},
		host(overflow): {"namespace": "llm", "pod": "overflow"},
		host(sglang):   {"namespace": "sgl", "pod": "sglang"},
	})
	vl, err := New(Config{URL: url, Window: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := New(Config{URL: url, Window: 6 * time.Second, Schema: "sglang"})
	if err != nil {
		t.Fatal(err)
	}
	var vrep, srep collector.Report
	// Prometheus's rate() extrapolates by at most half a scrape interval
	// past the first and last samples in the window, so a scrape that a
	// busy machine answers late (or misses) reads a rate below the page's
	// for a window: wait for a window of regular scrapes.
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		if vrep, err = vl.Collect(context.Background(), time.Now(), collector.Target{Namespace: "llm", Model: "llama"}); err != nil {
			t.Fatal(err)
		}
		if srep, err = sg.Collect(context.Background(), time.Now(), collector.Target{Namespace: "sgl", Model: "qwen"}); err != nil {
			t.Fatal(err)
		}
		if settled(vrep, 7) && settled(srep, 1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled after 90 s: %+v\n%+v", vrep, srep)
		}
	}
	checkVLLMVersions(t, vrep)
	checkSGLang(t, srep)
}

// settled says whether the report has n pods, each with rates over a full
// window of regular scrapes (its arrival rate within 2 % of the pages' 4
// requests/s).
func settled(rep collector.Report, n int) bool {
	if len(rep.Pods) != n {
		return false
	}
	for _, p := range rep.Pods {
		if p.Pod.AvgITLMs == 0 || math.Abs(p.Pod.ArrivalRateRPS-4) > 0.08 {
			return false
		}
	}
	return true
}

// checkVLLMVersions: every generation reads the same figures; the cache's
// size is read or, out of range, holds the pod.
func checkVLLMVersions(t *testing.T, vrep collector.Report) {
	t.Helper()
	byName := map[string]engine.Pod{}
	for _, p := range vrep.Pods {
		byName[p.Pod.Name] = p.Pod
	}
	for _, name := range []string{"current", "legacy", "both", "hybrid"} {
		p := byName[name]
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*b }
		if p.Missing || !near(p.AvgITLMs, 10) || p.KVCacheUsage != 0.42 || !near(p.AvgTTFTMs, 50) || p.WaitingRequests != 3 {
			t.Errorf("%s: %+v, want ITL 10 ms, KV 0.42, TTFT 50 ms, 3 waiting", name, p)
		}
	}
	if p := byName["current"]; p.KVBlocks != 1024 || p.BlockSize != 16 {
		t.Errorf("current: %d blocks of %d", p.KVBlocks, p.BlockSize)
	}
	if p := byName["hybrid"]; p.KVBlocks*p.BlockSize != 20000 {
		t.Errorf("hybrid: %d blocks of %d, want the 20000 tokens of kv_cache_size_tokens", p.KVBlocks, p.BlockSize)
	}
	checkInvalidCaches(t, byName, vrep.Problems)
}

// checkInvalidCaches: each pod with an out-of-range cache size is held,
// with an invalid-metrics problem naming the label.
func checkInvalidCaches(t *testing.T, byName map[string]engine.Pod, problems []collector.Problem) {
	t.Helper()
	joined := joinProblems(problems)
	for _, name := range []string{"negative", "huge", "overflow"} {
		if p := byName[name]; !p.Missing || p.KVBlocks != 0 {
			t.Errorf("%s: an invalid cache must hold the pod, not size it: %+v", name, p)
		}
		if !strings.Contains(joined, name+": vllm:cache_config_info label num_gpu_blocks=") {
			t.Errorf("problems name no invalid cache for %s: %s", name, joined)
		}
	}
	for _, pr := range problems {
		if strings.HasPrefix(pr.Pod, "negative") && pr.Kind != engine.HoldInvalid {
			t.Errorf("the invalid cache is a %q problem, want %q", pr.Kind, engine.HoldInvalid)
		}
	}
}

// checkSGLang: the SGLang pod's figures are its page's.
func checkSGLang(t *testing.T, srep collector.Report) {
	t.Helper()
	s := srep.Pods[0].Pod
	for name, c := range map[string][2]float64{"rate": {s.ArrivalRateRPS, 4}, "input": {s.AvgInputTokens, 1000}, "output": {s.AvgOutputTokens, 200},
		"TTFT": {s.AvgTTFTMs, 50}, "ITL": {s.AvgITLMs, 10}, "KV": {s.KVCacheUsage, 0.3}, "waiting": {s.WaitingRequests, 2}, "running": {s.RunningRequests, 5},
		"cache tokens": {float64(s.KVBlocks * s.BlockSize), 500000}} {
		if math.Abs(c[0]-c[1]) > 0.02*c[1] {
			t.Errorf("sglang %s = %v, want %v", name, c[0], c[1])
		}
	}
	if s.Missing || len(srep.Problems) > 0 {
		t.Errorf("sglang: %+v %v", s, srep.Problems)
	}
}

// sglangPod serves an SGLang server's series (its scheduler's with
// tp_rank, its tokenizer's without): 4 requests/s of 1000 prompt and 200
// generated tokens, a 50 ms TTFT, 10 ms per token; 5 running, 2 queued,
// 30 % of a 500 000-token cache.
func sglangPod(t *testing.T) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Timestamped samples: exact rates however late the scrape is
		// answered (see testenv.ServeVLLMPage).
		now := time.Now()
		n := now.Sub(start).Seconds() * 4
		ts := now.UnixMilli()
		sched := `{engine_type="unified",model_name="qwen",moe_ep_rank="0",pp_rank="0",tp_rank="0"}`
		tok := `{engine_type="unified",model_name="qwen"}`
		for _, l := range []string{
			"sglang:num_running_reqs" + sched + " 5", "sglang:num_queue_reqs" + sched + " 2",
			"sglang:token_usage" + sched + " 0.3", "sglang:max_total_num_tokens" + sched + " 500000",
			fmt.Sprintf("sglang:num_requests_total%s %g", tok, n),
			fmt.Sprintf("sglang:prompt_tokens_total%s %g", tok, 1000*n),
			fmt.Sprintf("sglang:generation_tokens_total%s %g", tok, 200*n),
			fmt.Sprintf("sglang:time_to_first_token_seconds_sum%s %g", tok, 0.05*n),
			fmt.Sprintf("sglang:time_to_first_token_seconds_count%s %g", tok, n),
			fmt.Sprintf("sglang:inter_token_latency_seconds_sum%s %g", tok, 0.01*199*n),
			fmt.Sprintf("sglang:inter_token_latency_seconds_count%s %g", tok, 199*n),
		} {
			fmt.Fprintf(w, "%s %d\n", l, ts)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
