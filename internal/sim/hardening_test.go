package sim

import (
	"context"
	"errors"
	"testing"
	"time"
)

// heavy is a scenario whose every simulated minute takes seconds of wall
// time: 100 000 requests/s on one replica, the rest waiting at the gateway.
func heavy(t testing.TB) Scenario {
	t.Helper()
	sc, err := ParseScenario([]byte(`
name: heavy
durationSeconds: 120
models:
  - name: m
    slo: {ttftMs: 1000, itlMs: 50}
    workload: {rate: {pattern: constant, rps: 100000}, input: {mean: 64}, output: {mean: 16}}
    variants: [{name: v, accelerator: H100, params: {alpha: 5, beta: 0.01, gamma: 0.00001}, initialReplicas: 1, minReplicas: 1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// stopsWithin cancels the context after 300 ms and fails unless fn
// returns within a second of the cancellation.
func stopsWithin(t *testing.T, fn func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	at := time.Now()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5 s after the cancellation")
	}
	if d := time.Since(at); d > time.Second {
		t.Errorf("returned %v after the cancellation, want under 1 s", d)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("context error %v", ctx.Err())
	}
}

// TestCancelStopsRun: a cancelled context stops a run, a comparison over
// seeds and a sweep within a second, even when a simulated minute takes
// far longer than that; the run says it was interrupted.
func TestCancelStopsRun(t *testing.T) {
	sc := heavy(t)
	t.Run("run", func(t *testing.T) {
		var res *Result
		stopsWithin(t, func(ctx context.Context) { res = New(sc, &Static{n: 1}).Run(ctx, nil) })
		if !res.Interrupted || res.Arrived == 0 {
			t.Errorf("interrupted %v after %d requests", res.Interrupted, res.Arrived)
		}
	})
	t.Run("compare", func(t *testing.T) {
		stopsWithin(t, func(ctx context.Context) {
			if _, err := Compare(ctx, sc, []string{"hpa", "static:1"}, nil); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("seeds", func(t *testing.T) {
		stopsWithin(t, func(ctx context.Context) {
			seeds, _, err := CompareSeeds(ctx, sc, []string{"static:1"}, []uint64{1, 2, 3}, 2, nil)
			if err != nil || len(seeds) != 0 {
				t.Errorf("seeds %v, error %v", seeds, err)
			}
		})
	})
	t.Run("sweep", func(t *testing.T) {
		stopsWithin(t, func(ctx context.Context) {
			res, err := Sweep(ctx, sc, SweepSpec{Autoscalers: []string{"clairvoyant"}, Seeds: []uint64{1, 2}, Parallel: 2}, nil)
			if err != nil || !res.Interrupted || len(res.Points) != 0 {
				t.Errorf("sweep %+v, error %v", res, err)
			}
		})
	})
}
