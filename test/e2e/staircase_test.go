//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// staircaseInterval is the scenarios' GLOBAL_OPT_INTERVAL (set through
// the main ConfigMap).
const staircaseInterval = 10 * time.Second

// staircaseSteps: model seconds and model requests/s at loadTimeScale
// (10x): each step lasts 45 s of wall time. `wva model size` sizes them
// 1, 2, 3, then 1 replica (the last step is the scale-down).
var staircaseSteps = []loadStep{{0, 8}, {450, 24}, {900, 44}, {1350, 8}}

// staircaseEnd is when the last step has been held long enough to settle.
const staircaseEnd = 1800

// scaleUpBound is how long after a step the controller must have scaled
// up: two optimisation intervals, plus the rate window the decision reads
// (PROMETHEUS_WINDOW 15 s: a step shows in rate() in full only after it)
// and Prometheus's scrape (1 s).
func scaleUpBound(interval time.Duration) time.Duration {
	return 2*interval + 15*time.Second + time.Second
}

// TestStaircaseDirect: the emulated fleet under a staircase of load, the
// direct actuator. The controller scales up within scaleUpBound of each
// step up, never scales down while the load has not gone down, settles
// within ±1 replica of `wva model size` for the servers' true parameters
// at the end of each step, and on the scale-down the pods removed are the
// ones it marked with the lowest pod-deletion-cost.
func TestStaircaseDirect(t *testing.T) {
	va := VariantAutoscaling(smokeNS, smokeVA, smokeModel, "H100", 1, 8, "30.0")
	va.Spec.Actuator = wvav1.ActuatorDirect
	w := newLoadWorld(t, staircaseInterval, staircaseSteps, nil, &wvaVA{VariantAutoscaling: va, Replicas: 1})
	deletions := w.h.watchDeletions(t)
	rec := w.record(smokeVA)
	checkStaircase(t, w, rec, smokeVA, staircaseSteps, staircaseEnd, scaleUpBound(w.interval))
	checkDeletionCost(t, deletions())
}

// checkStaircase waits for each step's end (the last ends at model
// second last) and checks the scale-ups (within bound of each step up),
// the absence of scale-downs before the load first goes down and each
// step's settled replicas.
func checkStaircase(t *testing.T, w *loadWorld, rec *replicaRecorder, variant string, steps []loadStep, last float64, bound time.Duration) {
	t.Helper()
	for i, s := range steps {
		end := loadStep{AtSeconds: last}.wall()
		if i+1 < len(steps) {
			end = steps[i+1].wall()
		}
		want := expectedReplicas(t, s.RPS)
		w.waitUntil(end)
		if i > 0 && want > expectedReplicas(t, steps[i-1].RPS) {
			checkScaleUp(t, rec, variant, s, want, bound)
		}
		settled := rec.between(end-5*time.Second, end)
		if len(settled) == 0 {
			t.Fatalf("step %d: no sample of the Deployment in its last 5 s", i)
		}
		got := settled[len(settled)-1].SpecByVariant[variant]
		t.Logf("TIMING step %d (%g model rps from %s): %d replicas at its end, `wva model size` says %d", i, s.RPS, s.wall(), got, want)
		for _, x := range settled {
			if d := int(x.SpecByVariant[variant]) - want; d < -1 || d > 1 {
				t.Errorf("step %d: %d replicas at %s, want %d ± 1 (`wva model size` for the true parameters at %g rps)",
					i, x.SpecByVariant[variant], x.At.Round(time.Millisecond), want, s.RPS)
				break
			}
		}
	}
	until := loadStep{AtSeconds: last}.wall()
	for i := 1; i < len(steps); i++ {
		if steps[i].RPS < steps[i-1].RPS {
			until = steps[i].wall()
			break
		}
	}
	checkNoEarlyScaleDown(t, rec, variant, until)
}

// checkScaleUp: the replicas rose above those at the step's start within
// bound of it, unless they already were at least want (`wva model size`
// for the step: the previous step settled one above its own).
func checkScaleUp(t *testing.T, rec *replicaRecorder, variant string, s loadStep, want int, bound time.Duration) {
	t.Helper()
	before := rec.between(s.wall()-2*time.Second, s.wall()+time.Second)
	if len(before) == 0 {
		t.Fatalf("no sample at the step of %s", s.wall())
	}
	base := before[0].SpecByVariant[variant]
	if int(base) >= want {
		t.Logf("TIMING step at %s (%g model rps): already at %d replicas, `wva model size` says %d: no scale-up needed", s.wall(), s.RPS, base, want)
		return
	}
	at, ok := rec.firstAbove(variant, base, s.wall())
	if !ok {
		t.Errorf("step at %s (%g model rps): never scaled above %d", s.wall(), s.RPS, base)
		return
	}
	took := at - s.wall()
	t.Logf("TIMING step at %s (%g model rps): scaled up from %d after %s (bound %s)", s.wall(), s.RPS, base, took.Round(100*time.Millisecond), bound)
	if took > bound {
		t.Errorf("step at %s: scaled up after %s, want within %s (2 × GLOBAL_OPT_INTERVAL + rate window + scrape)", s.wall(), took.Round(100*time.Millisecond), bound)
	}
}

