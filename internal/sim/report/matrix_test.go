package report

import (
	"context"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// matrixScenario is package sim's tiny matrix (admission_config_test.go):
// two configurations (no admission; predictive admission with priority
// scheduling) at two rates, two seeds, 20 simulated seconds each.
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

// runMatrix runs matrixScenario's matrix and returns the scenario and the
// cells.
func runMatrix(t *testing.T) (*scenario.Scenario, []experiment.MatrixCell) {
	t.Helper()
	sc, err := scenario.ParseScenario([]byte(matrixScenario))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := experiment.RunMatrix(context.Background(), sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sc, experiment.SummarizeMatrix(runs)
}

// TestMatrixReports: the report has a section per rate and a row per
// configuration, autoscaler and class; the CSV a row per cell and class
// (package sim's TestMatrixCells checks the cells' figures).
func TestMatrixReports(t *testing.T) {
	sc, cells := runMatrix(t)
	var md, csv strings.Builder
	if err := WriteMatrixMarkdown(&md, sc, cells); err != nil || !strings.Contains(md.String(), "## Rate high") ||
		!strings.Contains(md.String(), "| predictive | static:1 | m/critical |") {
		t.Errorf("report: %v\n%s", err, md.String())
	}
	if err := WriteMatrixCSV(&csv, cells); err != nil || strings.Count(csv.String(), "\n") != 1+4*2 {
		t.Errorf("csv: %v\n%s", err, csv.String())
	}
}
