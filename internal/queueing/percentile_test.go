package queueing

import (
	"math"
	"math/rand/v2"
	"testing"
)

// M/M/1 with a long queue: P(W ≤ t) = 1 − r·e^{−μ(1−r)t} (Kleinrock,
// Queueing Systems vol. 1, §3.2), up to the truncation at K.
func TestWaitWithinMM1(t *testing.T) {
	mu, r := 2.0, 0.5
	q, err := NewQueue([]float64{mu}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []float64{0, 0.1, 0.5, 1, 3} {
		got, err := q.WaitWithin(r*mu, tt)
		if err != nil {
			t.Fatal(err)
		}
		want := 1 - r*math.Exp(-mu*(1-r)*tt)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("t=%v: P(W ≤ t) = %.12f, want %.12f", tt, got, want)
		}
	}
}

// N = 1, Q = 1: states 0, 1, 2 with masses ∝ 1, r, r². An arrival that
// finds 0 starts at once, one that finds 1 waits an exponential time, one
// that finds 2 is blocked.
func TestWaitWithinSmall(t *testing.T) {
	mu, lambda := 1.0, 2.0
	q, err := NewQueue([]float64{mu}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := lambda / mu
	z := 1 + r + r*r
	for _, tt := range []float64{0, 0.7, 2} {
		got, _ := q.WaitWithin(lambda, tt)
		want := 1/z + r/z*(1-math.Exp(-mu*tt))
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("t=%v: %.15f, want %.15f", tt, got, want)
		}
	}
	if got, _ := q.WaitWithin(lambda, math.Inf(1)); math.Abs(got-(1-r*r/z)) > 1e-12 {
		t.Errorf("t=∞: %v, want 1 − p_K = %v", got, 1-r*r/z)
	}
}

// bruteWaits simulates the birth–death chain event by event, FCFS, and
// returns every arrival's wait (+Inf when blocked) after a warm-up.
func bruteWaits(rng *rand.Rand, mu []float64, maxQueue int, lambda float64, arrivals int) []float64 {
	n, k := len(mu), len(mu)+maxQueue
	type waiter struct {
		at  float64
		idx int // into waits, or -1 during the warm-up
	}
	inSystem, now := 0, 0.0
	var queue []waiter
	waits := make([]float64, 0, arrivals)
	warm := arrivals / 10
	for seen := 0; seen < arrivals+warm; {
		dep := 0.0
		if inSystem > 0 {
			dep = mu[min(inSystem, n)-1]
		}
		total := lambda + dep
		now += rng.ExpFloat64() / total
		if rng.Float64()*total >= lambda { // a completion
			inSystem--
			if len(queue) > 0 {
				w := queue[0]
				queue = queue[1:]
				if w.idx >= 0 {
					waits[w.idx] = now - w.at
				}
			}
			continue
		}
		seen++
		idx := -1
		if seen > warm {
			idx = len(waits)
			waits = append(waits, 0)
		}
		switch {
		case inSystem == k:
			if idx >= 0 {
				waits[idx] = math.Inf(1)
			}
		case inSystem >= n:
			queue = append(queue, waiter{at: now, idx: idx})
			inSystem++
		default:
			inSystem++
		}
	}
	// Requests still waiting at the end have waited at least this long.
	for _, w := range queue {
		if w.idx >= 0 {
			waits[w.idx] = now - w.at
		}
	}
	return waits
}

// The waiting-time distribution against a brute-force simulation of the
// same chain, over random batch sizes, queue sizes, service curves and
// loads from light to overloaded.
func TestWaitWithinAgainstSimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 12 {
		n := 1 + rng.IntN(5)
		maxQueue := rng.IntN(25)
		base, slope := 0.2+rng.Float64(), rng.Float64()*0.5
		mu := make([]float64, n)
		for i := range mu {
			mu[i] = float64(i+1) / (base + slope*float64(i+1))
		}
		lambda := mu[n-1] * (0.3 + 1.2*rng.Float64())
		q, err := NewQueue(mu, maxQueue)
		if err != nil {
			t.Fatal(err)
		}
		waits := bruteWaits(rng, mu, maxQueue, lambda, 400_000)
		for _, tt := range []float64{0, 0.3 / mu[n-1], 1 / mu[n-1], 4 / mu[n-1]} {
			hit := 0
			for _, w := range waits {
				if w <= tt {
					hit++
				}
			}
			emp := float64(hit) / float64(len(waits))
			got, err := q.WaitWithin(lambda, tt)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-emp) > 0.012 {
				t.Errorf("trial %d (N=%d Q=%d λ=%.3g μ(N)=%.3g) t=%.3g: P(W ≤ t) = %.4f, simulated %.4f",
					trial, n, maxQueue, lambda, mu[n-1], tt, got, emp)
			}
		}
	}
}

