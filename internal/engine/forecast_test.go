package engine

import (
	"fmt"
	"math"
	"strings"
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

// TestProvisioningSeededFromPods: an engine that has seen none of the
// variant's scale-ups through takes its provisioning time from the pods'
// start-ups (creation to Ready), their mean over those in (0, 3600 s]: 200
// and 280 s give 240 (10 000 s, NaN and a negative one are ignored). It
// counts as one sample: the next scale-up seen through, 90 s (ordered at
// the cycle before the new replica appeared), moves it by 0.3 of the
// difference, as TestProvisioningLearned's second does. In a plan, the
// horizon is the one pod's start-up, 200 s, plus a cycle (30 s). Without start-ups the
// default (120 s) stands, and a learned time is not seeded over.
func TestProvisioningSeededFromPods(t *testing.T) {
	var p Provisioning
	if p.seed([]Pod{{}, {StartupSeconds: -5}}) || p.Samples != 0 {
		t.Fatalf("seeded without start-ups: %+v", p)
	}
	pods := []Pod{{StartupSeconds: 200}, {StartupSeconds: 280}, {StartupSeconds: 10000}, {StartupSeconds: math.NaN()}, {StartupSeconds: -1}}
	if !p.seed(pods) || p.Seconds != 240 || p.Samples != 1 {
		t.Fatalf("seeded %+v, want 240 s, one sample", p)
	}
	if p.seed([]Pod{{StartupSeconds: 30}}) || p.Seconds != 240 {
		t.Errorf("seeded over a time it had: %+v", p)
	}
	p.observe(t0, 1, 1)
	p.observe(t0.Add(30*time.Second), 2, 1)
	p.observe(t0.Add(90*time.Second), 2, 2)
	if want := 240 + 0.3*(90-240); math.Abs(p.Seconds-want) > 1e-9 || p.Samples != 2 {
		t.Errorf("after a scale-up of 90 s: %+v, want %v s", p, want)
	}
	for _, tc := range []struct {
		startups []float64
		want     float64
	}{{[]float64{200}, 230}, {nil, 150}} {
		_, plan := rampTo16(t, 0.99, 0, func(s *Snapshot) {
			for i := range s.Models[0].Variants[0].Pods {
				if i < len(tc.startups) {
					s.Models[0].Variants[0].Pods[i].StartupSeconds = tc.startups[i]
				}
			}
		})
		if h := plan.Models[0].HorizonSeconds; h != tc.want {
			t.Errorf("start-ups %v: horizon %v s, want %v", tc.startups, h, tc.want)
		}
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
		ms := &modelState{}
		vs := &variantState{model: ms, key: "k", v: &Variant{CurrentReplicas: 3}, target: 5, modelTarget: 5, capTarget: -1, spare: tc.spare}
		c.stabilize(vs)
		c.now = t0.Add(30 * time.Second)
		vs = &variantState{model: ms, key: "k", v: &Variant{CurrentReplicas: 5}, target: 3, modelTarget: 3, capTarget: -1}
		c.stabilize(vs)
		if vs.target != tc.want {
			t.Errorf("spare %d: target %d after the window, want %d (%v)", tc.spare, vs.target, tc.want, vs.notes)
		}
	}
}

// TestGatewayDemand: the model-level arrival rate counts requests of pods
// already removed; a smaller or invalid one is ignored — unless requests
// wait and the pods (two, finishing 2 requests/s each) finish more than
// 1.2 r + 3 √(r/60) (drainingRate): they clear a backlog, and the demand
// is what arrives. At r = 2 that is 2.95 < 4; at r = 3.3, 4.66 > 4.
func TestGatewayDemand(t *testing.T) {
	for _, tc := range []struct {
		gateway, waiting, want float64
	}{{9, 0, 9}, {2, 0, 4}, {math.NaN(), 0, 4}, {math.Inf(1), 0, 4}, {2, 5, 2}, {3.3, 5, 4}, {math.NaN(), 5, 4}} {
		s := snapshot(ModeModelOnly, variant("v", "H100").params(tuner.Params{Alpha: 6, Beta: 0.02, Gamma: 0.0005}).
			pods(0.1, tc.waiting, 0.1, 0).traffic(2, 512, 128, 100, 20))
		s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 50}
		s.Models[0].ArrivalRateRPS = tc.gateway
		s.Config.DisableForecast = true
		p := plan(t, nil, s)
		if got := p.Models[0].DemandRPS; got != tc.want {
			t.Errorf("gateway %v, %v waiting: demand %v, want %v", tc.gateway, tc.waiting, got, tc.want)
		}
	}
}

