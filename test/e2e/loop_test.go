//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// TestEmulatedFleetScraped is the foundation of the loop's scenarios: `wva
// emulate` plays examples/emulate's Deployment (10x time), its server
// becomes Ready, Prometheus discovers it through the file-SD file and
// scrapes its vLLM series, and the controller reads them
// (MetricsAvailable=True, MetricsFound) with the server counted as a ready
// replica. MetricsAvailable=True alone is not enough: before the server is
// ready the controller reports it with "0 pods report metrics".
func TestEmulatedFleetScraped(t *testing.T) {
	fleetScraped(t, "current", "vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count")
}

// TestEmulatedLegacyFleetScraped: the same with vLLM 0.10's metric names
// (wva emulate --vllm-metrics legacy): the collector falls back to
// vllm:time_per_output_token_seconds.
func TestEmulatedLegacyFleetScraped(t *testing.T) {
	fleetScraped(t, "legacy", "vllm:time_per_output_token_seconds_count", "vllm:inter_token_latency_seconds_count")
}

// fleetScraped runs the emulated fleet with a vLLM metric set whose ITL
// series is itl (and not absent), and waits until the controller, in a
// cycle after Prometheus has three samples of that series, finds every
// figure it needs (MetricsAvailable=True, MetricsFound: a pod without an
// ITL rate would be Missing and hold).
func fleetScraped(t *testing.T, set, itl, absent string) {
	h := New(t)
	h.RequireEmulator(t)
	h.Namespace("monitoring")
	metricsAddr := h.FreeAddr()
	_, tokenFile := h.ServiceAccountToken("monitoring", "prometheus", "wva-metrics-reader")
	prom := h.StartPrometheus(PrometheusConfig{FileSD: h.SDFile(), Controller: metricsAddr, TokenFile: tokenFile})
	h.InstallWVA(map[string]string{"PROMETHEUS_BASE_URL": prom.URL, "GLOBAL_OPT_INTERVAL": "5s"})
	h.Namespace(smokeNS)
	h.Apply(Deployment(smokeNS, smokeVA, 1, map[string]string{"wva.llmd.ai/emulate": "true"}))
	h.Apply(VariantAutoscaling(smokeNS, smokeVA, smokeModel, "H100", 1, 8, "30.0"))
	h.StartEmulator(t, EmulatorOptions{Spec: filepath.Join(h.Root, "examples", "emulate", "fleet.yaml"), TimeScale: 10,
		Args: []string{"--vllm-metrics", set}})
	h.StartController(ControllerOptions{PrometheusURL: prom.URL, MetricsAddr: metricsAddr})
	h.Eventually("vllm:num_requests_running scraped from the emulated server", 60*time.Second, func(ctx context.Context) (bool, string) {
		s, err := prom.Query(ctx, fmt.Sprintf(`vllm:num_requests_running{model_name=%q}`, smokeModel))
		return err == nil && len(s) > 0, fmt.Sprintf("%v %v", s, err)
	})
	var sampled time.Time
	h.Eventually(itl+" sampled three times", 60*time.Second, func(ctx context.Context) (bool, string) {
		s, err := prom.Query(ctx, fmt.Sprintf(`count_over_time(%s{model_name=%q}[1m]) >= 3`, itl, smokeModel))
		sampled = time.Now()
		return err == nil && len(s) > 0, fmt.Sprintf("%v %v", s, err)
	})
	if s, err := prom.Query(context.Background(), fmt.Sprintf(`%s{model_name=%q}`, absent, smokeModel)); err != nil || len(s) > 0 {
		t.Errorf("the %s set serves %s: %v %v", set, absent, s, err)
	}
	h.Eventually("MetricsAvailable=True in a cycle after that, with a ready replica", 60*time.Second, func(ctx context.Context) (bool, string) {
		va, err := h.GetVA(ctx, smokeNS, smokeVA)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(va.Status.Conditions, wvav1.ConditionMetricsAvailable)
		if c == nil {
			return false, "no MetricsAvailable condition"
		}
		ready, ran := va.Status.CurrentAlloc.ReadyReplicas, va.Status.DesiredOptimizedAlloc.LastRunTime.Time
		return ran.After(sampled) && c.Status == "True" && c.Reason == wvav1.ReasonMetricsFound && ready > 0 && !strings.HasPrefix(c.Message, "0 pods"),
			fmt.Sprintf("%s %s: %s; %d ready replica(s); last decision %s", c.Status, c.Reason, c.Message, ready, ran)
	})
}
