package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// TestReleaseForAnotherModel (limited mode, model-only, no forecast): on 4
// H100 "big" (H100 only) runs 2 replicas and needs 3; "small" runs one
// H100 replica and three ready L40S ones, which carry its load. The
// allocator moves small off the H100, but a recommendation of 1 from a
// minute ago would hold it there for the 300-s window: the H100 is
// released at once because big's scale-up waits for it. Without that
// wait, or with small's L40S replicas not ready, it stays.
func TestReleaseForAnotherModel(t *testing.T) {
	params := testParams
	a := testAnalyzer(t)
	sz, err := a.Size(queueing.Targets{TTFTMs: 2000, ITLMs: 200})
	if err != nil {
		t.Fatal(err)
	}
	c := sz.CapacityRPS
	build := func(bigNeeds3 bool, l40sReady int, smallRate float64) *Snapshot {
		bigRate := 0.8 * c // per pod: 1.6 c on 2, needs 2
		if bigNeeds3 {
			bigRate = 1.25 * c // 2.5 c: needs 3
		}
		big := variant("big-h100", "H100").cost(4).params(params).pods(0.3, 0, 0.3, 0).traffic(bigRate, 512, 128, 100, 20).minMax(1, 3).build()
		sh := variant("small-h100", "H100").cost(4).params(params).pods(0.2, 0).traffic(smallRate, 512, 128, 100, 20).minMax(0, 3).build()
		sl := variant("small-l40s", "L40S").cost(1).params(params).pods(0.2, 0, 0.2, 0, 0.2, 0).traffic(smallRate, 512, 128, 100, 20).minMax(0, 3).build()
		sl.ReadyReplicas = l40sReady
		s := &Snapshot{Time: t0, Mode: ModeModelOnly, Optimizer: OptimizerLimited, Inventory: map[string]int{"H100": 3, "L40S": 3}}
		s.Models = []Model{
			{ID: "big", Namespace: "prod", Priority: 1, SLO: &SLO{TTFTMs: 2000, ITLMs: 200}, Variants: []Variant{big}},
			{ID: "small", Namespace: "prod", Priority: 2, SLO: &SLO{TTFTMs: 2000, ITLMs: 200}, Variants: []Variant{sh, sl}},
		}
		s.Config.DisableForecast = true
		return s
	}
	for _, tc := range []struct {
		name       string
		bigNeeds3  bool
		l40sReady  int
		smallRate  float64
		want       int
		wantNote   string
		wantReason Reason
	}{
		{"big waits: released", true, 3, 0.125 * c, 0, "released at once", ""},
		// A move that frees nothing anyone waits for keeps the window.
		{"nobody waits: held", false, 3, 0.125 * c, 1, "deferred", ReasonStabilized},
		{"big waits but the L40S replicas are not ready: held", true, 0, 0.125 * c, 1, "deferred", ReasonStabilized},
		// The inventory shrank to 2 H100 under the 3 that run: more than
		// the inventory runs, but no scale-up waits.
		{"over the inventory, nobody scales up: held", false, 3, 0.125 * c, 1, "deferred", ReasonStabilized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(nil)
			e.state.Recommendations[variantKey("prod", "small", "small-h100")] = []Recommendation{{Time: t0.Add(-time.Minute), Replica: 1}}
			s := build(tc.bigNeeds3, tc.l40sReady, tc.smallRate)
			if strings.HasPrefix(tc.name, "over the inventory") {
				s.Inventory["H100"] = 2
			}
			p := plan(t, e, s)
			d := decision(t, p, "small-h100")
			if d.Desired != tc.want || !strings.Contains(d.Explanation, tc.wantNote) || (tc.wantReason != "" && d.Reason != tc.wantReason) {
				t.Errorf("small-h100: desired %d (%s), want %d with %q: %s", d.Desired, d.Reason, tc.want, tc.wantNote, d.Explanation)
			}
			if b := decision(t, p, "big-h100"); tc.bigNeeds3 && b.Desired != 3 {
				t.Errorf("big: desired %d, want 3: %s", b.Desired, b.Explanation)
			}
		})
	}
}

// TestLimitedExplainsAMove: on 3 H100, "big" (H100 only) needs all three;
// "small" would be cheapest on one H100 (1 against 2 on L40S) and moves
// to the L40S for 1 more, which its explanation says.
func TestLimitedExplainsAMove(t *testing.T) {
	a := testAnalyzer(t)
	sz, err := a.Size(queueing.Targets{TTFTMs: 2000, ITLMs: 200})
	if err != nil {
		t.Fatal(err)
	}
	c := sz.CapacityRPS
	big := variant("big-h100", "H100").cost(4).params(testParams).pods(0.3, 0, 0.3, 0).traffic(1.25*c, 512, 128, 100, 20).minMax(1, 3).build()
	sh := variant("small-h100", "H100").cost(1).params(testParams).minMax(0, 3).build()
	sl := variant("small-l40s", "L40S").cost(2).params(testParams).pods(0.2, 0).traffic(0.5*c, 512, 128, 100, 20).minMax(0, 3).build()
	s := &Snapshot{Time: t0, Mode: ModeModelOnly, Optimizer: OptimizerLimited, Inventory: map[string]int{"H100": 3, "L40S": 3}}
	s.Models = []Model{
		{ID: "big", Namespace: "prod", Priority: 2, SLO: &SLO{TTFTMs: 2000, ITLMs: 200}, Variants: []Variant{big}},
		{ID: "small", Namespace: "prod", Priority: 1, SLO: &SLO{TTFTMs: 2000, ITLMs: 200}, Variants: []Variant{sh, sl}},
	}
	s.Config.DisableForecast = true
	p := plan(t, nil, s)
	if d := decision(t, p, "big-h100"); d.Desired != 3 {
		t.Errorf("big: desired %d, want 3: %s", d.Desired, d.Explanation)
	}
	d := decision(t, p, "small-l40s")
	if d.Desired != 1 || !strings.Contains(d.Explanation, "moved off H100 to make room for other models (+1 cost)") {
		t.Errorf("small-l40s: desired %d, want 1 with the move explained: %s", d.Desired, d.Explanation)
	}
	if d := decision(t, p, "small-h100"); d.Desired != 0 {
		t.Errorf("small-h100: desired %d, want 0: %s", d.Desired, d.Explanation)
	}
}
