package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/metrics"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

const model = "meta-llama/Llama-3.1-8B-Instruct"

func TestTargetResolution(t *testing.T) {
	f := newFixture(t)
	f.va("llama-h100", model, nil)
	va := f.reconcile("llama-h100")
	c := wantCond(t, va, wvav1.ConditionTargetResolved, metav1.ConditionFalse, wvav1.ReasonTargetNotFound)
	if !strings.Contains(c.Message, "llama-h100") {
		t.Errorf("message does not name the deployment: %q", c.Message)
	}
	wantCond(t, va, wvav1.ConditionOptimizationReady, metav1.ConditionFalse, wvav1.ReasonAwaitingCycle)
	f.cycle()
	va = f.reconcile("llama-h100")
	wantCond(t, va, wvav1.ConditionOptimizationReady, metav1.ConditionFalse, wvav1.ReasonTargetNotFound)

	f.deployment("llama-h100", 2)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.3, 0)}}})
	f.clock.Step(60e9)
	f.cycle()
	va = f.reconcile("llama-h100")
	wantCond(t, va, wvav1.ConditionTargetResolved, metav1.ConditionTrue, wvav1.ReasonTargetFound)
	wantCond(t, va, wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionTrue, wvav1.ReasonMetricsFound)
	wantCond(t, va, wvav1.ConditionTuningActive, metav1.ConditionFalse, wvav1.ReasonTuningDisabled)
	if got := va.Status.CurrentAlloc; got.NumReplicas != 2 || got.ReadyReplicas != 2 || got.Accelerator != "H100" {
		t.Errorf("currentAlloc %+v", got)
	}
	if got := va.Status.DesiredOptimizedAlloc; got.NumReplicas != 2 || !got.LastRunTime.Time.Equal(f.clock.Now().Truncate(time.Second)) {
		t.Errorf("desiredOptimizedAlloc %+v (now %v)", got, f.clock.Now())
	}
	if va.Status.ObservedGeneration != va.Generation {
		t.Errorf("observedGeneration %d, generation %d", va.Status.ObservedGeneration, va.Generation)
	}
}

// TestScaleUpMetricsOnly: saturated replicas make the engine scale up; the
// metrics-only actuator publishes the number and leaves the Deployment to
// HPA/KEDA; ActuationComplete follows the Deployment.
func TestScaleUpMetricsOnly(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 2)
	f.va("llama-h100", model, nil)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.95, 6)}}})
	f.cycle()
	va := f.reconcile("llama-h100")
	want := va.Status.DesiredOptimizedAlloc.NumReplicas
	if want <= 2 || va.Status.DesiredOptimizedAlloc.Reason != string(engine.ReasonSaturationScaleUp) {
		t.Fatalf("desired %+v, want a saturation scale-up above 2", va.Status.DesiredOptimizedAlloc)
	}
	if g := f.gauge("inferno_desired_replicas", "llama-h100"); g != float64(want) {
		t.Errorf("inferno_desired_replicas %v, want %d", g, want)
	}
	if g := f.gauge("inferno_current_replicas", "llama-h100"); g != 2 {
		t.Errorf("inferno_current_replicas %v, want 2", g)
	}
	wantCond(t, va, wvav1.ConditionActuationComplete, metav1.ConditionFalse, wvav1.ReasonScaling)
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 2 {
		t.Fatalf("metrics-only changed the deployment to %d", *got.Spec.Replicas)
	}
	// HPA applies the number: the next reconcile sees it.
	got.Spec.Replicas = &want
	if err := env.Client.Update(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	f.setReady(&got, want)
	va = f.reconcile("llama-h100")
	wantCond(t, va, wvav1.ConditionActuationComplete, metav1.ConditionTrue, wvav1.ReasonPublished)
	if !va.Status.Actuation.Applied || va.Status.Actuation.Actuator != wvav1.ActuatorMetricsOnly {
		t.Errorf("actuation %+v", va.Status.Actuation)
	}
}

func TestDirectActuatorRespectsBounds(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 2)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) {
		va.Spec.Actuator = wvav1.ActuatorDirect
		maxR := int32(3)
		va.Spec.MaxReplicas = &maxR
	})
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.99, 40)}}})
	f.cycle()
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 3 {
		t.Fatalf("direct actuator: deployment has %d replicas, want 3 (maxReplicas)", *got.Spec.Replicas)
	}
	va := f.reconcile("llama-h100")
	if va.Status.Actuation.LastUpdateTime == nil || va.Status.Actuation.Actuator != wvav1.ActuatorDirect {
		t.Errorf("actuation %+v", va.Status.Actuation)
	}
	wantCond(t, va, wvav1.ConditionActuationComplete, metav1.ConditionFalse, wvav1.ReasonScaling)
	f.setReady(&got, 3)
	va = f.reconcile("llama-h100")
	wantCond(t, va, wvav1.ConditionActuationComplete, metav1.ConditionTrue, wvav1.ReasonApplied)
}

