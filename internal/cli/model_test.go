// Tests of "wva model analyze" and "wva model size": flags, case files,
// output, and the shipped examples checked against internal/queueing and
// the formulas of docs/queueing.md. Over 400 lines because the example
// checks carry their own reading of the case files and the formulas
// written out; they could move to a file of their own.

package cli

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

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

// TestShippedExamples runs the example case files the docs point to with
// -o json and checks every result against the file read here (not by the
// CLI's loader): one result per case (per rate for analyze), in order and
// named as in the file, each recomputed with internal/queueing and checked
// against the formulas of docs/queueing.md.
func TestShippedExamples(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		cases := readExampleCases(t, "../../examples/model/capacity-plan.yaml")
		rs := runExample(t, "size", "../../examples/model/capacity-plan.yaml", len(cases))
		for i, c := range cases {
			checkCase(t, rs[i], c.Name)
			checkSize(t, rs[i], c)
		}
	})
	t.Run("analyze", func(t *testing.T) {
		cases := readExampleCases(t, "../../examples/model/analyze-sweep.yaml")
		var rows []exampleCase // one per rate
		for _, c := range cases {
			for _, r := range c.rates() {
				row := c
				row.Rates = []float64{r}
				rows = append(rows, row)
			}
		}
		rs := runExample(t, "analyze", "../../examples/model/analyze-sweep.yaml", len(rows))
		for i, c := range rows {
			checkCase(t, rs[i], c.Name)
			checkAnalyze(t, rs[i], c)
		}
	})
}

// exampleCase is a case of an example file, the file's defaults under it
// and the CLI's defaults under those. A key of the file not listed here
// fails the test: its effect would go unchecked.
type exampleCase struct {
	Name                             string
	ServiceModel                     string
	Alpha, Beta, Gamma, Delta        float64
	InputTokens, OutputTokens        float64
	MaxBatchSize, MaxQueueSize       int
	Rate                             *float64
	Rates                            []float64
	TargetTTFT, TargetITL, TargetTPS float64
	Demand                           *float64
	Percentile                       float64
}

func (c exampleCase) rates() []float64 {
	if c.Rate != nil {
		return []float64{*c.Rate}
	}
	return c.Rates
}

