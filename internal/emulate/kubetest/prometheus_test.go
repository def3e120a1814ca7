package kubetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/prometheus"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestPrometheusScrapesTheFleet: a stock Prometheus (Debian's package)
// discovers the emulated servers through the SD file alone and scrapes
// them; WVA's Prometheus source then reads both pods of the Deployment,
// with the model's arrival rate split between them (within a minute). Skipped when no
// prometheus binary is installed.
func TestPrometheusScrapesTheFleet(t *testing.T) {
	if _, err := testenv.PrometheusBinary(); err != nil {
		t.Skip(err)
	}
	f := newFixtureClock(t, 2, true)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- f.em.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	url := fileSDPrometheus(t, f.sd)
	src, err := prometheus.New(prometheus.Config{URL: url, Window: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	target := collector.Target{Namespace: f.ns, Model: testModel}
	var rep, last collector.Report
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		if rep, err = src.Collect(context.Background(), time.Now(), target); err != nil {
			t.Fatal(err)
		}
		if settled(rep) {
			break
		}
		last = rep
		if time.Now().After(deadline) {
			t.Fatalf("no settled figures for both pods after 60 s: %+v", last)
		}
	}
	checkGatewayRate(t, src, target)
	for _, p := range rep.Pods {
		if p.Pod.KVBlocks != 4096 || p.Pod.BlockSize != 16 || math.Abs(p.Pod.AvgInputTokens-512) > 1e-9 || !(p.Pod.AvgTTFTMs > 0) {
			t.Errorf("pod %s: %+v", p.Pod.Name, p.Pod)
		}
	}
}

// settled: both pods found, with the model's rate (8 requests/s of model
// time at time scale 10: 80 per wall second) split between them once the
// window is past the start-up.
func settled(rep collector.Report) bool {
	if len(rep.Pods) != 2 || len(rep.Problems) > 0 {
		return false
	}
	if sum := rep.Pods[0].Pod.ArrivalRateRPS + rep.Pods[1].Pod.ArrivalRateRPS; math.Abs(sum-80) > 16 {
		return false
	}
	for _, p := range rep.Pods {
		if p.Pod.Missing || !(p.Pod.ArrivalRateRPS > 0) || p.Pod.KVBlocks == 0 || !(p.Pod.AvgITLMs > 0) {
			return false
		}
	}
	return true
}

// fileSDPrometheus runs Prometheus on loopback with one job discovering
// its targets from the SD file (re-read every second), scraping every
// second; it stops with the test.
func fileSDPrometheus(t *testing.T, sdFile string) string {
	t.Helper()
	return testenv.PrometheusWithConfig(t, fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"+
		"  - job_name: emulated-vllm\n    file_sd_configs:\n      - files: [%q]\n        refresh_interval: 1s\n", sdFile))
}

// checkGatewayRate: the controller's default gateway queries read the
// emulated gateway: its queue (0: servers are ready) and a positive
// arrival rate (its 1m window is not yet full here, so the rate is below
// the true 80 per wall second; TestGatewayPage checks the counts).
func checkGatewayRate(t *testing.T, src *prometheus.Source, target collector.Target) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		rate, err := src.Demand(context.Background(), time.Now(), config.DefaultGatewayRateQuery)
		if err != nil {
			t.Fatal(err)
		}
		queue, err := src.Demand(context.Background(), time.Now(), config.DefaultScaleFromZeroQuery)
		if err != nil {
			t.Fatal(err)
		}
		q, ok := queue[target]
		if rate[target] > 0 && ok && q == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway rate %v and queue %v for %v", rate, queue, target)
		}
	}
}
