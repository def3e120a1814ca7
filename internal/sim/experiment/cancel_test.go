package experiment

import (
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestCancelStopsExperiments: a comparison over seeds and a sweep stop
// when their context is cancelled and keep no partial point.
func TestCancelStopsExperiments(t *testing.T) {
	sc := simtest.Heavy(t)
	t.Run("seeds", func(t *testing.T) {
		seeds, _, err := CompareSeeds(simtest.Countdown(3, nil), sc, []string{"static:1"}, []uint64{1, 2, 3}, 2, nil)
		if err != nil || len(seeds) != 0 {
			t.Errorf("seeds %v, error %v", seeds, err)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		res, err := Sweep(simtest.Countdown(3, nil), sc, SweepSpec{Autoscalers: []string{"clairvoyant"}, Seeds: []uint64{1, 2}, Parallel: 2}, nil)
		if err != nil || !res.Interrupted || len(res.Points) != 0 {
			t.Errorf("sweep %+v, error %v", res, err)
		}
	})
}
