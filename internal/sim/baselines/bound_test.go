package baselines

import (
	"slices"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// boundScenario: a chat model (listed first, so that taking the models
// in turn would serve it first) on H100 (2 per replica, cost 2) or A100
// (1.5, cost 2.5), and a 70B model that runs only on H100 (1 request/s per
// replica, cost 3), with 4 H100 in the inventory; capacities are
// filled in by hand (linear in the fleet) instead of measured.
func boundScenario(big, chat float64, inventory bool) (*bound, *sim.View) {
	mk := func(name, acc string, cost float64) scenario.Variant {
		return scenario.Variant{Name: name, Accelerator: acc, AcceleratorsPerReplica: 1, Cost: cost, MaxReplicas: 10}
	}
	sc := &scenario.Scenario{Inventory: map[string]int{"H100": 4}, Models: []scenario.Model{
		{Name: "chat", Workload: scenario.Workload{Rate: scenario.Rate{Pattern: "constant", RPS: chat}}, Variants: []scenario.Variant{mk("h100", "H100", 2), mk("a100", "A100", 2.5)}},
		{Name: "big", Workload: scenario.Workload{Rate: scenario.Rate{Pattern: "constant", RPS: big}}, Variants: []scenario.Variant{mk("h100", "H100", 3)}},
	}}
	if !inventory {
		sc.Inventory = nil
	}
	b := newBound(sc)
	for m, per := range [][]float64{{2, 1.5}, {1}} {
		for j, c := range per {
			for n := 1; n <= 64; n *= 2 {
				b.curves[m][j].Preset(n, c*float64(n))
			}
		}
	}
	v := &sim.View{Scenario: sc}
	for m, mod := range sc.Models {
		for _, x := range mod.Variants {
			v.Variants = append(v.Variants, sim.VariantView{Model: m, Name: x.Name, Cost: x.Cost, MaxReplicas: x.MaxReplicas})
		}
	}
	return b, v
}

// TestBoundSharesScarceInventory: alone, the chat model's cheapest fleet
// is 2 H100 (cost 4, against 2 A100 at 5); with the 70B model needing all
// 4 H100 for 3.5 requests/s, the bound moves chat to A100 (total 12 + 5)
// rather than starve the 70B model. When the 70B model needs more than
// the inventory (5.5 requests/s: 6 H100), both get the same, largest,
// share of their demand that fits, and the inventory is never exceeded.
func TestBoundSharesScarceInventory(t *testing.T) {
	for _, tc := range []struct {
		big, chat float64
		want      []int // chat/h100, chat/a100, big/h100
	}{
		{3.5, 3, []int{0, 2, 4}},
		{1.5, 3, []int{2, 0, 2}}, // room for both on H100: the cheapest
		{5.5, 3, []int{0, 2, 4}},
	} {
		b, v := boundScenario(tc.big, tc.chat, true)
		got := b.provision(v, func(int) float64 { return 60 }, 0)
		if got[0] != tc.want[0] || got[1] != tc.want[1] || got[2] != tc.want[2] {
			t.Errorf("demand %v, %v: replicas %v, want %v", tc.big, tc.chat, got, tc.want)
		}
		if h100 := got[0] + got[2]; h100 > 4 {
			t.Errorf("demand %v, %v: %d H100 of 4", tc.big, tc.chat, h100)
		}
	}
}

// TestBoundShortModelAlone: without an inventory, a model whose variants
// cannot carry its demand even at their maxima (50 requests/s on at most
// 10 replicas of 1) gets its maxima, and the other model all it needs: a
// model short of its own replicas does not make the others share.
func TestBoundShortModelAlone(t *testing.T) {
	b, v := boundScenario(50, 3, false)
	if got := b.provision(v, func(int) float64 { return 60 }, 0); !slices.Equal(got, []int{2, 0, 10}) {
		t.Errorf("replicas %v, want [2 0 10]", got)
	}
}

// TestBoundAttainmentValidated: the bounds' attainment is a share below 1.
func TestBoundAttainmentValidated(t *testing.T) {
	for _, bad := range []string{"1", "-0.5", "7"} {
		_, err := scenario.ParseScenario([]byte(strings.Replace(simtest.ValidScenario, "durationSeconds: 600", "durationSeconds: 600\nautoscalers: {clairvoyantAttainment: "+bad+"}", 1)))
		if err == nil || !strings.Contains(err.Error(), "autoscalers.clairvoyantAttainment: must be a share in (0, 1)") {
			t.Errorf("clairvoyantAttainment %s: %v", bad, err)
		}
	}
}
