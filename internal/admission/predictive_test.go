package admission

import (
	"math"
	"strings"
	"testing"
)

// Round numbers for hand-checked estimates: 10 ms fixed prefill, 0.1 ms per
// miss token, one step per request ahead.
var handCoef = Coefficients{Beta0: 0.010, Beta1: 1e-4, Queue: 1}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestPredictiveDecisions(t *testing.T) {
	cfg := PredictiveConfig{StandardBudget: 0.3, SheddableBudget: 0.2, CriticalBudget: 0.1, Coefficients: handCoef}
	std := Request{Class: Standard, Priority: 0, InputTokens: 1000}
	cases := []struct {
		name  string
		cfg   PredictiveConfig
		req   Request
		fleet []Instance
		admit bool
		why   Reason
		est   float64
		at    int
	}{
		{"idle instance, no cache: 10 ms + 1000 × 0.1 ms", cfg, std,
			fleetOf(instance(0.02)), true, ReasonWithinBudget, 0.110, 0},
		{"the best case wins: a warm cache beats a short queue", cfg, std,
			// 0: 5 ahead × 20 ms + 110 ms = 210 ms; 1: 10 × 20 ms + 10 ms + 100 × 0.1 ms = 220 ms; 2: 5 ahead × 10 ms + 900 cached → 60 + 50 = 70 ms.
			fleetOf(instance(0.02).waiting(0, 5), instance(0.02).waiting(0, 10).cached(900), instance(0.01).waiting(0, 5).cached(900)),
			true, ReasonWithinBudget, 0.070, 2},
		{"over budget everywhere", cfg, std,
			fleetOf(instance(0.02).waiting(0, 20), instance(0.05).waiting(0, 5)), false, ReasonOverBudget, 0.360, 1},
		{"headroom 1.5 admits 360 ms against 300 ms", PredictiveConfig{StandardBudget: 0.3, Headroom: 1.5, Coefficients: handCoef}, std,
			fleetOf(instance(0.02).waiting(0, 20), instance(0.05).waiting(0, 5)), true, ReasonWithinBudget, 0.360, 1},
		{"sheddable has its own budget", cfg, Request{Class: Sheddable, Priority: -1, InputTokens: 1000},
			fleetOf(instance(0.02).waiting(0, 5)), false, ReasonOverBudget, 0.210, 0},
		{"critical is admitted over its budget, with the estimate", cfg, Request{Class: Critical, Priority: 10, InputTokens: 3000},
			fleetOf(instance(0.02)), true, ReasonCritical, 0.310, 0},
		{"more cached than the prompt: no miss", cfg, std,
			fleetOf(instance(0.02).cached(5000)), true, ReasonWithinBudget, 0.010, 0},
		{"a negative cache count counts as none", cfg, std,
			fleetOf(instance(0.02).cached(-7)), true, ReasonWithinBudget, 0.110, 0},
		{"unknown step times take the default 7 ms", cfg, std,
			fleetOf(instance(0).waiting(0, 10), instance(math.NaN()).waiting(0, 10), instance(math.Inf(1)).waiting(0, 10)),
			true, ReasonWithinBudget, 0.180, 0},
		{"empty fleet: admitted, the gateway holds it", cfg, std, nil, true, ReasonNoInstance, 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mustPredictive(t, c.cfg).Decide(0, c.req, c.fleet)
			if d.Admit != c.admit || d.Reason != c.why || !near(d.Estimate, c.est) || d.Instance != c.at {
				t.Errorf("got %v, want admit %v %v estimate %v on %d", d, c.admit, c.why, c.est, c.at)
			}
		})
	}
}

// TestQueueWaitCountsOnlyRequestsAhead fails if the queue wait counted the
// lower-priority requests, which a request overtakes under priority
// scheduling (the seed review's point 3).
func TestQueueWaitCountsOnlyRequestsAhead(t *testing.T) {
	p := mustPredictive(t, PredictiveConfig{StandardBudget: 0.3, Coefficients: handCoef})
	req := Request{Class: Standard, Priority: 1, InputTokens: 100}  // prefill 20 ms
	lower := fleetOf(instance(0.02).waiting(0, 50).waiting(-1, 50)) // 100 × 20 ms = 2 s if counted
	d := p.Decide(0, req, lower)
	if !d.Admit || !near(d.Estimate, 0.020) {
		t.Errorf("lower-priority queue: %v, want admitted at 20 ms", d)
	}
	same := fleetOf(instance(0.02).waiting(1, 15).waiting(0, 50))
	if d := p.Decide(0, req, same); d.Admit || !near(d.Estimate, 15*0.02+0.020) {
		t.Errorf("same-priority queue: %v, want rejected at 320 ms", d)
	}
	higher := fleetOf(instance(0.02).waiting(5, 10).waiting(1, 3))
	if d := p.Decide(0, req, higher); !near(d.Estimate, 13*0.02+0.020) {
		t.Errorf("higher- and same-priority queue: %v, want 280 ms", d)
	}
	if n := lower[0].Ahead(1); n != 0 {
		t.Errorf("Ahead(1) = %d over lower priorities, want 0", n)
	}
	if n := lower[0].Queued(); n != 100 {
		t.Errorf("Queued() = %d, want 100", n)
	}
}

