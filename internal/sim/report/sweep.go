package report

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/llm-d-incubation/wva/internal/sim/experiment"
)

// WriteSweepTable prints the frontier points of each autoscaler (and its
// default point), then the cost at the target attainments and the
// dominance checks.
func WriteSweepTable(w io.Writer, r *experiment.SweepResult) error {
	if len(r.Seeds) > 0 {
		shown := "frontier points (*) and the defaults (d)"
		if len(r.Points) <= allPointsUpTo {
			shown = "every setting, the frontier points marked (*) and the defaults (d)"
		}
		fmt.Fprintf(w, "%s: %d settings over %d seeds (%d–%d); %s, mean ± sd\n\n",
			r.Scenario, len(r.Points), len(r.Seeds), r.Seeds[0], r.Seeds[len(r.Seeds)-1], shown)
	}
	if err := writeFrontierPoints(w, r); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ncost at equal SLO attainment (interpolated on each frontier; ≤: the cheapest setting already exceeds it)")
	if err := writeAtAttainment(w, r.AtAttainment); err != nil {
		return err
	}
	writeDominance(w, r.Dominance, "")
	if len(r.WorstModelAtAttainment) > 0 {
		fmt.Fprintln(w, "\ncost at equal SLO attainment of the worst model (each run's lowest model attainment; frontiers drawn on it)")
		if err := writeAtAttainment(w, r.WorstModelAtAttainment); err != nil {
			return err
		}
		writeDominance(w, r.WorstModelDominance, " on the worst model")
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: points missing a seed are left out")
	}
	return nil
}

// allPointsUpTo: a sweep of at most this many settings (a grid a person
// chose, such as three attainment targets) lists every setting; a larger
// one lists its frontier points and defaults (every point is in
// sweep.csv).
const allPointsUpTo = 12

// writeFrontierPoints prints the table of the frontier points and the
// defaults' points, or of every point in a small sweep.
func writeFrontierPoints(w io.Writer, r *experiment.SweepResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AUTOSCALER\tSETTINGS\t\tSLO %\tCOST\tTERMINATED")
	all := len(r.Points) <= allPointsUpTo
	for _, p := range r.Points {
		if !p.Frontier && !p.Default && !all {
			continue
		}
		mark := ""
		if p.Frontier {
			mark += "*"
		}
		if p.Default {
			mark += "d"
		}
		label := p.Label
		if label == "" {
			label = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f ± %.2f\t%.3f ± %.3f\t%.1f (max %.0f)\n", p.Autoscaler, label, mark,
			p.SLOAttainment.Mean, p.SLOAttainment.SD, p.Cost.Mean, p.Cost.SD, p.Terminated.Mean, p.Terminated.Max)
	}
	return tw.Flush()
}

// writeDominance prints the dominance checks.
func writeDominance(w io.Writer, ds []experiment.Dominance, on string) {
	for _, d := range ds {
		if d.Dominates {
			fmt.Fprintf(w, "%s's frontier dominates %s's%s\n", d.A, d.B, on)
			continue
		}
		fmt.Fprintf(w, "%s's frontier does not dominate %s's%s: %d of its points are cheaper, e.g. %s\n", d.A, d.B, on, len(d.Beaten), d.Beaten[0])
	}
}

