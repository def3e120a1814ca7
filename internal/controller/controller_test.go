package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/testenv"
	"github.com/llm-d-incubation/wva/internal/tuner"
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

func TestConfigReloadAndRejection(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deployment("llama-h100", 1)
	f.va("llama-h100", model, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "variantautoscaling-config", Namespace: ctrlNS},
		Data: map[string]string{"GLOBAL_OPT_INTERVAL": "30s", "WVA_SCALE_TO_ZERO": "true"}}
	_ = env.Client.Delete(ctx, cm)
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, cm) }()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cm)}
	if _, err := f.cfg.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.State.Settings().Main; s.Interval.Seconds() != 30 || !s.ScaleToZero {
		t.Fatalf("reloaded main config: interval %v scaleToZero %v", s.Interval, s.ScaleToZero)
	}
	wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionConfigValid, metav1.ConditionTrue, wvav1.ReasonConfigValid)

	cm.Data = map[string]string{"GLOBAL_OPT_INTERVAL": "soon", "WVA_SCALE_TO_ZERO": "false"}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.cfg.Recorder = recorderFor(t)
	if _, err := f.cfg.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.State.Settings().Main; s.Interval.Seconds() != 30 || !s.ScaleToZero {
		t.Fatalf("an invalid ConfigMap replaced the good one: interval %v scaleToZero %v", s.Interval, s.ScaleToZero)
	}
	c := wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionConfigValid, metav1.ConditionFalse, wvav1.ReasonConfigInvalid)
	if !strings.Contains(c.Message, "GLOBAL_OPT_INTERVAL") || !strings.Contains(c.Message, "soon") {
		t.Errorf("condition does not name the key and value: %q", c.Message)
	}
	waitEvent(t, cm, "InvalidConfiguration", "GLOBAL_OPT_INTERVAL")

	cm.Data = map[string]string{"GLOBAL_OPT_INTERVAL": "45s"}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cfg.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.State.Settings().Main; s.Interval.Seconds() != 45 || s.ScaleToZero {
		t.Fatalf("fixed config: interval %v scaleToZero %v", s.Interval, s.ScaleToZero)
	}
	wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionConfigValid, metav1.ConditionTrue, wvav1.ReasonConfigValid)
}

// TestTunerStatePersists: the learned parameters are written to the state
// ConfigMap, a new store (a restarted or new leader) reads them back, and
// GET /tuner/params serves them.
func TestTunerStatePersists(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, nil)
	if err := f.planner.Config.Apply(DefaultConfigNames().QueueingModel, map[string]string{"default": "sloMultiplier: 3\ntuningEnabled: true\n"}, true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		ps := pods("llama-h100", 2, 0.3, 0)
		for j := range ps {
			ps[j].ArrivalRateRPS = 1 + float64(i)
			ps[j].AvgTTFTMs = 60 + 10*float64(i)
			ps[j].AvgITLMs = 10 + float64(i)
		}
		f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: ps}}})
		f.cycle()
		f.clock.Step(60e9)
	}
	va := f.reconcile("llama-h100")
	wantCond(t, va, wvav1.ConditionTuningActive, metav1.ConditionTrue, wvav1.ReasonTuning)
	key := tuner.Key{Namespace: f.ns, Model: model, Variant: "llama-h100"}
	rec, ok, _ := f.planner.Store.Get(key)
	if !ok || rec.Params.Alpha <= 0 {
		t.Fatalf("no learned record: %+v", rec)
	}
	restarted := NewConfigMapStore(env.Client, f.planner.Store.ref)
	if skipped, err := restarted.Load(ctx); err != nil || len(skipped) > 0 {
		t.Fatalf("load: %v %v", skipped, err)
	}
	got, ok, _ := restarted.Get(key)
	if !ok || got.Params != rec.Params || got.Updates != rec.Updates || len(got.Window) != len(rec.Window) || !got.LastUpdate.Equal(rec.LastUpdate) {
		t.Fatalf("restored %+v\nwant %+v", got, rec)
	}
	checkTunerAPI(t, restarted, f.ns, rec)
}