// TestQueueWaitUsesEachInstancesStep: the same queue costs less on a
// faster instance.
func TestQueueWaitUsesEachInstancesStep(t *testing.T) {
	p := mustPredictive(t, PredictiveConfig{Coefficients: handCoef})
	req := Request{Class: Standard, InputTokens: 100}
	d := p.Decide(0, req, fleetOf(instance(0.04).waiting(0, 10), instance(0.01).waiting(0, 10)))
	if d.Instance != 1 || !near(d.Estimate, 10*0.01+0.020) {
		t.Errorf("got %v, want the 10 ms instance at 120 ms", d)
	}
}

func TestPredictiveKVLimit(t *testing.T) {
	p := mustPredictive(t, PredictiveConfig{Coefficients: handCoef, KVLimit: 0.9})
	req := Request{Class: Standard, InputTokens: 100}
	// The warm, idle instance is full: the request goes to the cold one.
	d := p.Decide(0, req, fleetOf(instance(0.02).cached(100).kv(0.95), instance(0.02).kv(0.5)))
	if !d.Admit || d.Instance != 1 || !near(d.Estimate, 0.020) {
		t.Errorf("got %v, want instance 1 at 20 ms", d)
	}
	full := fleetOf(instance(0.02).kv(0.97), instance(0.02).kv(0.92))
	if d := p.Decide(0, req, full); d.Admit || d.Reason != ReasonSaturated || d.Estimate != 0.92 || d.Budget != 0.9 {
		t.Errorf("all saturated: %v", d)
	}
	if d := p.Decide(0, Request{Class: Critical, InputTokens: 100}, full); !d.Admit || d.Instance != 0 {
		t.Errorf("critical on a saturated fleet: %v, want admitted with an estimate", d)
	}
}

// TestFitsIsDecidesRule: Fits and Limit are the per-instance rule Decide
// applies — budget × headroom per class (an unknown class is critical's),
// the KV limit for all but critical — so a router that keeps the fitting
// instances agrees with the decision on a fleet of one.
func TestFitsIsDecidesRule(t *testing.T) {
	p := mustPredictive(t, PredictiveConfig{StandardBudget: 0.3, SheddableBudget: 0.2, CriticalBudget: 0.1, Headroom: 1.5,
		Coefficients: handCoef, KVLimit: 0.9})
	for c, want := range map[Class]float64{Critical: 0.15, Standard: 0.45, Sheddable: 0.3, Class(9): 0.15} {
		if got := p.Limit(c); !near(got, want) {
			t.Errorf("Limit(%v) = %v, want %v", c, got, want)
		}
	}
	instances := []*instanceBuilder{instance(0.02), instance(0.02).waiting(0, 10), instance(0.02).waiting(0, 25),
		instance(0.02).cached(900).waiting(0, 12), instance(0.02).kv(0.95), instance(0.01).kv(0.5).waiting(0, 8)}
	for _, class := range []Class{Standard, Sheddable} {
		for i, in := range instances {
			req := Request{Class: class, InputTokens: 1000}
			fleet := fleetOf(in)
			if fits, d := p.Fits(req, &fleet[0]), p.Decide(0, req, fleet); fits != d.Admit {
				t.Errorf("%v on instance %d: Fits %v, Decide %v", class, i, fits, d)
			}
		}
	}
	full := fleetOf(instance(0.02).kv(0.95))
	if !p.Fits(Request{Class: Critical, InputTokens: 10}, &full[0]) {
		t.Error("a short critical request does not fit a full instance: the KV limit is not critical's")
	}
}

