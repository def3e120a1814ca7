package engine

import (
	"cmp"
	"strings"
	"testing"
	"time"
)

// TestHybridMatrix checks the hybrid matrix (docs/engine.md §5) row by row on a variant with 4
// replicas. The saturation group has four non-saturated replicas at KV 0.2:
// removing one or two is safe, removing three is not (fewer than two left).
func TestHybridMatrix(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cap, model  int
		unsafeGroup bool // the group's load needs every replica: no scale-down is safe
		want        int
		reason      Reason
	}{
		{"capacity up, model down: capacity veto", 5, 2, false, 5, ReasonCapacityVeto},
		{"capacity same, model down, safe: follow the model", 4, 2, false, 2, ReasonModelScaleDown},
		{"capacity same, model down, unsafe: safety block", 4, 2, true, 4, ReasonSafetyBlock},
		{"capacity same, model down too far: safety block", 4, 1, false, 4, ReasonSafetyBlock},
		{"capacity up, model same: scale up", 6, 4, false, 6, ReasonSaturationScaleUp},
		{"capacity same, model up: scale up", 4, 7, false, 7, ReasonModelScaleUp},
		{"both up: the larger", 5, 7, false, 7, ReasonConsensus},
		{"both down: the larger", 3, 2, false, 3, ReasonConsensus},
		{"both same: no change", 4, 4, false, 4, ReasonConsensus},
		{"capacity down, model same: no change", 3, 4, false, 4, ReasonModelSteady},
		{"capacity down, model up: the model", 3, 6, false, 6, ReasonModelScaleUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := &modelState{m: &Model{ID: "m"}}
			v := &Variant{Name: "v", Accelerator: "H100", CurrentReplicas: 4, ReadyReplicas: 4}
			vs := &variantState{model: ms, v: v, capTarget: tc.cap, modelTarget: tc.model, detail: &ModelDetail{}}
			g := &satGroup{cfg: defaultSaturation, down: defaultSaturation, variants: []*variantState{vs}, unit: func(*variantState) float64 { return 1 },
				capKV: 4, nonSat: 4, nonSatDown: 4}
			g.d.Replicas, g.d.LoadKV = 4, 0.8
			if tc.unsafeGroup {
				// 2.6 over the two replicas left is 1.3 each: above τ_kv − ε_kv.
				g.d.LoadKV = 2.6
			}
			vs.sat = g
			ms.variants = []*variantState{vs}
			c := &cycle{mode: ModeHybrid}
			c.arbitrate(ms)
			if vs.target != tc.want || vs.reason != tc.reason {
				t.Errorf("target %d (%s), want %d (%s); notes %q", vs.target, vs.reason, tc.want, tc.reason, vs.notes)
			}
		})
	}
}

