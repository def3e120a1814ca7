package controller

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestManagerRestartKeepsTunerState runs the whole manager (leader
// election, caches, watches, the planner loop, the status reconciler) on
// the real API server, stops it, starts a new one, and checks that the new
// leader resumes from the learned parameters of the first.
func TestManagerRestartKeepsTunerState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const sys = "wva-restart"
	controllerNamespace(t, sys)
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wva-queueing-model-config", Namespace: sys},
		Data: map[string]string{"default": "sloMultiplier: 3\ntuningEnabled: true\n"}}); err != nil {
		t.Fatal(err)
	}
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, nil)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 2, 0.3, 0)}}})
	o := DefaultOptions()
	o.Namespace, o.WatchNamespaces, o.MetricsSource, o.MetricsFile = sys, []string{f.ns}, "file", f.metrics
	o.MetricsAddr, o.HealthAddr = "0", "0"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	key := tuner.Key{Namespace: f.ns, Model: model, Variant: "llama-h100"}

	run := func() (*controller, context.CancelFunc, chan error) {
		o.metricsRegistry = prometheus.NewRegistry()
		return startManager(t, o)
	}
	c1, stop1, done1 := run()
	var rec tuner.Record
	waitFor(t, 60*time.Second, "the first manager to learn, persist and write the status", func() bool {
		st := newConfigMapStore(env.Client, types.NamespacedName{Namespace: sys, Name: o.TunerState})
		if _, err := st.load(ctx); err != nil {
			return false
		}
		r, ok, _ := st.Get(key)
		var va wvav1.VariantAutoscaling
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "llama-h100"}, &va); err != nil {
			return false
		}
		ready := findCondition(va.Status.Conditions, wvav1.ConditionOptimizationReady)
		rec = r
		return ok && r.Params.Alpha > 0 && ready != nil && ready.Status == metav1.ConditionTrue
	})
	_ = c1
	stop1()
	if err := <-done1; err != nil {
		t.Fatalf("first manager: %v", err)
	}
	c2, stop2, done2 := run()
	defer func() {
		stop2()
		if err := <-done2; err != nil {
			t.Errorf("second manager: %v", err)
		}
	}()
	waitFor(t, 60*time.Second, "the second manager to restore the tuner state", func() bool {
		got := c2.Store.list(f.ns, model, "llama-h100")
		return len(got) == 1 && got[0].Record.Updates >= rec.Updates && !got[0].Record.LastUpdate.Before(rec.LastUpdate)
	})
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// startManager builds and starts a manager for o; cancel stops it and done
// reports how it ended.
func startManager(t *testing.T, o Options) (c *controller, cancel context.CancelFunc, done chan error) {
	t.Helper()
	mgr, err := newManager(env.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err = setup(context.Background(), mgr, o, clock.RealClock{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	return c, cancel, done
}

// controllerNamespace creates the controller's namespace for a test.
func controllerNamespace(t *testing.T, name string) {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}
