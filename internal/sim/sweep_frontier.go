package sim

import (
	"fmt"
	"sort"
)

// compare marks the frontiers, reads each autoscaler's cost at the target
// attainments and checks the first autoscaler's frontier against each
// rival's (not the bounds').
func (res *SweepResult) compare(spec SweepSpec) {
	markFrontiers(res.Points)
	targets := spec.Targets
	if len(targets) == 0 {
		targets = []float64{95, 99}
	}
	for _, name := range spec.Autoscalers {
		fr := frontier(res.Points, name)
		for _, t := range targets {
			if len(fr) > 0 {
				res.AtAttainment = append(res.AtAttainment, costAt(fr, name, t))
			}
		}
	}
	if len(spec.Autoscalers) == 0 {
		return
	}
	a := spec.Autoscalers[0]
	for _, b := range spec.Autoscalers[1:] {
		if bl := baselineOf(b); bl != nil && bl.Bound {
			continue
		}
		if d, ok := dominance(res.Points, a, b); ok {
			res.Dominance = append(res.Dominance, d)
		}
	}
}

// markFrontiers sets Frontier on every point that no other point of its
// autoscaler beats: none has a mean SLO attainment at least as high and a
// mean cost at most as high, one of them strictly.
func markFrontiers(ps []SweepPoint) {
	for i := range ps {
		a := &ps[i]
		a.Frontier = true
		for j := range ps {
			b := &ps[j]
			if i == j || a.Autoscaler != b.Autoscaler {
				continue
			}
			if b.SLOAttainment.Mean >= a.SLOAttainment.Mean && b.Cost.Mean <= a.Cost.Mean &&
				(b.SLOAttainment.Mean > a.SLOAttainment.Mean || b.Cost.Mean < a.Cost.Mean || j < i) {
				a.Frontier = false
				break
			}
		}
	}
}

// frontier returns an autoscaler's frontier points by increasing cost
// (and so increasing SLO attainment).
func frontier(ps []SweepPoint, name string) []SweepPoint {
	var out []SweepPoint
	for _, p := range ps {
		if p.Autoscaler == name && p.Frontier {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cost.Mean < out[j].Cost.Mean })
	return out
}

// interpolate reads the cost at SLO attainment t off a frontier sorted by
// cost: ok is false when no point reaches t; lowest is true when the
// cheapest point already does.
func interpolate(fr []SweepPoint, t float64) (cost float64, ok, lowest bool) {
	for i, p := range fr {
		if p.SLOAttainment.Mean < t {
			continue
		}
		if i == 0 {
			return p.Cost.Mean, true, true
		}
		q := fr[i-1]
		w := (t - q.SLOAttainment.Mean) / (p.SLOAttainment.Mean - q.SLOAttainment.Mean)
		return q.Cost.Mean + w*(p.Cost.Mean-q.Cost.Mean), true, false
	}
	return 0, false, false
}

func costAt(fr []SweepPoint, name string, t float64) AtAttainment {
	c, ok, lowest := interpolate(fr, t)
	return AtAttainment{Autoscaler: name, TargetPct: t, Reached: ok, Cost: c, UpperBound: lowest}
}

// dominance checks a's frontier against each of b's frontier points; ok is
// false when either has no points.
func dominance(ps []SweepPoint, a, b string) (Dominance, bool) {
	fa, fb := frontier(ps, a), frontier(ps, b)
	if len(fa) == 0 || len(fb) == 0 {
		return Dominance{}, false
	}
	d := Dominance{A: a, B: b, Dominates: true}
	for _, p := range fb {
		c, ok, _ := interpolate(fa, p.SLOAttainment.Mean)
		if !ok || c > p.Cost.Mean*(1+1e-9) {
			d.Dominates = false
			d.Beaten = append(d.Beaten, fmt.Sprintf("%.2f%% @ %.3f (%s)", p.SLOAttainment.Mean, p.Cost.Mean, p.Label))
		}
	}
	return d, true
}
