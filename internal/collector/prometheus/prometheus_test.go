package prometheus

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
)

// vllmPod serves a vLLM-like /metrics page: requests complete at rps, each
// with 1000 prompt and 200 generated tokens, a 50 ms TTFT and 10 ms per
// output token. kv and waiting are the gauges; a negative value leaves the
// series out, NaN is served as NaN.
func vllmPod(t *testing.T, rps, kv, waiting float64) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := math.Floor(time.Since(start).Seconds() * rps)
		l := `{model_name="llama"}`
		fmt.Fprintf(w, "vllm:request_success_total%s %g\n", l, n)
		fmt.Fprintf(w, "vllm:request_prompt_tokens_sum%s %g\nvllm:request_prompt_tokens_count%s %g\n", l, 1000*n, l, n)
		fmt.Fprintf(w, "vllm:request_generation_tokens_sum%s %g\nvllm:request_generation_tokens_count%s %g\n", l, 200*n, l, n)
		fmt.Fprintf(w, "vllm:time_to_first_token_seconds_sum%s %g\nvllm:time_to_first_token_seconds_count%s %g\n", l, 0.05*n, l, n)
		fmt.Fprintf(w, "vllm:time_per_output_token_seconds_sum%s %g\nvllm:time_per_output_token_seconds_count%s %g\n", l, 0.01*199*n, l, 199*n)
		if kv >= 0 || math.IsNaN(kv) {
			fmt.Fprintf(w, "vllm:kv_cache_usage_perc%s %g\n", l, kv)
		}
		if waiting >= 0 {
			fmt.Fprintf(w, "vllm:num_requests_waiting%s %g\n", l, waiting)
		}
		fmt.Fprintf(w, "vllm:num_requests_running%s 7\n", l)
		fmt.Fprintf(w, "vllm:cache_config_info{model_name=\"llama\",block_size=\"16\",num_gpu_blocks=\"1024\"} 1\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs the real Prometheus server (Debian's package,
// installed by `make test-deps`) on loopback, scraping the targets every
// second with the given labels, and returns its URL.
func startPrometheus(t *testing.T, targets map[string]map[string]string) string {
	t.Helper()
	bin := os.Getenv("WVA_PROMETHEUS")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("prometheus"); err != nil {
			t.Fatal("the prometheus server is not installed: run `make test-deps` (Debian package prometheus), or set WVA_PROMETHEUS")
		}
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n")
	for addr, labels := range targets {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels:\n", addr)
		for k, v := range labels {
			fmt.Fprintf(&cfg, "          %s: %q\n", k, v)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logf.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("prometheus did not become ready: %v\n%s", err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCollectFromPrometheus: a real Prometheus scrapes three vLLM-like
// pods; the source returns each pod's rates, averages and gauges, the
// variant label, and flags the pod without a queue gauge (missing: the
// engine holds its variant) and the one whose KV usage is NaN.
func TestCollectFromPrometheus(t *testing.T) {
	busy := vllmPod(t, 4, 0.42, 3)
	idle := vllmPod(t, 0, 0.05, 0)
	broken := vllmPod(t, 1, math.NaN(), -1)
	nanKV := vllmPod(t, 1, math.NaN(), 2)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	url := startPrometheus(t, map[string]map[string]string{
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
	joined := strings.Join(rep.Problems, "\n")
	if !strings.Contains(joined, "llama-a100-1: missing vllm:kv_cache_usage_perc or vllm:num_requests_waiting") ||
		!strings.Contains(joined, "llama-a100-2: KV usage is NaN") {
		t.Errorf("problems: %q", rep.Problems)
	}
	// A model nobody serves: no pods, and a problem that says so.
	none, err := src.Collect(ctx, time.Now(), collector.Target{Namespace: "llm", Model: "mistral"})
	if err != nil || len(none.Pods) != 0 || len(none.Problems) != 1 || !strings.Contains(none.Problems[0], `no pod reports vLLM metrics for model "mistral"`) {
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
	src, err := New(Config{URL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), Retries: 1, Backoff: 10 * time.Millisecond, Timeout: time.Second})
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
		{Config{URL: "http://p", BearerTokenFile: filepath.Join(dir, "none")}, "bearer token file"},
		{Config{URL: "http://p", KeepLabels: []string{"bad-label"}}, `"bad-label" is not a valid label name`},
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
	src, err := New(Config{URL: srv.URL, BearerTokenFile: tok})
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
