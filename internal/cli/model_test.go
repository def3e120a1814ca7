// Tests of "wva model analyze" and "wva model size": flags, case files and
// output (the shipped examples: model_examples_test.go).

package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb)
	return out.String(), errb.String(), code
}

var llamaFlags = []string{"model", "", "--alpha", "7", "--beta", "0.02", "--gamma", "0.00005",
	"--input-tokens", "1024", "--output-tokens", "256", "--max-batch-size", "256"}

func llamaArgs(sub string, extra ...string) []string {
	args := append([]string(nil), llamaFlags...)
	args[1] = sub
	return append(args, extra...)
}

func llamaAnalyzer(t *testing.T) *queueing.Analyzer {
	t.Helper()
	a, err := queueing.NewAnalyzer(queueing.Config{
		Model:    queueing.Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5},
		Workload: queueing.Workload{InputTokens: 1024, OutputTokens: 256}, MaxBatchSize: 256, MaxQueueSize: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, s)
	}
	return m
}

func TestAnalyzeJSON(t *testing.T) {
	out, stderr, code := run(t, llamaArgs("analyze", "--rate", "12.5", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decode(t, out)
	want, _ := llamaAnalyzer(t).Analyze(12.5)
	for key, v := range map[string]float64{
		"rate_rps": 12.5, "throughput_rps": want.ThroughputRPS, "ttft_ms": want.TTFTMs, "itl_ms": want.ITLMs,
		"wait_ms": want.WaitMs, "avg_batch_size": want.AvgBatchSize, "utilization": want.Utilization,
		"blocking_probability": want.Blocking, "max_rate_rps": want.MaxRateRPS,
	} {
		g, ok := got[key].(float64)
		if !ok || math.Abs(g-v) > 1e-12*math.Max(1, math.Abs(v)) {
			t.Errorf("%s = %v, want %v", key, got[key], v)
		}
	}
}

func TestSizeJSON(t *testing.T) {
	out, stderr, code := run(t, llamaArgs("size", "--target-ttft", "200", "--target-itl", "20", "--demand", "100", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decode(t, out)
	want, err := llamaAnalyzer(t).Size(queueing.Targets{TTFTMs: 200, ITLMs: 20})
	if err != nil {
		t.Fatal(err)
	}
	replicas, _ := want.Replicas(100)
	for key, v := range map[string]float64{
		"rate_ttft_rps": want.RateTTFTRPS, "rate_itl_rps": want.RateITLRPS, "rate_star_rps": want.RateStarRPS,
		"capacity_rps": want.CapacityRPS, "ttft_ms": want.AtStar.TTFTMs, "itl_ms": want.AtStar.ITLMs, "replicas": float64(replicas),
	} {
		if g, ok := got[key].(float64); !ok || g != v {
			t.Errorf("%s = %v, want %v", key, got[key], v)
		}
	}
	if got["binding"] != "itl" || replicas != 7 {
		t.Errorf("binding %v, replicas %d", got["binding"], replicas)
	}
	out, _, _ = run(t, llamaArgs("size", "--target-ttft", "200", "-o", "json")...)
	if _, ok := decode(t, out)["replicas"]; ok {
		t.Error("replicas printed without a demand")
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"negative alpha", llamaArgs("analyze", "--rate", "1", "--alpha", "-1"), "--alpha: must be a positive finite number, got -1"},
		{"NaN gamma", llamaArgs("analyze", "--rate", "1", "--gamma", "NaN"), "--gamma: must be a finite number ≥ 0, got NaN"},
		{"zero rate", llamaArgs("analyze", "--rate", "0"), "--rate: must be a positive finite number of requests/s, got 0"},
		{"vanishing rate", llamaArgs("analyze", "--rate", "1e-19"), "--rate: must be at least 1e-09 requests/s"},
		{"demand beyond any fleet", llamaArgs("size", "--target-ttft", "500", "--demand", "2e20"), "--demand: needs more than 2147483647 replicas"},
		{"missing rate", llamaArgs("analyze"), "--rate is required"},
		{"missing alpha", []string{"model", "size", "--target-ttft", "1"}, "--alpha is required"},
		{"batch of zero", llamaArgs("analyze", "--rate", "1", "--max-batch-size", "0"), "--max-batch-size: must be between 1 and"},
		{"negative queue", llamaArgs("analyze", "--rate", "1", "--max-queue-size", "-2"), "--max-queue-size: must be ≥ 0, got -2"},
		{"no output tokens", llamaArgs("analyze", "--rate", "1", "--output-tokens", "0"), "--output-tokens: must be a finite number ≥ 1"},
		{"unknown model", llamaArgs("analyze", "--rate", "1", "--service-model", "cubic"), `--service-model: must be "iteration" or "linear", got "cubic"`},
		{"delta on iteration", llamaArgs("analyze", "--rate", "1", "--delta", "1"), "--delta: applies only to the linear service model"},
		{"linear without delta", llamaArgs("analyze", "--rate", "1", "--service-model", "linear"), "--delta is required"},
		{"not a number", llamaArgs("analyze", "--rate", "fast"), `invalid argument "fast" for "--rate" flag`},
		{"bad output", llamaArgs("analyze", "--rate", "1", "-o", "xml"), `--output: must be "table" or "json", got "xml"`},
		{"no target", llamaArgs("size"), "--target-ttft: give at least one target"},
		{"negative target", llamaArgs("size", "--target-itl", "-5"), "--target-itl: must be a finite number ≥ 0, got -5"},
		{"infeasible", llamaArgs("size", "--target-itl", "3"), "--target-itl: infeasible SLO: target ITL 3 ms cannot be met even at light load (best achievable: TTFT"},
		{"missing file", llamaArgs("size", "-f", "/nonexistent.yaml"), "--file: open /nonexistent.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := run(t, tc.args...)
			if code == 0 {
				t.Fatalf("exit 0, output %q", out)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q lacks %q", stderr, tc.want)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
		})
	}
}

func writeFile(t *testing.T, body string) string { return tempFile(t, "cases.yaml", body) }

// tempFile writes body to a file named name in a fresh temporary folder.
func tempFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCaseFile(t *testing.T) {
	file := writeFile(t, `
defaults:
  alpha: 7
  beta: 0.02
  gamma: 0.00005
  outputTokens: 256
  targetITL: 20
cases:
  - name: short
    inputTokens: 1024
    demand: 100
  - name: infeasible
    inputTokens: 1024
    targetITL: 3
  - inputTokens: 1024
    maxBatchSize: 64
`)
	// --max-batch-size on the command line is the starting value of every case.
	out, stderr, code := run(t, "model", "size", "-f", file, "--max-batch-size", "256", "-o", "json")
	if code != 1 || !strings.Contains(stderr, "1 of 3 cases failed") {
		t.Errorf("exit %d, stderr %q; want 1 and a failure count", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 3 {
		t.Fatalf("want an array of 3 results: %v\n%s", err, out)
	}
	if rs[0]["case"] != "short" || rs[0]["replicas"] != 7.0 || rs[0]["error"] != nil {
		t.Errorf("first case: %v", rs[0])
	}
	if e, _ := rs[1]["error"].(string); !strings.HasPrefix(e, `case "infeasible": targetITL: infeasible SLO`) {
		t.Errorf("second case error %q", e)
	}
	if rs[2]["case"] != "case-3" || rs[2]["rate_itl_rps"].(float64) >= rs[0]["rate_itl_rps"].(float64) {
		t.Errorf("third case (N=64) should sustain less than N=256: %v vs %v", rs[2], rs[0])
	}
	table, _, _ := run(t, "model", "size", "-f", file, "--max-batch-size", "256")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CASE") || !strings.Contains(lines[2], "error: case \"infeasible\"") {
		t.Errorf("table:\n%s", table)
	}
}

func TestAnalyzeSweepFile(t *testing.T) {
	file := writeFile(t, `
defaults: {alpha: 7, beta: 0.02, gamma: 0.00005, inputTokens: 1024, outputTokens: 256}
cases:
  - {name: n256, maxBatchSize: 256, rates: [1, 10, 20]}
  - {name: n8, maxBatchSize: 8, rate: 0.5}
`)
	out, stderr, code := run(t, "model", "analyze", "-f", file, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []analyzeResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 4 {
		t.Fatalf("want 4 rows: %v\n%s", err, out)
	}
	if rs[2].RateRPS != 20 || rs[3].Case != "n8" || rs[1].TTFTMs >= rs[2].TTFTMs {
		t.Errorf("rows: %+v", rs)
	}
	_, stderr, code = run(t, "model", "analyze", "-f", writeFile(t, "cases:\n  - {alpha: 1, speed: 3}\n"))
	if code == 0 || !strings.Contains(stderr, `unknown field "speed"`) {
		t.Errorf("unknown key accepted: %d %q", code, stderr)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := run(t, "--help")
	if code != 0 || !strings.Contains(out, "SLO-driven") || !strings.Contains(out, "milliseconds") {
		t.Errorf("root help: %s", out)
	}
	out, _, _ = run(t, "model", "size", "--help")
	for _, want := range []string{"--target-ttft", "requests/s", "capacity_rps", "rate_star_rps", "ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("size help lacks %q", want)
		}
	}
}

// TestPercentileOutputs: analyze reports the TTFT percentile and the share
// within a target; size with --ttft-attainment sizes the TTFT target per
// request, and the predicted share at the answer is the one asked for.
func TestPercentileOutputs(t *testing.T) {
	a := llamaAnalyzer(t)
	out, errOut, code := run(t, llamaArgs("analyze", "--rate", "20.5", "--percentile", "0.9", "--target-ttft", "150", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := decode(t, out)
	wantP, _ := a.TTFTPercentile(20.5, 0.9)
	wantA, _ := a.TTFTAttainment(20.5, 150)
	if got := m["ttft_percentile_ms"].(float64); math.Abs(got-wantP) > 1e-9*wantP || m["percentile"].(float64) != 0.9 {
		t.Errorf("ttft_percentile_ms %v, want %v", got, wantP)
	}
	if got := m["ttft_attainment"].(float64); math.Abs(got-wantA) > 1e-12 || wantA <= 0 || wantA >= 1 {
		t.Errorf("ttft_attainment %v, want %v", got, wantA)
	}
	out, errOut, code = run(t, llamaArgs("size", "--target-ttft", "150", "--ttft-attainment", "0.95", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m = decode(t, out)
	rate := m["rate_ttft_rps"].(float64)
	if at, _ := a.TTFTAttainment(rate, 150); math.Abs(at-0.95) > 1e-4 || math.Abs(m["ttft_attainment"].(float64)-at) > 1e-9 {
		t.Errorf("at rate_ttft_rps %v the share within 150 ms is %v (printed %v), want 0.95", rate, at, m["ttft_attainment"])
	}
	if _, errOut, code = run(t, llamaArgs("size", "--target-ttft", "150", "--ttft-attainment", "1")...); code == 0 || !strings.Contains(errOut, "--ttft-attainment") {
		t.Errorf("attainment 1: exit %d, %q", code, errOut)
	}
}
