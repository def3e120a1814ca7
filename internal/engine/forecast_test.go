package engine

import (
	"math"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestForecastHolt: one step of Holt's method and its prediction interval,
// by hand. After 10 then 16 rps 30 s apart: e = 6, ℓ = 10 + 0.5·6 = 13,
// b = 0.1·6 = 0.6, σ² = 0.2·36 = 7.2. Two steps ahead: mean 13 + 2·0.6 =
// 14.2; Var = 7.2·(1 + 1·(0.25 + 0.05·2 + 0.01·2·3/6)) = 9.792.
func TestForecastHolt(t *testing.T) {
	var f Forecast
	f.observe(t0, 10)
	f.observe(t0.Add(30*time.Second), 16)
	f.observe(t0.Add(30*time.Second), 99) // same instant: ignored
	if f.Level != 13 || math.Abs(f.Trend-0.6) > 1e-12 || math.Abs(f.Variance-7.2) > 1e-12 || f.StepSeconds != 30 {
		t.Fatalf("state %+v", f)
	}
	mean, up := f.quantile(60, 0.5)
	if math.Abs(mean-14.2) > 1e-9 || math.Abs(up-14.2) > 1e-9 {
		t.Errorf("median forecast %v / %v, want 14.2", mean, up)
	}
	_, up = f.quantile(60, 0.95)
	if want := 14.2 + 1.6448536269514722*math.Sqrt(9.792); math.Abs(up-want) > 1e-9 {
		t.Errorf("95 %% forecast %v, want %v", up, want)
	}
}

// TestProvisioningLearned: two replicas ordered at t0 (seen at t0+30 s)
// become ready at t0+60 s and t0+90 s: 60 s, then 60 + 0.3·(90 − 60) = 69 s.
func TestProvisioningLearned(t *testing.T) {
	var p Provisioning
	p.observe(t0, 1, 1)
	p.observe(t0.Add(30*time.Second), 3, 1)
	p.observe(t0.Add(60*time.Second), 3, 2)
	if p.Seconds != 60 || p.Samples != 1 {
		t.Fatalf("after one: %+v", p)
	}
	p.observe(t0.Add(90*time.Second), 3, 3)
	if math.Abs(p.Seconds-69) > 1e-9 || p.Samples != 2 || len(p.Starts) != 0 {
		t.Errorf("after two: %+v", p)
	}
	// A scale-down of replicas still starting forgets them.
	p.observe(t0.Add(120*time.Second), 5, 3)
	p.observe(t0.Add(150*time.Second), 4, 3)
	if len(p.Starts) != 1 {
		t.Errorf("starts %v, want one left", p.Starts)
	}
}

// TestSpareLeavesWithoutWindow: the forecast's spare is not recorded in
// the scale-down window, so the next cycle may drop it; a steady target
// is held for the window.
func TestSpareLeavesWithoutWindow(t *testing.T) {
	for _, tc := range []struct {
		spare, want int
	}{{2, 3}, {0, 5}} {
		e := New(nil)
		c := &cycle{e: e, cfg: Config{}.withDefaults(), now: t0}
		vs := &variantState{key: "k", v: &Variant{CurrentReplicas: 3}, target: 5, modelTarget: 5, capTarget: -1, spare: tc.spare}
		c.stabilize(vs)
		c.now = t0.Add(30 * time.Second)
		vs = &variantState{key: "k", v: &Variant{CurrentReplicas: 5}, target: 3, modelTarget: 3, capTarget: -1}
		c.stabilize(vs)
		if vs.target != tc.want {
			t.Errorf("spare %d: target %d after the window, want %d (%v)", tc.spare, vs.target, tc.want, vs.notes)
		}
	}
}

// TestGatewayDemand: the model-level arrival rate counts requests of pods
// already removed; a smaller or invalid one is ignored.
func TestGatewayDemand(t *testing.T) {
	for _, tc := range []struct {
		gateway, want float64
	}{{9, 9}, {2, 4}, {math.NaN(), 4}, {math.Inf(1), 4}} {
		s := snapshot(ModeModelOnly, variant("v", "H100").params(tuner.Params{Alpha: 6, Beta: 0.02, Gamma: 0.0005}).
			pods(0.1, 0, 0.1, 0).traffic(2, 512, 128, 100, 20))
		s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 50}
		s.Models[0].ArrivalRateRPS = tc.gateway
		s.Config.DisableForecast = true
		p := plan(t, nil, s)
		if got := p.Models[0].DemandRPS; got != tc.want {
			t.Errorf("gateway %v: demand %v, want %v", tc.gateway, got, tc.want)
		}
	}
}
