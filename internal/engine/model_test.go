package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

var h100Params = tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}

// capacityOf is what the queueing package says one replica serves.
func capacityOf(t *testing.T, p tuner.Params, in, out float64, n int, slo queueing.Targets) float64 {
	t.Helper()
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma},
		Workload: queueing.Workload{InputTokens: in, OutputTokens: out}, MaxBatchSize: n, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Size(slo)
	if err != nil {
		t.Fatal(err)
	}
	return s.CapacityRPS
}

// TestModelBasedScaleUp: supply comes from ready replicas and the required
// count is ceil(demand / capacity) (the WVA queueing-model guide §4; the reference computed supply
// from the desired count and never scaled up).
func TestModelBasedScaleUp(t *testing.T) {
	v := variant("h100", "H100").params(h100Params).pods(0.3, 0, 0.3, 0).traffic(30, 1024, 256, 40, 15)
	s := snapshot(ModeModelOnly, v)
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	p := plan(t, nil, s)
	d := decision(t, p, "h100")
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	want := int(math.Ceil(60 / c))
	if d.Desired != want || d.Reason != ReasonModelScaleUp || d.Queueing == nil {
		t.Fatalf("desired %d (%s), want %d: %s", d.Desired, d.Reason, want, d.Explanation)
	}
	if math.Abs(d.Queueing.CapacityPerReplicaRPS-c) > 1e-9 || math.Abs(d.Queueing.SupplyRPS-2*c) > 1e-9 || d.Queueing.ParamsSource != "profiled" {
		t.Errorf("detail %+v", d.Queueing)
	}
	if m := p.Models[0]; m.DemandRPS != 60 || m.SLOSource != "explicit" {
		t.Errorf("model summary %+v", m)
	}
}

// TestCheapestMix: unlimited mode covers the demand with the cheapest mix.
func TestCheapestMix(t *testing.T) {
	slo := queueing.Targets{TTFTMs: 300, ITLMs: 25}
	fast := tuner.Params{Alpha: 5, Beta: 0.015, Gamma: 4e-5}
	s := snapshot(ModeModelOnly,
		variant("h100", "H100").cost(40).params(fast).minMax(0, 0).pods(0.4, 0).traffic(20, 1024, 256, 40, 15),
		variant("a100", "A100").cost(15).params(h100Params).minMax(0, 0).pods(0.4, 0).traffic(20, 1024, 256, 40, 15))
	s.Models[0].SLO = &SLO{TTFTMs: slo.TTFTMs, ITLMs: slo.ITLMs}
	p := plan(t, nil, s)
	ch := capacityOf(t, fast, 1024, 256, 256, slo)
	ca := capacityOf(t, h100Params, 1024, 256, 256, slo)
	nh, na := decision(t, p, "h100").Desired, decision(t, p, "a100").Desired
	got := 40*float64(nh) + 15*float64(na)
	// Brute force over small counts.
	best := math.Inf(1)
	for i := 0; i <= 10; i++ {
		for j := 0; j <= 10; j++ {
			if float64(i)*ch+float64(j)*ca >= 40 && 40*float64(i)+15*float64(j) < best {
				best = 40*float64(i) + 15*float64(j)
			}
		}
	}
	if got != best || float64(nh)*ch+float64(na)*ca < 40 {
		t.Errorf("mix h100 %d + a100 %d costs %v, optimum %v (capacities %.2f, %.2f)", nh, na, got, best, ch, ca)
	}
}

