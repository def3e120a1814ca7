package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const matrixScenario = `
name: tiny-matrix
description: two gateways at two rates
durationSeconds: 20
drainSeconds: 60
models:
  - name: m
    slo: {ttftMs: 200, itlMs: 100}
    workload:
      rate: {pattern: constant, rps: 40}
      input: {mean: 300}
      output: {mean: 20}
      classes:
        - {name: critical, share: 0.5, slo: {ttftMs: 200, itlMs: 100}, criticality: critical, priority: 1}
        - {name: sheddable, share: 0.5, slo: {ttftMs: 300, itlMs: 100}, sheddable: true}
      prefixGroups: 4
      prefixTokens: 128
    variants:
      - {name: v, accelerator: H100, cost: 1, latencyModel: linear, linear: {beta0: 10, beta1: 0.01, beta2: 0.5},
         maxBatchSize: 8, kvBlocks: 400, initialReplicas: 1, minReplicas: 1, maxReplicas: 1}
gateway: {weights: "prefix-affinity:4,queue-depth:3", admission: {policy: predictive}}
matrix:
  seeds: [1, 2]
  autoscalers: ["static:1"]
  rates:
    - {name: low, rate: {pattern: constant, rps: 20}}
    - {name: high, rate: {pattern: constant, rps: 120}}
  configs:
    - {name: none, gateway: {}}
    - {name: predictive, gateway: {admission: {policy: predictive}}, schedulingPolicy: priority-fcfs}
`

// TestSimulateMatrix: --matrix runs the scenario's matrix, writes its
// three files and prints the report.
func TestSimulateMatrix(t *testing.T) {
	file := tempFile(t, "m.yaml", matrixScenario)
	out := t.TempDir()
	stdout, stderr, code := run(t, "simulate", "-f", file, "--matrix", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"# tiny-matrix", "## Rate low", "## Rate high", "| predictive | static:1 | m/critical |", "Seeds 1, 2;"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "8 of 8 runs") {
		t.Errorf("no progress: %s", stderr)
	}
	for _, f := range []string{"matrix.json", "matrix.csv", "matrix.md"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSimulateMatrixSeeds: --repeat and --seed replace the matrix's seeds;
// a plain run of the scenario prints the admission table.
func TestSimulateMatrixSeeds(t *testing.T) {
	file := tempFile(t, "m.yaml", matrixScenario)
	stdout, stderr, code := run(t, "simulate", "-f", file, "--matrix", "--repeat", "3", "--seed", "5", "--no-files", "-o", "json")
	var cells []map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &cells) != nil || len(cells) != 4 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	if seeds := cells[0]["seeds"].([]any); len(seeds) != 3 || seeds[0].(float64) != 5 {
		t.Errorf("seeds %v, want 5, 6, 7", seeds)
	}
	table, stderr, code := run(t, "simulate", "-f", file, "--autoscalers", "static:1", "--no-files")
	if code != 0 || !strings.Contains(table, "admission (gateway.admission):") || !strings.Contains(table, "predictive") {
		t.Errorf("exit %d: %s\n%s", code, stderr, table)
	}
}

func TestSimulateMatrixBadInput(t *testing.T) {
	file := tempFile(t, "m.yaml", matrixScenario)
	plain := tempFile(t, "s.yaml", shortScenario)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", plain, "--matrix"}, `scenario "short" has no matrix section`},
		{[]string{"-f", file, "--matrix", "--sweep"}, "--matrix runs the scenario's matrix: it does not go with --sweep"},
	} {
		_, stderr, code := run(t, append([]string{"simulate", "--no-files"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, stderr)
		}
	}
}