// TestClearingBacklogNotTuned: a cycle in which the pods finish more than
// arrives while requests wait is no steady state at any load (its TTFTs
// are the backlog's, its rates the backlog's clearing): the tuner skips it.
func TestClearingBacklogNotTuned(t *testing.T) {
	s := snapshot(ModeHybrid, variant("v", "H100").pods(0.1, 5, 0.1, 0).traffic(2, 512, 128, 100, 20))
	s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 50}
	s.Models[0].ArrivalRateRPS = 2
	s.Config.TuningEnabled = true
	d := decision(t, plan(t, nil, s), "v")
	if !strings.Contains(d.Explanation, "a backlog clearing") {
		t.Errorf("the tuner ran on a clearing backlog: %s", d.Explanation)
	}
	s.Models[0].ArrivalRateRPS = 4
	if d := decision(t, plan(t, nil, s), "v"); strings.Contains(d.Explanation, "a backlog clearing") {
		t.Errorf("the tuner skipped a steady cycle: %s", d.Explanation)
	}
}

// TestSpareQuantileFor: q = max(½, 1 − 5·(1 − a)), by hand; a target
// outside (0, 1) stands for the default 0.99.
func TestSpareQuantileFor(t *testing.T) {
	for _, tc := range []struct{ a, want float64 }{
		{0.99, 0.95}, {0.95, 0.75}, {0.98, 0.90}, {0.999, 0.995}, {0.9, 0.5}, {0.5, 0.5},
		{0, 0.95}, {1, 0.95}, {math.NaN(), 0.95},
	} {
		if got := SpareQuantileFor(tc.a); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("a = %v: q = %v, want %v", tc.a, got, tc.want)
		}
	}
}

// TestSpareFromAttainmentTarget: the forecast's quantile comes from each
// model's attainment target unless the configuration sets one. Two cycles
// at 10 then 16 rps 30 s apart give the forecaster of TestForecastHolt;
// the horizon is the default provisioning time plus a cycle, 150 s, five
// steps: mean 13 + 5·0.6 = 16, Var = 7.2·(1 + 4·(0.25 + 0.05·5 +
// 0.01·5·9/6)) = 23.76. The planned rate is 16 + z_q·√23.76: z = 0 at a
// target of 0.9 (q ½), 0.6745 at 0.95 (q 0.75), 1.6449 at 0.99 (q 0.95),
// and 0.8416 for every target with spareQuantile 0.8.
func TestSpareFromAttainmentTarget(t *testing.T) {
	sd := math.Sqrt(23.76)
	for _, tc := range []struct {
		target, configured, wantQ, wantZ float64
	}{
		{0.9, 0, 0.5, 0}, {0.95, 0, 0.75, 0.6744897501960817}, {0.99, 0, 0.95, 1.6448536269514722},
		{0.9, 0.8, 0.8, 0.8416212335729143}, {0.99, 0.8, 0.8, 0.8416212335729143},
	} {
		_, p := rampTo16(t, tc.target, tc.configured)
		m := p.Models[0]
		want := 16 + tc.wantZ*sd
		if math.Abs(m.PlannedRPS-want) > 1e-9 || math.Abs(m.SpareQuantile-tc.wantQ) > 1e-12 || m.HorizonSeconds != 150 {
			t.Errorf("target %v, configured %v: planned %v at q %v over %v s, want %v at q %v over 150 s",
				tc.target, tc.configured, m.PlannedRPS, m.SpareQuantile, m.HorizonSeconds, want, tc.wantQ)
		}
		d := decision(t, p, "v")
		if tc.wantZ > 0 && !strings.Contains(d.Explanation, "spare") {
			t.Errorf("target %v: no spare in %q", tc.target, d.Explanation)
		}
		if why := "for a 99 % attainment target"; tc.target == 0.99 && tc.configured == 0 && !strings.Contains(d.Explanation, why) {
			t.Errorf("the explanation %q does not say %q", d.Explanation, why)
		}
	}
}

