package admission

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzIndex: for any prompt, block size and capacity, a recorded prompt
// matches whole (up to the capacity), and a prompt that diverges at token k
// matches exactly the blocks before the one holding k — a divergent block
// stops the match even though every later token is the same.
func FuzzIndex(f *testing.F) {
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice over"), uint8(3), uint16(17), uint8(8))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(0), uint16(0), uint8(0))
	f.Add(make([]byte, 300), uint8(15), uint16(299), uint8(255))
	f.Fuzz(func(t *testing.T, data []byte, bs uint8, cut uint16, capacity uint8) {
		if len(data) == 0 {
			return
		}
		blockSize, c := 1+int(bs%16), 1+int(capacity)
		a := make([]uint32, len(data))
		for i, v := range data {
			a[i] = uint32(v)
		}
		k := int(cut) % len(a)
		b := append([]uint32(nil), a...)
		b[k]++
		ha, hb := Hashes(a, blockSize, nil), Hashes(b, blockSize, nil)
		if len(ha) != len(a)/blockSize || len(hb) != len(ha) {
			t.Fatalf("%d and %d hashes for %d tokens in blocks of %d", len(ha), len(hb), len(a), blockSize)
		}
		x, err := NewIndex(c)
		if err != nil {
			t.Fatal(err)
		}
		x.Record(0, ha)
		x.Record(1, hb)
		if got, want := x.Match(ha, 0), min(len(ha), c); got != want {
			t.Errorf("recorded prompt matches %d blocks, want %d", got, want)
		}
		if got, want := x.Match(hb, 0), min(k/blockSize, len(ha), c); got != want {
			t.Errorf("prompt diverging at token %d matches %d blocks of %d, want %d", k, got, blockSize, want)
		}
		if got, want := x.Match(ha, 1), min(k/blockSize, len(ha), c); got != want {
			t.Errorf("the other way round: %d, want %d", got, want)
		}
		if x.Len(0) > c || x.Len(1) > c {
			t.Errorf("more blocks than the capacity %d: %d, %d", c, x.Len(0), x.Len(1))
		}
	})
}

// randomSnapshot draws a request and a fleet from rng, garbage included:
// negative counts, NaN, infinite and negative step times and utilisations,
// cache counts below 0 and beyond the prompt, classes out of range.
func randomSnapshot(rng *rand.Rand) (Request, []Instance) {
	odd := []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e300}
	req := Request{Class: Class(rng.IntN(5)), Priority: rng.IntN(7) - 3, InputTokens: rng.IntN(5000) - 10}
	fleet := make([]Instance, rng.IntN(9))
	for i := range fleet {
		in := Instance{ID: i, StepTime: 0.005 + 0.05*rng.Float64(), KVUtil: rng.Float64(), Cached: rng.IntN(6000) - 100}
		if rng.IntN(8) == 0 {
			in.StepTime = odd[rng.IntN(len(odd))]
		}
		if rng.IntN(8) == 0 {
			in.KVUtil = odd[rng.IntN(len(odd))]
		}
		for range rng.IntN(4) {
			in.Waiting = append(in.Waiting, Waiting{Priority: rng.IntN(7) - 3, Count: rng.IntN(120) - 10})
		}
		fleet[i] = in
	}
	return req, fleet
}

// FuzzPredictive: on random snapshots the predictive policy never panics,
// never rejects a protected class, and every decision is consistent: the
// estimate is the lowest over the eligible instances, finite and ≥ 0, and
// the request is admitted exactly when it is within the budget.
func FuzzPredictive(f *testing.F) {
	for s := range uint64(8) {
		f.Add(s, uint8(s*31))
	}
	f.Fuzz(func(t *testing.T, seed uint64, knobs uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(knobs)))
		cfg := PredictiveConfig{Headroom: 0.5 + 2.5*float64(knobs%8)/7, StandardBudget: 0.05 + rng.Float64(),
			SheddableBudget: 0.05 + rng.Float64(), Coefficients: Coefficients{Beta0: 0.02 * rng.Float64(), Beta1: 1e-4 * rng.Float64()}}
		if knobs&8 != 0 {
			cfg.KVLimit = 0.5 + 0.5*rng.Float64()
		}
		p := mustPredictive(t, cfg)
		for range 20 {
			req, fleet := randomSnapshot(rng)
			checkPredictive(t, p, cfg, req, fleet)
		}
	})
}

