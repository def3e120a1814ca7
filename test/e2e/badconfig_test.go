//go:build e2e

package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

const (
	opsMainConfigMap           = "variantautoscaling-config"
	opsServiceClassesConfigMap = "service-classes-config"
)

// TestBadConfiguration: an invalid value in the main ConfigMap
// (GLOBAL_OPT_INTERVAL "banana") and a malformed service class raise a
// Warning event on each ConfigMap and ConfigValid=False on the variant;
// the last good configuration stays in force (cycles go on at the old
// interval against the same Prometheus, MetricsAvailable stays True) and
// nothing scales; fixed, the ConfigMaps are loaded again (Normal
// ConfigurationLoaded) and ConfigValid=True.
func TestBadConfiguration(t *testing.T) {
	w := newOpsWorld(t, opsOptions{})
	h := w.h
	w.startController("controller", true)
	w.waitPlanning(60 * time.Second)
	ctx := h.Ctx()
	w.condition(wvav1.ConditionConfigValid, metav1.ConditionTrue, func(string) bool { return true }, 4*opsInterval)
	h.Eventually("the decision applied", 10*opsInterval, func(ctx context.Context) (bool, string) {
		va := w.va(ctx)
		return va.Status.DesiredOptimizedAlloc.NumReplicas == w.replicas(ctx), describeVA(va)
	})
	desired, replicas := w.va(ctx).Status.DesiredOptimizedAlloc.NumReplicas, w.replicas(ctx)

	bad := maps.Clone(w.config)
	bad["GLOBAL_OPT_INTERVAL"] = "banana"
	w.setConfig(ctx, opsMainConfigMap, bad)
	goodClasses := map[string]string{"premium": `{"name": "premium", "priority": 1, "ttft_ms": 500, "itl_ms": 50}`}
	badClasses := maps.Clone(goodClasses)
	badClasses["broken"] = `{"name": "broken", "priority": "high", "ttft_ms": -5`
	w.setConfig(ctx, opsServiceClassesConfigMap, badClasses)
	applied := time.Now()

	for _, name := range []string{opsMainConfigMap, opsServiceClassesConfigMap} {
		h.Eventually("Warning InvalidConfiguration on ConfigMap "+name, 30*time.Second, func(ctx context.Context) (bool, string) {
			return w.hasEvent(ctx, ControllerNamespace, "ConfigMap", name, "Warning", "InvalidConfiguration")
		})
	}
	w.condition(wvav1.ConditionConfigValid, metav1.ConditionFalse, func(r string) bool { return r == wvav1.ReasonConfigInvalid },
		4*opsInterval+10*time.Second)
	t.Logf("TIMING ConfigValid=False %s after the bad ConfigMaps were applied", time.Since(applied).Round(time.Millisecond))
	c := vaCondition(t, w.va(ctx), wvav1.ConditionConfigValid)
	for _, want := range []string{"GLOBAL_OPT_INTERVAL", opsServiceClassesConfigMap} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("ConfigValid's message %q does not name %s", c.Message, want)
		}
	}
	// The last good configuration: cycles every opsInterval against the
	// same Prometheus, and no scaling.
	before := w.va(ctx).Status.DesiredOptimizedAlloc.LastRunTime
	w.holdFor("with the invalid configuration", 3*opsInterval, desired, replicas)
	va := w.va(ctx)
	if after := va.Status.DesiredOptimizedAlloc.LastRunTime; !after.After(before.Time) {
		t.Errorf("no cycle ran in %s with the invalid configuration (last run %s): the last good interval is not in force", 3*opsInterval, after)
	}
	if m := vaCondition(t, va, wvav1.ConditionMetricsAvailable); m.Status != metav1.ConditionTrue {
		t.Errorf("MetricsAvailable=%s %s (%s) with the invalid configuration: the last good Prometheus is not in use", m.Status, m.Reason, m.Message)
	}

	w.setConfig(ctx, opsMainConfigMap, w.config)
	w.setConfig(ctx, opsServiceClassesConfigMap, goodClasses)
	fixed := time.Now()
	w.condition(wvav1.ConditionConfigValid, metav1.ConditionTrue, func(r string) bool { return r == wvav1.ReasonConfigValid },
		4*opsInterval+10*time.Second)
	t.Logf("TIMING ConfigValid=True %s after the ConfigMaps were fixed", time.Since(fixed).Round(time.Millisecond))
	for _, name := range []string{opsMainConfigMap, opsServiceClassesConfigMap} {
		h.Eventually("Normal ConfigurationLoaded on ConfigMap "+name, 30*time.Second, func(ctx context.Context) (bool, string) {
			return w.hasEvent(ctx, ControllerNamespace, "ConfigMap", name, "Normal", "ConfigurationLoaded")
		})
	}
	w.holdFor("after the fix", opsInterval, desired, replicas)
}
