package sim

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerModelAddsUp: each model's figures add up to the fleet's, and a
// model's attainment is its own (shared-budget's two models, where the
// batch model's priority 2 leaves it behind under the shared inventory).
func TestPerModelAddsUp(t *testing.T) {
	sc := builtin(t, "shared-budget", 1500)
	rs, err := Compare(context.Background(), sc, []string{"wva", "hpa"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.PerModel) != 2 || r.PerModel[0].Model != "chat" || r.PerModel[1].Model != "batch" {
			t.Fatalf("%s: per model %+v", r.Autoscaler, r.PerModel)
		}
		checkModelSums(t, r)
	}
}

// checkModelSums checks that a run's per-model figures add up to its
// fleet's, and each model's attainment is its own ratio.
func checkModelSums(t *testing.T, r *Result) {
	t.Helper()
	var sum ModelStats
	for _, m := range r.PerModel {
		sum.Arrived += m.Arrived
		sum.Completed += m.Completed
		sum.Failed += m.Failed
		sum.WithinSLO += m.WithinSLO
		sum.Cost += m.Cost
		sum.GPUHours += m.GPUHours
		sum.FailedBy.Terminated += m.FailedBy.Terminated
		sum.FailedBy.Timeout += m.FailedBy.Timeout
		if want := float64(m.WithinSLO) / float64(m.Arrived); m.Arrived == 0 || m.SLOAttainment != want || m.Cost <= 0 {
			t.Errorf("%s/%s: attainment %v (want %v), cost %v", r.Autoscaler, m.Model, m.SLOAttainment, want, m.Cost)
		}
	}
	if sum.Arrived != r.Arrived || sum.Completed != r.Completed || sum.Failed != r.Failed || sum.WithinSLO != r.WithinSLO ||
		sum.FailedBy.Terminated != r.FailedBy.Terminated || sum.FailedBy.Timeout != r.FailedBy.Timeout {
		t.Errorf("%s: per-model sums %+v, fleet %d/%d/%d/%d", r.Autoscaler, sum, r.Arrived, r.Completed, r.Failed, r.WithinSLO)
	}
	if math.Abs(sum.Cost-r.Cost) > 1e-9*r.Cost || math.Abs(sum.GPUHours-r.GPUHours) > 1e-9*r.GPUHours {
		t.Errorf("%s: per-model cost %v / %v GPU-h, fleet %v / %v", r.Autoscaler, sum.Cost, sum.GPUHours, r.Cost, r.GPUHours)
	}
}

// TestPerModelReports: models.csv has a row per autoscaler and model; the
// table has a per-model section only for a fleet of several models.
func TestPerModelReports(t *testing.T) {
	sc := builtin(t, "shared-budget", 300)
	rs, err := Compare(context.Background(), sc, []string{"hpa", "static:2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := WriteFiles(dir, rs); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "models.csv"))
	if len(rows) != 5 || rows[0][1] != "model" || rows[1][0] != "hpa" || rows[1][1] != "chat" || rows[4][1] != "batch" {
		t.Fatalf("models.csv: %v", rows)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rs); err != nil || !strings.Contains(b.String(), "per model:") {
		t.Errorf("two models, no per-model table: %v\n%s", err, b.String())
	}
	one, err := Compare(context.Background(), builtin(t, "staircase", 300), []string{"hpa"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteTable(&b, one); err != nil || strings.Contains(b.String(), "per model:") || len(one[0].PerModel) != 1 {
		t.Errorf("one model: %v\n%s", err, b.String())
	}
}

// readCSV reads a whole CSV file.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