// TestCalibratedModelPassesTheSafetyCheck: the model's scale-down that
// the saturation analysis finds unsafe goes through once the attainment
// feedback has seen the model meet its target at a load that tests it
// (three windows, the last within ten minutes, at or above 99 %) — unless
// a pod is saturated.
func TestCalibratedModelPassesTheSafetyCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fb        *Feedback
		saturated bool
		want      int
		reason    Reason
		target    float64 // the model's attainment target; 0: the default 0.99
	}{
		{"uncalibrated", nil, false, 4, ReasonSafetyBlock, 0},
		{"calibrated", &Feedback{Updates: 3, Observed: 0.995, Last: t0}, false, 2, ReasonModelScaleDown, 0},
		{"calibrated, a pod saturated", &Feedback{Updates: 3, Observed: 0.995, Last: t0}, true, 4, ReasonSafetyBlock, 0},
		{"two tests only", &Feedback{Updates: 2, Observed: 0.995, Last: t0}, false, 4, ReasonSafetyBlock, 0},
		{"the last test missed the target", &Feedback{Updates: 9, Observed: 0.985, Last: t0}, false, 4, ReasonSafetyBlock, 0},
		{"the last test is stale", &Feedback{Updates: 9, Observed: 0.995, Last: t0.Add(-601 * time.Second)}, false, 4, ReasonSafetyBlock, 0},
		{"the last test met the model's own target", &Feedback{Updates: 9, Observed: 0.985, Last: t0}, false, 2, ReasonModelScaleDown, 0.98},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(nil)
			ms := &modelState{m: &Model{ID: "m"}, key: "m", satCfg: defaultSaturation, attainment: cmp.Or(tc.target, DefaultAttainment)}
			if tc.fb != nil {
				e.state.Feedback["m"] = tc.fb
			}
			v := &Variant{Name: "v", Accelerator: "H100", CurrentReplicas: 4, ReadyReplicas: 4}
			vs := &variantState{model: ms, v: v, capTarget: 4, modelTarget: 2, detail: &ModelDetail{}}
			vs.pods = []*Pod{{Name: "p", KVCacheUsage: 0.3}}
			if tc.saturated {
				vs.pods[0].KVCacheUsage = 0.95
			}
			g := &satGroup{cfg: defaultSaturation, down: defaultSaturation, variants: []*variantState{vs}, unit: func(*variantState) float64 { return 1 },
				capKV: 4, nonSat: 4, nonSatDown: 4}
			g.d.Replicas, g.d.LoadKV = 4, 2.6 // unsafe: see TestHybridMatrix
			vs.sat = g
			ms.variants = []*variantState{vs}
			c := &cycle{e: e, mode: ModeHybrid, now: t0, cfg: Config{}.withDefaults()}
			c.arbitrate(ms)
			if vs.target != tc.want || vs.reason != tc.reason {
				t.Errorf("target %d (%s), want %d (%s); notes %q", vs.target, vs.reason, tc.want, tc.reason, vs.notes)
			}
		})
	}
}

// TestHybridFallsBack: without a model target the capacity decides, and
// without a capacity signal the model does.
func TestHybridFallsBack(t *testing.T) {
	ms := &modelState{m: &Model{ID: "m"}}
	v := &Variant{Name: "v", CurrentReplicas: 2}
	a := &variantState{model: ms, v: v, capTarget: 3, modelTarget: -1}
	b := &variantState{model: ms, v: v, capTarget: -1, modelTarget: 1, detail: &ModelDetail{}}
	ms.variants = []*variantState{a, b}
	(&cycle{mode: ModeHybrid}).arbitrate(ms)
	if a.target != 3 || a.reason != ReasonSaturationScaleUp || b.target != 1 || b.reason != ReasonModelScaleDown {
		t.Errorf("a %d %s, b %d %s", a.target, a.reason, b.target, b.reason)
	}
}

// sloMissSnapshot: two ready replicas of an unprofiled variant (no
// parameters, tuning off: the model cannot size it) at KV 0.2 and no
// queue, so the saturation analysis sees no trouble, each pod's window
// holding requests of which ttftIn and itlIn are within the targets.
func sloMissSnapshot(at time.Time, current int, ttftIn, itlIn, requests float64) *Snapshot {
	v := variant("a100", "A100").pods(0.2, 0, 0.2, 0).traffic(4, 1024, 256, 40, 15)
	if current > 0 {
		v.replicas(current, 2)
	}
	s := snapshot(ModeHybrid, v.histograms(ttftIn, itlIn, requests))
	s.Time = at
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	return s
}

