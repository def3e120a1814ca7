// Package simtest holds what the simulator's packages share in their tests:
// shipped scenarios cut short, a scenario heavy enough that a cancellation
// lands mid-run, and a context cancelled by its own use.
package simtest

import (
	"context"
	"math"
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

// LinearVariant is a small replica with the linear (BLIS-style) step-time
// model (β0 = 10, β1 = 0.01 per prefill token, β2 = 0.5 per decode token).
func LinearVariant() scenario.Variant {
	return scenario.Variant{Name: "v", Accelerator: "H100", Cost: 1, LatencyModel: "linear",
		Linear:       scenario.LinearStep{Beta0: 10, Beta1: 0.01, Beta2: 0.5},
		MaxBatchSize: 64, KVBlocks: 1000, BlockSize: 16, MinReplicas: 1, MaxReplicas: 4, InitialReplicas: 1}
}

// Row is a trace row of a critical request without a shared prefix.
func Row(at float64, in, out int) scenario.TraceRow {
	return scenario.TraceRow{Time: at, Input: in, Output: out, Class: "critical", Prefix: -1}
}

// Near fails t unless got is want within a relative 1e-6.
func Near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.6f, want %.6f", what, got, want)
	}
}

// ValidScenario is a small valid scenario file that tests edit.
const ValidScenario = `
name: ok
durationSeconds: 600
models:
  - name: m
    slo: {ttftMs: 1000, itlMs: 50}
    workload: {rate: {pattern: constant, rps: 2}, input: {mean: 512}, output: {mean: 64}}
    variants: [{name: v, accelerator: H100, cost: 1, params: {alpha: 5, beta: 0.01, gamma: 0.00001}}]
`
