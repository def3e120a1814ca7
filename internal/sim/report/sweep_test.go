package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/experiment"
)

// TestSweepReports: the table of a sweep gives the costs at equal
// attainment, and a frontier is drawn for each autoscaler, also from a
// result read back from its JSON (package sim's
// TestSweepParallelDeterministic runs the same sweep for determinism).
func TestSweepReports(t *testing.T) {
	sc := builtin(t, "staircase", 240)
	spec := experiment.SweepSpec{Autoscalers: []string{"wva", "hpa"}, Seeds: []uint64{1, 2}, Parallel: 2,
		Grids: map[string][]float64{"hpa.kvTarget": {0.3, 0.9}, "hpa.queueTarget": {3}, "wva.spareQuantile": {0.5},
			"wva.ttftAttainment": {0}, "wva.kvCacheThreshold": {0.8}}}
	r, err := experiment.Sweep(context.Background(), sc, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteSweepTable(&buf, r); err != nil || !strings.Contains(buf.String(), "AT 99 %") {
		t.Errorf("table: %v\n%s", err, buf.String())
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back := &experiment.SweepResult{}
	if err := json.Unmarshal(out, back); err != nil {
		t.Fatal(err)
	}
	files, err := WriteSweepPlot(t.TempDir(), back)
	if err != nil || len(files) != 2 {
		t.Errorf("plot: %v %v", files, err)
	}
}

// TestSweepTableListsSmallSweepsWhole: a sweep of at most allPointsUpTo
// settings lists every one; a larger one only its frontier points and
// defaults.
func TestSweepTableListsSmallSweepsWhole(t *testing.T) {
	sweep := func(n int) *experiment.SweepResult {
		r := &experiment.SweepResult{Scenario: "s", Seeds: []uint64{1}}
		for i := range n {
			r.Points = append(r.Points, experiment.SweepPoint{Autoscaler: "hpa", Label: fmt.Sprintf("kvTarget=%d", i),
				Frontier: i == 0, Default: i == 1})
		}
		return r
	}
	for _, c := range []struct {
		n       int
		all     bool
		heading string
	}{{allPointsUpTo, true, "every setting, the frontier points marked"}, {allPointsUpTo + 1, false, "; frontier points (*) and the defaults (d)"}} {
		var b strings.Builder
		if err := WriteSweepTable(&b, sweep(c.n)); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, c.heading) {
			t.Errorf("%d settings: heading %q not in\n%s", c.n, c.heading, out)
		}
		for _, want := range []string{"kvTarget=0 ", "kvTarget=1 "} {
			if !strings.Contains(out, want) {
				t.Errorf("%d settings: %s (frontier or default) missing", c.n, want)
			}
		}
		if got := strings.Contains(out, "kvTarget=2 "); got != c.all {
			t.Errorf("%d settings: an ordinary point listed %v, want %v", c.n, got, c.all)
		}
	}
}