// TestBadMetricsHold: NaN metrics hold the last decision and say why.
func TestBadMetricsHold(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 3)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 3, 0.4, 0)}}})
	f.cycle()
	before := f.reconcile("llama-h100").Status.DesiredOptimizedAlloc.NumReplicas

	bad := pods("llama-h100", 3, 0.05, 0)
	bad[1].KVCacheUsage = -1 // JSON cannot carry NaN; the Prometheus source's NaN test is in its package
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: bad}}})
	f.clock.Step(60e9)
	f.cycle()
	va := f.reconcile("llama-h100")
	c := wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionFalse, wvav1.ReasonMetricsInvalid)
	if !strings.Contains(c.Message, "llama-h100-1") {
		t.Errorf("message does not name the pod: %q", c.Message)
	}
	wantCond(t, va, wvav1.ConditionOptimizationReady, metav1.ConditionFalse, wvav1.ReasonMetricsUnavailable)
	if got := va.Status.DesiredOptimizedAlloc.NumReplicas; got != before {
		t.Errorf("desired moved from %d to %d on bad metrics", before, got)
	}
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != before {
		t.Errorf("deployment scaled to %d on bad metrics, last good decision %d", *got.Spec.Replicas, before)
	}
	if g := f.gauge("inferno_desired_replicas", "llama-h100"); g != float64(before) {
		t.Errorf("safety-net inferno_desired_replicas %v, want %d", g, before)
	}

	// No metrics at all for the model.
	f.writeMetrics(file.Document{})
	f.clock.Step(60e9)
	f.cycle()
	va = f.reconcile("llama-h100")
	c = wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionFalse, wvav1.ReasonMetricsMissing)
	if !strings.Contains(c.Message, "ServiceMonitor") {
		t.Errorf("missing-metrics message gives no hint: %q", c.Message)
	}
}

// TestAbsurdMetricsBounded: with direct actuation and no maxReplicas, a
// pod reporting a million requests/s holds the Deployment with reason
// MetricsImplausible, and a genuine but huge backlog scales it by at most
// the per-cycle limit (2 → 10: +8 beats ×4), not by thousands.
func TestAbsurdMetricsBounded(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 2)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	replicas := func() int32 {
		t.Helper()
		var got appsv1.Deployment
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
			t.Fatal(err)
		}
		return *got.Spec.Replicas
	}

	absurd := pods("llama-h100", 2, 0.5, 0)
	absurd[0].ArrivalRateRPS = 1e6
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: absurd}}})
	f.cycle()
	va := f.reconcile("llama-h100")
	c := wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionFalse, wvav1.ReasonMetricsImplausible)
	if !strings.Contains(c.Message, "llama-h100-0") {
		t.Errorf("message does not name the pod: %q", c.Message)
	}
	if got := replicas(); got != 2 {
		t.Fatalf("implausible metrics scaled the deployment to %d", got)
	}

	backlog := pods("llama-h100", 2, 1, 1e6)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: backlog}}})
	f.clock.Step(60e9)
	f.cycle()
	if got := replicas(); got != 10 {
		t.Fatalf("a backlog of 2 million scaled 2 replicas to %d in one cycle, want 10", got)
	}
}

// TestOneStatusWrite: a reconcile with nothing new does not write.
func TestOneStatusWrite(t *testing.T) {
	f := newFixture(t)
	writes := 0
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	f.rec.Client = interceptor.NewClient(ww, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			writes++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}})
	f.deployment("llama-h100", 1)
	f.va("llama-h100", model, nil)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 1, 0.3, 0)}}})
	f.cycle()
	f.reconcile("llama-h100")
	if writes != 1 {
		t.Fatalf("first reconcile: %d status writes, want 1", writes)
	}
	for i := 0; i < 3; i++ {
		f.clock.Step(1e9) // the fake clock has nanoseconds; the API stores seconds
		f.reconcile("llama-h100")
		if writes != 1 {
			t.Fatalf("reconcile %d with nothing new wrote the status (%d writes)", i, writes)
		}
	}
	f.clock.Step(60e9)
	f.cycle()
	f.reconcile("llama-h100")
	if writes != 2 {
		t.Fatalf("a new cycle (new lastRunTime): %d writes, want 2", writes)
	}
}