// TestSLOMissColdStart: before the model can size a variant, with no
// replica starting, a window that misses the attainment target blocks a
// scale-down (the saturation analysis, seeing KV 0.2 and no queue, would
// remove one), and one that misses it by 3 × its budget or more scales the
// ready replicas R by 1 / a_obs: ⌈R / a_obs⌉, at most 2R. By hand, R = 2
// and the default target 0.99 (trigger: 3 % missed).
func TestSLOMissColdStart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ttft, itl   float64 // of 100 requests a pod
		attainment  float64 // the model's target (0: the default)
		want        int     // desired; 0: not the SLO-miss rule
		wantInNote  string
		withParams  bool
		fewRequests bool
	}{
		{name: "75 % within the SLO: ⌈2 / 0.75⌉ = 3", ttft: 100, itl: 75, want: 3, wantInNote: "75.0 % of 200 requests"},
		{name: "TTFT 90 % × ITL 90 % = 81 %: ⌈2 / 0.81⌉ = 3", ttft: 90, itl: 90, want: 3},
		{name: "60 %: ⌈2 / 0.6⌉ = 4", ttft: 100, itl: 60, want: 4},
		{name: "30 %: at most 2R = 4", ttft: 100, itl: 30, want: 4},
		{name: "nothing within: 2R = 4", ttft: 0, itl: 0, want: 4},
		{name: "97.5 % within: under the 3 % trigger, but no scale-down", ttft: 100, itl: 97.5, want: 2, wantInNote: "no scale-down"},
		{name: "99.5 % within: the saturation analysis's scale-down", ttft: 100, itl: 99.5},
		{name: "exactly 97 %: on the trigger, ⌈2 / 0.97⌉ = 3", ttft: 100, itl: 97, want: 3},
		{name: "target 0.9: 25 % missed is less than 3 × 10 %: no scale-down", ttft: 100, itl: 75, attainment: 0.9, want: 2, wantInNote: "(target 90.0 %)"},
		{name: "target 0.9: 60 % misses 40 %, ⌈2 / 0.6⌉ = 4", ttft: 100, itl: 60, attainment: 0.9, want: 4},
		{name: "a sized model decides", ttft: 100, itl: 75, withParams: true},
		{name: "fewer than 100 requests", ttft: 40, itl: 30, fewRequests: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 100.0
			if tc.fewRequests {
				n = 40
			}
			s := sloMissSnapshot(t0, 0, tc.ttft*n/100, tc.itl*n/100, n)
			if tc.attainment > 0 {
				s.Models[0].Attainment = tc.attainment
			}
			if tc.withParams {
				s.Models[0].Variants[0].Params = &h100Params
			}
			d := decision(t, plan(t, nil, s), "a100")
			if tc.want == 0 {
				if d.Reason == ReasonSLOMiss || d.Desired >= 2 && !tc.withParams {
					t.Errorf("desired %d (%s), want no SLO-miss scale-up: %s", d.Desired, d.Reason, d.Explanation)
				}
				return
			}
			if d.Desired != tc.want || d.Reason != ReasonSLOMiss || !strings.Contains(d.Explanation, tc.wantInNote) {
				t.Errorf("desired %d (%s), want %d (%s): %s", d.Desired, d.Reason, tc.want, ReasonSLOMiss, d.Explanation)
			}
		})
	}
}

// TestSLOMissWaitsForStartingReplicas: while a replica starts, and for
// feedbackSettleSeconds (90 s) after (the window still holds the misses
// of the shortage it relieves), the misses do not scale up again.
func TestSLOMissWaitsForStartingReplicas(t *testing.T) {
	e := New(nil)
	for i, step := range []struct {
		at      time.Duration
		current int
		want    int
		reason  Reason
	}{
		{0, 3, 3, ""}, // a third replica starting: the misses are its to fix
		{30 * time.Second, 0, 0, ""},
		{60 * time.Second, 0, 0, ""},
		{90 * time.Second, 0, 3, ReasonSLOMiss}, // ⌈2 / 0.75⌉
	} {
		p := plan(t, e, sloMissSnapshot(t0.Add(step.at), step.current, 100, 75, 100))
		d := decision(t, p, "a100")
		if step.reason == "" {
			if d.Reason == ReasonSLOMiss {
				t.Errorf("step %d: SLO-miss scale-up to %d while the fleet settles: %s", i, d.Desired, d.Explanation)
			}
			continue
		}
		if d.Desired != step.want || d.Reason != step.reason {
			t.Errorf("step %d: desired %d (%s), want %d (%s): %s", i, d.Desired, d.Reason, step.want, step.reason, d.Explanation)
		}
	}
}
