package queueing

import (
	"math"
	"math/big"
	"testing"
)

// This file is an independent implementation of the seed formulas, written
// as plainly as possible and sharing no code with the package: the
// stationary distribution is built term by term in 256-bit floating point
// over all K+1 states, the statistics are summed from it, and sizing is a
// fixed number of plain bisection steps. The package must agree with it.

type refCase struct {
	model                     string // "linear" or "iteration"
	alpha, beta, gamma, delta float64
	in, out                   float64
	n, q                      int
}

// tau is the service time of a request when the batch holds n requests.
func (c refCase) tau(n float64) float64 {
	if c.model == "linear" { // docs/queueing.md, linear model
		prefill := 0.0
		if c.in > 0 {
			prefill = c.gamma + c.delta*c.in*n
		}
		return prefill + (c.out-1)*(c.alpha+c.beta*n)
	}
	// the WVA queueing-model guide §9
	work := c.beta*(c.in+c.out)/(c.out+1) + c.gamma*(c.in+c.out/2)
	iter := c.alpha + n*work
	prefill := iter + (c.beta+c.gamma)*c.in
	decode := iter + c.beta + c.gamma*(c.in+(c.out+1)/2)
	return prefill + c.out*decode
}

type refResult struct {
	ttft, itl, x, wait, batch, util, block float64
}

// analyze solves the queue at rate (requests/s) with big floats.
func (c refCase) analyze(rate float64) refResult {
	const prec = 256
	lam := rate / 1000 // per ms
	k := c.n + c.q
	p := make([]*big.Float, k+1)
	p[0] = new(big.Float).SetPrec(prec).SetFloat64(1)
	z := new(big.Float).SetPrec(prec).SetFloat64(1)
	for s := 1; s <= k; s++ {
		b := float64(min(s, c.n))
		mu := b / c.tau(b)
		ratio := new(big.Float).SetPrec(prec).SetFloat64(lam / mu)
		p[s] = new(big.Float).SetPrec(prec).Mul(p[s-1], ratio)
		z.Add(z, p[s])
	}
	var l, bbar, pk float64
	for s := range p {
		ps, _ := new(big.Float).SetPrec(prec).Quo(p[s], z).Float64()
		l += float64(s) * ps
		bbar += float64(min(s, c.n)) * ps
		if s == k {
			pk = ps
		}
	}
	x := lam * (1 - pk)
	t := l / x
	serv := bbar / x
	w := math.Max(t-serv, 0)
	r := refResult{x: x * 1000, wait: w, batch: bbar, util: bbar / float64(c.n), block: pk}
	if c.model == "linear" {
		// Effective concurrency (docs/queueing.md), inverting τ(n) = S.
		slope := c.tau(1) - c.tau(0)
		ne := math.Min(math.Max((serv-c.tau(0))/slope, 0), float64(c.n))
		prefill := 0.0
		if c.in > 0 {
			prefill = c.gamma + c.delta*c.in*ne
		}
		r.ttft = w + prefill
		r.itl = c.alpha + c.beta*ne
		return r
	}
	work := c.beta*(c.in+c.out)/(c.out+1) + c.gamma*(c.in+c.out/2)
	prefill := c.alpha + bbar*work + (c.beta+c.gamma)*c.in
	r.ttft = w + prefill
	r.itl = (serv - prefill) / c.out
	return r
}

// size returns λ_TTFT, λ_ITL and the capacity at λ* by plain bisection
// between 0.001·μ(1) and 0.999·μ(N).
func (c refCase) size(ttft, itl float64) (rTTFT, rITL, capacity float64) {
	lo := 1e-3 * 1000 * math.Min(1/c.tau(1), float64(c.n)/c.tau(float64(c.n)))
	hi := 0.999 * 1000 * float64(c.n) / c.tau(float64(c.n))
	find := func(target float64, metric func(refResult) float64) float64 {
		if target <= 0 || metric(c.analyze(hi)) <= target {
			return hi
		}
		a, b := lo, hi
		for range 60 {
			m := (a + b) / 2
			if metric(c.analyze(m)) <= target {
				a = m
			} else {
				b = m
			}
		}
		return a
	}
	rTTFT = find(ttft, func(r refResult) float64 { return r.ttft })
	rITL = find(itl, func(r refResult) float64 { return r.itl })
	return rTTFT, rITL, c.analyze(math.Min(rTTFT, rITL)).x
}

