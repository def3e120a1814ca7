package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// builtin is a shipped scenario, cut to seconds when seconds > 0.
func builtin(t testing.TB, name string, seconds float64) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Builtin(scenarios.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	if seconds > 0 {
		sc.DurationSeconds = seconds
	}
	return sc
}

// TestSafeFileName: autoscaler names give the series and plot names they
// always had (static:N → static-N); names from inputs stay in their
// folder.
func TestSafeFileName(t *testing.T) {
	for _, tc := range []struct {
		name string
		sub  rune
		want string
	}{
		{"wva", '-', "wva"}, {"clairvoyant", '-', "clairvoyant"}, {"static:2", '-', "static-2"}, {"static:+02", '-', "static--02"},
		{"a/b", '_', "a_b"}, {"../etc", '_', "_.._etc"}, {".hidden", '_', "_.hidden"}, {"", '_', "_"},
		{"Llama 3.1:8b", '_', "Llama_3.1_8b"}, {"é\\\n", '_', "___"},
	} {
		if got := SafeFileName(tc.name, tc.sub); got != tc.want {
			t.Errorf("SafeFileName(%q, %q) = %q, want %q", tc.name, tc.sub, got, tc.want)
		}
	}
}

// TestPerModelReports: models.csv has a row per autoscaler and model; the
// table has a per-model section only for a fleet of several models.
func TestPerModelReports(t *testing.T) {
	sc := builtin(t, "shared-budget", 300)
	rs, err := sim.Compare(context.Background(), sc, []string{"hpa", "static:2"}, nil)
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
	one, err := sim.Compare(context.Background(), builtin(t, "staircase", 300), []string{"hpa"}, nil)
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
