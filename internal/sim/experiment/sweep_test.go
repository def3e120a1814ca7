package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

func pt(name string, slo, cost float64) SweepPoint {
	return SweepPoint{Autoscaler: name, SLOAttainment: Stat{Mean: slo}, Cost: Stat{Mean: cost}}
}

// TestFrontierByHand: the frontier, the interpolated cost at equal
// attainment and the dominance check on points worked out by hand.
func TestFrontierByHand(t *testing.T) {
	ps := []SweepPoint{
		pt("a", 90, 4), pt("a", 95, 6), pt("a", 99, 10), pt("a", 94, 7), // (94, 7) is beaten by (95, 6)
		pt("b", 96, 5), pt("b", 99.5, 12), pt("b", 92, 5), // (92, 5) ties (96, 5) on cost: beaten
	}
	markFrontiers(ps, fleetBasis)
	wantFrontier := []bool{true, true, true, false, true, true, false}
	for i, p := range ps {
		if p.Frontier != wantFrontier[i] {
			t.Errorf("point %d (%s %.1f%% @ %.1f): frontier %v", i, p.Autoscaler, p.SLOAttainment.Mean, p.Cost.Mean, p.Frontier)
		}
	}
	fa := frontier(ps, "a", fleetBasis)
	for _, c := range []struct {
		target, cost     float64
		reached, atFloor bool
	}{
		{97, 8, true, false},    // halfway from (95, 6) to (99, 10)
		{92.5, 5, true, false},  // halfway from (90, 4) to (95, 6)
		{85, 4, true, true},     // the cheapest already exceeds it
		{99.5, 0, false, false}, // never reached
	} {
		got := costAt(fa, "a", c.target, fleetBasis)
		if got.Reached != c.reached || got.UpperBound != c.atFloor || math.Abs(got.Cost-c.cost) > 1e-12 {
			t.Errorf("a at %.1f%%: %+v, want cost %v reached %v upper bound %v", c.target, got, c.cost, c.reached, c.atFloor)
		}
	}
	// b's (96, 5): a costs 6.8 there; b's (99.5, 12): a never reaches it.
	d, ok := dominance(ps, "a", "b", fleetBasis)
	if !ok || d.Dominates || len(d.Beaten) != 2 {
		t.Errorf("a over b: %+v", d)
	}
	// a's points against b: at 90 % b's cheapest costs 5 > 4; at 95 % 5 ≤ 6;
	// at 99 % b costs 5 + 7·3/3.5 = 11 > 10.
	if d, _ := dominance(ps, "b", "a", fleetBasis); d.Dominates || len(d.Beaten) != 2 || !strings.HasPrefix(d.Beaten[0], "90.00%") || !strings.HasPrefix(d.Beaten[1], "99.00%") {
		t.Errorf("b over a: %+v", d)
	}
	ps = append(ps, pt("c", 99.9, 1))
	markFrontiers(ps, fleetBasis)
	if d, _ := dominance(ps, "c", "a", fleetBasis); !d.Dominates {
		t.Errorf("c (99.9 %% at 1) over a: %+v", d)
	}
}