// rampTo16 runs the two cycles of TestSpareFromAttainmentTarget (10 then
// 16 rps, 30 s apart) for a model with the given attainment target and
// configured spare quantile, and returns the engine and the last plan.
func rampTo16(t *testing.T, target, configured float64, opts ...func(*Snapshot)) (*Engine, *Plan) {
	t.Helper()
	e := New(nil)
	var p *Plan
	for i, rate := range []float64{10, 16} {
		s := snapshot(ModeModelOnly, variant("v", "H100").params(testParams).minMax(1, 100).
			pods(0.1, 0).traffic(rate, 512, 128, 100, 20))
		s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 50}
		s.Models[0].Attainment = target
		s.Config.SpareQuantile = configured
		for _, o := range opts {
			o(s)
		}
		p = plan(t, e, s)
	}
	return e, p
}

// TestSpareHeld: the window keeps the spare of a target above 0.99 only.
func TestSpareHeld(t *testing.T) {
	for _, tc := range []struct {
		a    float64
		want bool
	}{{0.99, false}, {0.9, false}, {0.9901, true}, {0.995, true}, {0.999, true}, {0, false}, {1, false}, {math.NaN(), false}} {
		if got := SpareHeld(tc.a); got != tc.want {
			t.Errorf("a = %v: held %v, want %v", tc.a, got, tc.want)
		}
	}
}

// TestWindowKeepsSpareAboveDefaultTarget: the forecast of
// TestSpareFromAttainmentTarget (mean 16, sd √23.76 over 150 s). At a
// target of 0.999 the planned rate is the 99.5 % quantile, 16 + 2.5758·sd
// (28.56 rps), and the window records the whole target, spare included;
// at the default 0.99 it records the replicas for the measured 16 rps, as
// before (the spare, above them, leaves as soon as the forecast drops).
func TestWindowKeepsSpareAboveDefaultTarget(t *testing.T) {
	sd := math.Sqrt(23.76)
	for _, tc := range []struct {
		target, planned, recorded float64
		held                      bool
	}{
		{0.999, 16 + 2.5758293035489*sd, 16 + 2.5758293035489*sd, true},
		{0.99, 16 + 1.6448536269514722*sd, 16, false},
	} {
		e, p := rampTo16(t, tc.target, 0)
		m := p.Models[0]
		d := decision(t, p, "v")
		c := d.Queueing.CapacityPerReplicaRPS
		need := func(rate float64) int { return int(math.Ceil(rate/c - 1e-9)) }
		if math.Abs(m.PlannedRPS-tc.planned) > 1e-6 || m.SpareHeld != tc.held {
			t.Fatalf("target %v: planned %v, spare held %v; want %v, %v", tc.target, m.PlannedRPS, m.SpareHeld, tc.planned, tc.held)
		}
		if d.Desired != need(tc.planned) || d.Desired <= need(16) {
			t.Fatalf("target %v: desired %d, want %d (more than the %d of 16 rps) at %v rps per replica", tc.target, d.Desired, need(tc.planned), need(16), c)
		}
		recs := e.state.Recommendations[variantKey("prod", "llama", "v")]
		if got, want := recs[len(recs)-1].Replica, need(tc.recorded); got != want {
			t.Errorf("target %v: the window recorded %d, want %d (the replicas of %.4g rps at %.4g per replica; desired %d)",
				tc.target, got, want, tc.recorded, c, d.Desired)
		}
		if why := "the scale-down window keeps the spare (an attainment target above 99 %)"; tc.held != strings.Contains(d.Explanation, why) {
			t.Errorf("target %v: the explanation %q, want %q in it: %v", tc.target, d.Explanation, why, tc.held)
		}
	}
}