func TestAttainmentSizing(t *testing.T) {
	a, err := NewAnalyzer(Config{Model: Iteration{Alpha: 6, Beta: 0.02, Gamma: 0.0005},
		Workload: Workload{InputTokens: 512, OutputTokens: 128}, MaxBatchSize: 16, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	const target = 400.0
	mean, err := a.Size(Targets{TTFTMs: target})
	if err != nil {
		t.Fatal(err)
	}
	prev := mean.RateTTFTRPS * 2
	for _, share := range []float64{0.5, 0.9, 0.99, 0.999} {
		sz, err := a.Size(Targets{TTFTMs: target, TTFTAttainment: share})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := a.TTFTAttainment(sz.RateTTFTRPS, target)
		if math.Abs(got-share) > 1e-4 || math.Abs(sz.TTFTAttainment-got) > 1e-12 {
			t.Errorf("attainment %v: at λ=%.4g the share within %v ms is %.6f (reported %.6f)", share, sz.RateTTFTRPS, target, got, sz.TTFTAttainment)
		}
		if sz.RateTTFTRPS >= prev {
			t.Errorf("attainment %v: rate %.4g not below the looser target's %.4g", share, sz.RateTTFTRPS, prev)
		}
		prev = sz.RateTTFTRPS
		p, _ := a.TTFTPercentile(sz.RateTTFTRPS, share)
		if math.Abs(p-target) > 1e-3*target {
			t.Errorf("attainment %v: the %v-quantile of TTFT at that rate is %.3f ms, want %v", share, share, p, target)
		}
	}
	// At 0.99 a replica takes less than at the mean: the tail, not the
	// mean, binds.
	if sz, _ := a.Size(Targets{TTFTMs: target, TTFTAttainment: 0.99}); sz.RateTTFTRPS >= mean.RateTTFTRPS {
		t.Errorf("99 %% within %v ms allows %.4g rps, the mean target %.4g", target, sz.RateTTFTRPS, mean.RateTTFTRPS)
	}
	if _, err := a.Size(Targets{TTFTMs: target, TTFTAttainment: 1}); err == nil {
		t.Error("attainment 1 accepted")
	}
}

func TestTTFTPercentileBlocked(t *testing.T) {
	a, err := NewAnalyzer(Config{Model: Iteration{Alpha: 6, Beta: 0.02, Gamma: 0.0005},
		Workload: Workload{InputTokens: 512, OutputTokens: 128}, MaxBatchSize: 4, MaxQueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Far above capacity most arrivals are blocked: no finite TTFT is met
	// by 99 % of them.
	p, err := a.TTFTPercentile(10*a.MaxRate(), 0.99)
	if err != nil || !math.IsInf(p, 1) {
		t.Errorf("overloaded p99 = %v, %v; want +Inf", p, err)
	}
	if _, err := a.TTFTPercentile(1, 1); err == nil {
		t.Error("percentile 1 accepted")
	}
}

// TestWaitWithinPathsAgree: the waiting-time tail is summed by recurrence
// while e^{−x} (x the expected completions within t) is representable and
// in log space beyond x = 700; the two must meet there (the function is
// continuous in t) and both match M/M/1's closed form.
func TestWaitWithinPathsAgree(t *testing.T) {
	mu, r := 1000.0, 0.998
	q, err := NewQueue([]float64{mu}, 20000)
	if err != nil {
		t.Fatal(err)
	}
	at := func(x float64) float64 {
		got, err := q.WaitWithin(r*mu, x/mu)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	lo, hi := at(699.999), at(700.001)
	if math.Abs(lo-hi) > 1e-6 {
		t.Errorf("P(W ≤ t) jumps at x = 700: %.9f → %.9f", lo, hi)
	}
	for _, x := range []float64{100, 699.999, 700.001, 1500} {
		want := 1 - r*math.Exp(-mu*(1-r)*x/mu)
		if got := at(x); math.Abs(got-want) > 1e-6 {
			t.Errorf("x=%v: P(W ≤ t) = %.9f, want %.9f", x, got, want)
		}
	}
}

// TestWaitWithinHugeTarget: the share within a target never falls as the
// target grows, up to a target whose expected completions are past 2^63
// (converted to an int, that bound went negative on amd64, the sum was
// empty, and a looser TTFT target sized more replicas).
func TestWaitWithinHugeTarget(t *testing.T) {
	q, err := NewQueue([]float64{10, 18, 24, 28}, 100)
	if err != nil {
		t.Fatal(err)
	}
	prev := 0.0
	for _, tt := range []float64{0.1, 1, 10, 1e6, 1e18, 1e22, 1e300, math.Inf(1)} {
		got, err := q.WaitWithin(30, tt)
		if err != nil {
			t.Fatal(err)
		}
		if got < prev-1e-12 || got > 1 {
			t.Errorf("t=%g: %v after %v", tt, got, prev)
		}
		prev = got
	}
}

// TestQueueSizeNoWrap: a queue size near MaxInt64 is refused (batch +
// queue wrapped past the state limit and was accepted, with other
// results than a queue at the limit).
func TestQueueSizeNoWrap(t *testing.T) {
	huge := int(^uint(0) >> 1)
	if _, err := NewQueue([]float64{1, 2}, huge); err == nil {
		t.Error("NewQueue accepted a queue of MaxInt64")
	}
	if _, err := newAffineQueue(1, 0.1, 8, huge); err == nil {
		t.Error("newAffineQueue accepted a queue of MaxInt64")
	}
	if _, err := newAffineQueue(1, 0.1, 8, MaxStates-8); err != nil {
		t.Errorf("a queue at the limit: %v", err)
	}
}