func TestPredictiveCoefficients(t *testing.T) {
	p := mustPredictive(t, PredictiveConfig{})
	if p.Coefficients() != DefaultCoefficients {
		t.Errorf("defaults: %+v", p.Coefficients())
	}
	if err := p.SetCoefficients(handCoef); err != nil {
		t.Fatal(err)
	}
	if e := p.Estimate(Request{InputTokens: 1000}, &Instance{}); !near(e, 0.110) {
		t.Errorf("estimate after SetCoefficients: %v", e)
	}
	// Unusable coefficients are an error, never a panic, and the model in
	// use stays.
	for _, c := range []Coefficients{{Beta0: math.NaN()}, {Beta1: math.Inf(1)}, {Queue: -1}, {Beta1: 1e306}} {
		if err := p.SetCoefficients(c); err == nil {
			t.Errorf("SetCoefficients(%+v) accepted", c)
		}
		if p.Coefficients() != handCoef {
			t.Fatalf("coefficients %+v after a refused SetCoefficients", p.Coefficients())
		}
	}
}

// TestHugeCoefficientsRefused: a coefficient near the float64 limit (the
// calibrator scales β1 by 1 000 and squares its prior, to +Inf) is a
// configuration error, not a panic at the first fit.
func TestHugeCoefficientsRefused(t *testing.T) {
	if _, err := NewPredictive(PredictiveConfig{Coefficients: Coefficients{Beta1: 1e306}}); err == nil ||
		!strings.Contains(err.Error(), "predictive.coefficients.beta1: must be at most 1e+06") {
		t.Errorf("predictive: %v", err)
	}
	for _, cfg := range []CalibratorConfig{
		{Initial: Coefficients{Beta1: 1e306}, Max: Coefficients{Beta1: 1e307}},
		{PriorStd: Coefficients{Beta0: 1e200}},
	} {
		if _, err := NewCalibrator(cfg); err == nil || !strings.Contains(err.Error(), "must be at most 1e+06") {
			t.Errorf("calibrator %+v: %v", cfg, err)
		}
	}
}

func TestPredictiveConfigErrors(t *testing.T) {
	cases := []struct {
		name  string
		cfg   PredictiveConfig
		paths []string
	}{
		{"zero value: defaults", PredictiveConfig{}, nil},
		{"negative budget", PredictiveConfig{StandardBudget: -0.1}, []string{"predictive.standardBudget"}},
		{"NaN budget", PredictiveConfig{SheddableBudget: math.NaN(), CriticalBudget: math.Inf(1)},
			[]string{"predictive.sheddableBudget", "predictive.criticalBudget"}},
		{"headroom below 0.5", PredictiveConfig{Headroom: 0.2}, []string{"predictive.headroom"}},
		{"headroom above 3", PredictiveConfig{Headroom: 4}, []string{"predictive.headroom"}},
		{"headroom at the ends", PredictiveConfig{Headroom: 3}, nil},
		{"negative coefficient", PredictiveConfig{Coefficients: Coefficients{Beta1: -1e-5}}, []string{"predictive.coefficients.beta1"}},
		{"KV limit above 1", PredictiveConfig{KVLimit: 1.2}, []string{"predictive.kvLimit"}},
		{"negative step", PredictiveConfig{StepTime: -1}, []string{"predictive.stepTime"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			wantFieldErrors(t, err, c.paths...)
			if _, nerr := NewPredictive(c.cfg); (nerr == nil) != (err == nil) {
				t.Errorf("NewPredictive and Validate disagree: %v vs %v", nerr, err)
			}
		})
	}
}

func TestOtherConfigErrors(t *testing.T) {
	wantFieldErrors(t, BucketConfig{}.Validate(), "tokenBucket.rate")
	wantFieldErrors(t, BucketConfig{Rate: 5, Burst: 0.5}.Validate(), "tokenBucket.burst")
	wantFieldErrors(t, BucketConfig{Rate: math.Inf(1), Burst: math.NaN()}.Validate(), "tokenBucket.rate", "tokenBucket.burst")
	wantFieldErrors(t, GatedConfig{StandardThreshold: -1, SheddableThreshold: -2, Fleet: "mean"}.Validate(),
		"sloGated.standardThreshold", "sloGated.sheddableThreshold", "sloGated.fleet")
	if _, err := NewIndex(-1); err == nil {
		t.Error("NewIndex(-1) accepted")
	}
	if _, err := NewTokenBucket(BucketConfig{Rate: -1}); err == nil {
		t.Error("NewTokenBucket accepted a negative rate")
	}
	if _, err := NewSLOGated(GatedConfig{Fleet: "avg"}); err == nil {
		t.Error("NewSLOGated accepted fleet avg")
	}
}
