package sim_test

import (
	"slices"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// TestBoundsFirst: the first job of each bound autoscaler starts first,
// the rest in order, every job once.
func TestBoundsFirst(t *testing.T) {
	var jobs []sim.Job
	for _, name := range []string{"wva", "hpa", "clairvoyant", "clairvoyant", "oracle", "static:2", "oracle"} {
		jobs = append(jobs, sim.Job{Autoscaler: name})
	}
	if got, want := sim.BoundsFirst(jobs), []int{2, 4, 0, 1, 3, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got := sim.BoundsFirst(jobs[:2]); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("no bound: order %v, want as listed", got)
	}
}
