// Tests of "wva model capacity" and "wva model analyze --scenario".

package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallScenario: two models, one with two variants, on small KV-bound
// servers, so that a capacity search takes a fraction of a second.
const smallScenario = `
name: small
durationSeconds: 60
models:
  - name: chat
    slo: {ttftMs: 1000, itlMs: 50}
    workload:
      rate: {pattern: constant, rps: 2}
      input: {dist: normal, mean: 256, sd: 64, min: 128, max: 384}
      output: {dist: normal, mean: 128, sd: 32, min: 64, max: 192}
    variants:
      - {name: fast, accelerator: H100, cost: 2, params: {alpha: 2, beta: 0.001, gamma: 0.00002}, maxBatchSize: 256, kvBlocks: 64, blockSize: 16, maxReplicas: 8}
      - {name: slow, accelerator: L40S, cost: 1, params: {alpha: 4, beta: 0.002, gamma: 0.00004}, maxBatchSize: 256, kvBlocks: 64, blockSize: 16, maxReplicas: 8}
  - name: code
    slo: {ttftMs: 2000, itlMs: 60}
    workload:
      rate: {pattern: constant, rps: 1}
      input: {dist: normal, mean: 256, sd: 64, min: 128, max: 384}
      output: {dist: normal, mean: 128, sd: 32, min: 64, max: 192}
    variants:
      - {name: fast, accelerator: H100, cost: 2, params: {alpha: 2, beta: 0.001, gamma: 0.00002}, maxBatchSize: 256, kvBlocks: 64, blockSize: 16, maxReplicas: 8}
`

func writeSmallScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.yaml")
	if err := os.WriteFile(path, []byte(smallScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCapacityJSON: the contract's keys, one object per model and
// variant, and capacity that grows with the fleet.
// capacityJSON runs "model capacity" on the small scenario with args.
func capacityJSON(t *testing.T, path string, args ...string) []map[string]any {
	t.Helper()
	out, stderr, code := run(t, append([]string{"model", "capacity", "-f", path, "--requests", "1500", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, out)
	}
	return rs
}

func TestCapacityJSON(t *testing.T) {
	path := writeSmallScenario(t)
	get := func(args ...string) []map[string]any { t.Helper(); return capacityJSON(t, path, args...) }
	one := get()
	if len(one) != 3 {
		t.Fatalf("%d results, want 3 (chat/fast, chat/slow, code/fast)", len(one))
	}
	for _, k := range []string{"model", "variant", "replicas", "attainment", "maxRate", "maxRatePerReplica"} {
		if _, ok := one[0][k]; !ok {
			t.Errorf("key %q missing from %v", k, one[0])
		}
	}
	if one[0]["model"] != "chat" || one[1]["variant"] != "slow" || one[2]["model"] != "code" {
		t.Errorf("results out of the scenario's order: %v", one)
	}
	if one[0]["replicas"].(float64) != 1 || one[0]["attainment"].(float64) != 0.99 {
		t.Errorf("defaults: %v, want replicas 1 and attainment 0.99", one[0])
	}
	fast, slow := one[0]["maxRate"].(float64), one[1]["maxRate"].(float64)
	if !(fast > slow && slow > 0) {
		t.Errorf("fast variant %g requests/s, slow %g: want fast > slow > 0", fast, slow)
	}
	fleetJSON(t, path, one[0]["maxRate"].(float64))
}

// fleetJSON: four replicas at 0.9 carry more than four at 0.99; the
// mean-latency sizing at attainment 0.
func fleetJSON(t *testing.T, path string, fast float64) {
	get := func(args ...string) []map[string]any { t.Helper(); return capacityJSON(t, path, args...) }
	four := get("--replicas", "4", "--attainment", "0.9", "--model", "chat", "--variant", "fast")
	if len(four) != 1 {
		t.Fatalf("--model/--variant: %d results, want 1", len(four))
	}
	r := four[0]
	if r["replicas"].(float64) != 4 || r["attainment"].(float64) != 0.9 {
		t.Errorf("flags not reported: %v", r)
	}
	if got, per := r["maxRate"].(float64), r["maxRatePerReplica"].(float64); math.Abs(got-4*per) > 1e-9 || got <= 4*fast {
		t.Errorf("4 replicas at 0.9: %g requests/s (%g each); want 4 × per replica and more than 4 × one replica at 0.99 (%g)", got, per, fast)
	}
	mean := get("--attainment", "0", "--model", "code")
	if mean[0]["method"] != "mean-latency" || !(mean[0]["maxRate"].(float64) > 0) {
		t.Errorf("--attainment 0: %v, want the mean-latency sizing", mean[0])
	}
}

func TestCapacityTable(t *testing.T) {
	path := writeSmallScenario(t)
	out, stderr, code := run(t, "model", "capacity", "-f", path, "--requests", "1000", "--model", "code")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"MODEL", "MAX RATE", "PER REPLICA", "code", "fast", "99.0%", "fleet"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "[1/1] code/fast") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
}

func TestCapacityErrors(t *testing.T) {
	path := writeSmallScenario(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nmodels: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no scenario", []string{}, "-f: a scenario file is required"},
		{"both sources", []string{"-f", path, "--scenario", "staircase"}, "give one"},
		{"unknown built-in", []string{"--scenario", "nope"}, "--scenario"},
		{"missing file", []string{"-f", "/nonexistent.yaml"}, "--file"},
		{"invalid scenario", []string{"-f", bad}, "--file"},
		{"attainment above 1", []string{"-f", path, "--attainment", "1.5"}, "--attainment"},
		{"NaN attainment", []string{"-f", path, "--attainment", "NaN"}, "--attainment"},
		{"no replicas", []string{"-f", path, "--replicas", "0"}, "--replicas"},
		{"too many replicas", []string{"-f", path, "--replicas", "100000"}, "--replicas"},
		{"negative requests", []string{"-f", path, "--requests", "-1"}, "--requests"},
		{"unknown model", []string{"-f", path, "--model", "nope"}, "no variant matches"},
		{"bad output", []string{"-f", path, "-o", "yaml"}, "--output"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := run(t, append([]string{"model", "capacity"}, c.args...)...)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want a failure about %q", code, stderr, c.want)
			}
		})
	}
}