func TestParseGrid(t *testing.T) {
	key, vs, err := sim.ParseGrid("hpa.kvTarget=0.3, 0.6")
	if err != nil || key != "hpa.kvTarget" || len(vs) != 2 || vs[1] != 0.6 {
		t.Fatalf("got %q %v %v", key, vs, err)
	}
	for _, bad := range []string{"hpa.kvTarget", "nope=1", "hpa.kvTarget=x", "hpa.kvTarget=1.5", "wva.spareQuantile=1", "clairvoyant.margin=-1", "hpa.kvTarget=NaN", "wva.kvCacheThreshold=0.05"} {
		if _, _, err := sim.ParseGrid(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSweepPoints: the grid is the product of the knobs' values with the
// defaults' value added; exactly one point per autoscaler is the default.
func TestSweepPoints(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 60)
	spec := SweepSpec{Autoscalers: []string{"hpa", "clairvoyant", "oracle"},
		Grids: map[string][]float64{"hpa.kvTarget": {0.4, 0.6}, "hpa.queueTarget": {3}, "clairvoyant.margin": {0.5}}}
	ps, scs := sweepPoints(sc, spec)
	// hpa: kvTarget {0.4, 0.5, 0.6} × queueTarget {3}; clairvoyant {0, 0.5}; oracle: one.
	if len(ps) != 6 || len(scs) != 6 {
		t.Fatalf("%d points: %+v", len(ps), ps)
	}
	defaults := map[string]int{}
	for i, p := range ps {
		if p.Default {
			defaults[p.Autoscaler]++
		}
		if p.Autoscaler == "hpa" && scs[i].Autoscalers.HPA.KVTarget != p.Settings["hpa.kvTarget"] {
			t.Errorf("point %s runs kvTarget %v", p.Label, scs[i].Autoscalers.HPA.KVTarget)
		}
	}
	if defaults["hpa"] != 1 || defaults["clairvoyant"] != 1 || defaults["oracle"] != 1 {
		t.Errorf("default points %v", defaults)
	}
	if ps[1].Label != "kvTarget=0.5 queueTarget=3" || !ps[1].Default {
		t.Errorf("hpa's default point %+v", ps[1])
	}
}

// TestSweepParallelDeterministic: the results do not depend on how many
// runs go at once (the table and the frontier plot of this sweep are
// checked in package report, TestSweepReports).
func TestSweepParallelDeterministic(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 240)
	spec := SweepSpec{Autoscalers: []string{"wva", "hpa"}, Seeds: []uint64{1, 2},
		Grids: map[string][]float64{"hpa.kvTarget": {0.3, 0.9}, "hpa.queueTarget": {3}, "wva.spareQuantile": {0.5},
			"wva.ttftAttainment": {0}, "wva.kvCacheThreshold": {0.8}, "wva.attainment": {0.99}}}
	var out [2][]byte
	for i, par := range []int{1, 3} {
		spec.Parallel = par
		r, err := Sweep(context.Background(), sc, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Points) != 5 || len(r.AtAttainment) != 4 || len(r.Dominance) != 1 {
			t.Fatalf("parallel %d: %d points, %d costs, %d dominance checks", par, len(r.Points), len(r.AtAttainment), len(r.Dominance))
		}
		out[i], _ = json.Marshal(r)
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Errorf("parallel 1 and 3 differ:\n%s\n%s", out[0], out[1])
	}
}

// TestWorstModelFrontier: on the worst model's attainment the frontier
// and the cost at equal attainment can differ from the fleet's: a setting
// that is cheap and good for the fleet can starve one model.
func TestWorstModelFrontier(t *testing.T) {
	wp := func(name string, fleet, worst, cost float64) SweepPoint {
		p := pt(name, fleet, cost)
		p.WorstModelAttainment = Stat{Mean: worst}
		return p
	}
	ps := []SweepPoint{wp("a", 98, 80, 4), wp("a", 97, 96, 6), wp("a", 99, 98, 9)}
	res := &SweepResult{Points: ps}
	res.compare(SweepSpec{Autoscalers: []string{"a"}, Targets: []float64{95}}, 2)
	// Fleet: (98, 4) beats (97, 6); worst model: (80, 4), (96, 6) and (98, 9)
	// are all on the frontier.
	if f := [3]bool{res.Points[0].Frontier, res.Points[1].Frontier, res.Points[2].Frontier}; f != [3]bool{true, false, true} {
		t.Errorf("fleet frontier %v", f)
	}
	if f := [3]bool{res.Points[0].WorstModelFrontier, res.Points[1].WorstModelFrontier, res.Points[2].WorstModelFrontier}; f != [3]bool{true, true, true} {
		t.Errorf("worst-model frontier %v", f)
	}
	// 95 %: the fleet's cheapest point already reaches it (4); the worst
	// model needs 4 + 2·15/16 = 5.875.
	if a := res.AtAttainment[0]; !a.Reached || a.Cost != 4 || !a.UpperBound {
		t.Errorf("fleet at 95 %%: %+v", a)
	}
	if a := res.WorstModelAtAttainment[0]; !a.Reached || math.Abs(a.Cost-5.875) > 1e-12 {
		t.Errorf("worst model at 95 %%: %+v", a)
	}
	one := &SweepResult{Points: []SweepPoint{wp("a", 98, 98, 4)}}
	one.compare(SweepSpec{Autoscalers: []string{"a"}}, 1)
	if one.WorstModelAtAttainment != nil {
		t.Error("one model: no worst-model figures expected")
	}
}