func TestSLOResolution(t *testing.T) {
	base := func() *Snapshot {
		s := snapshot(ModeModelOnly, variant("h100", "H100").params(h100Params).pods(0.3, 0).traffic(5, 1024, 256, 40, 15))
		return s
	}
	s := base()
	s.ServiceClasses = map[string]ServiceClass{"premium": {Priority: 1, TTFTMs: 500, ITLMs: 50}}
	s.Models[0].ServiceClass = "premium"
	if m := plan(t, nil, s).Models[0]; m.SLOSource != "service-class" || m.SLOTTFTMs != 500 {
		t.Errorf("service class: %+v", m)
	}
	s.Models[0].SLO = &SLO{TTFTMs: 250, ITLMs: 30}
	if m := plan(t, nil, s).Models[0]; m.SLOSource != "explicit" || m.SLOTTFTMs != 250 {
		t.Errorf("explicit wins: %+v", m)
	}
	// k·α from the parameters: TTFT = 3α + (β+γ)i, ITL = 3α + β + γ(i + (o+1)/2).
	m := plan(t, nil, base()).Models[0]
	wantTTFT := 21 + 0.02005*1024
	wantITL := 21 + 0.02 + 5e-5*(1024+128.5)
	if m.SLOSource != "inferred" || math.Abs(m.SLOTTFTMs-wantTTFT) > 1e-9 || math.Abs(m.SLOITLMs-wantITL) > 1e-9 {
		t.Errorf("inferred: %+v, want TTFT %v ITL %v", m, wantTTFT, wantITL)
	}
	// Without parameters: 1.5 × observed, capped at 10 000 / 500 ms.
	s = snapshot(ModeModelOnly, variant("h100", "H100").pods(0.3, 0).traffic(5, 1024, 256, 40, 400))
	m = plan(t, nil, s).Models[0]
	if m.SLOSource != "observed" || m.SLOTTFTMs != 60 || m.SLOITLMs != 500 {
		t.Errorf("observed: %+v", m)
	}
}

// TestZeroCapacityPlaceholder: a variant that cannot be sized keeps its
// replicas; the others carry the model.
func TestZeroCapacityPlaceholder(t *testing.T) {
	s := snapshot(ModeModelOnly,
		variant("h100", "H100").params(h100Params).pods(0.3, 0).traffic(30, 1024, 256, 40, 15),
		variant("mystery", "MI300").pods(0.3, 0, 0.3, 0).traffic(30, 1024, 256, 40, 15))
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	p := plan(t, nil, s)
	m := decision(t, p, "mystery")
	if m.Desired != 2 || m.Queueing == nil || !strings.Contains(m.Queueing.Error, "no performance parameters") {
		t.Errorf("placeholder: %+v", m)
	}
	if h := decision(t, p, "h100"); h.Desired < 2 || h.Reason != ReasonModelScaleUp {
		t.Errorf("h100 should carry the 90 rps: %+v", h)
	}
	// Every variant unsizable: the model fails and the variants hold.
	s = snapshot(ModeModelOnly, variant("mystery", "MI300").pods(0.3, 0).traffic(30, 1024, 256, 40, 15))
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	p = plan(t, nil, s)
	if d := decision(t, p, "mystery"); d.Desired != 1 || d.Reason != ReasonModelUnavailable || p.Models[0].ModelError == "" {
		t.Errorf("all fail: %+v, model %+v", d, p.Models[0])
	}
}

// TestTPSFloor: a TPS target is a demand floor of TPS / output tokens.
func TestTPSFloor(t *testing.T) {
	s := snapshot(ModeModelOnly, variant("h100", "H100").params(h100Params).pods(0.3, 0).traffic(1, 1024, 256, 40, 15))
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20, TPS: 25600} // 100 rps
	c := capacityOf(t, h100Params, 1024, 256, 256, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	if d := decision(t, plan(t, nil, s), "h100"); d.Desired != int(math.Ceil(100/c)) {
		t.Errorf("desired %d, want ceil(100/%.2f)", d.Desired, c)
	}
}

