package experiment

import (
	"math"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
)

func TestSummarize(t *testing.T) {
	mk := func(name string, slo, cost float64) *sim.Result {
		return &sim.Result{Autoscaler: name, SLOAttainment: slo, Cost: cost}
	}
	runs := [][]*sim.Result{
		{mk("wva", 0.99, 10), mk("hpa", 0.98, 12), mk("oracle", 1, 5)},
		{mk("wva", 0.97, 14), mk("hpa", 0.97, 12), mk("oracle", 1, 5)},
		{mk("wva", 0.95, 12), mk("hpa", 0.99, 12), mk("oracle", 1, 5)},
	}
	ss := Summarize([]uint64{1, 2, 3}, runs)
	w, h, o := ss[0], ss[1], ss[2]
	if math.Abs(w.SLOAttainment.Mean-97) > 1e-9 || w.SLOAttainment.Min != 95 || w.SLOAttainment.Max != 99 {
		t.Errorf("wva SLO %+v, want mean 97 in 95–99", w.SLOAttainment)
	}
	if math.Abs(w.Cost.SD-2) > 1e-9 || h.Cost.SD != 0 {
		t.Errorf("cost sd: wva %v (want 2), hpa %v (want 0)", w.Cost.SD, h.Cost.SD)
	}
	// Seed 1: wva best; seed 2: a tie; seed 3: hpa. The oracle is not
	// ranked.
	if w.Wins != 2 || h.Wins != 2 || o.Wins != 0 {
		t.Errorf("wins: wva %d, hpa %d, oracle %d; want 2, 2, 0", w.Wins, h.Wins, o.Wins)
	}
}
