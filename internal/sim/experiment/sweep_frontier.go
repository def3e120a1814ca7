package experiment

import (
	"fmt"
	"sort"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// A basis is the SLO attainment a frontier is drawn on: the fleet's, or
// the worst model's (a fleet's attainment can hide a model far below it).
type basis struct {
	attainment func(*SweepPoint) float64
	frontier   func(*SweepPoint) *bool
}

var (
	fleetBasis = basis{
		attainment: func(p *SweepPoint) float64 { return p.SLOAttainment.Mean },
		frontier:   func(p *SweepPoint) *bool { return &p.Frontier },
	}
	worstModelBasis = basis{
		attainment: func(p *SweepPoint) float64 { return p.WorstModelAttainment.Mean },
		frontier:   func(p *SweepPoint) *bool { return &p.WorstModelFrontier },
	}
)

// compare marks the frontiers, reads each autoscaler's cost at the target
// attainments and checks the first autoscaler's frontier against each
// rival's (not the bounds'), on the fleet's attainment and, for a fleet
// of several models, on the worst model's.
func (res *SweepResult) compare(spec SweepSpec, models int) {
	res.AtAttainment, res.Dominance = compareOn(res.Points, spec, fleetBasis)
	if models > 1 {
		res.WorstModelAtAttainment, res.WorstModelDominance = compareOn(res.Points, spec, worstModelBasis)
	}
}

// compareOn is compare on one basis.
func compareOn(ps []SweepPoint, spec SweepSpec, b basis) ([]AtAttainment, []Dominance) {
	markFrontiers(ps, b)
	targets := spec.Targets
	if len(targets) == 0 {
		targets = []float64{95, 99}
	}
	var at []AtAttainment
	for _, name := range spec.Autoscalers {
		fr := frontier(ps, name, b)
		for _, t := range targets {
			if len(fr) > 0 {
				at = append(at, costAt(fr, name, t, b))
			}
		}
	}
	if len(spec.Autoscalers) == 0 {
		return at, nil
	}
	var dom []Dominance
	a := spec.Autoscalers[0]
	for _, name := range spec.Autoscalers[1:] {
		if bl := sim.BaselineOf(name); bl != nil && bl.Bound {
			continue
		}
		if d, ok := dominance(ps, a, name, b); ok {
			dom = append(dom, d)
		}
	}
	return at, dom
}

// markFrontiers marks on basis b every point that no other point of its
// autoscaler beats: none has a mean SLO attainment at least as high and a
// mean cost at most as high, one of them strictly.
func markFrontiers(ps []SweepPoint, b basis) {
	for i := range ps {
		a := &ps[i]
		on := true
		for j := range ps {
			o := &ps[j]
			if i == j || a.Autoscaler != o.Autoscaler {
				continue
			}
			sa, so := b.attainment(a), b.attainment(o)
			if so >= sa && o.Cost.Mean <= a.Cost.Mean && (so > sa || o.Cost.Mean < a.Cost.Mean || j < i) {
				on = false
				break
			}
		}
		*b.frontier(a) = on
	}
}

// frontier returns an autoscaler's frontier points on basis b by
// increasing cost (and so increasing SLO attainment).
func frontier(ps []SweepPoint, name string, b basis) []SweepPoint {
	var out []SweepPoint
	for i := range ps {
		if ps[i].Autoscaler == name && *b.frontier(&ps[i]) {
			out = append(out, ps[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cost.Mean < out[j].Cost.Mean })
	return out
}

// Frontier returns an autoscaler's frontier points on the fleet's SLO
// attainment (the points marked Frontier) by increasing cost, and so
// increasing attainment: the line a frontier plot draws.
func (res *SweepResult) Frontier(name string) []SweepPoint {
	return frontier(res.Points, name, fleetBasis)
}

// interpolate reads the cost at SLO attainment t off a frontier sorted by
// cost: ok is false when no point reaches t; lowest is true when the
// cheapest point already does.
func interpolate(fr []SweepPoint, t float64, b basis) (cost float64, ok, lowest bool) {
	for i := range fr {
		p := &fr[i]
		if b.attainment(p) < t {
			continue
		}
		if i == 0 {
			return p.Cost.Mean, true, true
		}
		q := &fr[i-1]
		w := (t - b.attainment(q)) / (b.attainment(p) - b.attainment(q))
		return q.Cost.Mean + w*(p.Cost.Mean-q.Cost.Mean), true, false
	}
	return 0, false, false
}

func costAt(fr []SweepPoint, name string, t float64, b basis) AtAttainment {
	c, ok, lowest := interpolate(fr, t, b)
	return AtAttainment{Autoscaler: name, TargetPct: t, Reached: ok, Cost: c, UpperBound: lowest}
}

// dominance checks a's frontier against each of b's frontier points on a
// basis; ok is false when either has no points.
func dominance(ps []SweepPoint, a, name string, b basis) (Dominance, bool) {
	fa, fb := frontier(ps, a, b), frontier(ps, name, b)
	if len(fa) == 0 || len(fb) == 0 {
		return Dominance{}, false
	}
	d := Dominance{A: a, B: name, Dominates: true}
	for i := range fb {
		p := &fb[i]
		c, ok, _ := interpolate(fa, b.attainment(p), b)
		if !ok || c > p.Cost.Mean*(1+1e-9) {
			d.Dominates = false
			d.Beaten = append(d.Beaten, fmt.Sprintf("%.2f%% @ %.3f (%s)", b.attainment(p), p.Cost.Mean, p.Label))
		}
	}
	return d, true
}