// TestLimitedModeReleasesSpare: in limited mode too, the forecast's spare
// is priced in the explanation and kept out of the scale-down window at
// the default target (before, the global allocation's whole target was
// recorded, so a spare the forecast no longer wanted stayed for 300 s).
// The ramp of TestWindowKeepsSpareAboveDefaultTarget, under an inventory
// of 100 H100.
func TestLimitedModeReleasesSpare(t *testing.T) {
	limited := func(s *Snapshot) {
		s.Optimizer = OptimizerLimited
		s.Inventory = map[string]int{"H100": 100}
	}
	sd := math.Sqrt(23.76)
	e, p := rampTo16(t, 0.99, 0, limited)
	d := decision(t, p, "v")
	c := d.Queueing.CapacityPerReplicaRPS
	need := func(rate float64) int { return int(math.Ceil(rate/c - 1e-9)) }
	planned := 16 + 1.6448536269514722*sd
	if d.Desired != need(planned) || d.Desired <= need(16) {
		t.Fatalf("desired %d, want %d (more than the %d of 16 rps) at %v rps per replica", d.Desired, need(planned), need(16), c)
	}
	recs := e.state.Recommendations[variantKey("prod", "llama", "v")]
	if got := recs[len(recs)-1].Replica; got != need(16) {
		t.Errorf("the window recorded %d, want %d (16 rps at %.4g per replica; desired %d)", got, need(16), c, d.Desired)
	}
	if why := fmt.Sprintf("+%d replica(s) spare: the 95 %% forecast", need(planned)-need(16)); !strings.Contains(d.Explanation, why) {
		t.Errorf("the explanation %q, want %q in it", d.Explanation, why)
	}
	// The spare's price: its replicas at the variant's cost of 10 each,
	// and their share of the model's target for the variant.
	spare := need(planned) - need(16)
	if got, want := p.Models[0].SpareCost, 10*float64(spare); got != want {
		t.Errorf("spareCost %v, want %v (%d spare replica(s) at 10)", got, want, spare)
	}
	if why := fmt.Sprintf("the spare costs %d, %.0f %% of this variant's model target", 10*spare, 100*float64(spare)/float64(need(planned))); !strings.Contains(d.Explanation, why) {
		t.Errorf("the explanation %q, want %q in it", d.Explanation, why)
	}
}

// TestLimitedSpare: the spare of a limited-mode allocation is what the
// current demand can do without, taken from the highest cost per unit of
// capacity first, never below a variant's minimum. Hand-computed: A (cost
// 1, 2 rps a replica) × 3 and B (cost 3, 4 rps) × 2 supply 14 rps for a
// planned 14 and a demand of 7: B goes first (0.75 per rps against 0.5):
// 14 − 4 = 10 ≥ 7, a second would leave 6; then A: 10 − 2 = 8 ≥ 7.
func TestLimitedSpare(t *testing.T) {
	for _, tc := range []struct {
		name            string
		demand, planned float64
		minA            int
		heldB           bool
		wantA, wantB    int
	}{
		{"both", 7, 14, 0, false, 1, 1},
		{"A at its minimum", 7, 14, 3, false, 0, 1},
		{"no spare when the demand is the plan", 14, 14, 0, false, 0, 0},
		{"demand at zero: down to the minima (B's is 1)", 0, 14, 0, false, 3, 1},
		// A held variant (metrics unusable) neither supplies nor gives up
		// a spare: A alone covers 6 of the 7 rps, so none of it goes.
		{"B held", 7, 14, 0, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			minA := tc.minA
			a := &variantState{v: &Variant{Name: "a", Cost: 1, MinReplicas: &minA}, capacity: 2, modelTarget: 3}
			b := &variantState{v: &Variant{Name: "b", Cost: 3}, capacity: 4, modelTarget: 2, held: tc.heldB}
			ms := &modelState{variants: []*variantState{a, b}, demand: tc.demand, planned: tc.planned}
			ms.limitedSpare()
			if a.spare != tc.wantA || b.spare != tc.wantB {
				t.Errorf("spare a %d, b %d; want %d, %d", a.spare, b.spare, tc.wantA, tc.wantB)
			}
		})
	}
}

