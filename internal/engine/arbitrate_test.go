package engine

import (
	"cmp"
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
			g := &satGroup{cfg: defaultSaturation, variants: []*variantState{vs}, unit: func(*variantState) float64 { return 1 },
				capKV: 4, nonSat: 4}
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
			g := &satGroup{cfg: defaultSaturation, variants: []*variantState{vs}, unit: func(*variantState) float64 { return 1 },
				capKV: 4, nonSat: 4}
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