func checkPredictive(t *testing.T, p *Predictive, cfg PredictiveConfig, req Request, fleet []Instance) {
	t.Helper()
	d := p.Decide(0, req, fleet)
	if d.String() == "" {
		t.Fatal("empty decision text")
	}
	if req.Class.protected() && !d.Admit {
		t.Fatalf("%v rejected: %v", req.Class, d)
	}
	best, at := bestCase(p, cfg, req, fleet)
	switch d.Reason {
	case ReasonWithinBudget, ReasonOverBudget, ReasonCritical:
		checkEstimated(t, d, best, at)
	case ReasonNoInstance:
		if len(fleet) != 0 || !d.Admit {
			t.Fatalf("%v on a fleet of %d", d, len(fleet))
		}
	case ReasonSaturated:
		if at != -1 || d.Admit {
			t.Fatalf("%v, but instance %d is eligible", d, at)
		}
	default:
		t.Fatalf("unexpected reason: %v", d)
	}
}

// checkEstimated: an estimated decision names the best case, and admits
// exactly when it is within the budget (critical: always).
func checkEstimated(t *testing.T, d Decision, best float64, at int) {
	t.Helper()
	if d.Instance != at || d.Estimate != best || !(best >= 0) || math.IsInf(best, 0) {
		t.Fatalf("%v: want estimate %v on instance %d", d, best, at)
	}
	if d.Reason != ReasonCritical && d.Admit != (d.Estimate <= d.Budget) {
		t.Fatalf("%v: admit %v but estimate %v vs budget %v", d, d.Admit, d.Estimate, d.Budget)
	}
}

// bestCase is the lowest estimate over the instances eligible for req, by
// brute force, and its instance (-1 when none is).
func bestCase(p *Predictive, cfg PredictiveConfig, req Request, fleet []Instance) (float64, int) {
	best, at := math.Inf(1), -1
	for i := range fleet {
		if cfg.KVLimit > 0 && !req.Class.protected() && fleet[i].KVUtil >= cfg.KVLimit {
			continue
		}
		if e := p.Estimate(req, &fleet[i]); at < 0 || e < best {
			best, at = e, i
		}
	}
	return best, at
}

// fuzzCalibratorConfigs are the configurations FuzzCalibrator draws from
// (knobs % len): all valid.
var fuzzCalibratorConfigs = []CalibratorConfig{
	{}, {Forgetting: 0.9}, {Forgetting: 1}, {ClipSigma: 1}, {ClipSigma: 10}, {NoiseStd: 1e-6}, {NoiseStd: 1e3},
	{Initial: Coefficients{Beta0: 1, Beta1: 1e-3, Queue: 10}},
	{PriorStd: Coefficients{Beta0: 1e-9, Beta1: 1e-12, Queue: 1e-9}},
	{PriorStd: Coefficients{Beta0: MaxCoefficient, Beta1: MaxCoefficient, Queue: MaxCoefficient}},
	{Max: Coefficients{Beta0: 0.01, Beta1: 2e-5, Queue: 1}},
	{Initial: Coefficients{Beta0: MaxCoefficient, Beta1: MaxCoefficient, Queue: MaxCoefficient},
		Max: Coefficients{Beta0: MaxCoefficient, Beta1: MaxCoefficient, Queue: MaxCoefficient}},
}

// fuzzObservations decodes data, five bytes an observation — its TTFT,
// miss, ahead and step time picked from palettes of ordinary, huge, zero,
// negative, NaN and infinite values and the fuzzer's own, then how many
// times in a row it comes (1 to 64) — up to 4 096 observations in all.
func fuzzObservations(data []byte, ttft, step float64, miss, ahead int64) []Observation {
	ttfts := []float64{ttft, 0, 1e-3, 5e-3, 0.3, 1e3, 1e9, math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-3,
		math.NaN(), math.Inf(1), math.Inf(-1)}
	misses := []int{int(miss), 0, 1, 100, 7000, 10000, 1e7, 1 << 60, math.MaxInt, -1, math.MinInt}
	aheads := []int{int(ahead), 0, 1, 10, 90, 10000, 1 << 40, math.MaxInt, -1}
	steps := []float64{step, 0, 1e-3, 0.01, 1, 1e300, math.MaxFloat64, -0.01, math.NaN(), math.Inf(1), math.Inf(-1)}
	var obs []Observation
	for ; len(data) >= 5 && len(obs) < 4096; data = data[5:] {
		o := Observation{TTFT: ttfts[int(data[0])%len(ttfts)], Miss: misses[int(data[1])%len(misses)],
			Ahead: aheads[int(data[2])%len(aheads)], StepTime: steps[int(data[3])%len(steps)]}
		for range 1 + int(data[4])%64 {
			obs = append(obs, o)
		}
	}
	return obs
}

