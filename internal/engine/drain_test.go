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