// checkTunerAPI reads GET /tuner/params for the variant and an unknown one.
func checkTunerAPI(t *testing.T, store *ConfigMapStore, ns string, rec tuner.Record) {
	t.Helper()
	srv := httptest.NewServer(TunerHandler(store))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "?namespace=" + ns + "&variant=llama-h100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []TunerParams
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Alpha != rec.Params.Alpha || out[0].Model != model || len(out[0].Covariance) != 3 {
		t.Fatalf("tuner API: %+v", out)
	}
	resp2, err := srv.Client().Get(srv.URL + "?variant=nope")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Errorf("unknown variant: status %d", resp2.StatusCode)
	}
}

// TestScaleFromZero: a model with no replica and waiting requests gets
// its cheapest variant scaled to one at once.
func TestScaleFromZero(t *testing.T) {
	f := newFixture(t)
	if err := f.planner.Config.Apply(DefaultConfigNames().Main, map[string]string{"WVA_SCALE_TO_ZERO": "true"}, true); err != nil {
		t.Fatal(err)
	}
	zero := func(va *wvav1.VariantAutoscaling) {
		z := int32(0)
		va.Spec.MinReplicas = &z
		va.Spec.Actuator = wvav1.ActuatorDirect
	}
	cheap := f.deployment("llama-l40s", 0)
	f.deployment("llama-h100", 0)
	f.va("llama-h100", model, zero)
	f.va("llama-l40s", model, func(va *wvav1.VariantAutoscaling) { zero(va); va.Spec.Accelerator = "L40S"; va.Spec.VariantCost = "12" })
	sfz := &ScaleFromZero{Planner: f.planner, Clock: f.clock}
	woke, err := sfz.Check(context.Background())
	if err != nil || len(woke) != 0 {
		t.Fatalf("no demand: woke %v, %v", woke, err)
	}
	f.writeMetrics(file.Document{Demand: []file.Demand{{Namespace: f.ns, Model: model, Value: 4}}})
	woke, err = sfz.Check(context.Background())
	if err != nil || len(woke) != 1 || woke[0].Name != "llama-l40s" {
		t.Fatalf("demand: woke %v, %v; want llama-l40s", woke, err)
	}
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cheap), &got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 1 {
		t.Fatalf("cheapest variant has %d replicas, want 1", *got.Spec.Replicas)
	}
	if g := f.gauge("inferno_desired_replicas", "llama-l40s"); g != 1 {
		t.Errorf("inferno_desired_replicas %v, want 1", g)
	}
	va := f.reconcile("llama-l40s")
	if va.Status.DesiredOptimizedAlloc.NumReplicas != 1 || va.Status.DesiredOptimizedAlloc.Reason != string(engine.ReasonScaleFromZero) {
		t.Errorf("status %+v", va.Status.DesiredOptimizedAlloc)
	}
	// Not at zero any more: nothing to do.
	woke, err = sfz.Check(context.Background())
	if err != nil || len(woke) != 0 {
		t.Fatalf("second pass woke %v, %v", woke, err)
	}
}

func waitEvent(t *testing.T, obj client.Object, reason, substr string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(obj.GetNamespace())); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Name == obj.GetName() && e.Reason == reason && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, substr) {
				return
			}
		}
		sleep()
	}
	t.Fatalf("no %s event mentioning %q on %s", reason, substr, obj.GetName())
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
		if got := ownedBy(c.pod, d); got != c.want {
			t.Errorf("%+v: got %v", c.pod.OwnerReferences, got)
		}
	}
}

