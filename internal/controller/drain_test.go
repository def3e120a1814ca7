package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
)

// markReady sets the pods' Ready condition, as the kubelet would.
func (f *fixture) markReady(names ...string) {
	f.t.Helper()
	ctx := context.Background()
	for _, n := range names {
		var p corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: n}, &p); err != nil {
			f.t.Fatal(err)
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := env.Client.Status().Update(ctx, &p); err != nil {
			f.t.Fatal(err)
		}
	}
}

// withDrain sets the fixture's drain settings.
func (f *fixture) withDrain(d config.Drain) {
	m := config.DefaultMain()
	m.Drain = d
	f.planner.Config = newConfigState(defaultConfigNames(), m)
}

func (f *fixture) specReplicas(d *appsv1.Deployment) int32 {
	f.t.Helper()
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
		f.t.Fatal(err)
	}
	return *got.Spec.Replicas
}

// busy gives the named pods requests in flight.
func busy(ps []file.Pod, running float64, names ...string) []file.Pod {
	for i := range ps {
		for _, n := range names {
			if ps[i].Name == n {
				ps[i].RunningRequests = running
			}
		}
	}
	return ps
}

// TestDrainBeforeScaleDown runs the drain sequence against the real API
// server: the victims leave the endpoint picker's rotation (their own
// active-ports value saved), the count and the published desired replicas
// stay while they serve, and drop once they are idle, the drained pods
// marked for deletion; no other pod is touched.
func TestDrainBeforeScaleDown(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 4)
	names := []string{"llama-h100-0", "llama-h100-1", "llama-h100-2", "llama-h100-3"}
	f.markReady(names...)
	// Pod 2 declares its own ports, to be restored exactly.
	var p2 corev1.Pod
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "llama-h100-2"}, &p2); err != nil {
		t.Fatal(err)
	}
	p2.Annotations = map[string]string{activePortsAnnotation: "8000"}
	if err := env.Client.Update(context.Background(), &p2); err != nil {
		t.Fatal(err)
	}
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	load := func() []file.Pod {
		ps := pods("llama-h100", 4, 0.2, 0)
		ps[0].KVCacheUsage, ps[1].KVCacheUsage, ps[2].KVCacheUsage, ps[3].KVCacheUsage = 0.04, 0.2, 0.01, 0.25
		return ps
	}
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(load(), 3, names...)}}})
	f.cycle()
	f.clock.Step(301 * time.Second)
	f.cycle()

	// The scale-down begins: victims out of rotation, the count kept.
	if n := f.specReplicas(d); n != 4 {
		t.Fatalf("scaled to %d while the victims serve", n)
	}
	if got := f.gauge("wva_desired_replicas", "llama-h100"); got != 4 {
		t.Errorf("published desired replicas %v while draining, want 4", got)
	}
	victims := f.outOfRotation(names)
	if len(victims) == 0 || len(victims) >= 4 || victims[0] != "llama-h100-0" && victims[0] != "llama-h100-2" {
		t.Fatalf("victims %v: want the least loaded", victims)
	}
	dec, _ := f.planner.Cache.get(client.ObjectKey{Namespace: f.ns, Name: "llama-h100"})
	if !strings.Contains(dec.Decision.Explanation, "draining before scaling 4 →") || dec.Decision.Draining != len(victims) {
		t.Errorf("decision %+v", dec.Decision)
	}

	// Still serving: nothing moves.
	f.clock.Step(30 * time.Second)
	f.cycle()
	if n := f.specReplicas(d); n != 4 {
		t.Fatalf("scaled to %d while the victims serve", n)
	}

	// Idle: the count drops by the victims, marked for deletion.
	var rest []string
	for _, n := range names {
		if !contains(victims, n) {
			rest = append(rest, n)
		}
	}
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(load(), 3, rest...)}}})
	f.clock.Step(30 * time.Second)
	f.cycle()
	if n := f.specReplicas(d); int(n) != 4-len(victims) {
		t.Fatalf("scaled to %d once %d victims were idle", n, len(victims))
	}
	f.checkRemoved(names, victims, "llama-h100-2")
}

