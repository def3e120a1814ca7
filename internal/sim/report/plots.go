package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// colors are Tableau's ten (matplotlib's default cycle), so that the ten
// registered autoscalers each have their own.
var colors = []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff},
	{0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff}}

// WritePlots draws one figure per autoscaler (load and replicas, TTFT p99
// against the SLO, KV utilisation, cost) and one overlay of all of them, as
// PNG and SVG. It returns the file names.
func WritePlots(dir string, sc scenario.Scenario, rs []*sim.Result) (files []string, err error) {
	defer recoverPlot(&err)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	slo := sc.Models[0].SLO.TTFTMs
	for _, r := range rs {
		panels, err := resultPanels(r, slo)
		if err != nil {
			return nil, err
		}
		names, err := savePanels(dir, "sim-"+SafeFileName(r.Autoscaler, '-'), panels)
		if err != nil {
			return nil, err
		}
		files = append(files, names...)
	}
	panels, err := overlayPanels(rs, slo)
	if err != nil {
		return nil, err
	}
	names, err := savePanels(dir, "sim-overlay", panels)
	return append(files, names...), err
}

// recoverPlot turns a panic of the plotting library (gonum/plot panics on
// ranges it cannot draw, such as values near the float64 limit) into an
// error: the results are written before the plots, and a plot must never
// take the process down.
func recoverPlot(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("plotting: %v (the results are written; the plots are not)", r)
	}
}

func newPanel(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.X.Label.Text = "time (min)"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func line(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.3)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
	return nil
}

func series(r *sim.Result, y func(sim.Point) float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(r.Series))
	for _, p := range r.Series {
		xys = append(xys, plotter.XY{X: p.T / 60, Y: y(p)})
	}
	return xys
}

func resultPanels(r *sim.Result, slo float64) ([]*plot.Plot, error) {
	load := newPanel(fmt.Sprintf("%s — %s: load and replicas", r.Scenario, r.Autoscaler), "requests/s · replicas")
	if err := line(load, "arrivals (rps)", series(r, func(p sim.Point) float64 { return p.ArrivalRPS }), color.Gray{Y: 0x60}, true); err != nil {
		return nil, err
	}
	for i, v := range r.Variants {
		if err := line(load, "replicas "+v, series(r, func(p sim.Point) float64 { return float64(p.Replicas[i]) }), colors[i%len(colors)], false); err != nil {
			return nil, err
		}
	}
	ttft := newPanel("TTFT p99 (ms) against the SLO", "ms")
	ttft.Y.Scale = plot.LogScale{}
	ttft.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	if err := line(ttft, "TTFT p99", series(r, func(p sim.Point) float64 { return math.Max(p.TTFTp99Ms, 1) }), colors[1], false); err != nil {
		return nil, err
	}
	if err := line(ttft, "SLO", series(r, func(sim.Point) float64 { return slo }), color.Gray{Y: 0x60}, true); err != nil {
		return nil, err
	}
	kv := newPanel("KV-cache utilisation (mean over ready replicas)", "fraction")
	kv.Y.Min, kv.Y.Max = 0, 1
	if err := line(kv, "", series(r, func(p sim.Point) float64 { return p.KVUsage }), colors[2], false); err != nil {
		return nil, err
	}
	cost := newPanel("cost rate", "cost per hour")
	if err := line(cost, "", series(r, func(p sim.Point) float64 { return p.CostPerHour }), colors[3], false); err != nil {
		return nil, err
	}
	return []*plot.Plot{load, ttft, kv, cost}, nil
}

func overlayPanels(rs []*sim.Result, slo float64) ([]*plot.Plot, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	rep := newPanel(fmt.Sprintf("%s: replicas (all variants) by autoscaler", rs[0].Scenario), "replicas")
	ttft := newPanel("TTFT p99 (ms)", "ms")
	ttft.Y.Scale = plot.LogScale{}
	ttft.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	cost := newPanel("cost rate", "cost per hour")
	load := newPanel("arrivals", "requests/s")
	if err := line(load, "", series(rs[0], func(p sim.Point) float64 { return p.ArrivalRPS }), color.Gray{Y: 0x60}, false); err != nil {
		return nil, err
	}
	for i, r := range rs {
		c := colors[i%len(colors)]
		total := func(p sim.Point) float64 {
			n := 0
			for _, x := range p.Replicas {
				n += x
			}
			return float64(n)
		}
		if err := line(rep, r.Autoscaler, series(r, total), c, false); err != nil {
			return nil, err
		}
		if err := line(ttft, r.Autoscaler, series(r, func(p sim.Point) float64 { return math.Max(p.TTFTp99Ms, 1) }), c, false); err != nil {
			return nil, err
		}
		if err := line(cost, r.Autoscaler, series(r, func(p sim.Point) float64 { return p.CostPerHour }), c, false); err != nil {
			return nil, err
		}
	}
	if err := line(ttft, "SLO", series(rs[0], func(sim.Point) float64 { return slo }), color.Gray{Y: 0x60}, true); err != nil {
		return nil, err
	}
	return []*plot.Plot{load, rep, ttft, cost}, nil
}

// savePanels stacks the panels into one figure and writes it as PNG and SVG.
func savePanels(dir, base string, panels []*plot.Plot) ([]string, error) {
	return saveFigure(dir, base, panels, 10*vg.Inch, 2.6*vg.Inch*vg.Length(len(panels)))
}

// saveFigure writes the panels, stacked, in a w × h figure.
func saveFigure(dir, base string, panels []*plot.Plot, w, h vg.Length) ([]string, error) {
	var names []string
	for _, kind := range []string{"png", "svg"} {
		var c draw.Canvas
		var out io.WriterTo
		switch kind {
		case "png":
			img := vgimg.New(w, h)
			c = draw.New(img)
			out = vgimg.PngCanvas{Canvas: img}
		default:
			svg := vgsvg.New(w, h)
			c = draw.New(svg)
			out = svg
		}
		tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		grid := make([][]*plot.Plot, len(panels))
		for i, p := range panels {
			grid[i] = []*plot.Plot{p}
		}
		canvases := plot.Align(grid, tiles, c)
		drawBesideLegends(panels, canvases)
		name := base + "." + kind
		file, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if _, err := out.WriteTo(file); err != nil {
			file.Close()
			return nil, err
		}
		if err := file.Close(); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// drawBesideLegends draws each panel with its legend to the right of its
// data, not over it: every panel gives up the width of the widest legend
// (so that the panels' time axes stay aligned), and a panel without a
// legend keeps the strip empty.
func drawBesideLegends(panels []*plot.Plot, canvases [][]draw.Canvas) {
	width := vg.Length(0)
	for i, p := range panels {
		if r := p.Legend.Rectangle(canvases[i][0]); r.Max.X > r.Min.X { // no entries: no width
			width = max(width, r.Max.X-r.Min.X+vg.Points(12))
		}
	}
	for i, p := range panels {
		c := canvases[i][0]
		if width == 0 {
			p.Draw(c)
			continue
		}
		legend := p.Legend
		p.Legend = plot.NewLegend()
		p.Draw(draw.Crop(c, 0, -width, 0, 0))
		legend.Top, legend.Left = true, true
		legend.XOffs = vg.Points(8)
		legend.Draw(draw.Crop(c, c.Max.X-c.Min.X-width, 0, 0, 0))
		p.Legend = legend
	}
}
