package report

import (
	"bytes"
	"context"
	"encoding/json"
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