// TestProvisionalPlansWithoutTrend: a model sized provisionally (a warming
// tuner, no profile) plans for the forecast's level plus its error spread,
// not its trend. The cycles of rampTo16 (10 then 16 rps, 30 s apart) leave
// level 13, trend 0.6 a step and a 150-s (5-step) variance of 23.76: the
// learned model plans 13 + 5·0.6 + z·√23.76 = 16 + 1.645·4.874 = 24.02 at
// the 95 % quantile; the provisional one 13 + 8.02 = 21.02.
func TestProvisionalPlansWithoutTrend(t *testing.T) {
	planned := func(updates int) (float64, string) {
		t.Helper()
		store := tuner.NewMemoryStore()
		key := tuner.Key{Namespace: "prod", Model: "llama", Variant: "v"}
		if err := store.Put(key, tuner.Record{ServiceModel: tuner.ModelIteration, Params: h100Params, Updates: updates}); err != nil {
			t.Fatal(err)
		}
		e := New(store)
		var p *Plan
		for i, rate := range []float64{10, 16} {
			s := snapshot(ModeHybrid, variant("v", "H100").minMax(1, 100).pods(0.1, 0).traffic(rate, 512, 128, 100, 20))
			s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
			s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 50}
			s.Config.TuningEnabled, s.Config.TunerIdle = true, true
			p = plan(t, e, s)
		}
		return p.Models[0].PlannedRPS, decision(t, p, "v").Queueing.ParamsSource
	}
	spread := 1.6448536269514722 * math.Sqrt(23.76)
	for _, tc := range []struct {
		updates int
		source  string
		want    float64
	}{
		{3, "provisional", 13 + spread},
		{5, "learned", 16 + spread},
	} {
		got, src := planned(tc.updates)
		if src != tc.source || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%d updates: planned %v (%s), want %v (%s)", tc.updates, got, src, tc.want, tc.source)
		}
	}
}

// TestForecastDropClipped: a drop's one-step error enters the variance at
// most at 2σ once the forecaster has 10 updates; a rise's counts whole.
// Hand-computed from level 10, no trend, variance 1 (σ 1): a sample of 4
// is an error of −6, counted as −2: variance 1 + 0.2·(4 − 1) = 1.6 (8
// unclipped); a sample of 16 (+6): 1 + 0.2·(36 − 1) = 8. The level and
// trend take the whole error either way: 10 − 0.5·6 = 7, trend −0.6.
func TestForecastDropClipped(t *testing.T) {
	for _, tc := range []struct {
		name            string
		updates         int
		y               float64
		variance, level float64
	}{
		{"a drop", 10, 4, 1.6, 7},
		{"a rise", 10, 16, 8, 13},
		{"a drop before 10 updates", 9, 4, 8, 7},
		{"a drop within 2σ", 10, 8.5, 1 + 0.2*(2.25-1), 9.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Forecast{Level: 10, Variance: 1, StepSeconds: 30, Updates: tc.updates, Last: t0}
			f.observe(t0.Add(30*time.Second), tc.y)
			if math.Abs(f.Variance-tc.variance) > 1e-12 || math.Abs(f.Level-tc.level) > 1e-12 || math.Abs(f.Trend-0.1*(tc.y-10)) > 1e-12 {
				t.Errorf("variance %v, level %v, trend %v; want %v, %v, %v", f.Variance, f.Level, f.Trend, tc.variance, tc.level, 0.1*(tc.y-10))
			}
		})
	}
}

