package study

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// WriteTable writes one Markdown row per run.
func WriteTable(w io.Writer, rs []Result) error {
	var b strings.Builder
	b.WriteString("| truth | noise | strategy | start | cycles to 5 % | after 30 % jump | α err | β err | γ err | accepted | mean NIS |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.0f %% | %s | %s | %s | %s | %s | %s | %s | %d/%d | %.2f |\n",
			r.Truth, 100*r.Noise, r.Strategy, r.Start, cycles(r.ConvergedAt), cycles(r.ReconvergedAt),
			pct(r.ParamError[0]), pct(r.ParamError[1]), pct(r.ParamError[2]), r.Accepted, r.Steps, r.MeanNIS)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSummary writes, per strategy and noise level, the worst and median
// cycles to converge over all truths and starts, and how many runs never
// converged or never moved.
func WriteSummary(w io.Writer, rs []Result) error {
	type key struct {
		s     tuner.Strategy
		noise float64
	}
	groups := map[key][]Result{}
	var keys []key
	for _, r := range rs {
		k := key{r.Strategy, r.Noise}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var b strings.Builder
	b.WriteString("| strategy | noise | runs | converged | worst cycles | median cycles | re-converged after jump | worst re-convergence | never moved | mean NIS (gate-accepted) | accepted |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		g := groups[k]
		var conv, reconv []int
		never, acc, steps := 0, 0, 0
		nis, gated := 0.0, 0
		for _, r := range g {
			if r.ConvergedAt > 0 {
				conv = append(conv, r.ConvergedAt)
			}
			if r.ReconvergedAt > 0 {
				reconv = append(reconv, r.ReconvergedAt)
			}
			if !r.Moved {
				never++
			}
			acc += r.Accepted
			steps += r.Steps
			nis += r.MeanNIS * float64(r.Gated)
			gated += r.Gated
		}
		meanNIS := "-"
		if gated > 0 {
			meanNIS = fmt.Sprintf("%.2f", nis/float64(gated))
		}
		fmt.Fprintf(&b, "| %s | %.0f %% | %d | %d | %s | %s | %d | %s | %d | %s | %.0f %% |\n",
			k.s, 100*k.noise, len(g), len(conv), worst(conv), median(conv), len(reconv), worst(reconv), never,
			meanNIS, 100*float64(acc)/float64(steps))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cycles(n int) string {
	if n < 0 {
		return "never"
	}
	return fmt.Sprint(n)
}

func pct(v float64) string { return fmt.Sprintf("%+.1f %%", 100*v) }

func worst(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return fmt.Sprint(m)
}

func median(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	return fmt.Sprint(s[len(s)/2])
}

// palette colours the starts.
var palette = []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xff, 0x7f, 0x0e, 0xff}}

// PlotTrajectories writes one PNG per truth at the given noise level: the
// worst held-out prediction error per cycle, for every start, the robust
// tuner in solid lines and the reference tuner's configuration dashed. It returns the
// file names written.
func PlotTrajectories(rs []Result, noise float64, dir string) ([]string, error) {
	byTruth := map[string][]Result{}
	var names []string
	for _, r := range rs {
		if r.Noise != noise {
			continue
		}
		if _, ok := byTruth[r.Truth]; !ok {
			names = append(names, r.Truth)
		}
		byTruth[r.Truth] = append(byTruth[r.Truth], r)
	}
	var files []string
	for _, name := range names {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, %.0f %% noise: worst held-out TTFT/ITL error (solid: WVA tuner, dashed: reference tuner)", name, 100*noise)
		p.X.Label.Text = "cycle (parameters ×1.3 at the middle)"
		p.Y.Label.Text = "relative error"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = 1e-3, 1e6 // room above the curves for the legend
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		tol, err := plotter.NewLine(plotter.XYs{{X: 1, Y: Tolerance}, {X: float64(len(byTruth[name][0].Trajectory)), Y: Tolerance}})
		if err != nil {
			return nil, err
		}
		tol.Color = color.Gray{Y: 0x80}
		p.Add(tol)
		p.Legend.Add("5 % tolerance", tol)
		for _, r := range byTruth[name] {
			xys := make(plotter.XYs, len(r.Trajectory))
			for i, pt := range r.Trajectory {
				xys[i] = plotter.XY{X: float64(pt.Cycle), Y: math.Max(pt.Error, 1e-3)}
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			l.Color = palette[startIndex(r.Start)%len(palette)]
			l.Width = vg.Points(1.5)
			if r.Strategy == tuner.StrategySeed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(l)
			if r.Strategy == tuner.StrategyRobust {
				p.Legend.Add("start: "+r.Start, l)
			}
		}
		file := fmt.Sprintf("tuner-%s-noise%.0f.png", strings.ToLower(name), 100*noise)
		if err := p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, file)); err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	return files, nil
}

// PlotParams writes the parameter trajectory of one run, each parameter
// divided by its true value.
func PlotParams(r Result, truth tuner.Truth, jumpAt int, jump float64, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %s start, %.0f %% noise: estimate / truth", r.Truth, r.Start, 100*r.Noise)
	p.X.Label.Text = "cycle"
	p.Y.Label.Text = "estimate / true value"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = ratioTicks{}
	p.Add(plotter.NewGrid())
	get := []func(tuner.Params) float64{
		func(q tuner.Params) float64 { return q.Alpha }, func(q tuner.Params) float64 { return q.Beta }, func(q tuner.Params) float64 { return q.Gamma },
	}
	for i, name := range []string{"α", "β", "γ"} {
		xys := make(plotter.XYs, len(r.Trajectory))
		for j, pt := range r.Trajectory {
			tv := get[i](truth.Params)
			if jumpAt > 0 && j >= jumpAt {
				tv *= jump
			}
			xys[j] = plotter.XY{X: float64(pt.Cycle), Y: get[i](pt.Params) / tv}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = palette[i]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(name, l)
	}
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}

func startIndex(s string) int {
	for i, x := range Starts {
		if x == s {
			return i
		}
	}
	return 0
}

// WriteSpread writes the held-out error after a fixed number of cycles.
func WriteSpread(w io.Writer, ss []Spread) error {
	var b strings.Builder
	b.WriteString("| noise | runs | within 5 % | median | p90 | p99 | max |\n|---|---|---|---|---|---|---|\n")
	for _, s := range ss {
		fmt.Fprintf(&b, "| %.0f %% | %d | %d (%.1f %%) | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", 100*s.Noise, s.Runs, s.Within,
			100*float64(s.Within)/float64(s.Runs), 100*s.Median, 100*s.P90, 100*s.P99, 100*s.Max)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ratioTicks marks powers of two, for ratios around 1.
type ratioTicks struct{}

func (ratioTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for v := 1.0 / 64; v <= 64; v *= 2 {
		if v >= lo/1.01 && v <= hi*1.01 {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
		}
	}
	return ts
}