// checkNoEarlyScaleDown: while the load only rose (before the step down
// at until), spec.replicas never decreased.
func checkNoEarlyScaleDown(t *testing.T, rec *replicaRecorder, variant string, until time.Duration) {
	t.Helper()
	prev := int32(-1)
	for _, s := range rec.between(0, until) {
		n := s.SpecByVariant[variant]
		if prev >= 0 && n < prev {
			t.Errorf("scaled down from %d to %d at %s, before the load went down (at %s)", prev, n, s.At.Round(time.Millisecond), until)
			return
		}
		prev = n
	}
}

// checkDeletionCost: some pods were removed on the scale-down, and each
// had been drained (out of the endpoint picker's rotation) and had a
// pod-deletion-cost set by the controller no higher than that of every
// pod left.
func checkDeletionCost(t *testing.T, deleted []deletedPod) {
	t.Helper()
	if len(deleted) == 0 {
		t.Errorf("no pod removed on the scale-down")
		return
	}
	for _, d := range deleted {
		t.Logf("pod %s removed with pod-deletion-cost %q; left: %v", d.Name, d.Cost, d.Survivors)
		if d.Cost == "" {
			t.Errorf("pod %s removed without a pod-deletion-cost: the controller marks its victims", d.Name)
		}
		if !d.Drained {
			t.Errorf("pod %s removed without a drain: the controller takes its victims out of rotation first", d.Name)
		}
		for n, c := range d.Survivors {
			if !costBelow(d.Cost, c) {
				t.Errorf("pod %s (cost %q) removed while %s (cost %q) stays", d.Name, d.Cost, n, c)
			}
		}
	}
}

// hpaSteps: the staircase's steps up, for the HPA mode.
var hpaSteps = staircaseSteps[:3]

// hpaBound adds the HPA's path to scaleUpBound: Prometheus scraping the
// controller's decision (1 s), the adapter's relist (2 s) and the HPA's
// sync period (2 s), with a margin of 5 s.
func hpaBound(interval time.Duration) time.Duration { return scaleUpBound(interval) + 10*time.Second }

// TestStaircaseHPA: the same staircase's steps up with the metrics-only
// actuator: WVA publishes inferno_desired_replicas, Prometheus scrapes it,
// prometheus-adapter serves it as an external metric and the real HPA
// controller (kube-controller-manager) scales the Deployment with
// config/samples/hpa.yaml. Each step up is applied by the HPA within
// hpaBound, and each step settles within ±1 replica of `wva model size`.
func TestStaircaseHPA(t *testing.T) {
	w := metricsOnlyWorld(t, hpaSteps)
	h := w.h
	if !h.HasKCM() || !h.HasAdapter() {
		t.Skip("needs kube-controller-manager and prometheus-adapter: `make k8s-kcm adapter` (make e2e does)")
	}
	h.StartAdapter(w.prom.URL)
	h.Apply(h.sample("hpa.yaml"))
	h.StartKCM(KCMOptions{})
	rec := w.record(smokeVA)
	checkStaircase(t, w, rec, smokeVA, hpaSteps, staircaseSteps[3].AtSeconds, hpaBound(w.interval))
	checkHPAScaled(t, h, smokeVA)
}

// metricsOnlyWorld starts the load world for the scenario's variant with
// the metrics-only actuator: an HPA, or KEDA's, applies its decisions.
func metricsOnlyWorld(t *testing.T, steps []loadStep) *loadWorld {
	va := VariantAutoscaling(smokeNS, smokeVA, smokeModel, "H100", 1, 8, "30.0")
	va.Spec.Actuator = wvav1.ActuatorMetricsOnly
	return newLoadWorld(t, staircaseInterval, steps, nil, &wvaVA{VariantAutoscaling: va, Replicas: 1})
}

