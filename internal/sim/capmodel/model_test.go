package capmodel_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/capmodel"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestFleetOf: the capacity model sees the scenario's server, router and
// workload — classes with their SLOs, priorities and shares, shared
// prefixes, the arrival process.
func TestFleetOf(t *testing.T) {
	v := simtest.LinearVariant()
	sc := scenario.Scenario{Name: "f", DurationSeconds: 60,
		Gateway: scenario.Gateway{Router: "least-loaded", QueueThreshold: 7, TimeoutSeconds: 30,
			Weights: &scenario.ScorerWeights{KV: 2, Queue: 3, Batch: 0, Prefix: 4}, Saturation: &scenario.Saturation{QueueThreshold: 5, KVThreshold: 0.9}},
		Models: []scenario.Model{{Name: "m", SLO: scenario.SLO{TTFTMs: 1000, ITLMs: 50},
			Workload: scenario.Workload{Arrival: "gamma", CV: 2, Rate: scenario.Rate{Pattern: "constant", RPS: 1},
				Input: scenario.Tokens{Mean: 300}, Output: scenario.Tokens{Mean: 20}, PrefixGroups: 3, PrefixTokens: 500,
				Classes: []scenario.Class{{Name: "critical", Share: 0.25, SLO: scenario.SLO{TTFTMs: 200, ITLMs: 20}, Priority: 2},
					{Name: "batch", Share: 0.75, SLO: scenario.SLO{TTFTMs: 5000, ITLMs: 100}, Sheddable: true}}},
			Variants: []scenario.Variant{v}}}}
	d := sc.WithDefaults()
	f, err := capmodel.Fleet(&d, 0, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if f.Replicas != 3 || f.Server != sim.ServerConfig(&d.Models[0].Variants[0]) || f.Arrivals != (capacity.Arrivals{Kind: "gamma", CV: 2}) {
		t.Errorf("fleet %+v", f)
	}
	r := f.Router
	sat := r.Saturation
	r.Saturation = nil
	want := capacity.Router{KV: 2, Queue: 3, Batch: 0, Prefix: 4, QueueThreshold: 7, TimeoutSeconds: 30}
	if r != want || sat == nil || *sat != (capacity.Saturation{QueueThreshold: 5, KVThreshold: 0.9}) {
		t.Errorf("router %+v, saturation %+v; want %+v", r, sat, want)
	}
	checkDraws(t, f.Workload)
	if _, err := capmodel.Fleet(&d, 0, 1, 1); err == nil {
		t.Error("a variant that does not exist was accepted")
	}
}

// checkDraws: every request is of one of TestFleetOf's classes, in their
// shares, with a prefix group.
func checkDraws(t *testing.T, w capacity.Workload) {
	rng := rand.New(rand.NewPCG(1, 1))
	critical, n := 0, 20000
	for range n {
		var q capacity.Request
		w.Draw(rng, &q)
		class := q
		class.Input, class.Output, class.Prefix, class.PrefixTokens = 0, 0, 0, 0
		switch class {
		case capacity.Request{TTFTMs: 200, ITLMs: 20, Priority: 2}:
			critical++
		case capacity.Request{TTFTMs: 5000, ITLMs: 100, Priority: -1, Sheddable: true}:
		default:
			t.Fatalf("request %+v belongs to no class", q)
		}
		if q.Prefix < 0 || q.Prefix > 2 || q.PrefixTokens != min(500, q.Input-1) || q.Input != 300 || q.Output != 20 {
			t.Fatalf("request %+v: want prefix group 0–2 with min(500, input − 1) tokens", q)
		}
	}
	if share := float64(critical) / float64(n); math.Abs(share-0.25) > 0.01 {
		t.Errorf("critical share %.3f, want 0.25", share)
	}
}