// outOfRotation lists the pods WVA took out of rotation, checking their
// marks: the endpoint picker's annotations set, not yet marked for
// deletion.
func (f *fixture) outOfRotation(names []string) []string {
	f.t.Helper()
	var victims []string
	for _, n := range names {
		a := podAnnotations(f.t, f.ns, n)
		if _, ok := a[drainSinceAnnotation]; !ok {
			continue
		}
		victims = append(victims, n)
		if a[activePortsAnnotation] != noActivePorts || a[legacyActivePortsAnnotation] != noActivePorts || a[drainSavedAnnotation] == "" {
			f.t.Errorf("victim %s: annotations %v", n, a)
		}
		if a[podDeletionCostAnnotation] != "" {
			f.t.Errorf("victim %s marked for deletion while it serves: %v", n, a)
		}
	}
	return victims
}

// checkRemoved: exactly the victims are marked for deletion, and no other
// pod carries an annotation (but those named as having their own).
func (f *fixture) checkRemoved(names, victims []string, own ...string) {
	f.t.Helper()
	for _, n := range names {
		a := podAnnotations(f.t, f.ns, n)
		if marked := a[podDeletionCostAnnotation] == victimDeletionCost; marked != contains(victims, n) {
			f.t.Errorf("pod %s (victim %v): annotations %v", n, contains(victims, n), a)
		}
		if !contains(victims, n) && len(a) > 0 && !contains(own, n) {
			f.t.Errorf("pod %s was touched: %v", n, a)
		}
	}
}

// TestDrainPutBack: when load returns before the victims are done, they go
// back into rotation with their annotations as they were, and the count
// never dropped.
func TestDrainPutBack(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 4)
	names := []string{"llama-h100-0", "llama-h100-1", "llama-h100-2", "llama-h100-3"}
	f.markReady(names...)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(pods("llama-h100", 4, 0.1, 0), 2, names...)}}})
	f.cycle()
	f.clock.Step(301 * time.Second)
	f.cycle()
	drained := 0
	for _, n := range names {
		if _, ok := podAnnotations(t, f.ns, n)[drainSinceAnnotation]; ok {
			drained++
		}
	}
	if drained == 0 {
		t.Fatal("no victim taken out of rotation")
	}
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(pods("llama-h100", 4, 0.99, 30), 2, names...)}}})
	f.clock.Step(30 * time.Second)
	f.cycle()
	for _, n := range names {
		if a := podAnnotations(t, f.ns, n); len(a) != 0 {
			t.Errorf("pod %s keeps %v after the load returned", n, a)
		}
	}
	if n := f.specReplicas(d); n < 4 {
		t.Errorf("scaled down to %d", n)
	}
}

// TestDrainTimeoutAndLabel: with WVA_DRAIN_METHOD label:KEY the victim
// loses the pool's label instead; a victim that never goes idle is removed
// once the drain times out; a label the workload's selector uses is refused.
func TestDrainTimeoutAndLabel(t *testing.T) {
	f := newFixture(t)
	f.withDrain(config.Drain{Timeout: time.Minute, Method: config.DrainLabel, Label: "llm-d.ai/inference-serving"})
	d := f.deployment("llama-h100", 2)
	names := []string{"llama-h100-0", "llama-h100-1"}
	for _, n := range names {
		var p corev1.Pod
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: n}, &p); err != nil {
			t.Fatal(err)
		}
		p.Labels["llm-d.ai/inference-serving"] = "true"
		if err := env.Client.Update(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	f.markReady(names...)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(pods("llama-h100", 2, 0.05, 0), 1, names...)}}})
	f.cycle()
	f.clock.Step(301 * time.Second)
	f.cycle()
	var victim string
	for _, n := range names {
		var p corev1.Pod
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: n}, &p); err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Annotations[drainSinceAnnotation]; ok {
			victim = n
			if _, has := p.Labels["llm-d.ai/inference-serving"]; has {
				t.Errorf("victim %s keeps the pool's label", n)
			}
		}
	}
	if victim == "" || f.specReplicas(d) != 2 {
		t.Fatalf("victim %q, replicas %d", victim, f.specReplicas(d))
	}
	f.clock.Step(61 * time.Second)
	f.cycle()
	if n := f.specReplicas(d); n != 1 {
		t.Fatalf("replicas %d after the drain timed out, want 1", n)
	}
	if a := podAnnotations(t, f.ns, victim); a[podDeletionCostAnnotation] != victimDeletionCost {
		t.Errorf("timed-out victim not marked for deletion: %v", a)
	}
}

