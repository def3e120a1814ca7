package controller

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dto "github.com/prometheus/client_model/go"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/metrics"
)

// TestTargetConflict: two VariantAutoscalings, both direct, on one
// Deployment. The older (here, with equal creation seconds, the first by
// name) plans and scales it; the other gets TargetResolved=False with
// reason TargetConflict naming the owner, is not actuated and publishes
// nothing. When the owner is deleted, the other takes over.
func TestTargetConflict(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 2)
	direct := func(va *wvav1.VariantAutoscaling) {
		va.Spec.Actuator = wvav1.ActuatorDirect
		va.Spec.ScaleTargetRef = &wvav1.CrossVersionObjectReference{Kind: "Deployment", Name: "llama-h100"}
	}
	f.va("llama-a", model, direct)
	f.va("llama-b", model, func(va *wvav1.VariantAutoscaling) {
		direct(va)
		two := int32(2)
		va.Spec.MinReplicas, va.Spec.MaxReplicas = &two, &two // would pin it at 2
	})
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.95, 6)}}})
	f.cycle()
	a, b := f.reconcile("llama-a"), f.reconcile("llama-b")
	c := wantCond(t, b, wvav1.ConditionTargetResolved, metav1.ConditionFalse, wvav1.ReasonTargetConflict)
	if !strings.Contains(c.Message, "llama-a") || !strings.Contains(c.Message, "llama-h100") {
		t.Errorf("conflict message: %q", c.Message)
	}
	wantCond(t, b, wvav1.ConditionOptimizationReady, metav1.ConditionFalse, wvav1.ReasonTargetConflict)
	wantCond(t, a, wvav1.ConditionTargetResolved, metav1.ConditionTrue, wvav1.ReasonTargetFound)
	wantCond(t, a, wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	if b.Status.Actuation.Actuator != "" {
		t.Errorf("the conflicting VA reports actuation %+v", b.Status.Actuation)
	}
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	if want := a.Status.DesiredOptimizedAlloc.NumReplicas; want <= 2 || *got.Spec.Replicas != want {
		t.Errorf("deployment at %d, the owner wants %d (> 2)", *got.Spec.Replicas, want)
	}
	if g := f.gauge("inferno_desired_replicas", "llama-b"); g != -1 {
		t.Errorf("the conflicting VA publishes %v", g)
	}
	if n := f.unresolved(wvav1.ReasonTargetConflict); n != 1 {
		t.Errorf("wva_variants_unresolved{reason=TargetConflict} = %v, want 1", n)
	}
	// The owner goes away: the other one takes the Deployment.
	if err := env.Client.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(60e9)
	f.cycle()
	b = f.reconcile("llama-b")
	wantCond(t, b, wvav1.ConditionTargetResolved, metav1.ConditionTrue, wvav1.ReasonTargetFound)
	wantCond(t, b, wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	if n := f.unresolved(wvav1.ReasonTargetConflict); n != -1 {
		t.Errorf("a resolved conflict is still reported: wva_variants_unresolved = %v", n)
	}
}

// unresolved reads wva_variants_unresolved for the fixture's namespace
// and reason; -1 when the series is absent.
func (f *fixture) unresolved(reason string) float64 {
	f.t.Helper()
	m := f.series("wva_variants_unresolved", map[string]string{metrics.LabelNamespace: f.ns, metrics.LabelReason: reason})
	if m == nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

// series is the first series of the named metric whose labels include
// want; nil when there is none.
func (f *fixture) series(name string, want map[string]string) *dto.Metric {
	f.t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if label(m, k) != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

// TestPodListForbidden: when RBAC denies listing pods, the variant's pods
// cannot be told apart, and MetricsAvailable says so (PodListForbidden),
// not that a ServiceMonitor is missing.
func TestPodListForbidden(t *testing.T) {
	f := newFixture(t)
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, nil)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.3, 0)}}})
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	f.planner.Reader = interceptor.NewClient(ww, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
			}
			return c.List(ctx, list, opts...)
		}})
	f.cycle()
	va := f.reconcile("llama-h100")
	c := wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionFalse, wvav1.ReasonPodListForbidden)
	if !strings.Contains(c.Message, "may not list pods in namespace "+f.ns) || strings.Contains(c.Message, "ServiceMonitor") {
		t.Errorf("message: %q", c.Message)
	}
}
