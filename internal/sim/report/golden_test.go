package report

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// The golden-file tests render the reports of small fixed runs
// (testdata/golden.yaml, package sim's tiny matrix) and compare them byte
// for byte to testdata/*.golden. The runs are deterministic by seed, so a
// difference is a change of a report or of the simulator's figures; after
// checking it, rewrite the files with
//
//	go test ./internal/sim/report -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden files")

// goldenAutoscalers are the autoscalers of the golden run.
var goldenAutoscalers = []string{"wva", "static:2"}

// golden is the golden run, simulated once for the tests that render it.
var golden struct {
	once sync.Once
	sc   scenario.Scenario
	rs   []*sim.Result
	err  error
}

// goldenRun is testdata/golden.yaml run under goldenAutoscalers. The
// results are shared: a test must not change them.
func goldenRun(t *testing.T) (scenario.Scenario, []*sim.Result) {
	t.Helper()
	golden.once.Do(func() {
		golden.sc, golden.err = scenario.LoadFile(filepath.Join("testdata", "golden.yaml"))
		if golden.err == nil {
			golden.rs, golden.err = sim.Compare(context.Background(), golden.sc, goldenAutoscalers, nil)
		}
	})
	if golden.err != nil {
		t.Fatal(golden.err)
	}
	return golden.sc, golden.rs
}

// checkGolden compares got with testdata/name.golden, or with -update
// writes it there.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (-update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s: %s\n(check the change, then rewrite the golden files with -update)", name, path, firstDiff(got, want))
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d\n got: %q\nwant: %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// render is what a writer writes to a buffer.
func render(t *testing.T, write func(*bytes.Buffer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoldenResults: the comparison table (every section: servers, per
// model, per SLO class, admission) and every file WriteFiles writes.
func TestGoldenResults(t *testing.T) {
	_, rs := goldenRun(t)
	checkGolden(t, "table", render(t, func(b *bytes.Buffer) error { return WriteTable(b, rs) }))
	dir := t.TempDir()
	files, err := WriteFiles(dir, rs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"results.json", "summary.csv", "models.csv", "classes.csv", "admission.csv", "series-wva.csv", "series-static-2.csv"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, b)
	}
}

// TestGoldenSeeds: the seeds' table and seeds.csv over seeds 1 and 2 of
// the golden scenario.
func TestGoldenSeeds(t *testing.T) {
	sc, _ := goldenRun(t)
	seeds, runs, err := experiment.CompareSeeds(context.Background(), sc, goldenAutoscalers, []uint64{1, 2}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	ss := experiment.Summarize(seeds, runs)
	checkGolden(t, "seeds", render(t, func(b *bytes.Buffer) error { return WriteSeedTable(b, ss) }))
	checkGolden(t, "seeds.csv", render(t, func(b *bytes.Buffer) error { return WriteSeedCSV(b, ss) }))
}

// TestSeedTableInstant: an autoscaler whose replicas are ready at once
// (the oracle) wins no seed, and its BEST SLO column says "-"; no
// summaries print nothing.
func TestSeedTableInstant(t *testing.T) {
	ss := []experiment.SeedSummary{{Autoscaler: "wva", Seeds: []uint64{1, 2}, Wins: 2}, {Autoscaler: "oracle", Seeds: []uint64{1, 2}}}
	var b bytes.Buffer
	if err := WriteSeedTable(&b, ss); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "over 2 seeds (1–2)") ||
		strings.Fields(lines[3])[5] != "2" || strings.Fields(lines[4])[5] != "-" {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := WriteSeedTable(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("no summaries: %v %q", err, b.String())
	}
}

// TestGoldenSweep: the sweep's table, sweep.csv and attainment.csv of
// small grids (two values of a knob at most, the defaults' added) over two
// seeds of the golden scenario (two models: the worst model's frontier
// and costs too), at targets a frontier's cheapest point already exceeds
// (an upper bound), reaches by interpolation, and never reaches; the
// frontier plot is written.
func TestGoldenSweep(t *testing.T) {
	sc, _ := goldenRun(t)
	spec := experiment.SweepSpec{Autoscalers: []string{"wva", "hpa"}, Seeds: []uint64{1, 2}, Parallel: 2, Targets: []float64{50, 60, 95},
		Grids: map[string][]float64{"hpa.kvTarget": {0.9}, "hpa.queueTarget": {1, 3}, "wva.spareQuantile": {0.5},
			"wva.ttftAttainment": {0}, "wva.kvCacheThreshold": {0.8}}}
	r, err := experiment.Sweep(context.Background(), sc, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sweep", render(t, func(b *bytes.Buffer) error { return WriteSweepTable(b, r) }))
	checkGolden(t, "sweep.csv", render(t, func(b *bytes.Buffer) error { return WriteSweepCSV(b, r) }))
	checkGolden(t, "attainment.csv", render(t, func(b *bytes.Buffer) error { return WriteAttainmentCSV(b, r) }))
	dir := t.TempDir()
	files, err := WriteSweepPlot(dir, r)
	if err != nil || strings.Join(files, " ") != "frontier.png frontier.svg" {
		t.Fatalf("plot: %v %v", files, err)
	}
	for _, name := range files {
		checkFigure(t, filepath.Join(dir, name))
	}
}

// TestGoldenMatrix: the matrix's report, CSV and JSON.
func TestGoldenMatrix(t *testing.T) {
	sc, cells := runMatrix(t)
	checkGolden(t, "matrix.md", render(t, func(b *bytes.Buffer) error { return WriteMatrixMarkdown(b, sc, cells) }))
	checkGolden(t, "matrix.csv", render(t, func(b *bytes.Buffer) error { return WriteMatrixCSV(b, cells) }))
	checkGolden(t, "matrix.json", render(t, func(b *bytes.Buffer) error { return WriteMatrixJSON(b, cells) }))
}