// TestDrainRefusesSelectorLabel: a label the workload's own selector uses
// is never removed; the variant scales down without a drain and says why.
func TestDrainRefusesSelectorLabel(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 2)
	f.markReady("llama-h100-0", "llama-h100-1")
	v := &variant{va: &wvav1.VariantAutoscaling{}, target: fromDeployment(d)}
	if _, ok, err := f.planner.drainStep(context.Background(), f.clock.Now(), config.Drain{Timeout: time.Minute, Method: config.DrainLabel, Label: "app"},
		v, collector.Report{}, 1, nil); ok || err == nil || !strings.Contains(err.Error(), "orphaned") {
		t.Errorf("selector label: ok %v, err %v", ok, err)
	}
	if a := podAnnotations(t, f.ns, "llama-h100-1"); len(a) != 0 {
		t.Errorf("pod touched: %v", a)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestDrainTurnedOff: with draining turned off during a drain, the victims
// go back into rotation and the scale-down applies at once.
func TestDrainTurnedOff(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 4)
	names := []string{"llama-h100-0", "llama-h100-1", "llama-h100-2", "llama-h100-3"}
	f.markReady(names...)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(pods("llama-h100", 4, 0.1, 0), 2, names...)}}})
	f.cycle()
	f.clock.Step(301 * time.Second)
	f.cycle()
	if len(f.outOfRotation(names)) == 0 || f.specReplicas(d) != 4 {
		t.Fatal("no drain under way")
	}
	f.withDrain(config.Drain{})
	f.clock.Step(30 * time.Second)
	f.cycle()
	for _, n := range names {
		if a := podAnnotations(t, f.ns, n); a[drainSinceAnnotation] != "" || a[activePortsAnnotation] != "" {
			t.Errorf("pod %s keeps its drain marks with draining off: %v", n, a)
		}
	}
	if n := f.specReplicas(d); n >= 4 {
		t.Errorf("replicas %d: with draining off the scale-down applies at once", n)
	}
}

// TestDrainMetricsOnly: with HPA or KEDA applying the count (the
// metrics-only actuator), the published desired replicas stay at the
// Deployment's count while the victims serve, and drop by the victims
// once they are idle, those marked for deletion so that the HPA's
// scale-down removes them.
func TestDrainMetricsOnly(t *testing.T) {
	f := newFixture(t)
	d := f.deployment("llama-h100", 4)
	names := []string{"llama-h100-0", "llama-h100-1", "llama-h100-2", "llama-h100-3"}
	f.markReady(names...)
	f.va("llama-h100", model, nil)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(pods("llama-h100", 4, 0.1, 0), 2, names...)}}})
	f.cycle()
	f.clock.Step(301 * time.Second)
	f.cycle()
	victims := f.outOfRotation(names)
	if len(victims) == 0 {
		t.Fatal("no victim taken out of rotation")
	}
	for _, series := range []string{"inferno_desired_replicas", "wva_desired_replicas"} {
		if got := f.gauge(series, "llama-h100"); got != 4 {
			t.Errorf("%s %v while the victims serve, want 4", series, got)
		}
	}
	var rest []string
	for _, n := range names {
		if !contains(victims, n) {
			rest = append(rest, n)
		}
	}
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: busy(pods("llama-h100", 4, 0.1, 0), 2, rest...)}}})
	f.clock.Step(30 * time.Second)
	f.cycle()
	if got := f.gauge("inferno_desired_replicas", "llama-h100"); int(got) != 4-len(victims) {
		t.Errorf("inferno_desired_replicas %v once %d victims are idle, want %d", got, len(victims), 4-len(victims))
	}
	if n := f.specReplicas(d); n != 4 {
		t.Errorf("the metrics-only actuator scaled the Deployment to %d", n)
	}
	f.checkRemoved(names, victims)
}
