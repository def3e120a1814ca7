//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// PrometheusConfig is what the harness's Prometheus scrapes, every
// ScrapeInterval (default 1s).
type PrometheusConfig struct {
	ScrapeInterval time.Duration
	// FileSD is the file-service-discovery file `wva emulate` writes its
	// servers' targets into (job "vllm"); empty: no such job.
	FileSD string
	// Controller is the controller's secure metrics address (host:port),
	// scraped over HTTPS (certificate not verified: self-signed) with the
	// bearer token in TokenFile (job "wva-controller").
	Controller, TokenFile string
}

// Prometheus is Debian's Prometheus server run by the harness, its data
// and log in <artifacts>/prometheus; Stop and Start again keep the data.
type Prometheus struct {
	URL  string
	h    *Harness
	addr string
	dir  string
	proc *Process

	mu   sync.Mutex
	last map[string]string // query -> last answer, for the failure dump
}

// StartPrometheus writes the config and starts Prometheus on loopback,
// waiting (30 s at most) until it is ready.
func (h *Harness) StartPrometheus(cfg PrometheusConfig) *Prometheus {
	h.t.Helper()
	if cfg.ScrapeInterval == 0 {
		cfg.ScrapeInterval = time.Second
	}
	p := &Prometheus{h: h, dir: filepath.Join(h.Artifacts, "prometheus"), last: map[string]string{}}
	p.addr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(h.t))
	p.URL = "http://" + p.addr
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		h.t.Fatal(err)
	}
	writeFile(h.t, filepath.Join(p.dir, "prometheus.yml"), prometheusYAML(cfg))
	h.prom = p
	h.OnFailure(p.dump)
	h.Note("prometheus: %s (UI: %s/graph, targets: %s/targets); config %s", p.URL, p.URL, p.URL, filepath.Join(p.dir, "prometheus.yml"))
	p.Start()
	return p
}

// prometheusYAML is the scrape configuration of cfg.
func prometheusYAML(cfg PrometheusConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\nscrape_configs:\n",
		cfg.ScrapeInterval, cfg.ScrapeInterval*9/10, cfg.ScrapeInterval)
	if cfg.FileSD != "" {
		fmt.Fprintf(&b, "  - job_name: vllm\n    file_sd_configs:\n      - files: [%q]\n        refresh_interval: %s\n", cfg.FileSD, cfg.ScrapeInterval)
	}
	if cfg.Controller != "" {
		fmt.Fprintf(&b, "  - job_name: wva-controller\n    scheme: https\n    tls_config: {insecure_skip_verify: true}\n"+
			"    bearer_token_file: %q\n    static_configs:\n      - targets: [%q]\n        labels: {namespace: %q, pod: wva-controller}\n",
			cfg.TokenFile, cfg.Controller, ControllerNamespace)
	}
	return b.String()
}

// Start (re)starts the server on its address and data folder.
func (p *Prometheus) Start() {
	t := p.h.t
	t.Helper()
	bin := os.Getenv("WVA_PROMETHEUS")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("prometheus"); err != nil {
			t.Fatal("the prometheus server is not installed: run `make test-deps` (Debian package prometheus), or set WVA_PROMETHEUS")
		}
	}
	p.proc = p.h.StartProcess("prometheus", bin, nil, "--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"), "--web.listen-address="+p.addr, "--log.level=info")
	p.h.Eventually("prometheus ready", 30*time.Second, func(ctx context.Context) (bool, string) {
		code, body, err := httpGet(ctx, p.URL+"/-/ready", "")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %v %.200s", code, err, body)
	})
}

// Stop stops the server (a metrics outage); Start brings it back.
func (p *Prometheus) Stop() { p.proc.Stop(p.h.t) }

// Sample is one series of an instant query's answer.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant PromQL query and returns its vector.
func (p *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	code, body, err := httpGet(ctx, p.URL+"/api/v1/query?query="+url.QueryEscape(q), "")
	p.mu.Lock()
	p.last[q] = fmt.Sprintf("%d %v %.2000s", code, err, body)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return nil, fmt.Errorf("query %q: %d %w", q, code, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, r.Error)
	}
	out := make([]Sample, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		var v string
		if err := json.Unmarshal(s.Value[1], &v); err != nil {
			return nil, err
		}
		var f float64
		if _, err := fmt.Sscan(v, &f); err != nil {
			return nil, err
		}
		out = append(out, Sample{Metric: s.Metric, Value: f})
	}
	return out, nil
}

// Targets is the answer of /api/v1/targets (for messages).
func (p *Prometheus) Targets(ctx context.Context) string {
	_, body, err := httpGet(ctx, p.URL+"/api/v1/targets", "")
	if err != nil {
		return err.Error()
	}
	return body
}

func (p *Prometheus) dump(ctx context.Context) string {
	var b strings.Builder
	b.WriteString("prometheus targets: " + p.Targets(ctx) + "\n")
	p.mu.Lock()
	defer p.mu.Unlock()
	for q, a := range p.last {
		fmt.Fprintf(&b, "last answer to %s: %s\n", q, a)
	}
	return b.String()
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
