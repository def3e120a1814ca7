package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
)

// opLog records the order of the writes the actuator makes.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) add(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

func recordingClient(t *testing.T, log *opLog) client.Client {
	t.Helper()
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(ww, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				log.add("patch pod " + obj.GetName())
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if sub == "scale" {
				log.add("scale " + obj.GetName())
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}})
}

func podAnnotations(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var p corev1.Pod
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return p.Annotations
}

// TestVictimsMarkedBeforeScaleDown: a direct scale-down first gives the
// engine's victims (the least-loaded pods) the lowest pod-deletion-cost,
// then lowers the replica count; the busy pods are left alone, and a later
// scale-up clears the marks. Draining is off here (WVA_DRAIN_TIMEOUT=0);
// drain_test.go has the scale-down that drains first.
func TestVictimsMarkedBeforeScaleDown(t *testing.T) {
	f := newFixture(t)
	f.withDrain(config.Drain{})
	log := &opLog{}
	f.planner.Actuators = newActuators(recordingClient(t, log))
	d := f.deployment("llama-h100", 4)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) { va.Spec.Actuator = wvav1.ActuatorDirect })
	// Pod 2 is the least loaded, then 0; 1 and 3 are busier.
	ps := pods("llama-h100", 4, 0.2, 0)
	ps[0].KVCacheUsage, ps[1].KVCacheUsage, ps[2].KVCacheUsage, ps[3].KVCacheUsage = 0.04, 0.2, 0.01, 0.25
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: ps}}})
	// The first cycle seeds the scale-down window with the 4 replicas it
	// finds; the scale-down comes once the window has passed.
	f.cycle()
	if len(log.ops) != 0 {
		t.Fatalf("writes within the window: %v", log.ops)
	}
	f.clock.Step(301 * time.Second)
	f.cycle()
	var got appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	n := int(*got.Spec.Replicas)
	if n >= 4 {
		t.Fatalf("no scale-down: deployment at %d (%v)", n, log.ops)
	}
	removed := 4 - n
	order := []string{"llama-h100-2", "llama-h100-0", "llama-h100-1", "llama-h100-3"}
	var want []string
	for _, p := range order[:removed] {
		want = append(want, "patch pod "+p)
	}
	want = append(want, "scale llama-h100")
	if len(log.ops) != len(want) {
		t.Fatalf("writes %v, want %v", log.ops, want)
	}
	for i := range want {
		if log.ops[i] != want[i] {
			t.Fatalf("writes %v, want %v", log.ops, want)
		}
	}
	for i, p := range order {
		a := podAnnotations(t, f.ns, p)
		if victim := i < removed; victim != (a[podDeletionCostAnnotation] == victimDeletionCost && a[victimAnnotation] == "true") {
			t.Errorf("pod %s (victim %v): annotations %v", p, victim, a)
		}
	}
	// Load returns: the scale-up clears the marks.
	f.setReady(&got, int32(n))
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", n, 0.99, 30)}}})
	f.cycle()
	for _, p := range order[:removed] {
		if a := podAnnotations(t, f.ns, p); a[podDeletionCostAnnotation] != "" || a[victimAnnotation] != "" {
			t.Errorf("pod %s keeps its mark after the scale-up: %v", p, a)
		}
	}
}
