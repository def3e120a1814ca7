package admission

import (
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