// FuzzCalibrator: whatever the observations — NaN, ±Inf, negative, huge
// and zero fields, long runs of one — and the configuration, Observe
// never panics; after each observation every coefficient is finite and
// within [0, Max], every standard error finite and at most its prior's,
// the residual's finite; β0 is at most the larger of its initial value
// and the largest TTFT observed (the objective's slope in β0 is positive
// beyond it, every regressor being ≥ 0: no learning 1 s from requests
// that took 0); and an invalid observation — a NaN, infinite or negative
// field, more than MaxObservedMiss misses or MaxObservedWait seconds
// ahead — is ignored, and changes nothing but the count of the ignored.
func FuzzCalibrator(f *testing.F) {
	// The report: 0-s requests with 10 000 misses and 10 waiting, over
	// and over (palette entries 1, 5, 3, 3).
	f.Add(bytes.Repeat([]byte{1, 5, 3, 3, 63}, 80), 0.0, 0.01, int64(10000), int64(10), uint8(0))
	f.Add(bytes.Repeat([]byte{0, 0, 0, 0, 63}, 80), 2e-3, 0.01, int64(10000), int64(10), uint8(7))
	f.Add([]byte{1, 4, 4, 2, 10, 2, 5, 1, 3, 10, 4, 6, 5, 4, 10}, 0.0, 1e-3, int64(7000), int64(90), uint8(1))
	f.Add([]byte{10, 0, 0, 0, 0, 11, 9, 0, 0, 0, 12, 0, 8, 0, 0, 0, 7, 7, 5, 3, 7, 8, 8, 6, 63}, math.NaN(), math.Inf(1), int64(-1), int64(math.MinInt64), uint8(5))
	f.Add([]byte{7, 8, 7, 6, 63, 8, 2, 2, 2, 63, 0, 0, 0, 0, 63}, math.MaxFloat64, 1e300, int64(math.MaxInt64), int64(1<<62), uint8(11))
	f.Add([]byte{1, 6, 5, 4, 63, 6, 3, 3, 2, 63}, math.Copysign(0, -1), -1.0, int64(0), int64(0), uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, ttft, step float64, miss, ahead int64, knobs uint8) {
		cfg := fuzzCalibratorConfigs[int(knobs)%len(fuzzCalibratorConfigs)]
		c, err := NewCalibrator(cfg)
		if err != nil {
			t.Fatalf("config %+v: %v", cfg, err)
		}
		ceiling := cfg.Initial.withDefaults().Beta0
		for i, o := range fuzzObservations(data, ttft, step, miss, ahead) {
			before := *c
			used := c.Observe(o)
			valid := !math.IsNaN(o.TTFT) && !math.IsInf(o.TTFT, 0) && o.TTFT >= 0 && o.Miss >= 0 && o.Ahead >= 0 &&
				!math.IsNaN(o.StepTime) && !math.IsInf(o.StepTime, 0) && o.StepTime >= 0 &&
				float64(o.Miss) <= MaxObservedMiss && float64(o.Ahead)*o.StepTime <= MaxObservedWait
			if used {
				ceiling = math.Max(ceiling, o.TTFT)
			}
			checkObserved(t, i, o, valid, used, &before, c)
			checkCalibrator(t, i, o, c, cfg, ceiling)
		}
	})
}

// checkObserved: an invalid observation is not used, and one not used
// changes nothing but the count of the ignored.
func checkObserved(t *testing.T, i int, o Observation, valid, used bool, before, after *Calibrator) {
	t.Helper()
	if used && !valid {
		t.Fatalf("observation %d %+v: invalid, but used", i, o)
	}
	if used {
		return
	}
	want := *before
	want.fit.Ignored++
	if *after != want {
		t.Fatalf("observation %d %+v: not used, but the calibrator changed: %+v, was %+v", i, o, *after, *before)
	}
}

func checkCalibrator(t *testing.T, i int, o Observation, c *Calibrator, cfg CalibratorConfig, ceiling float64) {
	t.Helper()
	f, limit := c.Fit(), cfg.Max.or(DefaultMaxCoefficients)
	for k := range 3 {
		v, se := f.Coefficients.at(k), f.StdErr.at(k)
		if !(v >= 0 && v <= limit.at(k)) {
			t.Fatalf("observation %d %+v: coefficient %d = %v, outside [0, %v]", i, o, k, v, limit.at(k))
		}
		if prior := math.Sqrt(c.p0[k]) / unit(k); !(se >= 0 && se <= prior*(1+1e-9)) {
			t.Fatalf("observation %d %+v: standard error %d = %v, prior %v", i, o, k, se, prior)
		}
	}
	if !(f.ResidualStd >= math.Sqrt(minNoiseVar)) || math.IsInf(f.ResidualStd, 0) {
		t.Fatalf("observation %d %+v: residual std %v", i, o, f.ResidualStd)
	}
	if f.Clipped > f.Used || f.Used+f.Ignored != int64(i+1) {
		t.Fatalf("observation %d: counts %+v", i, f)
	}
	if b := f.Coefficients.Beta0; b > ceiling*(1+1e-9)+1e-12 {
		t.Fatalf("observation %d %+v: β0 %v, above both its initial value and every TTFT observed (%v)", i, o, b, ceiling)
	}
}
