package sim_test

import (
	"context"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestDrainBeforeScaleDown: on falling demand with long outputs and vLLM's
// abort shutdown, WVA's scale-downs terminate no request when it drains
// first, and many without the drain; HPA, which cannot drain, terminates
// requests on the same run.
func TestDrainBeforeScaleDown(t *testing.T) {
	sc := simtest.Builtin(t, "long-outputs", 960) // the first drop, 20 → 8 requests/s at 600 s
	run := func(name string, timeout *float64) *sim.Result {
		t.Helper()
		c := sc
		c.Autoscalers.WVA.DrainTimeoutSeconds = timeout
		rs, err := sim.Compare(context.Background(), c, []string{name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	off := 0.0
	drained := run("wva", nil)
	if drained.FailedBy.Terminated != 0 {
		t.Errorf("with the drain, %d request(s) terminated", drained.FailedBy.Terminated)
	}
	if drained.ScalingActions < 2 {
		t.Errorf("wva scaled %d time(s): the run shows no scale-down", drained.ScalingActions)
	}
	for _, c := range []struct {
		name    string
		r       *sim.Result
		atLeast int64
	}{{"no drain", run("wva", &off), 10}, {"hpa", run("hpa", nil), 10}} {
		if c.r.FailedBy.Terminated < c.atLeast {
			t.Errorf("%s: %d request(s) terminated, want at least %d (the run would not show what the drain saves)",
				c.name, c.r.FailedBy.Terminated, c.atLeast)
		}
	}
}
