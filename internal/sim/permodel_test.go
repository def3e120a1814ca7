package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestPerModelAddsUp: each model's figures add up to the fleet's, and a
// model's attainment is its own (shared-budget's two models, where the
// batch model's priority 2 leaves it behind under the shared inventory).
func TestPerModelAddsUp(t *testing.T) {
	sc := simtest.Builtin(t, "shared-budget", 1500)
	rs, err := sim.Compare(context.Background(), sc, []string{"wva", "hpa"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.PerModel) != 2 || r.PerModel[0].Model != "chat" || r.PerModel[1].Model != "batch" {
			t.Fatalf("%s: per model %+v", r.Autoscaler, r.PerModel)
		}
		checkModelSums(t, r)
	}
}

// checkModelSums checks that a run's per-model figures add up to its
// fleet's, and each model's attainment is its own ratio.
func checkModelSums(t *testing.T, r *sim.Result) {
	t.Helper()
	var sum sim.ModelStats
	for _, m := range r.PerModel {
		sum.Arrived += m.Arrived
		sum.Completed += m.Completed
		sum.Failed += m.Failed
		sum.WithinSLO += m.WithinSLO
		sum.Cost += m.Cost
		sum.GPUHours += m.GPUHours
		sum.FailedBy.Terminated += m.FailedBy.Terminated
		sum.FailedBy.Timeout += m.FailedBy.Timeout
		if want := float64(m.WithinSLO) / float64(m.Arrived); m.Arrived == 0 || m.SLOAttainment != want || m.Cost <= 0 {
			t.Errorf("%s/%s: attainment %v (want %v), cost %v", r.Autoscaler, m.Model, m.SLOAttainment, want, m.Cost)
		}
	}
	if sum.Arrived != r.Arrived || sum.Completed != r.Completed || sum.Failed != r.Failed || sum.WithinSLO != r.WithinSLO ||
		sum.FailedBy.Terminated != r.FailedBy.Terminated || sum.FailedBy.Timeout != r.FailedBy.Timeout {
		t.Errorf("%s: per-model sums %+v, fleet %d/%d/%d/%d", r.Autoscaler, sum, r.Arrived, r.Completed, r.Failed, r.WithinSLO)
	}
	if math.Abs(sum.Cost-r.Cost) > 1e-9*r.Cost || math.Abs(sum.GPUHours-r.GPUHours) > 1e-9*r.GPUHours {
		t.Errorf("%s: per-model cost %v / %v GPU-h, fleet %v / %v", r.Autoscaler, sum.Cost, sum.GPUHours, r.Cost, r.GPUHours)
	}
}
