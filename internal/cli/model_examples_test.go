// TestShippedExamples: the example case files the docs point to, checked
// against internal/queueing and against the formulas of docs/queueing.md
// written out here.

package cli

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

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