func TestOwnedBy(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "llama-h100"}}
	yes := true
	pod := func(kind, name, hash string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pod-template-hash": hash}}}
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
		}
		return p
	}
	for _, c := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod("ReplicaSet", "llama-h100-7d9f8", "7d9f8"), true},
		{pod("ReplicaSet", "llama-h100-canary-5c6b7", "5c6b7"), false}, // another Deployment with an overlapping selector
		{pod("StatefulSet", "llama-h100", ""), false},
		{pod("", "", ""), true}, // a bare pod the selector matches
	} {
		if got := ownedBy(c.pod, fromDeployment(d)); got != c.want {
			t.Errorf("%+v: got %v", c.pod.OwnerReferences, got)
		}
	}
}

// TestPrometheusDown: when no model's metrics can be read, every variant
// is held and its status says why (and the status write is accepted).
func TestPrometheusDown(t *testing.T) {
	f := newFixture(t)
	f.planner.Sources = DefaultOptions().sources
	main := map[string]string{"PROMETHEUS_BASE_URL": fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "PROMETHEUS_TIMEOUT": "200ms"}
	if err := f.planner.Config.apply(defaultConfigNames().Main, main, true); err != nil {
		t.Fatal(err)
	}
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.cycle()
	va := f.reconcile("llama-h100")
	c := wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionFalse, wvav1.ReasonPrometheusError)
	if !strings.Contains(c.Message, "connection refused") {
		t.Errorf("message: %q", c.Message)
	}
	wantCond(t, va, wvav1.ConditionOptimizationReady, metav1.ConditionFalse, wvav1.ReasonMetricsUnavailable)
	if va.Status.Actuation.Actuator != "" && va.Status.Actuation.Actuator != wvav1.ActuatorDirect {
		t.Errorf("actuator %q", va.Status.Actuation.Actuator)
	}
	if g := f.gauge("inferno_desired_replicas", "llama-h100"); g != 2 {
		t.Errorf("safety-net desired %v, want the current 2", g)
	}
	if cause := f.heldCause("llama-h100"); cause != string(engine.HoldPrometheusError) {
		t.Errorf("wva_variant_held cause %q, want %q", cause, engine.HoldPrometheusError)
	}
}

// heldCause is the cause label of the variant's wva_variant_held series
// ("" when it is not held).
func (f *fixture) heldCause(variant string) string {
	f.t.Helper()
	m := f.series("wva_variant_held", map[string]string{metrics.LabelVariant: variant, metrics.LabelNamespace: f.ns})
	if m == nil {
		return ""
	}
	return label(m, metrics.LabelCause)
}

// TestHoldReason: the reason comes from the worst of the engine's cause
// and the kinds of the problems a real source reported for the variant's
// pods, never from their text: a pod named after an invalid value does not
// make its variant's metrics invalid.
func TestHoldReason(t *testing.T) {
	for cause, want := range map[engine.HoldCause]string{
		engine.HoldMissing:     wvav1.ReasonMetricsMissing,
		engine.HoldStale:       wvav1.ReasonMetricsStale,
		engine.HoldInvalid:     wvav1.ReasonMetricsInvalid,
		engine.HoldImplausible: wvav1.ReasonMetricsImplausible,
	} {
		if got := holdReason(cause, nil); got != want {
			t.Errorf("%q: %s, want %s", cause, got, want)
		}
	}
	f := newFixture(t)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: []file.Pod{
		{Pod: engine.Pod{Name: "nan-invalid-0", KVCacheUsage: 0.2}},
		{Pod: engine.Pod{Name: "neg-1", KVCacheUsage: 0.2, WaitingRequests: -2}},
		{Pod: engine.Pod{Name: "gone-2", Missing: true}},
	}}}})
	src, _ := f.planner.Sources(config.Main{})
	rep, err := src.Collect(context.Background(), f.clock.Now(), collector.Target{Namespace: f.ns, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	of := func(pod string) []collector.Problem {
		var out []collector.Problem
		for _, p := range rep.Problems {
			if p.Pod == pod {
				out = append(out, p)
			}
		}
		return out
	}
	for _, tc := range []struct {
		cause engine.HoldCause
		pod   string
		want  string
	}{
		{engine.HoldMissing, "nan-invalid-0", wvav1.ReasonMetricsMissing}, // its name is not a problem
		{engine.HoldMissing, "neg-1", wvav1.ReasonMetricsInvalid},         // a problem worse than the cause
		{engine.HoldStale, "gone-2", wvav1.ReasonMetricsStale},            // a cause worse than the problem
		{engine.HoldImplausible, "neg-1", wvav1.ReasonMetricsImplausible},
	} {
		if got := holdReason(tc.cause, of(tc.pod)); got != tc.want {
			t.Errorf("%s with %s's problems %+v: %s, want %s", tc.cause, tc.pod, of(tc.pod), got, tc.want)
		}
	}
}
