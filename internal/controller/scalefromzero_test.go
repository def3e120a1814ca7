package controller

import (
	"context"
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// TestScaleFromZero: a model with no replica and waiting requests gets
// its cheapest variant scaled to one at once.
func TestScaleFromZero(t *testing.T) {
	f := newFixture(t)
	if err := f.planner.Config.apply(defaultConfigNames().Main, map[string]string{"WVA_SCALE_TO_ZERO": "true"}, true); err != nil {
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
	sfz := &scaleFromZero{Planner: f.planner, Clock: f.clock}
	woke, err := sfz.check(context.Background())
	if err != nil || len(woke) != 0 {
		t.Fatalf("no demand: woke %v, %v", woke, err)
	}
	f.writeMetrics(file.Document{Demand: []file.Demand{{Namespace: f.ns, Model: model, Value: 4}}})
	woke, err = sfz.check(context.Background())
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
	woke, err = sfz.check(context.Background())
	if err != nil || len(woke) != 0 {
		t.Fatalf("second pass woke %v, %v", woke, err)
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
	sfz := &scaleFromZero{Planner: f.planner, Clock: f.clock}
	errs := make(chan error, 10)
	go func() { // the planner loop: one cycle after the other
		for i := 0; i < 5; i++ {
			errs <- f.planner.cycle(context.Background())
		}
	}()
	go func() { // the wake-up loop, beside it
		for i := 0; i < 5; i++ {
			_, err := sfz.check(context.Background())
			errs <- err
		}
	}()
	for i := 0; i < 10; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for name, atLeast := range map[string]int{"idle-l40s": 1, "llama-h100": 1} {
		dec, ok := f.planner.Cache.get(types.NamespacedName{Namespace: f.ns, Name: name})
		if !ok || !dec.Decided || dec.Decision.Desired < atLeast {
			t.Errorf("%s: decision %+v (cached %v), want ≥ %d replicas", name, dec.Decision, ok, atLeast)
		}
		if g := f.gauge("inferno_desired_replicas", name); g < float64(atLeast) {
			t.Errorf("%s: inferno_desired_replicas %v, want ≥ %d", name, g, atLeast)
		}
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
	sfz := &scaleFromZero{Planner: f.planner, Clock: f.clock, Log: f.planner.Log}
	asked := func() bool {
		if _, err := sfz.check(context.Background()); err != nil {
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
	if err := f.planner.Config.apply(defaultConfigNames().Main, map[string]string{"WVA_SURGE": "true"}, true); err != nil {
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

// TestFastModelBounds: the fast loop bounds a variant's replicas as the
// cycle's snapshot does (a maxReplicas of 2^31 − 1 let waking from zero
// aim higher than the next cycle would).
func TestFastModelBounds(t *testing.T) {
	huge := int32(math.MaxInt32)
	va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Spec: wvav1.VariantAutoscalingSpec{MinReplicas: &huge, MaxReplicas: &huge}}
	m := fastModel(collector.Target{Namespace: "n", Model: "m"}, []candidate{{va: va, d: &workload{}}}, 3, 0)
	v := m.Variants[0]
	if v.MaxReplicas != engine.MaxReplicaCount || v.MinReplicas == nil || *v.MinReplicas != engine.MaxReplicaCount {
		t.Errorf("bounds %v / %d, want both %d", v.MinReplicas, v.MaxReplicas, engine.MaxReplicaCount)
	}
}
