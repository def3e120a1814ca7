package scenario

import (
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestWarmUp: after w seconds of the initial rate, the warm scenario's
// rate at t is the original's at t − w, for every pattern.
func TestWarmUp(t *testing.T) {
	const w = 1800
	for _, r := range []Rate{
		{Pattern: "constant", RPS: 3},
		{Pattern: "staircase", Steps: []Step{{0, 2}, {600, 5}, {1200, 10}}},
		{Pattern: "staircase", Steps: []Step{{300, 4}}}, // no traffic before the first step
		{Pattern: "ramp", From: 3, To: 12, StartSeconds: 100, EndSeconds: 1200},
		{Pattern: "diurnal", Mean: 7.5, Amplitude: 3, PeriodSeconds: 3600},
		{Pattern: "spikes", RPS: 6, Spikes: []Spike{{AtSeconds: 0, DurationSeconds: 60, RPS: 9}, {AtSeconds: 600, DurationSeconds: 180, RPS: 14}}},
	} {
		t.Run(r.Pattern, func(t *testing.T) {
			sc := warmUpScenario(r)
			got, err := WarmUp(sc, w)
			if err != nil {
				t.Fatal(err)
			}
			if got.DurationSeconds != sc.DurationSeconds+w {
				t.Errorf("duration %v, want %v", got.DurationSeconds, sc.DurationSeconds+w)
			}
			wr := got.Models[0].Workload.Rate
			for x := 0.0; x <= got.DurationSeconds; x += 7.5 {
				if want := r.At(math.Max(x-w, 0)); math.Abs(wr.At(x)-want) > 1e-9 {
					t.Fatalf("rate at %v s: %v, want the original's at %v s, %v", x, wr.At(x), math.Max(x-w, 0), want)
				}
			}
			if sc.Models[0].Workload.Rate.At(700) != r.At(700) {
				t.Error("WarmUp changed its argument")
			}
		})
	}
}

func TestWarmUpRefuses(t *testing.T) {
	base := warmUpScenario(Rate{Pattern: "constant", RPS: 3})
	trace := base
	trace.Models = []Model{base.Models[0]}
	trace.Models[0].Workload.Trace = "t.csv"
	counted := base
	counted.Models = []Model{base.Models[0]}
	counted.Models[0].Workload.NumRequests = 100
	for _, tc := range []struct {
		name string
		sc   Scenario
		w    float64
		want string
	}{
		{"negative", base, -1, "must be 0 to 86400 seconds, got -1"},
		{"NaN", base, math.NaN(), "got NaN"},
		{"too long", base, 1e9, "must be 0 to 86400 seconds"},
		{"a trace", trace, 60, `model "m" replays a trace`},
		{"numRequests", counted, 60, `model "m" stops after numRequests 100`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := WarmUp(tc.sc, tc.w); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func warmUpScenario(r Rate) Scenario {
	return Scenario{Name: "s", DurationSeconds: 2400, Models: []Model{{
		Name: "m", SLO: SLO{TTFTMs: 1000, ITLMs: 50},
		Workload: Workload{Arrival: "poisson", Rate: r,
			Input: Tokens{Dist: "constant", Mean: 100}, Output: Tokens{Dist: "constant", Mean: 100}},
		Variants: []Variant{{Name: "v", Accelerator: "H100", Cost: 1, Params: tuner.Params{Alpha: 5, Beta: 0.05, Gamma: 0.001}}},
	}}}
}
