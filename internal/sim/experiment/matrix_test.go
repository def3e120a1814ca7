package experiment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

const matrixScenario = `
name: tiny-matrix
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
      newPrefixGroups: [{atSeconds: 10, share: 0.2}]
    variants:
      - {name: v, accelerator: H100, cost: 1, latencyModel: linear, linear: {beta0: 10, beta1: 0.01, beta2: 0.5},
         maxBatchSize: 8, kvBlocks: 400, initialReplicas: 1, minReplicas: 1, maxReplicas: 1}
matrix:
  seeds: [1, 2]
  autoscalers: ["static:1"]
  rates:
    - {name: low, rate: {pattern: constant, rps: 20}}
    - {name: high, rate: {pattern: constant, rps: 120}}
  configs:
    - {name: none, gateway: {}}
    - {name: predictive, gateway: {admission: {policy: predictive, calibrate: true}}, schedulingPolicy: priority-fcfs}
`

// runMatrix runs matrixScenario's matrix on parallel workers and returns
// its runs and their summary as indented JSON (the bytes of matrix.json:
// report.WriteMatrixJSON encodes the cells the same way).
func runMatrix(t *testing.T, parallel int) ([]MatrixRun, string) {
	t.Helper()
	sc, err := scenario.ParseScenario([]byte(matrixScenario))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := RunMatrix(context.Background(), sc, parallel, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(SummarizeMatrix(runs)); err != nil {
		t.Fatal(err)
	}
	return runs, b.String()
}

// TestMatrixDeterministic: the summary does not depend on the parallel
// workers.
func TestMatrixDeterministic(t *testing.T) {
	_, one := runMatrix(t, 1)
	if _, two := runMatrix(t, 2); one != two {
		t.Error("the summary depends on the parallel workers")
	}
}

// TestMatrix: a matrix runs every configuration at every rate with every
// seed, in order; the configuration and the rate reach the runs.
func TestMatrix(t *testing.T) {
	runs, _ := runMatrix(t, 2)
	if len(runs) != 8 {
		t.Fatalf("%d runs, want 2 configurations × 2 rates × 2 seeds", len(runs))
	}
	cells := SummarizeMatrix(runs)
	if len(cells) != 4 || cells[0].Config != "none" || cells[0].Rate != "low" || cells[3].Config != "predictive" || cells[3].Rate != "high" {
		t.Fatalf("cells %+v", cells)
	}
	for _, r := range runs {
		want := map[string]float64{"low": 20 * 20, "high": 120 * 20}[r.Rate]
		if float64(r.Result.Arrived) < 0.8*want || float64(r.Result.Arrived) > 1.2*want {
			t.Errorf("%s at %s: %d arrived, want about %v", r.Config, r.Rate, r.Result.Arrived, want)
		}
		if (r.Config == "predictive") != (r.Result.Admission != nil) {
			t.Errorf("%s: admission %v", r.Config, r.Result.Admission)
		}
	}
}

// TestMatrixCells: the cells' figures (the report and the CSV of them are
// checked in package report, TestMatrixReports).
func TestMatrixCells(t *testing.T) {
	runs, _ := runMatrix(t, 2)
	cells := SummarizeMatrix(runs)
	high := cells[3]
	if high.AdmittedPct.Mean >= 100 || high.Estimate == nil || high.Estimate.Beta0Ms == nil || high.NewGroupAdmittedPct == nil ||
		len(high.Classes) != 2 || high.Classes[0].Completed == 0 || high.Classes[0].TTFTp99Ms.Low > high.Classes[0].TTFTp99Ms.High {
		t.Errorf("predictive at high rate: %+v", high)
	}
}
