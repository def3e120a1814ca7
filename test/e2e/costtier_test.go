//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// costSteps: light load for 60 s of wall time (the tuner learns the
// parameters: 5 accepted updates), then 44 model rps (3 replicas by `wva
// model size`) for 40 s.
var costSteps = []loadStep{{0, 8}, {600, 44}}

const (
	costEnd   = 1000
	cheapVA   = "llama-8b-l40s"
	costlyVA  = "llama-8b-h100"
	cheapAcc  = "L40S"
	costlyAcc = "H100"
	// costMax is each variant's maxReplicas.
	costMax = 8
)

// acceleratorCosts is the accelerators ConfigMap: L40S at 1.5, H100 at 3.
func acceleratorCosts() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ControllerNamespace, Name: "accelerator-unit-costs"},
		Data: map[string]string{
			cheapAcc:  `{"name": "L40S", "count": 1, "cost": 1.5}`,
			costlyAcc: `{"name": "H100", "count": 1, "cost": 3.0}`,
		},
	}
}

// TestCostTiering: two variants of one model on servers of the same speed,
// one on a cheap accelerator and one on an expensive one (their costs from
// the accelerators ConfigMap, no variantCost), every analyzer at its
// defaults. Under a step of load the cheap one grows first: the expensive
// one grows only after it, or in the same decision once the cheap one is
// at its maximum (the WVA paper's §V.C: the dear tier takes what the cheap
// pool cannot); and the cheap one ends with more replicas.
func TestCostTiering(t *testing.T) {
	var vas []*wvaVA
	for _, v := range []struct{ name, acc string }{{cheapVA, cheapAcc}, {costlyVA, costlyAcc}} {
		va := VariantAutoscaling(smokeNS, v.name, smokeModel, v.acc, 1, costMax, "")
		va.Spec.Actuator = wvav1.ActuatorDirect
		vas = append(vas, &wvaVA{VariantAutoscaling: va, Replicas: 1})
	}
	w := newLoadWorld(t, staircaseInterval, costSteps, nil, vas...)
	w.h.Apply(acceleratorCosts())
	rec := w.record(cheapVA, costlyVA)
	step := costSteps[1].wall()
	w.waitUntil(loadStep{AtSeconds: costEnd}.wall())
	cheapAt, cheapUp := rec.firstAbove(cheapVA, 1, 0)
	costlyAt, costlyUp := rec.firstAbove(costlyVA, 1, 0)
	if !cheapUp {
		t.Fatalf("the cheap variant %s never grew above 1 replica", cheapVA)
	}
	costly := "never"
	if costlyUp {
		costly = (costlyAt - step).Round(100*time.Millisecond).String() + " after the step"
	}
	t.Logf("TIMING cost tiering: the cheap variant grew %s after the step; the expensive one: %s",
		(cheapAt - step).Round(100*time.Millisecond), costly)
	t.Logf("cost tiering: spec.replicas over the run (the step at %s): %s", step, rec.changes(cheapVA, costlyVA))
	switch {
	case !costlyUp || costlyAt > cheapAt:
	case costlyAt < cheapAt:
		t.Errorf("the expensive variant %s grew (at %s) before the cheap one (at %s)", costlyVA, costlyAt, cheapAt)
	default:
		// The same sample: only right if the cheap one was at its maximum.
		if at := rec.between(cheapAt, cheapAt+time.Millisecond); len(at) == 0 || at[0].SpecByVariant[cheapVA] < costMax {
			t.Errorf("the expensive variant %s grew with the cheap one (at %s) before the cheap one reached its maximum %d: %v", costlyVA, costlyAt, costMax, at)
		}
	}
	last := rec.between(loadStep{AtSeconds: costEnd}.wall()-5*time.Second, loadStep{AtSeconds: costEnd}.wall())
	if len(last) == 0 {
		t.Fatal("no sample at the end")
	}
	end := last[len(last)-1].SpecByVariant
	t.Logf("TIMING cost tiering: at the end %s has %d replicas, %s %d (`wva model size`: %d in all)",
		cheapVA, end[cheapVA], costlyVA, end[costlyVA], expectedReplicas(t, costSteps[1].RPS))
	seen, why := tunerDiverged(t, w, loadStep{AtSeconds: costEnd}.wall()-step)
	t.Logf("TIMING cost tiering: learned capacity per replica after the step: %s", seen)
	if end[cheapVA] <= end[costlyVA] {
		if why != "" {
			// Quarantined, not passed: the known defect of issue 30.
			t.Skipf("KNOWN DEFECT (issue 30): at the end the cheap variant has %d replicas, the expensive one %d, because the tuner, "+
				"learning under the step's overload, gave identical servers different speeds (%s); tiering follows those parameters",
				end[cheapVA], end[costlyVA], why)
		}
		t.Errorf("at the end the cheap variant has %d replicas, the expensive one %d: want more on the cheap one", end[cheapVA], end[costlyVA])
	}
}

// tunerDiverged says how, over the window before now, the queueing model's
// capacity per replica (wva_variant_capacity_per_replica_rps, from the
// learned parameters) of the cheap variant fell below three quarters of
// the expensive one's, or went unpublished at times (the model could not
// size it), though both run identical servers; "" when it did not. seen
// gives the figures.
func tunerDiverged(t *testing.T, w *loadWorld, window time.Duration) (seen, why string) {
	t.Helper()
	ctx := context.Background()
	stat := func(f, v string) (float64, bool) {
		s, err := w.prom.Query(ctx, fmt.Sprintf(`%s(wva_variant_capacity_per_replica_rps{variant_name=%q}[%ds])`, f, v, int(window.Seconds())))
		if err != nil || len(s) == 0 {
			return 0, false
		}
		return s[0].Value, true
	}
	cheapMin, okC := stat("min_over_time", cheapVA)
	costlyMax, okE := stat("max_over_time", costlyVA)
	cheapN, _ := stat("count_over_time", cheapVA)
	costlyN, _ := stat("count_over_time", costlyVA)
	seen = fmt.Sprintf("%s at least %.3g requests/s (%.0f samples), %s at most %.3g (%.0f samples)", cheapVA, cheapMin, cheapN, costlyVA, costlyMax, costlyN)
	switch {
	case !okC || !okE:
		return seen, fmt.Sprintf("no capacity published for %s or %s", cheapVA, costlyVA)
	case cheapN < 0.8*costlyN:
		return seen, fmt.Sprintf("%s could not be sized in %.0f of %.0f samples", cheapVA, costlyN-cheapN, costlyN)
	case cheapMin < 0.75*costlyMax:
		return seen, fmt.Sprintf("%s down to %.3g requests/s per replica, %s up to %.3g", cheapVA, cheapMin, costlyVA, costlyMax)
	}
	return seen, ""
}