// checkHPAScaled: the HPA name scaled the Deployment (the metrics-only
// actuator never writes it).
func checkHPAScaled(t *testing.T, h *Harness, name string) {
	t.Helper()
	a := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: smokeNS, Name: name}, a); err != nil {
		t.Fatal(err)
	}
	if a.Status.LastScaleTime == nil || a.Status.DesiredReplicas < 2 {
		t.Errorf("the HPA %s did not scale the Deployment: status %+v", name, a.Status)
	}
}

// kedaSteps: the staircase's steps up, 30 s of wall time each (the suite
// must fit in 15 minutes): 1, 2, 3 replicas by `wva model size`. The
// light first step lets the tuner learn before the load saturates the
// replica: started at 24 requests/s on one replica, the untuned
// saturation analyzer sized the backlog stuck on that replica and the
// fleet went to its maximum (docs/e2e.md).
var kedaSteps = []loadStep{{0, 8}, {300, 24}, {600, 44}}

// kedaEnd is the end of the last step (model seconds).
const kedaEnd = 900

// TestStaircaseKEDA: the metrics-only actuator with KEDA as users install
// it from config/samples/keda-scaledobject.yaml (only its Prometheus
// address changed): KEDA's real operator turns the ScaledObject into an
// HPA, its metrics server serves the external metric s0-prometheus, which
// its operator reads from Prometheus with the sample's query of
// inferno_desired_replicas, and the real HPA controller scales the
// Deployment. Each step up is applied within hpaBound (KEDA's metrics
// server asks its operator, which queries Prometheus on each read, in
// place of the adapter's 2 s relist) and settles within
// ±1 replica of `wva model size`. Then Prometheus stops: KEDA's fallback
// (currentReplicasIfHigher) holds the replicas where they are instead of
// scaling to zero or to the fallback's 1.
func TestStaircaseKEDA(t *testing.T) {
	w := metricsOnlyWorld(t, kedaSteps)
	h := w.h
	if !h.HasKCM() || !h.HasKEDA() {
		t.Skip("needs kube-controller-manager and KEDA: `make k8s-kcm keda` (make e2e does)")
	}
	h.StartKEDA()
	h.Apply(h.kedaSample(w.prom.URL))
	h.StartKCM(KCMOptions{})
	hpaName := "keda-hpa-" + smokeVA
	took := h.Eventually("KEDA made its HPA and the HPA reads s0-prometheus", 60*time.Second, func(ctx context.Context) (bool, string) {
		a := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: smokeNS, Name: hpaName}, a); err != nil {
			return false, err.Error()
		}
		for _, c := range a.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive {
				return c.Status == "True", fmt.Sprintf("ScalingActive %s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no ScalingActive condition yet"
	})
	t.Logf("TIMING KEDA's HPA active %s after kube-controller-manager started", took.Round(100*time.Millisecond))
	rec := w.record(smokeVA)
	checkStaircase(t, w, rec, smokeVA, kedaSteps, kedaEnd, hpaBound(w.interval))
	checkHPAScaled(t, h, hpaName)
	so, err := h.scaledObject(h.Ctx(), smokeNS, smokeVA)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"Ready", "Active"} {
		if s, d := conditionOf(so, c); s != "True" {
			t.Errorf("ScaledObject %s=%s (%s), want True", c, s, d)
		}
	}
	checkKEDAFallback(t, w)
}

// checkKEDAFallback stops Prometheus: after the sample's failureThreshold
// (3) failed reads KEDA reports Fallback=True and feeds the HPA
// max(current replicas, fallback.replicas), so the Deployment keeps its
// replicas; they must not move for 3 HPA syncs after that.
func checkKEDAFallback(t *testing.T, w *loadWorld) {
	t.Helper()
	h := w.h
	before, err := h.deploymentReplicas(h.Ctx(), smokeVA)
	if err != nil {
		t.Fatal(err)
	}
	w.prom.Stop()
	took := h.Eventually("ScaledObject Fallback=True", 60*time.Second, func(ctx context.Context) (bool, string) {
		so, err := h.scaledObject(ctx, smokeNS, smokeVA)
		if err != nil {
			return false, err.Error()
		}
		s, d := conditionOf(so, "Fallback")
		return s == "True", fmt.Sprintf("Fallback=%s %s", s, d)
	})
	t.Logf("TIMING KEDA fallback %s after Prometheus stopped, at %d replicas", took.Round(100*time.Millisecond), before)
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		n, err := h.deploymentReplicas(h.Ctx(), smokeVA)
		if err != nil {
			t.Fatal(err)
		}
		if n != before {
			t.Fatalf("Prometheus down, KEDA in fallback: the Deployment went from %d to %d replicas, want it held", before, n)
		}
	}
}
