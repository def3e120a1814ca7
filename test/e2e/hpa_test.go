//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestHPAExternalMetric: the real HPA controller (kube-controller-manager,
// only horizontal-pod-autoscaler-controller) runs the HPA of
// config/samples/hpa.yaml on the smoke world's metrics-only variant. With
// prometheus-adapter (make adapter) serving the sample's external rule,
// the HPA reads inferno_desired_replicas from the controller through
// Prometheus and the adapter (ScalingActive=True, the metric's value in
// its status); without it, the HPA says it cannot get the external metric
// (ScalingActive=False, FailedGetExternalMetric). With the adapter, raising
// the variant's minReplicas to 2 raises WVA's decision, which the HPA
// applies to the Deployment: the whole metrics-only actuation path.
func TestHPAExternalMetric(t *testing.T) {
	w := newSmokeWorld(t, 0)
	h := w.h
	if !h.HasKCM() {
		t.Skip("kube-controller-manager is not built: run `make k8s-kcm` (make e2e does)")
	}
	adapter := h.HasAdapter()
	if adapter {
		h.StartAdapter(w.prom.URL)
	} else {
		t.Log("prometheus-adapter is not built (make adapter): checking the HPA's failure to read the external metric instead")
	}
	h.Eventually("inferno_desired_replicas in Prometheus", 60*time.Second, func(ctx context.Context) (bool, string) {
		s, err := w.prom.Query(ctx, fmt.Sprintf(`inferno_desired_replicas{variant_name=%q,exported_namespace=%q}`, smokeVA, smokeNS))
		return err == nil && len(s) > 0, fmt.Sprintf("%v %v", s, err)
	})
	h.Apply(h.sample("hpa.yaml"))
	h.StartKCM(KCMOptions{})
	want, reason := "True", "ValidMetricFound"
	if !adapter {
		want, reason = "False", "FailedGetExternalMetric"
	}
	h.Eventually("HPA ScalingActive="+want+" "+reason, 90*time.Second, func(ctx context.Context) (bool, string) {
		a := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: smokeNS, Name: smokeVA}, a); err != nil {
			return false, err.Error()
		}
		for _, c := range a.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive {
				t.Logf("HPA ScalingActive=%s %s: %s; current metrics %+v", c.Status, c.Reason, c.Message, a.Status.CurrentMetrics)
				return string(c.Status) == want && c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, fmt.Sprintf("no ScalingActive condition: %+v", a.Status.Conditions)
	})
	if adapter {
		hpaScalesToMin(t, h, 2)
	}
}

// hpaScalesToMin raises the variant's minReplicas to n and waits until the
// HPA has set the Deployment's replicas to n.
func hpaScalesToMin(t *testing.T, h *Harness, n int32) {
	t.Helper()
	va, err := h.GetVA(h.Ctx(), smokeNS, smokeVA)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(va.DeepCopy())
	va.Spec.MinReplicas = &n
	if err := h.Client.Patch(h.Ctx(), va, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(fmt.Sprintf("the HPA scales the Deployment to WVA's %d", n), 90*time.Second, func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: smokeNS, Name: smokeVA}, d); err != nil {
			return false, err.Error()
		}
		s, _ := h.prom.Query(ctx, fmt.Sprintf(`inferno_desired_replicas{variant_name=%q}`, smokeVA))
		return deref(d.Spec.Replicas) == n, fmt.Sprintf("spec.replicas %d; inferno_desired_replicas %v", deref(d.Spec.Replicas), s)
	})
}

// sample reads config/samples/<name>, one object.
func (h *Harness) sample(name string) *unstructured.Unstructured {
	h.t.Helper()
	raw, err := os.ReadFile(filepath.Join(h.Root, "config", "samples", name))
	if err != nil {
		h.t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	return u
}