// TestSurgeRatio: a declared surge raises the planned rate to surgeRatio
// times the demand where that exceeds the forecast's quantile. The
// forecast of TestSpareFromAttainmentTarget plans 16 + 1.6449·√23.76 =
// 24.018 rps at the default target; a surge of 2 plans 2·16 = 32, one of
// 1.2 (19.2) leaves the forecast's 24.018, and a model's own ratio (3:
// 48) overrides the configuration's. The replicas are those the variant's
// capacity per replica gives for the planned rate, the ones beyond the
// demand's marked spare and priced in the explanation.
func TestSurgeRatio(t *testing.T) {
	sd := math.Sqrt(23.76)
	for _, tc := range []struct {
		config, model, want float64
		surged              bool
	}{
		{0, 0, 16 + 1.6448536269514722*sd, false},
		{1, 0, 16 + 1.6448536269514722*sd, false},
		{1.2, 0, 16 + 1.6448536269514722*sd, false},
		{2, 0, 32, true},
		{2, 3, 48, true},
		{2, 1, 16 + 1.6448536269514722*sd, false},
	} {
		_, p := rampTo16(t, 0, 0, func(s *Snapshot) {
			s.Config.SurgeRatio, s.Models[0].SurgeRatio = tc.config, tc.model
		})
		m := p.Models[0]
		if math.Abs(m.PlannedRPS-tc.want) > 1e-9 {
			t.Errorf("surge %v (model %v): planned %v, want %v", tc.config, tc.model, m.PlannedRPS, tc.want)
		}
		ratio := tc.config
		if tc.model > 0 {
			ratio = tc.model
		}
		if wantRatio := map[bool]float64{true: ratio, false: 0}[ratio > 1]; m.SurgeRatio != wantRatio {
			t.Errorf("surge %v (model %v): summary's surgeRatio %v, want %v", tc.config, tc.model, m.SurgeRatio, wantRatio)
		}
		d := decision(t, p, "v")
		c := d.Queueing.CapacityPerReplicaRPS
		if want := int(math.Ceil(tc.want/c - 1e-9)); d.Desired != want {
			t.Errorf("surge %v (model %v): %d replicas for %v rps at %v a replica, want %d", tc.config, tc.model, d.Desired, tc.want, c, want)
		}
		if got := strings.Contains(d.Explanation, "a surge to"); got != tc.surged {
			t.Errorf("surge %v (model %v): explanation %q names the surge: %v, want %v", tc.config, tc.model, d.Explanation, got, tc.surged)
		}
		if tc.surged && !strings.Contains(d.Explanation, fmt.Sprintf("a surge to %.3g× the demand (surgeRatio) within the 150-s horizon is %.3g rps", ratio, tc.want)) {
			t.Errorf("surge %v (model %v): explanation %q", tc.config, tc.model, d.Explanation)
		}
	}
}

// TestSurgeWithoutForecast: with the forecast off the declared surge still
// holds: 2.5 × 16 rps = 40 over the provisioning time alone (120 s: no
// forecaster, so no cycle is added).
func TestSurgeWithoutForecast(t *testing.T) {
	_, p := rampTo16(t, 0, 0, func(s *Snapshot) {
		s.Config.DisableForecast, s.Config.SurgeRatio = true, 2.5
	})
	if m := p.Models[0]; m.PlannedRPS != 40 || m.HorizonSeconds != 120 || m.SurgeRatio != 2.5 {
		t.Errorf("planned %v over %v s (surge %v), want 40 over 120 s (2.5)", m.PlannedRPS, m.HorizonSeconds, m.SurgeRatio)
	}
}

// TestSurgeRatioValidated: a declared surge is 0, or in [1, 100].
func TestSurgeRatioValidated(t *testing.T) {
	for _, r := range []float64{0.5, -1, 101, math.NaN(), math.Inf(1)} {
		s := snapshot(ModeModelOnly, variant("v", "H100").params(testParams).pods(0.1, 0).traffic(4, 512, 128, 100, 20))
		s.Config.SurgeRatio = r
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "config.surgeRatio") {
			t.Errorf("config surge %v: %v", r, err)
		}
		s.Config.SurgeRatio, s.Models[0].SurgeRatio = 0, r
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "surgeRatio") {
			t.Errorf("model surge %v: %v", r, err)
		}
	}
	for _, r := range []float64{0, 1, 2.5, 100} {
		s := snapshot(ModeModelOnly, variant("v", "H100").params(testParams).pods(0.1, 0).traffic(4, 512, 128, 100, 20))
		s.Config.SurgeRatio, s.Models[0].SurgeRatio = r, r
		if err := s.Validate(); err != nil {
			t.Errorf("surge %v refused: %v", r, err)
		}
	}
}