// TestUnknownServiceClass: a VA naming a class that does not exist is
// planned without it (the cycle does not fail) and its status says why.
func TestUnknownServiceClass(t *testing.T) {
	f := newFixture(t)
	if err := f.planner.Config.Apply(DefaultConfigNames().ServiceClasses, map[string]string{"premium": `{"priority": 1, "ttft_ms": 500, "itl_ms": 50}`}, true); err != nil {
		t.Fatal(err)
	}
	f.deployment("llama-h100", 1)
	f.deployment("mistral-h100", 1)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) {
		va.Spec.SLOClassRef = &wvav1.ConfigMapKeyRef{Name: "service-classes-config", Key: "platinum"}
	})
	f.va("mistral-h100", "mistral", func(va *wvav1.VariantAutoscaling) {
		va.Spec.SLOClassRef = &wvav1.ConfigMapKeyRef{Name: "service-classes-config", Key: "premium"}
	})
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 1, 0.3, 0)},
		{Namespace: f.ns, Model: "mistral", Pods: pods("mistral-h100", 1, 0.3, 0)}}})
	f.cycle()
	c := wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	if !strings.Contains(c.Message, `service class "platinum" is not in ConfigMap service-classes-config`) {
		t.Errorf("message: %q", c.Message)
	}
	c = wantCond(t, f.reconcile("mistral-h100"), wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	if strings.Contains(c.Message, "class") {
		t.Errorf("the known class was reported: %q", c.Message)
	}
}

// TestCycleAndWakeConcurrently: the planner loop and the scale-from-zero
// loop run in separate goroutines in the manager; under -race this test
// fails if they share state unguarded. Whatever the interleaving, the end
// state is the one either order gives: the idle model, with requests
// waiting, is asked for a replica (by the wake-up or by the cycle, never
// put back to zero by a cycle that saw it before the wake-up), and the
// served one keeps its replica.
func TestCycleAndWakeConcurrently(t *testing.T) {
	f := newFixture(t)
	f.deployment("llama-h100", 1)
	f.va("llama-h100", model, nil)
	f.deployment("idle-l40s", 0)
	f.va("idle-l40s", "idle", func(va *wvav1.VariantAutoscaling) { va.Spec.Accelerator = "L40S" })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 1, 0.3, 0)}},
		Demand: []file.Demand{{Namespace: f.ns, Model: "idle", Value: 2}}})
	f.planner.Notify = nil
	sfz := &ScaleFromZero{Planner: f.planner, Clock: f.clock}
	errs := make(chan error, 10)
	go func() { // the planner loop: one cycle after the other
		for i := 0; i < 5; i++ {
			errs <- f.planner.Cycle(context.Background())
		}
	}()
	go func() { // the wake-up loop, beside it
		for i := 0; i < 5; i++ {
			_, err := sfz.Check(context.Background())
			errs <- err
		}
	}()
	for i := 0; i < 10; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for name, atLeast := range map[string]int{"idle-l40s": 1, "llama-h100": 1} {
		dec, ok := f.planner.Cache.Get(types.NamespacedName{Namespace: f.ns, Name: name})
		if !ok || !dec.Decided || dec.Decision.Desired < atLeast {
			t.Errorf("%s: decision %+v (cached %v), want ≥ %d replicas", name, dec.Decision, ok, atLeast)
		}
		if g := f.gauge("inferno_desired_replicas", name); g < float64(atLeast) {
			t.Errorf("%s: inferno_desired_replicas %v, want ≥ %d", name, g, atLeast)
		}
	}
}