// rampObservations are n exact observations of h100Params at 1 024/256
// tokens, the load ramping from 30 % of λmax by 14 % a cycle.
func rampObservations(t *testing.T, n int) []tuner.Observation {
	t.Helper()
	truth := tuner.Truth{ServiceModel: tuner.ModelIteration, Params: h100Params, InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 256}
	lmax, err := truth.MaxRate(100)
	if err != nil {
		t.Fatal(err)
	}
	var obs []tuner.Observation
	for i := range n {
		o, err := truth.Observe(h100Params, 0.3*math.Pow(1.14, float64(i))*lmax, 1024, 256, 100)
		if err != nil {
			t.Fatal(err)
		}
		obs = append(obs, o)
	}
	return obs
}

// TestTuningLearnsThenSizes: with tuning enabled and no profile, the engine
// learns the parameters from the pods' latencies and then sizes with them:
// provisionally from the third accepted update, fully from the fifth.
//
// The load ramps from 30 % to 75 % of λmax, 14 % a minute: the pods' figures
// are averages over a window, and the tuner skips a cycle whose load moved
// by more than 20 % (tuner.Tuner.loadChanged), so a trace of independent
// loads would mostly be skipped.
func TestTuningLearnsThenSizes(t *testing.T) {
	obs := rampObservations(t, 8)
	e := New(nil)
	var d VariantDecision
	for i, o := range obs {
		v := variant("h100", "H100").pods(0.3, 0, 0.3, 0).traffic(o.RateRPS, o.InputTokens, o.OutputTokens, o.TTFTMs, o.ITLMs)
		s := snapshot(ModeModelOnly, v)
		s.Time = t0.Add(timeMinutes(i))
		s.Config.TuningEnabled = true
		s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
		d = decision(t, plan(t, e, s), "h100")
		// Two updates: not sized; three and four: provisionally (the
		// model may only add replicas); from five: learned.
		want := map[int]string{0: "", 1: "", 2: "provisional", 3: "provisional"}
		if w, ok := want[i]; ok && d.Queueing.ParamsSource != w {
			t.Errorf("cycle %d: sized with %q parameters during the warm-up, want %q", i, d.Queueing.ParamsSource, w)
		}
	}
	if d.Queueing.ParamsSource != "learned" || d.Queueing.Params == nil || math.Abs(d.Queueing.Params.Alpha/7-1) > 0.05 {
		t.Fatalf("after 8 cycles: %+v", d.Queueing)
	}
	// The learned parameters come with the filter's uncertainty: positive,
	// and for α (within 5 % of the truth) smaller than the error allowed.
	sd := d.Queueing.ParamsStdDev
	if sd == nil {
		t.Fatal("learned parameters without their standard deviation")
	}
	for name, v := range map[string]float64{"alpha": sd.Alpha, "beta": sd.Beta, "gamma": sd.Gamma} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("sd(%s) = %v", name, v)
		}
	}
	if sd.Alpha > 0.05*7 || sd.Delta != 0 {
		t.Errorf("sd %+v", *sd)
	}
	checkIdleTuner(t, e, obs[0], len(obs), *d.Queueing.Params)
}

// checkIdleTuner: between tuner periods (TunerIdle) the learned
// parameters still size the model, and the tuner takes no step: latencies
// far off the model leave them as they were.
func checkIdleTuner(t *testing.T, e *Engine, o tuner.Observation, minute int, learned tuner.Params) {
	t.Helper()
	v := variant("h100", "H100").pods(0.3, 0, 0.3, 0).traffic(o.RateRPS, o.InputTokens, o.OutputTokens, 10*o.TTFTMs, 10*o.ITLMs)
	s := snapshot(ModeModelOnly, v)
	s.Time = t0.Add(timeMinutes(minute))
	s.Config.TuningEnabled, s.Config.TunerIdle = true, true
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	d := decision(t, plan(t, e, s), "h100")
	if d.Queueing.ParamsSource != "learned" || d.Queueing.Params == nil || *d.Queueing.Params != learned {
		t.Errorf("idle tuner cycle: %s parameters %+v, want the learned %+v", d.Queueing.ParamsSource, d.Queueing.Params, learned)
	}
}

