package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
)

// stuckSource answers nothing and ignores its context, the worst a metrics
// source can do.
type stuckSource struct{ release chan struct{} }

func (s stuckSource) Collect(context.Context, time.Time, collector.Target) (collector.Report, error) {
	<-s.release
	return collector.Report{}, nil
}

// TestCollectionDeadline: with a 2 s interval, a source that never answers
// holds the cycle until the 1 s collection deadline passes on the
// planner's clock, not forever; the variant is held with a status that
// says why and the safety net publishes its current count.
func TestCollectionDeadline(t *testing.T) {
	f := newFixture(t)
	stuck := stuckSource{release: make(chan struct{})}
	defer close(stuck.release)
	f.planner.Sources = func(config.Main) (collector.Source, error) { return stuck, nil }
	if err := f.planner.Config.apply(defaultConfigNames().Main, map[string]string{"GLOBAL_OPT_INTERVAL": "2s"}, true); err != nil {
		t.Fatal(err)
	}
	f.deployment("llama-h100", 3)
	f.va("llama-h100", model, nil)
	done := make(chan error, 1)
	go func() { done <- f.planner.cycle(context.Background()) }()
	// The cycle waits on the deadline's timer; before the clock reaches
	// it the cycle has not ended.
	for !f.clock.HasWaiters() {
		time.Sleep(10 * time.Millisecond)
	}
	f.clock.Step(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the cycle ended before the deadline (%v)", err)
	default:
	}
	f.clock.Step(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	va := f.reconcile("llama-h100")
	c := wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionFalse, wvav1.ReasonPrometheusError)
	if !strings.Contains(c.Message, "collection deadline") {
		t.Errorf("message: %q", c.Message)
	}
	if g := f.gauge("inferno_desired_replicas", "llama-h100"); g != 3 {
		t.Errorf("safety-net desired %v, want the current 3", g)
	}
}

func TestCollectDeadline(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: 30 * time.Second, time.Minute: 30 * time.Second, 2 * time.Second: time.Second} {
		if got := collectDeadline(in); got != want {
			t.Errorf("CollectDeadline(%v) = %v, want %v", in, got, want)
		}
	}
}
