package baselines

import (
	"slices"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// TestControlLaw checks the SLO-aware guide's law by hand (θ_up 0.55,
// θ_dn 0.40).
func TestControlLaw(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		n, r int
		want float64
	}{
		{1.1, 4, 4, 8},  // 4 + ceil(4 (1.1/0.55 − 1))
		{1.1, 4, 2, 4},  // two still starting: c = 0.5, 4 + ceil(0)
		{0.6, 3, 3, 4},  // 3 + ceil(3 × 0.0909)
		{0.2, 4, 4, 2},  // 4 − floor(4 × 0.5)
		{0, 5, 5, 0},    // no traffic: to the minimum
		{0.5, 4, 4, 4},  // within the band
		{2, 0, 0, 0},    // nothing provisioned
		{0.56, 1, 0, 2}, // none ready: c = 1
	} {
		if got := controlLaw(tc.s, 0.55, 0.40, tc.n, tc.r); got != tc.want {
			t.Errorf("s %v n %d r %d: %v, want %v", tc.s, tc.n, tc.r, got, tc.want)
		}
	}
}

// TestKEDAQueueDecide: the queue path's HPA on hand-made views. Two
// replicas and 40 running requests (target 16 each): ceil(40 / 16) = 3. At
// 80 running 15 s later the guide's 300-s scale-up window holds 3 (the
// lowest recommendation of the window); 300 s after the first it orders 5.
// The count is spread cheapest first: the cheap variant's 2 first.
func TestKEDAQueueDecide(t *testing.T) {
	sc := &scenario.Scenario{Models: []scenario.Model{{Name: "m", Variants: []scenario.Variant{
		{Name: "dear", Cost: 4, MinReplicas: 0, MaxReplicas: 8},
		{Name: "cheap", Cost: 1, MinReplicas: 1, MaxReplicas: 2},
	}}}}
	d := sc.WithDefaults()
	k := newKEDAQueue(&d)
	var scrapes []sim.EPPGaugeScrape
	view := func(now, running float64, cheap, dear int) *sim.View {
		scrapes = append(scrapes, sim.EPPGaugeScrape{T: now - 15, Running: running})
		return &sim.View{Now: now, Scenario: &d, EPP: sim.NewEPPMetrics(&d, now, 15, [][]sim.EPPGaugeScrape{scrapes}), Variants: []sim.VariantView{
			{Model: 0, Name: "dear", Cost: 4, MaxReplicas: 8, Current: dear, Ready: dear},
			{Model: 0, Name: "cheap", Cost: 1, MinReplicas: 1, MaxReplicas: 2, Current: cheap, Ready: cheap}}}
	}
	for _, step := range []struct {
		now, running      float64
		cheap, dear       int
		wantDear, wantChp int
	}{
		{100, 40, 2, 0, 1, 2},
		{115, 80, 2, 1, 1, 2},
		{400, 80, 2, 1, 3, 2},
		{415, 17, 2, 3, 3, 2}, // 17/80: down, but the 300-s down window holds 5
	} {
		got := k.Decide(view(step.now, step.running, step.cheap, step.dear))
		if got[0] != step.wantDear || got[1] != step.wantChp {
			t.Errorf("t %v running %v: dear %d cheap %d, want %d %d", step.now, step.running, got[0], got[1], step.wantDear, step.wantChp)
		}
	}
}

// TestKEDAEPPKeepsTheSplit: a change of a model's count moves only that
// change: with one replica on each of two variants and the count
// unchanged, nothing moves (no pod is killed to start a cheaper one); one
// more goes to the cheapest variant with a free accelerator (the cheap
// one's type is used up by another model), one less comes from the
// dearest.
func TestKEDAEPPKeepsTheSplit(t *testing.T) {
	vs := []sim.VariantView{
		{Model: 0, Name: "dear", Accelerator: "A100", AcceleratorsPerReplica: 1, Cost: 4, MaxReplicas: 8, Current: 1},
		{Model: 0, Name: "cheap", Accelerator: "H100", AcceleratorsPerReplica: 1, Cost: 1, MaxReplicas: 8, Current: 1},
		{Model: 1, Name: "other", Accelerator: "H100", AcceleratorsPerReplica: 1, Cost: 1, MinReplicas: 3, MaxReplicas: 3, Current: 3},
	}
	sc := &scenario.Scenario{Inventory: map[string]int{"H100": 4}, Models: []scenario.Model{{Name: "a"}, {Name: "b"}}}
	v := &sim.View{Scenario: sc, Variants: vs}
	idx := modelOrder(v)[0]
	for _, tc := range []struct {
		delta int
		want  []int
	}{
		{0, []int{1, 1, 3}},
		{1, []int{2, 1, 3}}, // H100 full (1 + 3 of 4): the A100 variant
		{-1, []int{0, 1, 3}},
		{-2, []int{0, 0, 3}},
	} {
		out := []int{1, 1, 3}
		adjust(v, idx, tc.delta, out)
		if !slices.Equal(out, tc.want) {
			t.Errorf("change %+d: %v, want %v", tc.delta, out, tc.want)
		}
	}
	// With room on H100 the cheap variant takes it; beyond every free
	// accelerator the rest is asked for anyway (pending pods).
	sc.Inventory["H100"] = 5
	out := []int{1, 1, 3}
	adjust(v, idx, 1, out)
	if !slices.Equal(out, []int{1, 2, 3}) {
		t.Errorf("room on H100: %v", out)
	}
	sc.Inventory = map[string]int{"H100": 4, "A100": 1}
	out = []int{1, 1, 3}
	adjust(v, idx, 2, out)
	if !slices.Equal(out, []int{1, 3, 3}) {
		t.Errorf("no room anywhere: %v, want the cheapest asked for", out)
	}
}
