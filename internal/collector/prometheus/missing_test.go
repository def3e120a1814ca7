package prometheus

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/servermetrics"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestMissingCounterIsMissing: a real Prometheus scrapes a saturated pod
// that exports no arrival counter and one that exports no TTFT histogram.
// Once each has been scraped twice, the absent rate is not read as an idle
// 0 rps: the pods are Missing (the engine holds their variant, where a 0
// would have scaled the saturated pod away), with a problem naming the
// series. A healthy pod beside them is not.
func TestMissingCounterIsMissing(t *testing.T) {
	noArrivals := testenv.VLLMPodWithout(t, "llama", 4, 0.97, 12, "vllm:request_success_total")
	noTTFT := testenv.VLLMPodWithout(t, "llama", 4, 0.5, 0, "vllm:time_to_first_token_seconds_sum", "vllm:time_to_first_token_seconds_count")
	ok := testenv.VLLMPod(t, "llama", 4, 0.5, 0)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	url := testenv.Prometheus(t, map[string]map[string]string{
		host(noArrivals): {"namespace": "llm", "pod": "a"},
		host(noTTFT):     {"namespace": "llm", "pod": "b"},
		host(ok):         {"namespace": "llm", "pod": "c"},
	})
	src, err := New(Config{URL: url, Window: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var rep collector.Report
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		rep, err = src.Collect(context.Background(), time.Now(), collector.Target{Namespace: "llm", Model: "llama"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Pods) == 3 && rep.Pods[2].Pod.ArrivalRateRPS > 3 && rep.Pods[0].Pod.Missing && rep.Pods[1].Pod.Missing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods never settled: %+v", rep)
		}
	}
	if rep.Pods[2].Pod.Missing {
		t.Errorf("the healthy pod is missing: %+v", rep.Pods[2])
	}
	joined := joinProblems(rep.Problems)
	for _, want := range []string{"a: missing vllm:request_success_total (scraped", "b: missing vllm:time_to_first_token_seconds (scraped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q lack %q", rep.Problems, want)
		}
	}
}

// TestFillMissingRule: the rule on its own. A pod scraped fewer than twice
// reads idle (a new pod has no rate yet); scraped twice or more, an absent
// counter makes it Missing; a pod with every counter is never Missing.
func TestFillMissingRule(t *testing.T) {
	all := map[string]float64{qKV: 0.9, qWaiting: 5, qRunning: 8, qSamples: 6}
	for _, c := range counters(servermetrics.VLLM) {
		all[c.sum], all[c.count] = 1, 1
	}
	without := func(samples float64, drop ...string) map[string]float64 {
		v := map[string]float64{}
		for k, x := range all {
			v[k] = x
		}
		for _, d := range drop {
			delete(v, d)
		}
		v[qSamples] = samples
		return v
	}
	for _, tc := range []struct {
		name    string
		v       map[string]float64
		missing bool
		problem string
	}{
		{"complete", without(6), false, ""},
		{"no arrivals, established", without(6, qArrivals), true, "missing vllm:request_success_total"},
		{"no ITL count, established", without(2, qITLCnt), true, "missing vllm:inter_token_latency_seconds (or vllm:time_per_output_token_seconds)"},
		{"two absent", without(3, qGenSum, qPromptCnt), true, "missing vllm:request_prompt_tokens, vllm:request_generation_tokens"},
		{"new pod, no rates yet", without(1, qArrivals, qPromptSum, qPromptCnt, qGenSum, qGenCnt, qTTFTSum, qTTFTCnt, qITLSum, qITLCnt), false, "no request rate yet"},
		{"no sample count", without(0, qArrivals), false, "no request rate yet"},
	} {
		p := engine.Pod{Name: "p"}
		problems := fill(servermetrics.VLLM, &p, tc.v, cacheSize{})
		if p.Missing != tc.missing {
			t.Errorf("%s: missing %v, want %v (%+v)", tc.name, p.Missing, tc.missing, problems)
		}
		joined := joinProblems(problems)
		if (tc.problem == "") != (joined == "") || !strings.Contains(joined, tc.problem) {
			t.Errorf("%s: problems %q, want %q", tc.name, problems, tc.problem)
		}
	}
}

func joinProblems(ps []collector.Problem) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, "\n")
}