// TestStdDevOf: the square roots of the covariance's diagonal, in the
// order α, β, γ, δ; a negative rounding on the diagonal is 0.
func TestStdDevOf(t *testing.T) {
	got := stdDevOf([][]float64{{4, 1, 0}, {1, 0.25, 0}, {0, 0, -1e-18}})
	if *got != (tuner.Params{Alpha: 2, Beta: 0.5}) {
		t.Errorf("got %+v", *got)
	}
}

// TestKVBoundBatch: a replica whose KV cache holds three requests is sized
// as a batch of three, not 256.
func TestKVBoundBatch(t *testing.T) {
	v := variant("h100", "H100").params(h100Params).pods(0.3, 0).traffic(1, 4096, 1024, 40, 15)
	v.v.Pods[0].KVBlocks, v.v.Pods[0].BlockSize = 1024, 16 // 16 384 tokens: 3 requests of 5 120
	s := snapshot(ModeModelOnly, v)
	s.Models[0].SLO = &SLO{TTFTMs: 2000, ITLMs: 20}
	d := decision(t, plan(t, nil, s), "h100")
	want := capacityOf(t, h100Params, 4096, 1024, 3, queueing.Targets{TTFTMs: 2000, ITLMs: 20})
	if math.Abs(d.Queueing.CapacityPerReplicaRPS-want) > 1e-9 {
		t.Errorf("capacity %v, want %v (N = 3)", d.Queueing.CapacityPerReplicaRPS, want)
	}
}

// TestNoMetricsIsNotNoTraffic: replicas that are all starting (or not yet
// scraped) report nothing; the model analyzer must not read that as zero
// demand and scale the model down to its minimum.
func TestNoMetricsIsNotNoTraffic(t *testing.T) {
	p := tuner.Params{Alpha: 6, Beta: 0.0003, Gamma: 1e-5}
	for _, mode := range []Mode{ModeHybrid, ModeModelOnly} {
		s := snapshot(mode, variant("h100", "H100").minMax(1, 10).replicas(3, 0).params(p))
		s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 30}
		pl := plan(t, nil, s)
		if d := decision(t, pl, "h100"); d.Desired != 3 {
			t.Errorf("%s: desired %d with 3 starting replicas and no metrics, want 3 (hold): %s", mode, d.Desired, d.Explanation)
		}
		if e := pl.Models[0].ModelError; !strings.Contains(e, "no replica reports metrics yet") {
			t.Errorf("%s: model error %q", mode, e)
		}
		// Pods that report zero traffic are idle: the minimum is right.
		s = snapshot(mode, variant("h100", "H100").minMax(1, 10).pods(0, 0, 0, 0, 0, 0).traffic(0, 0, 0, 0, 0).params(p))
		s.Models[0].SLO = &SLO{TTFTMs: 1000, ITLMs: 30}
		if d := decision(t, plan(t, nil, s), "h100"); d.Desired >= 3 {
			t.Errorf("%s: desired %d for three idle reporting replicas, want fewer", mode, d.Desired)
		}
	}
}

