//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// TestMetricsOutage: Prometheus stops mid-run; the controller holds the
// variant (its decision and the Deployment's replicas unchanged) and says
// why (MetricsAvailable=False PrometheusError); Prometheus restarts (same
// port and data); metrics come back (MetricsAvailable=True) and decisions
// resume: a change of demand (minReplicas raised) is decided and applied.
func TestMetricsOutage(t *testing.T) {
	w := newOpsWorld(t, opsOptions{})
	h := w.h
	c := w.startController("controller", true)
	w.waitPlanning(60 * time.Second)
	ctx := h.Ctx()
	// A settled decision first: the decision applied to the Deployment.
	h.Eventually("the decision applied", 10*opsInterval, func(ctx context.Context) (bool, string) {
		va := w.va(ctx)
		return va.Status.DesiredOptimizedAlloc.NumReplicas == w.replicas(ctx), describeVA(va)
	})
	desired, replicas := w.va(ctx).Status.DesiredOptimizedAlloc.NumReplicas, w.replicas(ctx)

	w.prom.Stop()
	stopped := time.Now()
	// Detected by the next cycle: within two intervals, plus the query
	// timeout of the cycle (half an interval) and slack for 2 busy cores.
	detect := w.condition(wvav1.ConditionMetricsAvailable, metav1.ConditionFalse,
		func(r string) bool { return r == wvav1.ReasonPrometheusError }, 4*opsInterval+10*time.Second)
	t.Logf("TIMING outage detected (MetricsAvailable=False PrometheusError) %s after Prometheus stopped", detect.Round(time.Millisecond))
	// The held gauge (docs/metrics.md) with its cause.
	var held string
	h.Eventually("wva_variant_held{cause=\"prometheus-error\"} published for the variant", 2*opsInterval+5*time.Second, func(ctx context.Context) (bool, string) {
		code, body := w.scrape(ctx, c, "/metrics", w.token)
		held = sampleLine(body, "wva_variant_held", `variant_name="`+smokeVA+`"`)
		return code == http.StatusOK && strings.Contains(held, `cause="prometheus-error"`), fmt.Sprintf("/metrics: %d; wva_variant_held: %q", code, held)
	})
	t.Logf("during the outage: %s", held)
	w.holdFor("during the outage", 3*opsInterval, desired, replicas)
	t.Logf("outage lasted %s", time.Since(stopped).Round(time.Millisecond))

	w.prom.Start()
	restarted := time.Now()
	back := w.condition(wvav1.ConditionMetricsAvailable, metav1.ConditionTrue,
		func(r string) bool { return r == wvav1.ReasonMetricsFound }, 6*opsInterval+30*time.Second)
	t.Logf("TIMING metrics available again %s after Prometheus restarted", back.Round(time.Millisecond))

	want := max(desired, replicas) + 1
	w.setMinReplicas(ctx, want)
	took := w.waitScaled(fmt.Sprintf("the decision and the Deployment at %d after minReplicas %d", want, want), want, 4*opsInterval+10*time.Second)
	t.Logf("TIMING a new decision applied %s after the demand changed (%s after Prometheus restarted)",
		took.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
}
