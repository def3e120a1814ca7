package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// TestPlotsNeverPanic: a cost the plotting library cannot draw (it panicked
// with "illegal range" on a variant of about 1e17 per hour, after
// results.json was written) is an error, not a panic. (The scenario's
// validation refuses such a cost in the first place: package sim,
// TestHugeCostRefused.)
func TestPlotsNeverPanic(t *testing.T) {
	sc := builtin(t, "staircase", 120)
	rs, err := sim.Compare(context.Background(), sc, []string{"static:1", "static:2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs { // the series of a variant costing about 1e17 per hour
		for i := range r.Series {
			r.Series[i].CostPerHour *= 4e16
		}
	}
	if _, err := WritePlots(t.TempDir(), sc, rs); err != nil && !strings.Contains(err.Error(), "plotting:") {
		t.Errorf("error %v", err)
	}
}

// TestPlotsWritten: the golden run's figures, one per autoscaler and the
// overlay, are written as PNG and SVG and are not empty. Their bytes are
// not compared (fonts and renderers differ between machines).
func TestPlotsWritten(t *testing.T) {
	sc, rs := goldenRun(t)
	dir := t.TempDir()
	files, err := WritePlots(dir, sc, rs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sim-wva.png", "sim-wva.svg", "sim-static-2.png", "sim-static-2.svg", "sim-overlay.png", "sim-overlay.svg"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", files, want)
	}
	for _, name := range files {
		checkFigure(t, filepath.Join(dir, name))
	}
}

// checkFigure checks that a written figure is a PNG or an SVG, not empty.
func checkFigure(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(path) {
	case ".png":
		if len(b) < 1000 || !strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n") {
			t.Errorf("%s: %d bytes, not a PNG", path, len(b))
		}
	case ".svg":
		if len(b) < 1000 || !strings.Contains(string(b), "<svg") {
			t.Errorf("%s: %d bytes, not an SVG", path, len(b))
		}
	default:
		t.Errorf("%s: neither PNG nor SVG", path)
	}
}
