package cli

import (
	"encoding/json"
	"math"
	"os"
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
		Queueing    *struct {
			CapacityPerReplicaRps float64 `json:"capacityPerReplicaRps"`
		} `json:"queueing"`
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

// TestPlanSaturationCases runs the shipped saturation cases and checks each
// decision against refSaturation, an independent transcription of the WVA
// saturation guide's algorithm (docs/references.md), not the engine's code.
func TestPlanSaturationCases(t *testing.T) {
	got := desired(runPlan(t, "-f", "../../examples/plan/saturation-cases.yaml"))
	// The pods of examples/plan/saturation-cases.yaml: KV usage and waiting
	// requests per replica.
	cases := map[string]struct{ kv, queue []float64 }{
		"up-kv":       {[]float64{0.75, 0.76}, []float64{2, 2}},
		"up-queue":    {[]float64{0.5, 0.5}, []float64{3, 3}},
		"steady":      {[]float64{0.5, 0.5}, []float64{1, 1}},
		"down-safe":   {[]float64{0.20, 0.30, 0.25}, []float64{1, 1, 1}},
		"down-unsafe": {[]float64{0.60, 0.65}, []float64{0, 0}},
		"single":      {[]float64{0.05}, []float64{0}},
	}
	// By hand, with τ_kv 0.80, τ_q 5, ε_kv 0.10, ε_q 3:
	//   up-kv:       spare KV (0.05 + 0.04)/2 = 0.045 < 0.10          → 2 + 1 = 3
	//   up-queue:    spare queue (2 + 2)/2 = 2 < 3                     → 3
	//   steady:      spare 0.30 and 4; one replica left would carry KV
	//                1.0, spare 0.80 − 1.0 < 0.10                      → 2
	//   down-safe:   spare 0.55 and 4; two left carry 0.75/2 = 0.375,
	//                spare 0.425 ≥ 0.10, queue 3/2 → spare 3.5 ≥ 3     → 3 − 1 = 2
	//   down-unsafe: spare 0.175 and 5; one left carries 1.25           → 2
	//   single:      one replica is never removed                      → 1
	hand := map[string]int{"up-kv": 3, "up-queue": 3, "steady": 2, "down-safe": 2, "down-unsafe": 2, "single": 1}
	for name, c := range cases {
		want := refSaturation(c.kv, c.queue)
		if want != hand[name] {
			t.Fatalf("%s: the reference gives %d, the hand computation %d", name, want, hand[name])
		}
		if got[name] != want {
			t.Errorf("%s: desired %d, want %d", name, got[name], want)
		}
	}
}

// refSaturation is the saturation analyzer of the WVA saturation guide,
// steps 1–5, for one variant with the default thresholds: +1 replica when
// the average spare capacity of the non-saturated replicas falls below a
// trigger (or none is left), −1 when the load of the non-saturated replicas
// spread over one replica fewer still leaves both spares at their triggers
// (and at least two are non-saturated), else no change.
func refSaturation(kv, queue []float64) int {
	const tauKV, tauQ, epsKV, epsQ = 0.80, 5.0, 0.10, 3.0
	var n, loadKV, loadQ, spareKV, spareQ float64
	for i := range kv {
		if kv[i] >= tauKV || queue[i] >= tauQ {
			continue // saturated
		}
		n++
		loadKV += kv[i]
		loadQ += queue[i]
		spareKV += tauKV - kv[i]
		spareQ += tauQ - queue[i]
	}
	replicas := len(kv)
	if n == 0 || spareKV/n < epsKV || spareQ/n < epsQ {
		return replicas + 1
	}
	if n >= 2 && tauKV-loadKV/(n-1) >= epsKV && tauQ-loadQ/(n-1) >= epsQ {
		return replicas - 1
	}
	return replicas
}

// closedFormRate is the largest arrival rate (requests/s) one replica of
// the iteration model carries within both targets, by the closed form of
// the WVA queueing-model guide §9 — a light-traffic approximation written
// here from the published formulas, independent of internal/queueing:
//
//	δ      = β(i + o)/(o + 1) + γ(i + o/2)       work per request per iteration
//	T_iter = α/(1 − ρ),  ρ = λ(o + 1)δ
//	TTFT   = T_iter + (β + γ)i
//	ITL    = T_iter + β + γ(i + (o + 1)/2)
//
// so each target bounds T_iter, hence ρ ≤ 1 − α/T_max, hence λ.
func closedFormRate(alpha, beta, gamma, in, out, ttft, itl float64) float64 {
	delta := beta*(in+out)/(out+1) + gamma*(in+out/2)
	tMax := math.Min(ttft-(beta+gamma)*in, itl-beta-gamma*(in+(out+1)/2))
	rho := 1 - alpha/tMax
	return rho / ((out + 1) * delta) * 1000 // per ms → per s
}

// cheapestCover enumerates chat's allocations under the inventory (5 H100 at
// cost 40, at least one; 4 A100 at cost 15) and returns the cheapest that
// carries 60 requests/s.
func cheapestCover(capH, capA float64) (h, a int) {
	h, a = -1, -1
	best := math.Inf(1)
	for nh := 1; nh <= 5; nh++ {
		for na := 0; na <= 4; na++ {
			if cost := 40*float64(nh) + 15*float64(na); float64(nh)*capH+float64(na)*capA >= 60 && cost < best {
				h, a, best = nh, na, cost
			}
		}
	}
	return h, a
}

// TestPlanLimitedDerived derives the counts of examples/plan/limited.yaml
// by hand: per-replica capacities from the closed form, then the cheapest
// cover of each model's demand under the inventory, by priority.
func TestPlanLimitedDerived(t *testing.T) {
	// chat (i = 1024, o = 256, TTFT ≤ 300 ms, ITL ≤ 25 ms), 60 requests/s:
	//   H100 (α 6, β 0.012, γ 0.000035): δ = 0.012·1280/257 + 0.000035·1152
	//     = 0.10009 ms; ITL bounds T_iter ≤ 25 − 0.012 − 0.000035·1152.5
	//     = 24.948 ms (TTFT allows 287.7), ρ ≤ 1 − 6/24.948 = 0.7595,
	//     λ ≤ 0.7595/(257·0.10009 ms) = 29.5 requests/s.
	//   A100 (α 9, β 0.025, γ 0.00008): δ = 0.21667 ms; T_iter ≤ 24.883 ms,
	//     ρ ≤ 0.6383, λ ≤ 11.5 requests/s.
	//   Cheapest cover of 60 with at least one H100 (its minReplicas): 1 H100
	//   + 3 A100 = 29.5 + 34.4 = 63.9 at cost 40 + 45 = 85; 1 + 2 carries
	//   only 52.5, 2 H100 + 1 A100 costs 95, 3 H100 costs 120.
	// batch (i = 4000, o = 800, TTFT ≤ 2000 ms, ITL ≤ 60 ms) on H100, 24/s:
	//   δ = 0.22591 ms; T_iter ≤ 59.834 ms, ρ ≤ 0.8997, λ ≤ 4.97 requests/s;
	//   ⌈24/4.97⌉ = 5 H100, but chat took 1 of the 5: PriorityExhaustive
	//   gives batch the 4 left.
	// idle: no traffic and minReplicas 0 → 0.
	chatH := closedFormRate(6, 0.012, 0.000035, 1024, 256, 300, 25)
	chatA := closedFormRate(9, 0.025, 0.00008, 1024, 256, 300, 25)
	batchH := closedFormRate(6, 0.012, 0.000035, 4000, 800, 2000, 60)
	for _, c := range []struct {
		name      string
		got, hand float64
	}{{"chat H100", chatH, 29.5}, {"chat A100", chatA, 11.5}, {"batch H100", batchH, 4.97}} {
		if math.Abs(c.got-c.hand) > 0.01*c.hand {
			t.Fatalf("%s: the closed form gives %.3g, the hand computation %.3g", c.name, c.got, c.hand)
		}
	}
	bestH, bestA := cheapestCover(chatH, chatA)
	batch := min(int(math.Ceil(24/batchH)), 5-bestH)
	want := map[string]int{"chat-h100": bestH, "chat-a100": bestA, "batch-h100": batch, "idle-a100": 0}
	if bestH != 1 || bestA != 3 || batch != 4 {
		t.Fatalf("derivation: %v, want 1 H100 + 3 A100 for chat and 4 H100 for batch", want)
	}
	p := runPlan(t, "-f", "../../examples/plan/limited.yaml")
	closed := map[string]float64{"chat-h100": chatH, "chat-a100": chatA, "batch-h100": batchH}
	for _, v := range p.Variants {
		if v.Desired != want[v.Variant] {
			t.Errorf("%s: desired %d, want %d", v.Variant, v.Desired, want[v.Variant])
		}
		// The exact queue waits a little longer than the closed form's one
		// iteration, so its capacity is a little lower: within 5 %.
		cf, ok := closed[v.Variant]
		if !ok || v.Queueing == nil {
			continue
		}
		if c := v.Queueing.CapacityPerReplicaRps; c > cf*1.001 || c < cf*0.95 {
			t.Errorf("%s: capacity %.4g requests/s, the closed form %.4g", v.Variant, c, cf)
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
	// llama's cost after the plan, 70, is the H100 replica the model needs
	// (40) and the two A100 replicas the safety block keeps (2 × 15): the
	// table says so, and the A100's explanation prices them.
	if want := "cost 70.00 by the rule that asks for it: need 40.00, safetyBlock 30.00"; !strings.Contains(out, want) {
		t.Errorf("table without %q:\n%s", want, out)
	}
	if want := "of 2 replica(s): 0 for the demand now, +2 safety block; the headroom costs 30"; !strings.Contains(out, want) {
		t.Errorf("table without %q:\n%s", want, out)
	}
}

// TestPlanReplayExample: the state in examples/plan/replay.yaml (what the
// controller serves at /debug/snapshot) decides: the scale-down window
// defers llama-h100's scale-down and mistral-l40s holds its last good
// decision; the same snapshot without its state decides otherwise.
func TestPlanReplayExample(t *testing.T) {
	want := map[string]int{"llama-h100": 4, "mistral-l40s": 5}
	if got := desired(runPlan(t, "-f", "../../examples/plan/replay.yaml")); got["llama-h100"] != want["llama-h100"] || got["mistral-l40s"] != want["mistral-l40s"] {
		t.Errorf("with its state: %v, want %v", got, want)
	}
	b, err := os.ReadFile("../../examples/plan/replay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, ok := strings.Cut(string(b), "\nstate:")
	if !ok {
		t.Fatal("the example has no state")
	}
	if got := desired(runPlan(t, "-f", tempFile(t, "bare.yaml", doc))); got["llama-h100"] >= 4 || got["mistral-l40s"] != 3 {
		t.Errorf("without its state: %v, want a scale-down and a hold at the 3 replicas", got)
	}
	bad := strings.Replace(string(b), "lastGood: 5", "lastGood: -5", 1)
	if _, stderr, code := run(t, "plan", "-f", tempFile(t, "bad.yaml", bad)); code == 0 || !strings.Contains(stderr, "state.models[1].variants[0].lastGood: must be ≥ 0, got -5") {
		t.Errorf("a negative lastGood: exit %d, %s", code, stderr)
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
		{[]string{"plan", "-f", bad}, "models[0].variants[0].maxReplicas: must be between minReplicas (3) and 1048576, got 1"},
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