// TestPrometheusDown: when no model's metrics can be read, every variant
// is held and its status says why (and the status write is accepted).
func TestPrometheusDown(t *testing.T) {
	f := newFixture(t)
	f.planner.Sources = DefaultOptions().sources
	main := map[string]string{"PROMETHEUS_BASE_URL": fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "PROMETHEUS_TIMEOUT": "200ms"}
	if err := f.planner.Config.Apply(DefaultConfigNames().Main, main, true); err != nil {
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

// TestStoreNeverOverwritesUnread: a leader whose first read of the tuner
// state fails must not replace it with what it learned since; once the
// read succeeds both are kept.
func TestStoreNeverOverwritesUnread(t *testing.T) {
	ctx := context.Background()
	ref := types.NamespacedName{Namespace: ctrlNS, Name: "state-unread"}
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ctrlNS}})
	old := NewConfigMapStore(env.Client, ref)
	if _, err := old.Load(ctx); err != nil {
		t.Fatal(err)
	}
	a := tuner.Key{Namespace: "ns", Model: "m", Variant: "a"}
	b := tuner.Key{Namespace: "ns", Model: "m", Variant: "b"}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if err := old.Put(a, tuner.Record{Params: tuner.Params{Alpha: 6}, LastUpdate: t0}); err != nil {
		t.Fatal(err)
	}
	if err := old.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	failing := true
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	flaky := interceptor.NewClient(ww, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
		if failing {
			return fmt.Errorf("etcdserver: request timed out")
		}
		return c.Get(ctx, k, o, opts...)
	}})
	s := NewConfigMapStore(flaky, ref)
	if _, err := s.Load(ctx); err == nil {
		t.Fatal("the failing read succeeded")
	}
	if err := s.Put(b, tuner.Record{Params: tuner.Params{Alpha: 2}, LastUpdate: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Fatalf("flush before a successful read: %v", err)
	}
	failing = false
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check := NewConfigMapStore(env.Client, ref)
	if _, err := check.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ra, okA, _ := check.Get(a)
	rb, okB, _ := check.Get(b)
	if !okA || !okB || ra.Params.Alpha != 6 || rb.Params.Alpha != 2 {
		t.Fatalf("stored: a %v %+v, b %v %+v", okA, ra.Params, okB, rb.Params)
	}
}

func TestConfigStateVersion(t *testing.T) {
	s := NewConfigState(DefaultConfigNames(), config.DefaultMain())
	data := map[string]string{"GLOBAL_OPT_INTERVAL": "30s"}
	if err := s.Apply(config.MainName, data, true); err != nil {
		t.Fatal(err)
	}
	v := s.Version()
	if err := s.Apply(config.MainName, data, true); err != nil || s.Version() != v {
		t.Errorf("a resync with the same data changed the version: %d → %d (%v)", v, s.Version(), err)
	}
	if err := s.Apply(config.MainName, map[string]string{"GLOBAL_OPT_INTERVAL": "45s"}, true); err != nil || s.Version() != v+1 {
		t.Errorf("a real change: version %d → %d (%v)", v, s.Version(), err)
	}
}

// TestSurgeAsksForCycle: with WVA_SURGE on, the fast loop asks the
// optimisation loop for an extra cycle when requests pile up at the
// gateway for a model that has replicas, but not within 15 s of the
// model's last cycle; with it off (the default) it never does.
func TestSurgeAsksForCycle(t *testing.T) {
	f := newFixture(t)
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.3, 0)}}})
	sfz := &ScaleFromZero{Planner: f.planner, Clock: f.clock, Log: f.planner.Log}
	asked := func() bool {
		if _, err := sfz.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-f.planner.Surge:
			return true
		default:
			return false
		}
	}
	f.cycle() // plans for 4 rps, nothing waiting
	queue := file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.3, 0)}},
		Demand: []file.Demand{{Namespace: f.ns, Model: model, Value: 8}}}
	f.writeMetrics(queue)
	f.clock.Step(20 * time.Second)
	if asked() {
		t.Fatal("surge with WVA_SURGE off")
	}
	if err := f.planner.Config.Apply(DefaultConfigNames().Main, map[string]string{"WVA_SURGE": "true"}, true); err != nil {
		t.Fatal(err)
	}
	if !asked() {
		t.Fatal("8 requests waiting for 2 ready replicas: no cycle asked for")
	}
	f.cycle() // sees the queue
	f.clock.Step(5 * time.Second)
	if asked() {
		t.Error("surge 5 s after the model's last cycle")
	}
}
