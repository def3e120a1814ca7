//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

const (
	smokeNS    = "llm-d"
	smokeVA    = "llama-8b-h100"
	smokeModel = "meta-llama/Llama-3.1-8B-Instruct"
)

// smokeWorld is the loop without an emulator: Prometheus scraping the
// controller through its secure endpoint, WVA installed from config/, a
// Deployment with one ready replica by its status and no pods, its VariantAutoscaling, and
// the controller leading.
type smokeWorld struct {
	h          *Harness
	prom       *Prometheus
	controller *Controller
	token      string
}

// ready is the Deployment's ready replicas by its status.
func newSmokeWorld(t *testing.T, ready int32) *smokeWorld {
	h := New(t)
	start := time.Now()
	w := &smokeWorld{h: h}
	h.Namespace("monitoring")
	metricsAddr := h.FreeAddr()
	// wva-metrics-reader comes with InstallWVA; the binding may come first.
	var tokenFile string
	w.token, tokenFile = h.ServiceAccountToken("monitoring", "prometheus", "wva-metrics-reader")
	w.prom = h.StartPrometheus(PrometheusConfig{Controller: metricsAddr, TokenFile: tokenFile})
	h.InstallWVA(map[string]string{"PROMETHEUS_BASE_URL": w.prom.URL, "GLOBAL_OPT_INTERVAL": "5s"})
	h.Namespace(smokeNS)
	h.Apply(Deployment(smokeNS, smokeVA, 1, nil))
	h.SetDeploymentReady(smokeNS, smokeVA, ready)
	h.Apply(VariantAutoscaling(smokeNS, smokeVA, smokeModel, "H100", 1, 8, "30.0"))
	w.controller = h.StartController(ControllerOptions{PrometheusURL: w.prom.URL, MetricsAddr: metricsAddr})
	h.Eventually("a controller leads", 60*time.Second, func(ctx context.Context) (bool, string) {
		holder, err := h.LeaderHolder(ctx)
		return err == nil && holder != "", fmt.Sprintf("lease %s/%s: holder %q, %v", ControllerNamespace, LeaseName, holder, err)
	})
	t.Logf("world up in %s", time.Since(start).Round(time.Millisecond))
	return w
}

// TestSmoke: the controller binary starts, leads, finds no vLLM series for
// a VariantAutoscaling whose Deployment reports one ready replica (no pods, no series), and
// says so (MetricsAvailable=False with a reason); the real Prometheus
// scrapes its /metrics through the secure endpoint with a ServiceAccount
// token bound to wva-metrics-reader (wva_build_info appears), while
// anonymous requests are refused.
func TestSmoke(t *testing.T) {
	// One replica ready by the Deployment's status, but no pod exports a
	// vLLM series.
	w := newSmokeWorld(t, 1)
	h := w.h
	h.Eventually("MetricsAvailable=False with a reason", 60*time.Second, func(ctx context.Context) (bool, string) {
		va, err := h.GetVA(ctx, smokeNS, smokeVA)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(va.Status.Conditions, wvav1.ConditionMetricsAvailable)
		if c == nil {
			return false, fmt.Sprintf("no MetricsAvailable condition: %+v", va.Status.Conditions)
		}
		t.Logf("MetricsAvailable=%s %s: %s", c.Status, c.Reason, c.Message)
		return c.Status == "False" && c.Reason != "", fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
	h.Eventually("wva_build_info scraped by Prometheus", 60*time.Second, func(ctx context.Context) (bool, string) {
		s, err := w.prom.Query(ctx, `wva_build_info{job="wva-controller"}`)
		return err == nil && len(s) > 0, fmt.Sprintf("%v %v; targets: %.1000s", s, err, w.prom.Targets(ctx))
	})
	url := "https://" + w.controller.MetricsAddr + "/metrics"
	code, body, err := httpGet(h.Ctx(), url, "")
	if err != nil || (code != http.StatusUnauthorized && code != http.StatusForbidden) {
		t.Errorf("anonymous GET %s: %d %v %.200q, want 401 or 403", url, code, err, body)
	}
	if code, body, err := httpGet(h.Ctx(), url, w.token); err != nil || code != http.StatusOK {
		t.Errorf("GET %s with the reader's token: %d %v %.200q", url, code, err, body)
	}
}