func (c refCase) config() Config {
	var m ServiceModel = Iteration{Alpha: c.alpha, Beta: c.beta, Gamma: c.gamma}
	if c.model == "linear" {
		m = Linear{Alpha: c.alpha, Beta: c.beta, Gamma: c.gamma, Delta: c.delta}
	}
	return Config{Model: m, Workload: Workload{InputTokens: c.in, OutputTokens: c.out}, MaxBatchSize: c.n, MaxQueueSize: c.q}
}

// referenceCases spans both models, N from 1 to 512, short and long requests.
var referenceCases = []refCase{
	{model: "iteration", alpha: 7, beta: 0.02, gamma: 5e-5, in: 1024, out: 256, n: 256, q: 100},
	{model: "iteration", alpha: 5, beta: 0.05, gamma: 5e-5, in: 128, out: 32, n: 1, q: 100},
	{model: "iteration", alpha: 12, beta: 0.008, gamma: 2e-4, in: 4096, out: 1024, n: 512, q: 100},
	{model: "iteration", alpha: 3, beta: 0.1, gamma: 1e-5, in: 0, out: 1, n: 8, q: 0},
	{model: "linear", alpha: 8, beta: 0.1, gamma: 20, delta: 0.002, in: 1024, out: 128, n: 64, q: 100},
	{model: "linear", alpha: 10, beta: 0.5, gamma: 30, delta: 0.01, in: 256, out: 16, n: 1, q: 100},
	{model: "linear", alpha: 6, beta: 0.03, gamma: 15, delta: 0.0005, in: 2048, out: 512, n: 512, q: 100},
	{model: "linear", alpha: 6, beta: 0.03, gamma: 15, delta: 0.0005, in: 0, out: 64, n: 16, q: 5},
}

func TestAnalyzeAgreesWithReference(t *testing.T) {
	for _, c := range referenceCases {
		a, err := NewAnalyzer(c.config())
		if err != nil {
			t.Fatal(err)
		}
		for _, load := range []float64{0.01, 0.3, 0.7, 0.95, 0.999, 1.5, 10} {
			rate := load * a.MaxRate()
			got, err := a.Analyze(rate)
			if err != nil {
				t.Fatal(err)
			}
			want := c.analyze(rate)
			for _, ch := range []struct {
				name      string
				got, want float64
			}{
				{"ttft", got.TTFTMs, want.ttft}, {"itl", got.ITLMs, want.itl}, {"throughput", got.ThroughputRPS, want.x},
				{"wait", got.WaitMs, want.wait}, {"batch", got.AvgBatchSize, want.batch},
				{"utilization", got.Utilization, want.util}, {"blocking", got.Blocking, want.block},
			} {
				if !closeTo(ch.got, ch.want, 1e-8) {
					t.Errorf("%s N=%d load %.3g: %s = %.12g, reference %.12g", c.model, c.n, load, ch.name, ch.got, ch.want)
				}
			}
		}
	}
}

func TestSizeAgreesWithReference(t *testing.T) {
	for _, c := range referenceCases {
		a, err := NewAnalyzer(c.config())
		if err != nil {
			t.Fatal(err)
		}
		light, err := a.Analyze(0.05 * a.MaxRate())
		if err != nil {
			t.Fatal(err)
		}
		heavy, err := a.Analyze(0.9 * a.MaxRate())
		if err != nil {
			t.Fatal(err)
		}
		// Targets between light and heavy load bind; generous ones do not.
		for _, tg := range []Targets{
			{TTFTMs: (light.TTFTMs + heavy.TTFTMs) / 2, ITLMs: (light.ITLMs + heavy.ITLMs) / 2},
			{TTFTMs: light.TTFTMs * 1.2},
			{ITLMs: light.ITLMs*0.5 + heavy.ITLMs*0.5},
			{TTFTMs: 1e9, ITLMs: 1e9},
		} {
			if light.TTFTMs < 1e-6 && tg.TTFTMs > 0 && tg.TTFTMs < 1e9 {
				continue // no prefill work: TTFT is pure wait, ≈ 0 at light load
			}
			got, err := a.Size(tg)
			if err != nil {
				t.Fatalf("%s N=%d %+v: %v", c.model, c.n, tg, err)
			}
			rT, rI, capacity := c.size(tg.TTFTMs, tg.ITLMs)
			for _, ch := range []struct {
				name      string
				got, want float64
			}{{"rate_ttft", got.RateTTFTRPS, rT}, {"rate_itl", got.RateITLRPS, rI}, {"capacity", got.CapacityRPS, capacity}} {
				if !closeTo(ch.got, ch.want, 1e-5) {
					t.Errorf("%s N=%d %+v: %s = %.10g, reference %.10g", c.model, c.n, tg, ch.name, ch.got, ch.want)
				}
			}
		}
	}
}
