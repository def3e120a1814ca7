// Package simtest holds what the simulator's packages share in their tests:
// shipped scenarios cut short, a scenario heavy enough that a cancellation
// lands mid-run, and a context cancelled by its own use.
package simtest

import (
	"context"
	"sync"
	"testing"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// Builtin is a shipped scenario, cut to seconds when seconds > 0.
func Builtin(t testing.TB, name string, seconds float64) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Builtin(scenarios.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	if seconds > 0 {
		sc.DurationSeconds = seconds
	}
	return sc
}

// Heavy is a scenario whose simulated minute takes long: one replica under
// far more load than it can serve.
func Heavy(t testing.TB) scenario.Scenario {
	t.Helper()
	sc, err := scenario.ParseScenario([]byte(`
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

// countdown is a context cancelled by its own use, not by the clock: its
// Err reports nil for the first calls and Canceled from the call that
// exhausts them on, when Done closes too and onCancel runs. A run that
// stops on it stops at a point the test knows, however busy the machine.
type countdown struct {
	context.Context
	mu       sync.Mutex
	left     int
	done     chan struct{}
	onCancel func()
}

// Countdown is a context whose calls-th Err cancels it (calling onCancel,
// when not nil, at that moment).
func Countdown(calls int, onCancel func()) context.Context {
	return &countdown{Context: context.Background(), left: calls, done: make(chan struct{}), onCancel: onCancel}
}

func (c *countdown) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left > 0 {
		c.left--
		if c.left == 0 {
			close(c.done)
			if c.onCancel != nil {
				c.onCancel()
			}
		}
	}
	if c.left == 0 {
		return context.Canceled
	}
	return nil
}

func (c *countdown) Done() <-chan struct{} { return c.done }