// TestAnalyzeFleet: "model analyze --scenario" reports percentiles and
// the attainment; light load meets the SLO, overload does not.
func TestAnalyzeFleet(t *testing.T) {
	path := writeSmallScenario(t)
	get := func(rate string) map[string]any {
		t.Helper()
		out, stderr, code := run(t, "model", "analyze", "--scenario", path, "--model", "chat", "--variant", "fast",
			"--replicas", "2", "--rate", rate, "--requests", "1000", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rs []map[string]any
		if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
			t.Fatalf("want a JSON array of one result: %v\n%s", err, out)
		}
		return rs[0]
	}
	light := get("0.5")
	for _, k := range []string{"attainment", "ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "replicas", "rate_rps"} {
		if _, ok := light[k]; !ok {
			t.Errorf("key %q missing from %v", k, light)
		}
	}
	if light["attainment"].(float64) < 0.99 || !(light["ttft_p50_ms"].(float64) > 0) ||
		light["ttft_p99_ms"].(float64) < light["ttft_p50_ms"].(float64) {
		t.Errorf("light load: %v", light)
	}
	heavy := get("60")
	if heavy["attainment"].(float64) > 0.5 || heavy["ttft_p99_ms"].(float64) <= light["ttft_p99_ms"].(float64) {
		t.Errorf("overload: %v (light load %v)", heavy, light)
	}
	// The built-in scenarios by name; the queueing model's flags refused.
	if _, stderr, code := run(t, "model", "analyze", "--scenario", path, "--rate", "1", "--alpha", "3"); code == 0 || !strings.Contains(stderr, "--alpha does not go with --scenario") {
		t.Errorf("--alpha with --scenario: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, "model", "analyze", "--scenario", path, "--rate", "0"); code == 0 || !strings.Contains(stderr, "--rate") {
		t.Errorf("--rate 0: exit %d, %q", code, stderr)
	}
}