func readExampleCases(t *testing.T, path string) []exampleCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Defaults map[string]any   `json:"defaults"`
		Cases    []map[string]any `json:"cases"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil || len(f.Cases) == 0 {
		t.Fatalf("%s: %v, %d cases", path, err, len(f.Cases))
	}
	out := make([]exampleCase, len(f.Cases))
	for i, spec := range f.Cases {
		merged := maps.Clone(f.Defaults)
		if merged == nil {
			merged = map[string]any{}
		}
		maps.Copy(merged, spec)
		b, _ := json.Marshal(merged)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields() // a key this test does not know would go unchecked
		out[i] = exampleCase{ServiceModel: "iteration", MaxQueueSize: queueing.DefaultMaxQueueSize, Percentile: 0.99}
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("%s case %d: %v", path, i+1, err)
		}
	}
	return out
}

// runExample runs "wva model <sub> -f file -o json" and decodes its n results.
func runExample(t *testing.T, sub, file string, n int) []map[string]any {
	t.Helper()
	out, stderr, code := run(t, "model", sub, "-f", file, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != n {
		t.Fatalf("want %d results: %v\n%s", n, err, out)
	}
	return rs
}

func checkCase(t *testing.T, r map[string]any, name string) {
	t.Helper()
	if r["case"] != name || r["error"] != nil {
		t.Errorf("result %v, want case %q without an error", r["case"], name)
	}
}

// field is a number of a result; missing is an error.
func field(t *testing.T, r map[string]any, key string) float64 {
	t.Helper()
	v, ok := r[key].(float64)
	if !ok {
		t.Errorf("%v: %s = %v, want a number", r["case"], key, r[key])
	}
	return v
}

// near checks got against want to a relative tolerance.
func near(t *testing.T, r map[string]any, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))) {
		t.Errorf("%v: %s = %v, want %v", r["case"], what, got, want)
	}
}

func (c exampleCase) analyzer(t *testing.T) *queueing.Analyzer {
	t.Helper()
	var m queueing.ServiceModel = queueing.Iteration{Alpha: c.Alpha, Beta: c.Beta, Gamma: c.Gamma}
	if c.ServiceModel == "linear" {
		m = queueing.Linear{Alpha: c.Alpha, Beta: c.Beta, Gamma: c.Gamma, Delta: c.Delta}
	}
	a, err := queueing.NewAnalyzer(queueing.Config{Model: m, MaxBatchSize: c.MaxBatchSize, MaxQueueSize: c.MaxQueueSize,
		Workload: queueing.Workload{InputTokens: c.InputTokens, OutputTokens: c.OutputTokens}})
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return a
}

// Formulas of docs/queueing.md §2, written out here: δ̄ (iteration), the
// prefill time at a batch of n, and λmax = 0.999·μ(N) with μ(N) = N/τ(N).
func (c exampleCase) work() float64 {
	i, o := c.InputTokens, c.OutputTokens
	return c.Beta*(i+o)/(o+1) + c.Gamma*(i+o/2)
}

func (c exampleCase) prefillMs(n float64) float64 {
	if c.ServiceModel == "linear" {
		return c.Gamma + c.Delta*c.InputTokens*n
	}
	return c.Alpha + n*c.work() + (c.Beta+c.Gamma)*c.InputTokens
}

func (c exampleCase) maxRateRPS() float64 {
	n, i, o := float64(c.MaxBatchSize), c.InputTokens, c.OutputTokens
	tau := c.prefillMs(n) + (o-1)*(c.Alpha+c.Beta*n) // linear
	if c.ServiceModel != "linear" {
		tau = c.prefillMs(n) + o*(c.Alpha+n*c.work()+c.Beta+c.Gamma*(i+(o+1)/2))
	}
	return 0.999 * 1000 * n / tau
}

// checkSize compares a "model size" result with queueing's Size of the
// case, then with the formulas.
func checkSize(t *testing.T, r map[string]any, c exampleCase) {
	a := c.analyzer(t)
	s, err := a.Size(queueing.Targets{TTFTMs: c.TargetTTFT, ITLMs: c.TargetITL, TPS: c.TargetTPS})
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	want := map[string]float64{
		"rate_ttft_rps": s.RateTTFTRPS, "rate_itl_rps": s.RateITLRPS, "rate_star_rps": s.RateStarRPS,
		"capacity_rps": s.CapacityRPS, "ttft_ms": s.AtStar.TTFTMs, "itl_ms": s.AtStar.ITLMs, "wait_ms": s.AtStar.WaitMs,
		"avg_batch_size": s.AtStar.AvgBatchSize, "utilization": s.AtStar.Utilization,
		"target_ttft_ms": c.TargetTTFT, "target_itl_ms": c.TargetITL, "target_tps": c.TargetTPS,
	}
	if c.TargetTTFT > 0 {
		want["ttft_attainment"], _ = a.TTFTAttainment(s.RateStarRPS, c.TargetTTFT)
	}
	for key, v := range want {
		near(t, r, key, field(t, r, key), v, 1e-12)
	}
	checkSizeFormulas(t, r, c)
	checkReplicas(t, r, c)
}

// checkSizeFormulas checks a "model size" result against docs/queueing.md
// §2–3: λmax = 0.999·μ(N), λ* is the smaller rate, the binding target is
// met at λ* (to the search's tolerance) and the other within its target,
// binding "" only at λmax, and for the iteration model TTFT = W + prefill(B̄).
func checkSizeFormulas(t *testing.T, r map[string]any, c exampleCase) {
	near(t, r, "max_rate_rps", field(t, r, "max_rate_rps"), c.maxRateRPS(), 1e-9)
	star := field(t, r, "rate_star_rps")
	near(t, r, "rate_star_rps", star, math.Min(field(t, r, "rate_ttft_rps"), field(t, r, "rate_itl_rps")), 0)
	binding, _ := r["binding"].(string)
	if (binding == "") != (star >= field(t, r, "max_rate_rps")) {
		t.Errorf("%s: binding %q at rate_star_rps %v", c.Name, binding, star)
	}
	for _, l := range []struct {
		name        string
		target, got float64
	}{{"ttft", c.TargetTTFT, field(t, r, "ttft_ms")}, {"itl", c.TargetITL, field(t, r, "itl_ms")}} {
		switch {
		case binding == l.name:
			near(t, r, l.name+" at rate_star_rps (binding)", l.got, l.target, 1e-4)
		case l.target > 0 && l.got > l.target:
			t.Errorf("%s: %s %v above its target %v", c.Name, l.name, l.got, l.target)
		}
	}
	if c.ServiceModel != "linear" {
		near(t, r, "ttft_ms = wait + prefill(avg batch)", field(t, r, "ttft_ms"),
			field(t, r, "wait_ms")+c.prefillMs(field(t, r, "avg_batch_size")), 1e-9)
	}
}

// checkReplicas: ceil(max(demand, TPS/o) / capacity), printed only with a
// demand or a TPS target (docs/queueing.md §3).
func checkReplicas(t *testing.T, r map[string]any, c exampleCase) {
	if c.Demand == nil && c.TargetTPS == 0 {
		if r["replicas"] != nil {
			t.Errorf("%s: replicas %v without a demand", c.Name, r["replicas"])
		}
		return
	}
	demand := c.TargetTPS / c.OutputTokens
	if c.Demand != nil {
		demand = math.Max(demand, *c.Demand)
	}
	near(t, r, "replicas", field(t, r, "replicas"), math.Ceil(demand/field(t, r, "capacity_rps")), 0)
}

// checkAnalyze compares a "model analyze" row with queueing's Analyze of
// the case at its rate and with docs/queueing.md §1–2: X = λ(1 − p_K),
// U = B̄/N, S = B̄/X, TTFT = W + prefill(B̄), tokens/s = X·o.
func checkAnalyze(t *testing.T, r map[string]any, c exampleCase) {
	rate := c.Rates[0]
	a := c.analyzer(t)
	m, err := a.Analyze(rate)
	if err != nil {
		t.Fatalf("%s at %v: %v", c.Name, rate, err)
	}
	p, _ := a.TTFTPercentile(rate, c.Percentile)
	for key, want := range map[string]float64{
		"rate_rps": rate, "throughput_rps": m.ThroughputRPS, "ttft_ms": m.TTFTMs, "itl_ms": m.ITLMs, "wait_ms": m.WaitMs,
		"response_time_ms": m.RespTimeMs, "service_time_ms": m.ServTimeMs, "avg_batch_size": m.AvgBatchSize,
		"avg_in_system": m.AvgInSystem, "avg_queue_length": m.AvgQueued, "utilization": m.Utilization,
		"blocking_probability": m.Blocking, "max_rate_rps": m.MaxRateRPS, "tokens_per_second": m.TokensPerSec,
		"percentile": c.Percentile,
	} {
		near(t, r, key, field(t, r, key), want, 1e-12)
	}
	if v, ok := r["ttft_percentile_ms"]; !math.IsInf(p, 1) || !ok || v != nil { // null: more than 1 − p blocked
		near(t, r, "ttft_percentile_ms", field(t, r, "ttft_percentile_ms"), p, 1e-12)
	}
	x, b := field(t, r, "throughput_rps"), field(t, r, "avg_batch_size")
	near(t, r, "max_rate_rps", field(t, r, "max_rate_rps"), c.maxRateRPS(), 1e-9)
	near(t, r, "throughput_rps = rate·(1 − blocking)", x, rate*(1-field(t, r, "blocking_probability")), 1e-12)
	near(t, r, "utilization = avg batch / N", field(t, r, "utilization"), b/float64(c.MaxBatchSize), 1e-12)
	near(t, r, "service_time_ms = avg batch / throughput", field(t, r, "service_time_ms"), 1000*b/x, 1e-9)
	near(t, r, "tokens_per_second = throughput·o", field(t, r, "tokens_per_second"), x*c.OutputTokens, 1e-12)
	if c.ServiceModel != "linear" {
		near(t, r, "ttft_ms = wait + prefill(avg batch)", field(t, r, "ttft_ms"), field(t, r, "wait_ms")+c.prefillMs(b), 1e-9)
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
