package testenv

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// FreePort returns a TCP port free on loopback now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Prometheus runs the real Prometheus server (Debian's package, installed
// by `make test-deps`; $WVA_PROMETHEUS may name another binary) on
// loopback, scraping each target (host:port) every second with the given
// target labels, and returns its URL. It stops with the test.
func Prometheus(t testing.TB, targets map[string]map[string]string) string {
	t.Helper()
	return PrometheusSecure(t, targets, nil)
}

// PrometheusSecure is Prometheus where the targets named in tokens are
// scraped over HTTPS (their certificates not verified: the controller's
// default is self-signed) with the bearer token in the file given, as the
// ServiceMonitor of config/prometheus does.
func PrometheusSecure(t testing.TB, targets map[string]map[string]string, tokens map[string]string) string {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n")
	target := func(addr string) {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels:\n", addr)
		for k, v := range targets[addr] {
			fmt.Fprintf(&cfg, "          %s: %q\n", k, v)
		}
	}
	cfg.WriteString("  - job_name: targets\n    static_configs:\n")
	for addr := range targets {
		if _, ok := tokens[addr]; !ok {
			target(addr)
		}
	}
	secure := 0
	for addr := range targets {
		if tok, ok := tokens[addr]; ok {
			secure++
			fmt.Fprintf(&cfg, "  - job_name: secure-%d\n    scheme: https\n    tls_config: {insecure_skip_verify: true}\n"+
				"    authorization: {type: Bearer, credentials_file: %q}\n    static_configs:\n", secure, tok)
			target(addr)
		}
	}
	return PrometheusWithConfig(t, cfg.String())
}

// PrometheusBinary is the Prometheus server the tests run: $WVA_PROMETHEUS,
// else prometheus on the PATH (Debian's package, `make test-deps`).
func PrometheusBinary() (string, error) {
	if bin := os.Getenv("WVA_PROMETHEUS"); bin != "" {
		return bin, nil
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("the prometheus server is not installed: run `make test-deps` (Debian package prometheus), or set WVA_PROMETHEUS")
	}
	return bin, nil
}

// PrometheusWithConfig runs PrometheusBinary on loopback with the given
// configuration file's text, waits until it is ready and returns its URL.
// It stops with the test.
func PrometheusWithConfig(t testing.TB, cfg string) string {
	t.Helper()
	bin, err := PrometheusBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
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

// VLLMPod serves a vLLM-like /metrics page for model, with a current
// vLLM's names: requests complete at rps, each with 1000 prompt and 200
// generated tokens, a 50 ms TTFT and 10 ms per output token; 7 running;
// 1024 KV blocks of 16 tokens. kv and waiting are the gauges; a negative
// value leaves the series out, NaN is served as NaN. It stops with the
// test.
func VLLMPod(t testing.TB, model string, rps, kv, waiting float64) *httptest.Server {
	var omit []string
	if kv < 0 {
		omit = append(omit, "vllm:kv_cache_usage_perc")
	}
	if waiting < 0 {
		omit = append(omit, "vllm:num_requests_waiting")
	}
	return VLLMPodWithout(t, model, rps, kv, waiting, omit...)
}

// VLLMPodWithout is VLLMPod exporting kv and waiting as given (even NaN or
// negative) and without the series named in omit (for example
// "vllm:request_success_total"): a pod whose exporter lacks a counter.
func VLLMPodWithout(t testing.TB, model string, rps, kv, waiting float64, omit ...string) *httptest.Server {
	return ServeVLLMPage(t, VLLMPage{Model: model, RPS: rps, KV: kv, Waiting: waiting, Omit: omit})
}

// VLLMPage is what ServeVLLMPage serves: VLLMPod's page with its series
// renamed (Rename, from the current name to the one served: an older
// vLLM), some left out (Omit, by current name), the cache_config_info
// labels replaced (CacheInfo, default block_size="16",num_gpu_blocks="1024")
// and further lines (Extra, with the model's labels, scaled like the
// counters when their name ends in _total, _sum or _count).
type VLLMPage struct {
	Model            string
	RPS, KV, Waiting float64
	Omit             []string
	Rename           map[string]string
	CacheInfo        string
	Extra            map[string]float64
}

// LegacyVLLM renames a current vLLM's series to those vLLM served before
// 0.9.2 (gpu_cache_usage_perc) and 0.11 (time_per_output_token_seconds).
var LegacyVLLM = map[string]string{
	"vllm:kv_cache_usage_perc":               "vllm:gpu_cache_usage_perc",
	"vllm:inter_token_latency_seconds_sum":   "vllm:time_per_output_token_seconds_sum",
	"vllm:inter_token_latency_seconds_count": "vllm:time_per_output_token_seconds_count",
}

// ServeVLLMPage serves pg until the test ends.
func ServeVLLMPage(t testing.TB, pg VLLMPage) *httptest.Server {
	start := time.Now()
	cache := pg.CacheInfo
	if cache == "" {
		cache = `block_size="16",num_gpu_blocks="1024"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Every sample carries the time its value was computed at, so that
		// the rates Prometheus derives are exactly the page's however late
		// a busy machine answers the scrape.
		now := time.Now()
		n := now.Sub(start).Seconds() * pg.RPS
		ts := now.UnixMilli()
		l := fmt.Sprintf(`{model_name=%q}`, pg.Model)
		put := func(name string, v float64) {
			if slices.Contains(pg.Omit, name) {
				return
			}
			if r, ok := pg.Rename[name]; ok {
				name = r
			}
			fmt.Fprintf(w, "%s%s %g %d\n", name, l, v, ts)
		}
		put("vllm:request_success_total", n)
		put("vllm:request_prompt_tokens_sum", 1000*n)
		put("vllm:request_prompt_tokens_count", n)
		put("vllm:request_generation_tokens_sum", 200*n)
		put("vllm:request_generation_tokens_count", n)
		put("vllm:time_to_first_token_seconds_sum", 0.05*n)
		put("vllm:time_to_first_token_seconds_count", n)
		put("vllm:inter_token_latency_seconds_sum", 0.01*199*n)
		put("vllm:inter_token_latency_seconds_count", 199*n)
		put("vllm:kv_cache_usage_perc", pg.KV)
		put("vllm:num_requests_waiting", pg.Waiting)
		put("vllm:num_requests_running", 7)
		for _, name := range slices.Sorted(maps.Keys(pg.Extra)) {
			v := pg.Extra[name]
			if strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count") {
				v *= n
			}
			fmt.Fprintf(w, "%s%s %g %d\n", name, l, v, ts)
		}
		fmt.Fprintf(w, "vllm:cache_config_info{%s} 1 %d\n", cache, ts)
	}))
	t.Cleanup(srv.Close)
	return srv
}
