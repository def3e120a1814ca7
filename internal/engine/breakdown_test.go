package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestBreakdown attributes hand-built cycles' levels: the model's target
// (need + spare + transient), what arbitration left and why, the target
// before the scale-down window and the desired count after it.
func TestBreakdown(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		model, spare, transient int
		arb                     int
		why                     Reason
		pre, final              int
		held                    bool
		want                    Breakdown
	}{
		{"the model alone", 3, 0, 0, 3, ReasonConsensus, 3, 3, false, Breakdown{Need: 3}},
		{"need, spare, safety block, window", 3, 1, 0, 4, ReasonSafetyBlock, 4, 5, false,
			Breakdown{Need: 2, Spare: 1, SafetyBlock: 1, Window: 1}},
		{"a capacity veto", 3, 0, 0, 5, ReasonCapacityVeto, 5, 5, false, Breakdown{Need: 3, Saturation: 2}},
		{"a saturation scale-up", 2, 0, 0, 3, ReasonSaturationScaleUp, 3, 3, false, Breakdown{Need: 2, Saturation: 1}},
		{"a backlog's transient replicas", 5, 1, 2, 5, ReasonModelScaleUp, 5, 5, false, Breakdown{Need: 2, Spare: 1, Backlog: 2}},
		// maxReplicas 4 takes from the top: the saturation's extra, then
		// one of the two spares.
		{"capped at maxReplicas", 5, 2, 0, 6, ReasonConsensus, 4, 4, false, Breakdown{Need: 3, Spare: 1}},
		{"raised to minReplicas", 1, 0, 0, 1, ReasonModelScaleDown, 2, 2, false, Breakdown{Need: 1, Other: 1}},
		{"a scale-down the window defers", 2, 0, 0, 2, ReasonModelScaleDown, 2, 4, false, Breakdown{Need: 2, Window: 2}},
		// The window restores what a cap took: the need comes first.
		{"the window above a capped level", 5, 0, 0, 5, ReasonModelScaleUp, 3, 4, false, Breakdown{Need: 4}},
		{"a provisional size that may only add", 2, 0, 0, 4, ReasonModelSteady, 4, 4, false, Breakdown{Need: 2, Other: 2}},
		{"unsized", -1, 0, 0, 3, ReasonSaturationSteady, 3, 3, false, Breakdown{Unsized: 3}},
		{"held", 3, 0, 0, 3, ReasonHoldMetrics, 3, 3, true, Breakdown{Held: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := &variantState{modelTarget: tc.model, spare: tc.spare, transient: tc.transient,
				arbTarget: tc.arb, arbReason: tc.why, preWindow: tc.pre, target: tc.final, held: tc.held}
			got := vs.breakdown()
			if got != tc.want {
				t.Fatalf("breakdown %+v, want %+v", got, tc.want)
			}
			if got.Total() != float64(tc.final) {
				t.Errorf("the parts sum to %v, want the desired %d", got.Total(), tc.final)
			}
		})
	}
}

// TestBreakdownInThePlan: model-only mode keeps four saturated replicas
// whose demand (0.01 rps) one replica serves (TestModelOnlyKeepsSaturatedReplicas):
// one for the demand now, three the safety block's. At the variant's cost
// of 10 a replica the model's cost after the plan, 40, splits 10 and 30,
// and the explanation prices the headroom: 30, 300 % of the need's.
func TestBreakdownInThePlan(t *testing.T) {
	b := variant("v", "H100").params(h100Params).pods(0.95, 0, 0.95, 0, 0.95, 0, 0.95, 0).traffic(0.01, 512, 128, 100, 20)
	s := snapshot(ModeModelOnly, b)
	s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
	p := plan(t, nil, s)
	d := decision(t, p, "v")
	if d.Desired != 4 || d.Reason != ReasonSafetyBlock || d.ModelTarget != 1 {
		t.Fatalf("%d (%s), model target %d; want 4 (safety-block), 1: %s", d.Desired, d.Reason, d.ModelTarget, d.Explanation)
	}
	if d.Breakdown == nil || *d.Breakdown != (Breakdown{Need: 1, SafetyBlock: 3}) {
		t.Errorf("breakdown %+v, want need 1, safety block 3", d.Breakdown)
	}
	cost := s.Models[0].Variants[0].cost()
	m := p.Models[0]
	if m.CostBreakdown == nil || *m.CostBreakdown != (Breakdown{Need: cost, SafetyBlock: 3 * cost}) || m.CostAfter != 4*cost {
		t.Errorf("cost breakdown %+v of %v, want need %v, safety block %v", m.CostBreakdown, m.CostAfter, cost, 3*cost)
	}
	if why := fmt.Sprintf("of 4 replica(s): 1 for the demand now, +3 safety block; the headroom costs %.3g, 300 %% of the need's", 3*cost); !strings.Contains(d.Explanation, why) {
		t.Errorf("explanation %q, want %q in it", d.Explanation, why)
	}
}
