//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// Scale to zero: load for 30 s of wall time, none for 75 s, then load
// again (model seconds at loadTimeScale).
var zeroSteps = []loadStep{{0, 8}, {300, 0}, {1050, 8}}

// zeroInterval is the scenario's GLOBAL_OPT_INTERVAL.
const zeroInterval = 5 * time.Second

// zeroRetention is WVA_SCALE_TO_ZERO_RETENTION: a model scales to zero
// only after no request for this long.
const zeroRetention = 10 * time.Second

// TestScaleToZeroAndBack: a variant with minReplicas 0 and
// WVA_SCALE_TO_ZERO true goes to 0 replicas once its load has stopped
// (within the retention, the rate window, the scale-down stabilisation and
// two optimisation intervals), and comes back to at least one ready
// replica when load returns (the scale-from-zero path: the gateway's held
// requests, read every WVA_SCALE_FROM_ZERO_INTERVAL).
func TestScaleToZeroAndBack(t *testing.T) {
	va := VariantAutoscaling(smokeNS, smokeVA, smokeModel, "H100", 0, 4, "30.0")
	va.Spec.Actuator = wvav1.ActuatorDirect
	w := newLoadWorld(t, zeroInterval, zeroSteps, map[string]string{
		"WVA_SCALE_TO_ZERO":            "true",
		"WVA_SCALE_TO_ZERO_RETENTION":  zeroRetention.String(),
		"WVA_SCALE_FROM_ZERO_INTERVAL": "1s",
	}, &wvaVA{VariantAutoscaling: va, Replicas: 1})
	h := w.h
	stop, back := zeroSteps[1].wall(), zeroSteps[2].wall()
	// The rate window (15 s) must empty, then the retention pass, then the
	// stabilisation window (15 s) of the last non-zero recommendation, with
	// a cycle at each end.
	toZero := 15*time.Second + zeroRetention + 15*time.Second + 2*w.interval + 5*time.Second
	w.waitUntil(stop)
	if n, err := h.deploymentReplicas(h.Ctx(), smokeVA); err != nil || n < 1 {
		t.Fatalf("the variant has %d replicas (%v) while under load: it must scale to zero only after the load stops", n, err)
	}
	h.Eventually("the variant scales to zero after its load stopped", toZero, func(ctx context.Context) (bool, string) {
		n, err := h.deploymentReplicas(ctx, smokeVA)
		return err == nil && n == 0, fmt.Sprintf("spec.replicas %d %v", n, err)
	})
	t.Logf("TIMING scale to zero: %s after the load stopped (bound %s)", (time.Since(w.start) - stop).Round(100*time.Millisecond), toZero)
	if time.Since(w.start) > back {
		t.Fatalf("reached zero only after the load came back (%s): lengthen the idle step", back)
	}
	w.waitUntil(back)
	fromZero := 10*time.Second + 2*w.interval
	h.Eventually("the variant comes back from zero with load", fromZero, func(ctx context.Context) (bool, string) {
		n, err := h.deploymentReplicas(ctx, smokeVA)
		return err == nil && n >= 1, fmt.Sprintf("spec.replicas %d %v", n, err)
	})
	t.Logf("TIMING scale from zero: %s after the load came back (bound %s)", (time.Since(w.start) - back).Round(100*time.Millisecond), fromZero)
	// The server loads its model (20 s + up to 5 s of model time) and
	// serves the requests the gateway held.
	h.Eventually("a replica is Ready again", 15*time.Second, func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		err := h.Client.Get(ctx, client.ObjectKey{Namespace: smokeNS, Name: smokeVA}, d)
		return err == nil && d.Status.ReadyReplicas >= 1, fmt.Sprintf("ready %d %v", d.Status.ReadyReplicas, err)
	})
	h.Eventually("vLLM serves requests again", 30*time.Second, func(ctx context.Context) (bool, string) {
		s, err := w.prom.Query(ctx, fmt.Sprintf(`sum(rate(vllm:request_success_total{model_name=%q}[5s])) > 0`, smokeModel))
		return err == nil && len(s) > 0, fmt.Sprintf("%v %v", s, err)
	})
}
