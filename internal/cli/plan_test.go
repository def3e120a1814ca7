package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

type planJSON struct {
	Variants []struct {
		Model       string `json:"model"`
		Variant     string `json:"variant"`
		Current     int    `json:"current"`
		Desired     int    `json:"desired"`
		Action      string `json:"action"`
		Reason      string `json:"reason"`
		Explanation string `json:"explanation"`
	} `json:"variants"`
	Models []struct {
		Model      string `json:"model"`
		SLOSource  string `json:"sloSource"`
		ModelError string `json:"modelError"`
	} `json:"models"`
}

func runPlan(t *testing.T, args ...string) planJSON {
	t.Helper()
	out, stderr, code := run(t, append([]string{"plan", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p planJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return p
}

func desired(p planJSON) map[string]int {
	m := map[string]int{}
	for _, v := range p.Variants {
		m[v.Variant] = v.Desired
	}
	return m
}

// TestPlanSeedCases runs the shipped seed cases: the decisions of the issue.
func TestPlanSeedCases(t *testing.T) {
	got := desired(runPlan(t, "-f", "../../examples/plan/seed-cases.yaml"))
	want := map[string]int{"up-kv": 3, "up-queue": 3, "steady": 2, "down-safe": 2, "down-unsafe": 2, "single": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: desired %d, want %d", k, got[k], v)
		}
	}
}

func TestPlanExamples(t *testing.T) {
	p := runPlan(t, "-f", "../../examples/plan/snapshot.yaml")
	reasons := map[string]string{}
	for _, v := range p.Variants {
		reasons[v.Variant] = v.Reason
		if v.Explanation == "" {
			t.Errorf("%s has no explanation", v.Variant)
		}
	}
	for k, v := range map[string]string{"llama-8b-a100": "safety-block", "mistral-l40s": "saturation-scale-down", "granite-l4": "scale-to-zero"} {
		if reasons[k] != v {
			t.Errorf("%s: reason %q, want %q", k, reasons[k], v)
		}
	}
	l := desired(runPlan(t, "-f", "../../examples/plan/limited.yaml"))
	if l["chat-a100"] != 3 || l["chat-h100"] != 1 || l["batch-h100"] != 4 || l["idle-a100"] != 0 {
		t.Errorf("limited: %v", l)
	}
	// The same snapshot in capacity-only mode: the saturation analyzer alone.
	c := runPlan(t, "-f", "../../examples/plan/snapshot.yaml", "--mode", "capacity-only")
	for _, v := range c.Variants {
		if strings.HasPrefix(v.Reason, "model-") || v.Reason == "safety-block" {
			t.Errorf("capacity-only decision %s for %s", v.Reason, v.Variant)
		}
	}
	out, _, code := run(t, "plan", "-f", "../../examples/plan/snapshot.yaml")
	if code != 0 || !strings.Contains(out, "REASON") || !strings.Contains(out, "safety block") {
		t.Errorf("table:\n%s", out)
	}
}

func TestPlanBadInput(t *testing.T) {
	bad := tempFile(t, "s.yaml", `
mode: hybrid
models:
  - id: m
    variants:
      - name: v
        accelerator: H100
        minReplicas: 3
        maxReplicas: 1
        currentReplicas: 1
        readyReplicas: 1
`)
	unknown := tempFile(t, "u.yaml", "models: []\nturbo: true\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan"}, "--file is required"},
		{[]string{"plan", "-f", bad}, "models[0].variants[0].maxReplicas: must be ≥ minReplicas (3), got 1"},
		{[]string{"plan", "-f", unknown}, `unknown field "turbo"`},
		{[]string{"plan", "-f", "../../examples/plan/snapshot.yaml", "--mode", "fast"}, `mode: must be "capacity-only", "model-only" or "hybrid", got "fast"`},
		{[]string{"plan", "-f", "/nope.yaml"}, "--file: open /nope.yaml"},
		{[]string{"plan", "-f", "../../examples/plan/snapshot.yaml", "-o", "xml"}, `--output: must be "table" or "json"`},
	} {
		_, stderr, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}
