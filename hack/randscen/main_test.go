package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// TestGenerateValid: every drawn scenario parses back from the file
// randscen writes, validates, and is the same for the same seed.
func TestGenerateValid(t *testing.T) {
	patterns := map[string]bool{}
	for seed := range uint64(200) {
		sc, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		data, err := yaml.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		back, err := scenario.ParseScenario(data)
		if err != nil {
			t.Fatalf("seed %d: the written file does not parse: %v", seed, err)
		}
		if err := back.CheckRunnable(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		again, _ := Generate(seed)
		if data2, _ := yaml.Marshal(again); !bytes.Equal(data, data2) {
			t.Fatalf("seed %d: two draws differ", seed)
		}
		patterns[sc.Models[0].Workload.Rate.Pattern] = true
	}
	if len(patterns) != 4 {
		t.Errorf("patterns drawn %v, want all four", patterns)
	}
}

// TestSummarize: the row picks the baseline with the most attainment, the
// cheapest one within 0.3 points of WVA's, and counts both.
func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	stat := func(mean float64) experiment.Stat { return experiment.Stat{Mean: mean, Min: mean - 1, Max: mean + 1} }
	sums := []experiment.SeedSummary{
		{Autoscaler: "wva", SLOAttainment: stat(99.0), Cost: stat(10)},
		{Autoscaler: "hpa", SLOAttainment: stat(99.5), Cost: stat(20)},       // the most attainment
		{Autoscaler: "keda-queue", SLOAttainment: stat(98.8), Cost: stat(8)}, // within 0.3: the cheapest match
		{Autoscaler: "keda", SLOAttainment: stat(98.0), Cost: stat(1)},       // meets fewer
		{Autoscaler: "clairvoyant", SLOAttainment: stat(99.9), Cost: stat(5)},
	}
	data, err := json.Marshal(sums)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "random-1.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// random-2: WVA meets the most, at half the best baseline's cost, and
	// no baseline meets as many.
	data, err = json.Marshal([]experiment.SeedSummary{
		{Autoscaler: "wva", SLOAttainment: stat(99.9), Cost: stat(4)},
		{Autoscaler: "hpa", SLOAttainment: stat(99.0), Cost: stat(10)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "random-2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := summarize(&b, dir); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| random-1 | 99.0 % (98.0), 10.00 | hpa 99.5 % at 20.00 | 0.50 | keda-queue 98.8 % at 8.00 (WVA at 1.25×) | clairvoyant 99.9 % at 5.00 | 2.00 |",
		"| random-2 | 99.9 % (98.9), 4.00 | hpa 99.0 % at 10.00 | 0.40 | none | — | — |",
		"within 0.3 points) on 1 of 2 scenarios, on 1 of them at 0.8× its cost or less. It costs less than every baseline that meets as many requests as it does on 1 of 2 (on 1 no baseline does).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if err := summarize(&b, t.TempDir()); err == nil {
		t.Error("an empty folder summarized without an error")
	}
}

// TestShippedStudyIsCurrent: docs/evaluation/random holds what `make
// random-scenarios` writes: the scenarios this generator draws from seed
// 100 on, and the table of the results beside them.
func TestShippedStudyIsCurrent(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "evaluation", "random")
	files, err := filepath.Glob(filepath.Join(dir, "random-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s (%v)", dir, err)
	}
	for _, f := range files {
		var seed uint64
		if _, err := fmt.Sscanf(filepath.Base(f), "random-%d.yaml", &seed); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sc, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := yaml.Marshal(sc)
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what seed %d draws now: rerun make random-scenarios", f, seed)
		}
	}
	var b strings.Builder
	if err := summarize(&b, dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Error("summary.md is stale: go run ./hack/randscen -summarize docs/evaluation/random > docs/evaluation/random/summary.md")
	}
}