// TestTuningStartsFromProfile: a profiled variant's tuner starts from the
// profile as a prior (tuner.NewProfiled), not from a cold guess: its first
// stored record is the profile's warm-up fit, within the profile's spread.
func TestTuningStartsFromProfile(t *testing.T) {
	truth := tuner.Truth{ServiceModel: tuner.ModelIteration, Params: h100Params, InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 256}
	obs, err := tuner.Synthesize(truth, tuner.TraceSpec{Cycles: 1, MaxQueueSize: 100, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	o := obs[0]
	e := New(nil)
	s := snapshot(ModeModelOnly, variant("h100", "H100").params(h100Params).pods(0.3, 0, 0.3, 0).traffic(o.RateRPS, o.InputTokens, o.OutputTokens, o.TTFTMs, o.ITLMs))
	s.Time = t0
	s.Config.TuningEnabled = true
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	plan(t, e, s)
	rec, ok, err := e.store.Get(tuner.Key{Namespace: s.Models[0].Namespace, Model: s.Models[0].ID, Variant: "h100"})
	if err != nil || !ok {
		t.Fatalf("no record: %v", err)
	}
	// The anchor is the prior: the profile, with log-variance 0.25².
	for i, v := range []float64{h100Params.Alpha, h100Params.Beta, h100Params.Gamma} {
		if math.Abs(rec.AnchorState[i]-math.Log(v)) > 1e-12 || math.Abs(rec.AnchorCovariance[i][i]-0.0625) > 1e-12 {
			t.Errorf("parameter %d: anchor %v ± %v, want log %v ± 0.25", i, rec.AnchorState[i], math.Sqrt(rec.AnchorCovariance[i][i]), v)
		}
	}
}

// TestProvisionalSizingOnlyAdds: a variant sized with a warming tuner's
// parameters (three or four accepted updates) may get more replicas from
// the model, never fewer: the saturation analysis decides, raised to the
// model's target, and in model-only mode the model never scales it down.
// With five updates the same estimate sizes it fully.
func TestProvisionalSizingOnlyAdds(t *testing.T) {
	at := func(updates int, mode Mode, v *variantB) VariantDecision {
		t.Helper()
		store := tuner.NewMemoryStore()
		key := tuner.Key{Namespace: "prod", Model: "llama", Variant: "h100"}
		if err := store.Put(key, tuner.Record{ServiceModel: tuner.ModelIteration, Params: h100Params, Updates: updates}); err != nil {
			t.Fatal(err)
		}
		s := snapshot(mode, v)
		s.Config.TuningEnabled, s.Config.TunerIdle, s.Config.DisableForecast = true, true, true
		s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
		return decision(t, plan(t, New(store), s), "h100")
	}
	lmax := capacityOf(t, h100Params, 1024, 256, 256, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	// Heavy load on one replica, KV 0.3: the saturation analysis holds 1,
	// the model wants 3.
	heavy := func() *variantB {
		return variant("h100", "H100").pods(0.3, 0).traffic(2.5*lmax, 1024, 256, 60, 12)
	}
	if d := at(3, ModeHybrid, heavy()); d.Queueing == nil || d.Queueing.ParamsSource != "provisional" || d.Desired != d.ModelTarget || d.Desired < 3 || d.Reason != ReasonModelScaleUp {
		t.Errorf("provisional, heavy load: desired %d (model %d, saturation %d, %s): %s", d.Desired, d.ModelTarget, d.CapacityTarget, d.Reason, d.Explanation)
	}
	// Light load on four replicas: the model wants 1; the saturation
	// analysis lets some go, not all.
	light := func() *variantB {
		return variant("h100", "H100").pods(0.3, 0, 0.3, 0, 0.3, 0, 0.3, 0).traffic(0.05*lmax, 1024, 256, 30, 8)
	}
	d := at(3, ModeHybrid, light())
	if d.ModelTarget != 1 || d.Desired != d.CapacityTarget || d.Desired <= d.ModelTarget || d.Reason != ReasonSaturationScaleDown {
		t.Errorf("provisional, light load: desired %d (model %d, saturation %d, %s), want the saturation analysis's: %s", d.Desired, d.ModelTarget, d.CapacityTarget, d.Reason, d.Explanation)
	}
	if d := at(5, ModeHybrid, light()); d.Queueing.ParamsSource != "learned" || d.Reason == ReasonSaturationScaleDown {
		t.Errorf("learned, light load: %s (%s), want the model's arbitration", d.Reason, d.Queueing.ParamsSource)
	}
	if d := at(3, ModeModelOnly, light()); d.Desired != 4 {
		t.Errorf("provisional, model-only, light load: desired %d, want 4 (never fewer): %s", d.Desired, d.Explanation)
	}
}
