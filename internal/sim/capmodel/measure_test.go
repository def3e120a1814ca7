package capmodel_test

import (
	"context"
	"math"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/capmodel"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestMeasuredCapacityLinear: one replica of a linear-model server that
// runs one request at a time (max batch 1) under constant arrivals of
// 100-token prompts and 10-token outputs serves each in exactly 11 ms of
// prefill (β0 + 100 β1) and 9 decodes of 10.5 ms: 105.5 ms. Below 1/0.1055
// = 9.48 requests/s nothing waits; above it the queue grows without end,
// so the capacity at 99 % within a 1-s TTFT target is 9.48 requests/s, to
// within the bisection's resolution (the queueing model, which the bounds
// no longer use, gave 0 for a linear server).
func TestMeasuredCapacityLinear(t *testing.T) {
	v := simtest.LinearVariant()
	v.MaxBatchSize = 1
	sc := scenario.Scenario{Name: "cap", DurationSeconds: 60, Models: []scenario.Model{{Name: "m", SLO: scenario.SLO{TTFTMs: 1000, ITLMs: 1e6},
		Workload: scenario.Workload{Arrival: "constant", Rate: scenario.Rate{Pattern: "constant", RPS: 1},
			Input: scenario.Tokens{Mean: 100}, Output: scenario.Tokens{Mean: 10}}, Variants: []scenario.Variant{v}}}}
	d := sc.WithDefaults()
	got := capmodel.Measured(context.Background(), &d, 0, 0, 1, 0.99)
	if want := 1 / 0.1055; math.Abs(got-want)/want > 0.02 {
		t.Errorf("capacity %.3f requests/s, want %.3f ± 2 %%", got, want)
	}
	// Two replicas behind the router carry twice as much.
	if got2 := capmodel.Measured(context.Background(), &d, 0, 0, 2, 0.99); math.Abs(got2-2*got)/(2*got) > 0.03 {
		t.Errorf("two replicas: %.3f requests/s, want about %.3f", got2, 2*got)
	}
}