// writeAtAttainment prints each autoscaler's cost at the target
// attainments.
func writeAtAttainment(w io.Writer, r []experiment.AtAttainment) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	targets := attainmentTargets(r)
	fmt.Fprint(tw, "AUTOSCALER\t")
	for _, t := range targets {
		fmt.Fprintf(tw, "AT %g %%\t", t)
	}
	fmt.Fprintln(tw)
	for _, name := range attainmentNames(r) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, t := range targets {
			fmt.Fprintf(tw, "%s\t", formatAt(findAt(r, name, t)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func formatAt(a experiment.AtAttainment, ok bool) string {
	switch {
	case !ok:
		return ""
	case !a.Reached:
		return "not reached"
	case a.UpperBound:
		return "≤ " + strconv.FormatFloat(a.Cost, 'f', 3, 64)
	}
	return strconv.FormatFloat(a.Cost, 'f', 3, 64)
}

func attainmentTargets(r []experiment.AtAttainment) []float64 {
	var ts []float64
	for _, a := range r {
		if !slices.Contains(ts, a.TargetPct) {
			ts = append(ts, a.TargetPct)
		}
	}
	sort.Float64s(ts)
	return ts
}

func attainmentNames(r []experiment.AtAttainment) []string {
	var ns []string
	for _, a := range r {
		if len(ns) == 0 || ns[len(ns)-1] != a.Autoscaler {
			ns = append(ns, a.Autoscaler)
		}
	}
	return ns
}

func findAt(r []experiment.AtAttainment, name string, t float64) (experiment.AtAttainment, bool) {
	for _, a := range r {
		if a.Autoscaler == name && a.TargetPct == t {
			return a, true
		}
	}
	return experiment.AtAttainment{}, false
}

// WriteSweepCSV writes one row per point.
func WriteSweepCSV(w io.Writer, r *experiment.SweepResult) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"autoscaler", "settings", "default", "frontier", "seeds",
		"slo_attainment_pct_mean", "slo_attainment_pct_sd", "slo_attainment_pct_min", "slo_attainment_pct_max",
		"cost_mean", "cost_sd", "cost_min", "cost_max", "terminated_mean", "terminated_max",
		"worst_model_slo_attainment_pct_mean", "worst_model_slo_attainment_pct_sd", "worst_model_slo_attainment_pct_min", "worst_model_frontier"})
	for _, p := range r.Points {
		s, c, wm := p.SLOAttainment, p.Cost, p.WorstModelAttainment
		_ = cw.Write([]string{p.Autoscaler, p.Label, strconv.FormatBool(p.Default), strconv.FormatBool(p.Frontier),
			strconv.Itoa(len(r.Seeds)), f(s.Mean), f(s.SD), f(s.Min), f(s.Max), f(c.Mean), f(c.SD), f(c.Min), f(c.Max),
			f(p.Terminated.Mean), f(p.Terminated.Max), f(wm.Mean), f(wm.SD), f(wm.Min), strconv.FormatBool(p.WorstModelFrontier)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteAttainmentCSV writes the cost of each autoscaler at each target
// attainment (empty when not reached).
func WriteAttainmentCSV(w io.Writer, r *experiment.SweepResult) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"autoscaler", "target_slo_attainment_pct", "reached", "cost", "upper_bound",
		"worst_model_reached", "worst_model_cost", "worst_model_upper_bound"})
	cost := func(a experiment.AtAttainment) string {
		if a.Reached {
			return f(a.Cost)
		}
		return ""
	}
	for _, a := range r.AtAttainment {
		row := []string{a.Autoscaler, f(a.TargetPct), strconv.FormatBool(a.Reached), cost(a), strconv.FormatBool(a.UpperBound), "", "", ""}
		if wm, ok := findAt(r.WorstModelAtAttainment, a.Autoscaler, a.TargetPct); ok {
			row[5], row[6], row[7] = strconv.FormatBool(wm.Reached), cost(wm), strconv.FormatBool(wm.UpperBound)
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// WriteSweepPlot draws every point (cost against SLO attainment), each
// autoscaler's frontier as a line, its default point ringed, and the
// targets as dashed lines, as dir/frontier.png and .svg.
func WriteSweepPlot(dir string, r *experiment.SweepResult) (files []string, err error) {
	defer recoverPlot(&err)
	p := plot.New()
	p.Title.Text = r.Scenario + ": cost against SLO attainment (frontier lines; defaults ringed; bars ± 1 sd over seeds)"
	p.X.Label.Text = "SLO attainment (%), mean over seeds"
	p.Y.Label.Text = "cost, mean over seeds"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	var names []string
	for _, pt := range r.Points {
		if len(names) == 0 || names[len(names)-1] != pt.Autoscaler {
			names = append(names, pt.Autoscaler)
		}
	}
	lo, hi := 100.0, 0.0
	for i, name := range names {
		var err error
		if lo, hi, err = plotFrontier(p, r, name, colors[i%len(colors)], lo, hi); err != nil {
			return nil, err
		}
	}
	for _, t := range attainmentTargets(r.AtAttainment) {
		if t < lo || t > hi {
			continue
		}
		_, ymax := p.Y.Min, p.Y.Max
		if err := line(p, "", plotter.XYs{{X: t, Y: 0}, {X: t, Y: ymax}}, color.Gray{Y: 0x90}, true); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	zoom(p, r)
	return saveFigure(dir, "frontier", []*plot.Plot{p}, 9*vg.Inch, 6*vg.Inch)
}

// zoom narrows the attainment axis to where the comparison is: from just
// below the lowest frontier point, but no lower than 5 points under the
// lowest target attainment, to just above the highest point. Settings far
// below would squeeze the part that matters into a corner; they are
// clipped, and the title says how many.
func zoom(p *plot.Plot, r *experiment.SweepResult) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range r.Points {
		hi = max(hi, pt.SLOAttainment.Mean+pt.SLOAttainment.SD)
		if pt.Frontier {
			lo = min(lo, pt.SLOAttainment.Mean-pt.SLOAttainment.SD)
		}
	}
	if ts := attainmentTargets(r.AtAttainment); len(ts) > 0 {
		lo = max(lo, ts[0]-5)
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(hi > lo) {
		return
	}
	pad := (hi - lo) * 0.05
	p.X.Min, p.X.Max = lo-pad, min(hi+pad, 100.5)
	clipped := 0
	for _, pt := range r.Points {
		if pt.SLOAttainment.Mean < p.X.Min {
			clipped++
		}
	}
	if clipped > 0 {
		p.Title.Text += fmt.Sprintf("\n%d setting(s) below %.1f %% not shown", clipped, p.X.Min)
	}
}

// spread is the points' mean ± one standard deviation over the seeds, on
// both axes, for error bars.
type spread struct {
	plotter.XYs
	x, y plotter.Errors
}

func (s spread) XError(i int) (float64, float64) { return s.x[i].Low, s.x[i].High }
func (s spread) YError(i int) (float64, float64) { return s.y[i].Low, s.y[i].High }

// errorBars adds the seeds' spread of each of an autoscaler's points.
func errorBars(p *plot.Plot, points []experiment.SweepPoint, name string, c color.Color) error {
	var s spread
	for _, pt := range points {
		if pt.Autoscaler != name {
			continue
		}
		s.XYs = append(s.XYs, plotter.XY{X: pt.SLOAttainment.Mean, Y: pt.Cost.Mean})
		s.x = append(s.x, struct{ Low, High float64 }{pt.SLOAttainment.SD, pt.SLOAttainment.SD})
		s.y = append(s.y, struct{ Low, High float64 }{pt.Cost.SD, pt.Cost.SD})
	}
	if len(s.XYs) == 0 {
		return nil
	}
	xb, err := plotter.NewXErrorBars(s)
	if err != nil {
		return err
	}
	yb, err := plotter.NewYErrorBars(s)
	if err != nil {
		return err
	}
	xb.Color, yb.Color = c, c
	xb.CapWidth, yb.CapWidth = vg.Points(3), vg.Points(3)
	p.Add(xb, yb)
	return nil
}

// plotFrontier adds an autoscaler's points (its defaults' ringed) and its
// frontier line; it returns [lo, hi] widened to its points' attainments.
func plotFrontier(p *plot.Plot, r *experiment.SweepResult, name string, c color.Color, lo, hi float64) (float64, float64, error) {
	var all, def plotter.XYs
	for _, pt := range r.Points {
		if pt.Autoscaler != name {
			continue
		}
		xy := plotter.XY{X: pt.SLOAttainment.Mean, Y: pt.Cost.Mean}
		all = append(all, xy)
		if pt.Default {
			def = append(def, xy)
		}
		lo, hi = min(lo, xy.X), max(hi, xy.X)
	}
	if err := scatter(p, all, c, draw.CircleGlyph{}, 2.5); err != nil {
		return lo, hi, err
	}
	if err := errorBars(p, r.Points, name, c); err != nil {
		return lo, hi, err
	}
	if err := scatter(p, def, c, draw.RingGlyph{}, 6); err != nil {
		return lo, hi, err
	}
	var fr plotter.XYs
	for _, pt := range r.Frontier(name) {
		fr = append(fr, plotter.XY{X: pt.SLOAttainment.Mean, Y: pt.Cost.Mean})
	}
	return lo, hi, line(p, name, fr, c, false)
}

func scatter(p *plot.Plot, xys plotter.XYs, c color.Color, g draw.GlyphDrawer, r float64) error {
	if len(xys) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(r), Shape: g}
	p.Add(s)
	return nil
}
