package prometheus

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestCollectFromPrometheus: a real Prometheus scrapes three vLLM-like
// pods; the source returns each pod's rates, averages and gauges, the
// variant label, and flags the pod without a queue gauge (missing: the
// engine holds its variant) and the one whose KV usage is NaN.
func TestCollectFromPrometheus(t *testing.T) {
	busy := testenv.VLLMPod(t, "llama", 4, 0.42, 3)
	idle := testenv.VLLMPod(t, "llama", 0, 0.05, 0)
	broken := testenv.VLLMPod(t, "llama", 1, math.NaN(), -1)
	nanKV := testenv.VLLMPod(t, "llama", 1, math.NaN(), 2)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	url := testenv.Prometheus(t, map[string]map[string]string{
		host(busy):   {"namespace": "llm", "pod": "llama-h100-0", "variant": "h100"},
		host(idle):   {"namespace": "llm", "pod": "llama-a100-0", "variant": "a100"},
		host(broken): {"namespace": "llm", "pod": "llama-a100-1", "variant": "a100"},
		host(nanKV):  {"namespace": "llm", "pod": "llama-a100-2", "variant": "a100"},
	})
	src, err := collector.New("prometheus", map[string]string{"url": url, "window": "6s", "keepLabels": "variant"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep := waitSettled(t, src)
	byName := map[string]collector.PodMetrics{}
	for _, p := range rep.Pods {
		byName[p.Pod.Name] = p
	}
	checkBusy(t, byName["llama-h100-0"])
	i := byName["llama-a100-0"]
	if i.Pod.ArrivalRateRPS != 0 || i.Pod.AvgTTFTMs != 0 || i.Pod.Missing || i.Pod.KVCacheUsage != 0.05 {
		t.Errorf("idle pod must read 0 traffic, not NaN: %+v", i.Pod)
	}
	if !byName["llama-a100-1"].Pod.Missing {
		t.Error("the pod without a queue gauge is not marked missing")
	}
	joined := joinProblems(rep.Problems)
	if !strings.Contains(joined, "llama-a100-1: missing vllm:kv_cache_usage_perc (or vllm:gpu_cache_usage_perc) or vllm:num_requests_waiting") ||
		!strings.Contains(joined, "llama-a100-2: kvCacheUsage is NaN (NaN)") {
		t.Errorf("problems: %q", rep.Problems)
	}
	// A model nobody serves: no pods, and a problem that says so.
	none, err := src.Collect(ctx, time.Now(), collector.Target{Namespace: "llm", Model: "mistral"})
	if err != nil || len(none.Pods) != 0 || len(none.Problems) != 1 || !strings.Contains(none.Problems[0].String(), `no pod reports vLLM metrics for model "mistral"`) {
		t.Errorf("unserved model: %+v, %v", none, err)
	}
}

// waitSettled collects until every pod has rates and the busy pod's has
// settled (rates need samples across the window), for up to 30 s.
func waitSettled(t *testing.T, src collector.Source) collector.Report {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		rep, err := src.Collect(context.Background(), time.Now(), collector.Target{Namespace: "llm", Model: "llama"})
		if err != nil {
			t.Fatal(err)
		}
		// Pods are sorted: llama-a100-0, -1, -2, llama-h100-0.
		if len(rep.Pods) == 4 && rep.Pods[1].Pod.AvgTTFTMs > 0 && rep.Pods[3].Pod.ArrivalRateRPS > 3.2 {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled rates after 30 s: %+v", rep)
		}
	}
}

// checkBusy: the busy pod's figures are what its /metrics page implies.
func checkBusy(t *testing.T, b collector.PodMetrics) {
	t.Helper()
	if b.Labels["variant"] != "h100" || b.Namespace != "llm" || b.Pod.Missing {
		t.Errorf("busy pod: %+v", b)
	}
	if r := b.Pod.ArrivalRateRPS; r < 3 || r > 5 {
		t.Errorf("arrival rate %v, want ≈ 4", r)
	}
	for name, got := range map[string][2]float64{"input tokens": {b.Pod.AvgInputTokens, 1000}, "output tokens": {b.Pod.AvgOutputTokens, 200},
		"TTFT ms": {b.Pod.AvgTTFTMs, 50}, "ITL ms": {b.Pod.AvgITLMs, 10}, "KV": {b.Pod.KVCacheUsage, 0.42},
		"waiting": {b.Pod.WaitingRequests, 3}, "running": {b.Pod.RunningRequests, 7}} {
		if math.Abs(got[0]-got[1]) > 1e-6*got[1] {
			t.Errorf("%s = %v, want %v", name, got[0], got[1])
		}
	}
	if b.Pod.KVBlocks != 1024 || b.Pod.BlockSize != 16 {
		t.Errorf("cache config: %d blocks of %d", b.Pod.KVBlocks, b.Pod.BlockSize)
	}
	if age := time.Since(b.Pod.SampledAt); age < 0 || age > 5*time.Second {
		t.Errorf("sampled %v ago", age)
	}
}

func TestUnreachable(t *testing.T) {
	src, err := New(Config{URL: fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), Retries: 1, Backoff: 10 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Collect(context.Background(), time.Now(), collector.Target{Namespace: "a", Model: "b"})
	if err == nil || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "a/b") {
		t.Errorf("unreachable Prometheus: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "the URL is required"},
		{Config{URL: "prometheus:9090"}, "want http:// or https://"},
		{Config{URL: "http://p", CertFile: "c.pem"}, "needs both the certificate and the key file"},
		{Config{URL: "http://p", CAFile: filepath.Join(dir, "none.pem")}, "CA file"},
		{Config{URL: "https://p", BearerTokenFile: filepath.Join(dir, "none")}, "bearer token file"},
		{Config{URL: "http://p", KeepLabels: []string{"bad-label"}}, `"bad-label" is not a valid label name`},
		{Config{URL: "http://p", Schema: "tgi"}, `unknown metrics schema "tgi" (known: sglang, vllm)`},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := collector.New("prometheus", map[string]string{"url": "http://p", "window": "soon"}); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("bad window: %v", err)
	}
	if _, err := collector.New("influx", nil); err == nil || !strings.Contains(err.Error(), `no metrics source "influx" (have: [prometheus])`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestBearerToken: the token file is read at every request.
func TestBearerToken(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	src, err := New(Config{URL: srv.URL, BearerTokenFile: tok, BearerTokenOverHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Collect(context.Background(), time.Now(), collector.Target{Namespace: "a", Model: "b"}); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0] != "Bearer s3cret" {
		t.Errorf("Authorization headers %q", got)
	}
}

// TestDemand: the default scale-from-zero query on a real Prometheus
// scraping two gateway pages — one exporting the flow-control queue under
// both its names, one under the deprecated name only — counts each queue
// once, per namespace and model.
func TestDemand(t *testing.T) {
	page := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	both := page(`llm_d_epp_flow_control_queue_size{fairness_id="a",priority="0",model_name="llama"} 3
inference_extension_flow_control_queue_size{fairness_id="a",priority="0",model_name="llama"} 3
llm_d_epp_flow_control_queue_size{fairness_id="b",priority="0",model_name="llama"} 2
inference_extension_flow_control_queue_size{fairness_id="b",priority="0",model_name="llama"} 2
`)
	old := page(`inference_extension_flow_control_queue_size{fairness_id="a",priority="0",model_name="mistral"} 4
inference_extension_flow_control_queue_size{fairness_id="a",priority="0",model_name="idle"} 0
`)
	url := testenv.Prometheus(t, map[string]map[string]string{both: {"namespace": "llm", "pod": "epp-0"}, old: {"namespace": "dev", "pod": "epp-1"}})
	src, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	want := map[collector.Target]float64{{Namespace: "llm", Model: "llama"}: 5, {Namespace: "dev", Model: "mistral"}: 4, {Namespace: "dev", Model: "idle"}: 0}
	var got map[collector.Target]float64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		got, err = src.Demand(context.Background(), time.Now(), config.DefaultScaleFromZeroQuery)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 3 || time.Now().After(deadline) {
			break
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("demand %v, want %v", got, want)
	}
	if _, err := src.Demand(context.Background(), time.Now(), "sum by (model_name) ("); err == nil {
		t.Error("a malformed query gave no error")
	}
}
