package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const shortScenario = `
name: short
durationSeconds: 300
models:
  - name: m
    slo: {ttftMs: 2000, itlMs: 50}
    workload:
      rate: {pattern: staircase, steps: [{atSeconds: 0, rps: 1}, {atSeconds: 150, rps: 3}]}
      input: {dist: normal, mean: 512, sd: 128, min: 16, max: 2048}
      output: {dist: normal, mean: 128, sd: 32, min: 8, max: 512}
    variants:
      - name: v
        accelerator: H100
        cost: 2
        params: {alpha: 6, beta: 0.0003, gamma: 0.00001}
        kvBlocks: 512
        minReplicas: 1
        maxReplicas: 6
        initialReplicas: 1
        startupSeconds: 30
`

func TestSimulate(t *testing.T) {
	file := tempFile(t, "s.yaml", shortScenario)
	out := t.TempDir()
	stdout, stderr, code := run(t, "simulate", "-f", file, "--autoscalers", "wva,hpa,keda,oracle,static:2", "--out", out, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil || len(rs) != 5 {
		t.Fatalf("want 5 results: %v", err)
	}
	for _, r := range rs {
		for _, k := range []string{"autoscaler", "arrived", "completed", "failed", "effectiveThroughputRps", "sloAttainment",
			"ttftMs", "itlMs", "gpuHours", "cost", "costPer1kWithinSlo", "scalingActions", "series"} {
			if _, ok := r[k]; !ok {
				t.Errorf("%v lacks %q", r["autoscaler"], k)
			}
		}
		if r["arrived"].(float64) < 300 {
			t.Errorf("%v: only %v requests", r["autoscaler"], r["arrived"])
		}
	}
	for _, f := range []string{"results.json", "summary.csv", "series-wva.csv", "series-static-2.csv", "sim-wva.png", "sim-wva.svg", "sim-overlay.png"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	table, _, code := run(t, "simulate", "-f", file, "--autoscalers", "hpa", "--no-files")
	if code != 0 || !strings.Contains(table, "GOODPUT") || !strings.Contains(table, "hpa") {
		t.Errorf("table:\n%s", table)
	}
}

func TestSimulateBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--scenario", "nope", "--no-files"}, `no built-in scenario "nope"`},
		{[]string{"simulate", "--autoscalers", "wva,vpa", "--no-files"}, `--autoscalers: unknown autoscaler "vpa"`},
		{[]string{"simulate", "-f", "/nope.yaml"}, "--file: open /nope.yaml"},
		{[]string{"simulate", "-f", tempFile(t, "b.yaml", "name: x\ndurationSeconds: -1\nmodels: []\n")}, "durationSeconds: must be > 0"},
		{[]string{"simulate", "-o", "xml"}, `--output: must be "table" or "json"`},
		{[]string{"simulate", "--repeat", "0"}, "--repeat: must be 1 to 1000"},
		{[]string{"simulate", "--warmup", "-60", "--no-files"}, "--warmup: must be 0 to 86400 seconds, got -60"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSimulateWarmUp: --warmup runs the scenario that much longer, with
// more requests, and says so.
func TestSimulateWarmUp(t *testing.T) {
	file := tempFile(t, "s.yaml", shortScenario)
	arrived := func(args ...string) float64 {
		stdout, stderr, code := run(t, append([]string{"simulate", "-f", file, "--autoscalers", "static:2", "--no-files", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rs []struct {
			Arrived float64 `json:"arrived"`
		}
		if err := json.Unmarshal([]byte(stdout), &rs); err != nil || len(rs) != 1 {
			t.Fatalf("want 1 result: %v", err)
		}
		return rs[0].Arrived
	}
	cold, warm := arrived(), arrived("--warmup", "300") // +300 s at 1 request/s: ~900 against ~600
	if !(warm > cold*1.3) {
		t.Errorf("arrivals: %v with a 300-s warm-up, %v without", warm, cold)
	}
}

// TestSimulateRepeat: --repeat runs consecutive seeds and summarises them.
func TestSimulateRepeat(t *testing.T) {
	file := tempFile(t, "s.yaml", shortScenario)
	out := t.TempDir()
	stdout, stderr, code := run(t, "simulate", "-f", file, "--autoscalers", "hpa,static:3", "--repeat", "3", "--seed", "4", "--out", out, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ss []struct {
		Autoscaler string                               `json:"autoscaler"`
		Seeds      []int                                `json:"seeds"`
		SLO        struct{ Mean, SD, Min, Max float64 } `json:"sloAttainmentPct"`
	}
	if err := json.Unmarshal([]byte(stdout), &ss); err != nil || len(ss) != 2 {
		t.Fatalf("want 2 summaries: %v\n%s", err, stdout)
	}
	for _, s := range ss {
		if len(s.Seeds) != 3 || s.Seeds[0] != 4 || s.Seeds[2] != 6 {
			t.Errorf("%s: seeds %v, want 4–6", s.Autoscaler, s.Seeds)
		}
		if !(s.SLO.Min <= s.SLO.Mean && s.SLO.Mean <= s.SLO.Max && s.SLO.Max <= 100 && s.SLO.Min > 0) {
			t.Errorf("%s: SLO stats %+v", s.Autoscaler, s.SLO)
		}
	}
	if fi, err := os.Stat(filepath.Join(out, "seeds.csv")); err != nil || fi.Size() == 0 {
		t.Errorf("seeds.csv: %v", err)
	}
}

// TestSimulateWriteTraces: --write-traces writes a replayable trace per
// model.
func TestSimulateWriteTraces(t *testing.T) {
	file := tempFile(t, "s.yaml", shortScenario)
	traces := t.TempDir()
	if _, stderr, code := run(t, "simulate", "-f", file, "--write-traces", traces); code != 0 {
		t.Fatalf("--write-traces: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(traces, "m.csv"))
	if err != nil || !strings.HasPrefix(string(data), "seconds,input_tokens,output_tokens,class,prefix\n") || strings.Count(string(data), "\n") < 300 {
		t.Errorf("trace m.csv: %v, %d lines", err, strings.Count(string(data), "\n"))
	}
}

// TestSimulateSweep: --sweep writes the points, the costs at equal
// attainment and the frontier plot, with the documented JSON keys; bad
// sweep flags are refused before anything runs.
func TestSimulateSweep(t *testing.T) {
	file := tempFile(t, "s.yaml", shortScenario)
	out := t.TempDir()
	stdout, stderr, code := run(t, "simulate", "-f", file, "--sweep", "--repeat", "2", "--autoscalers", "hpa,clairvoyant",
		"--grid", "hpa.kvTarget=0.4,0.8", "--grid", "hpa.queueTarget=3", "--grid", "clairvoyant.margin=0.5", "--attainment", "90,99", "--out", out, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "seeds", "points", "atAttainment"} {
		if _, ok := r[k]; !ok {
			t.Errorf("no %q in %v", k, r)
		}
	}
	points := r["points"].([]any)
	if len(points) != 5 { // hpa: kvTarget {0.4, 0.5, 0.8} × queueTarget {3}; clairvoyant {0, 0.5}
		t.Errorf("%d points", len(points))
	}
	for _, k := range []string{"autoscaler", "label", "default", "sloAttainmentPct", "cost", "frontier"} {
		if _, ok := points[0].(map[string]any)[k]; !ok {
			t.Errorf("a point lacks %q", k)
		}
	}
	if at := r["atAttainment"].([]any); len(at) != 4 {
		t.Errorf("atAttainment %v", at)
	}
	for _, f := range []string{"sweep.csv", "attainment.csv", "sweep.json", "frontier.png", "frontier.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, bad := range [][]string{
		{"--grid", "hpa.kvTarget=0.5"},            // needs --sweep
		{"--sweep", "--grid", "hpa.kvTarget=2"},   // out of range
		{"--sweep", "--grid", "nope=1"},           // unknown knob
		{"--sweep", "--attainment", "0"},          // not a percentage
		{"--sweep", "--parallel", "0"},            // no workers
		{"--sweep", "--autoscalers", "wva,bogus"}, // unknown autoscaler
	} {
		_, stderr, code := run(t, append([]string{"simulate", "-f", file, "--no-files"}, bad...)...)
		if code == 0 || stderr == "" {
			t.Errorf("%v: exit %d", bad, code)
		}
	}
}
