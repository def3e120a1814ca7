package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestDrainPlan: two ready replicas with 300 requests waiting in all. The
// transient addition is ceil((B_H/H − (M₁ − λ))/μ) with B_H = B + (λ −
// M₀)·H, μ a replica's full-batch rate, M₀ = 2μ (ready) and M₁ = target·μ;
// H is the default provisioning time, 120 s. A backlog the steady fleet
// drains in time adds nothing.
func TestDrainPlan(t *testing.T) {
	params := tuner.Params{Alpha: 6, Beta: 0.02, Gamma: 0.0005}
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: params.Alpha, Beta: params.Beta, Gamma: params.Gamma},
		Workload: queueing.Workload{InputTokens: 512, OutputTokens: 128}, MaxBatchSize: DefaultMaxBatchSize, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	mu := a.MaxRate()
	for _, tc := range []struct {
		name    string
		waiting float64
	}{{"large backlog", 3000}, {"small backlog", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			rate := 0.45 * mu // per pod
			s := snapshot(ModeModelOnly, variant("v", "H100").params(params).pods(0.3, tc.waiting/2, 0.3, tc.waiting/2).traffic(rate, 512, 128, 100, 20))
			s.Models[0].SLO = &SLO{TTFTMs: 2000, ITLMs: 200}
			s.Config.DisableForecast = true
			p := plan(t, nil, s)
			d := decision(t, p, "v")
			lambda := 2 * rate
			sz, err := a.Size(queueing.Targets{TTFTMs: 2000, ITLMs: 200})
			if err != nil {
				t.Fatal(err)
			}
			steady := int(math.Ceil(lambda / sz.CapacityRPS * (1 - 1e-9)))
			h := DefaultProvisioning
			atH := math.Max(tc.waiting+(lambda-2*mu)*h, 0)
			extra := max(int(math.Ceil((atH/h-(float64(steady)*mu-lambda))/mu)), 0)
			if d.Desired != steady+extra {
				t.Errorf("desired %d, want %d steady + %d transient: %s", d.Desired, steady, extra, d.Explanation)
			}
			if (extra > 0) != strings.Contains(d.Explanation, "drain:") {
				t.Errorf("extra %d but explanation %q", extra, d.Explanation)
			}
			if tc.waiting == 3000 && extra == 0 {
				t.Errorf("a backlog of 3000 needs a transient addition (μ = %.3g rps)", mu)
			}
		})
	}
}

// TestDrainLimited: in limited mode the backlog is planned too (before, the
// drain planner skipped limited mode while the saturation analyzer left the
// queues to it, so a backlog had no planner at all), and the transient
// replicas come out of the inventory the allocation left free, the model of
// higher priority first. Two models of the same shape, each with 8 000
// requests waiting; the expected counts are derived as in TestDrainPlan.
func TestDrainLimited(t *testing.T) {
	params := tuner.Params{Alpha: 6, Beta: 0.02, Gamma: 0.0005}
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: params.Alpha, Beta: params.Beta, Gamma: params.Gamma},
		Workload: queueing.Workload{InputTokens: 512, OutputTokens: 128}, MaxBatchSize: DefaultMaxBatchSize, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	mu := a.MaxRate()
	sz, err := a.Size(queueing.Targets{TTFTMs: 2000, ITLMs: 200})
	if err != nil {
		t.Fatal(err)
	}
	// Each model's two replicas are its steady fleet: λ is 1.5 replicas'
	// capacity within the SLO.
	rate := 0.75 * sz.CapacityRPS
	lambda := 2 * rate
	steady := int(math.Ceil(lambda / sz.CapacityRPS * (1 - 1e-9)))
	if steady != 2 {
		t.Fatalf("steady %d, want 2", steady)
	}
	h := DefaultProvisioning
	const waiting = 8000
	atH := math.Max(waiting+(lambda-2*mu)*h, 0)
	extra := int(math.Ceil((atH/h - (float64(steady)*mu - lambda)) / mu))
	if extra < 2 {
		t.Fatalf("the case needs a transient addition of at least 2, got %d", extra)
	}
	build := func(inventory int) *Snapshot {
		s := &Snapshot{Time: t0, Mode: ModeHybrid, Optimizer: OptimizerLimited, Inventory: map[string]int{"H100": inventory}}
		for i, name := range []string{"low", "high"} {
			v := variant(name, "H100").params(params).pods(0.3, waiting/2, 0.3, waiting/2).traffic(rate, 512, 128, 100, 20).minMax(1, 100).build()
			s.Models = append(s.Models, Model{ID: name, Namespace: "prod", Priority: 2 - i, SLO: &SLO{TTFTMs: 2000, ITLMs: 200}, Variants: []Variant{v}})
		}
		s.Config.DisableForecast = true
		return s
	}
	for _, tc := range []struct {
		name      string
		inventory int
		high, low int
	}{
		{"room for both", 2 * (steady + extra), steady + extra, steady + extra},
		{"room for the higher priority", 2*steady + extra, steady + extra, steady},
		{"room for part of one", 2*steady + extra - 1, steady + extra - 1, steady},
		{"no room", 2 * steady, steady, steady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, nil, build(tc.inventory))
			for name, want := range map[string]int{"high": tc.high, "low": tc.low} {
				d := decision(t, p, name)
				if d.Desired != want {
					t.Errorf("%s: desired %d, want %d (steady %d, drain +%d, inventory %d): %s", name, d.Desired, want, steady, extra, tc.inventory, d.Explanation)
				}
				if (want > steady) != strings.Contains(d.Explanation, "drain:") {
					t.Errorf("%s: desired %d of steady %d but explanation %q", name, want, steady, d.Explanation)
				}
			}
		})
	}
}
