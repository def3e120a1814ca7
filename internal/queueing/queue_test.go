package queueing

import (
	"errors"
	"math"
	"testing"
)

// closeTo reports whether got is within tol of want, relative to max(|want|, 1).
func closeTo(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1)
}

// constantQueue is a classical M/M/1/K queue: one server of rate mu.
func constantQueue(t *testing.T, mu float64, k int) *Queue {
	t.Helper()
	q, err := NewQueue([]float64{mu}, k-1)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestTextbookMM1K checks the solver against the closed forms of the M/M/1/K
// queue (Kleinrock, Queueing Systems vol. 1, §3.6).
func TestTextbookMM1K(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lambda, m float64
		k         int
	}{
		{"light load", 0.2, 1, 10},
		{"moderate load", 0.8, 1, 50},
		{"critical load ρ=1", 1, 1, 20},
		{"overload", 3, 1, 30},
		{"heavy overload long queue", 50, 2, 2000},
		{"no waiting room", 0.7, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := constantQueue(t, tc.m, tc.k)
			s, err := q.Solve(tc.lambda)
			if err != nil {
				t.Fatal(err)
			}
			rho := tc.lambda / tc.m
			k := float64(tc.k)
			var p0, pK, l float64
			switch {
			case rho == 1:
				p0, pK, l = 1/(k+1), 1/(k+1), k/2
			case rho > 1:
				// Mirror image with σ = 1/ρ, which avoids overflowing ρ^K.
				sg := 1 / rho
				pK = (1 - sg) / (1 - math.Pow(sg, k+1))
				p0 = pK * math.Pow(sg, k)
				l = k - (sg/(1-sg) - (k+1)*math.Pow(sg, k+1)/(1-math.Pow(sg, k+1)))
			default:
				p0 = (1 - rho) / (1 - math.Pow(rho, k+1))
				pK = p0 * math.Pow(rho, k)
				l = rho/(1-rho) - (k+1)*math.Pow(rho, k+1)/(1-math.Pow(rho, k+1))
			}
			x := tc.lambda * (1 - pK)
			checks := []struct {
				name      string
				got, want float64
			}{
				{"p0", s.Idle, p0},
				{"pK", s.Blocking, pK},
				{"L", s.AvgInSystem, l},
				{"X", s.Throughput, x},
				{"T", s.RespTime, l / x},
				{"B̄ = 1 − p0", s.AvgBatch, 1 - p0},
				{"W = T − 1/μ", s.Wait, l/x - 1/tc.m},
			}
			for _, c := range checks {
				if !closeTo(c.got, c.want, 1e-9) {
					t.Errorf("%s = %.15g, want %.15g", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestMMcK checks a multi-server queue μ(n) = n·μ, which the state-dependent
// solver covers with N = c, against its product form computed directly.
func TestMMcK(t *testing.T) {
	const c, k, mu, lambda = 4, 12, 0.5, 1.7
	rates := make([]float64, c)
	for i := range rates {
		rates[i] = float64(i+1) * mu
	}
	q, err := NewQueue(rates, k-c)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, k+1)
	p[0] = 1
	sum := 1.0
	for n := 1; n <= k; n++ {
		p[n] = p[n-1] * lambda / (float64(min(n, c)) * mu)
		sum += p[n]
	}
	var l, lq float64
	for n := range p {
		p[n] /= sum
		l += float64(n) * p[n]
		lq += float64(max(n-c, 0)) * p[n]
	}
	s, err := q.Solve(lambda)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []struct {
		name      string
		got, want float64
	}{{"L", s.AvgInSystem, l}, {"Lq", s.AvgQueued, lq}, {"pK", s.Blocking, p[k]}, {"p0", s.Idle, p[0]}} {
		if !closeTo(ch.got, ch.want, 1e-12) {
			t.Errorf("%s = %.15g, want %.15g", ch.name, ch.got, ch.want)
		}
	}
}

// TestSolveAgreesWithDistribution checks Solve's O(N) sums against the
// explicit distribution, with Little's law and flow balance on each solve:
// L = X·T, Lq = X·W, B̄ = X·S, and X = Σ p_n μ(min(n, N)).
func TestSolveAgreesWithDistribution(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, q    int
		lambdas []float64
	}{
		{"small batch", 4, 10, []float64{0.01, 0.5, 2, 3.99, 4, 5, 40}},
		{"no queue", 16, 0, []float64{0.3, 8, 100}},
		{"large batch", 256, 100, []float64{1, 50, 99, 100, 101, 1e4, 1e5}},
		{"huge queue", 8, 100_000, []float64{0.5, 7.9, 8, 8.1, 8000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// μ(n) = n/(a + b·n): concave, saturating at 1/b.
			a, b := 3.0, 0.01
			if tc.n <= 16 {
				b = 0.25
			}
			mu := make([]float64, tc.n)
			for i := range mu {
				mu[i] = float64(i+1) / (a + b*float64(i+1))
			}
			q, err := NewQueue(mu, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			for _, lambda := range tc.lambdas {
				s, err := q.Solve(lambda)
				if err != nil {
					t.Fatal(err)
				}
				p, err := q.Distribution(lambda)
				if err != nil {
					t.Fatal(err)
				}
				var sum, l, lq, bbar, flow float64
				for n, pn := range p {
					sum += pn
					l += float64(n) * pn
					lq += float64(max(n-tc.n, 0)) * pn
					bbar += float64(min(n, tc.n)) * pn
					if n > 0 {
						flow += pn * mu[min(n, tc.n)-1]
					}
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Errorf("λ=%g: probabilities sum to 1%+.3g", lambda, sum-1)
				}
				for _, ch := range []struct {
					name      string
					got, want float64
				}{
					{"L", s.AvgInSystem, l},
					{"Lq", s.AvgQueued, lq},
					{"B̄", s.AvgBatch, bbar},
					{"p0", s.Idle, p[0]},
					{"pK", s.Blocking, p[len(p)-1]},
					{"X (flow balance)", s.Throughput, flow},
					{"Little L = X·T", s.Throughput * s.RespTime, l},
					{"Little Lq = X·W", s.Throughput * s.Wait, lq},
					{"Little B̄ = X·S", s.Throughput * s.ServTime, bbar},
					{"W = T − S", s.Wait, math.Max(s.RespTime-s.ServTime, 0)},
				} {
					if !closeTo(ch.got, ch.want, 1e-9) {
						t.Errorf("λ=%g: %s = %.15g, want %.15g", lambda, ch.name, ch.got, ch.want)
					}
				}
			}
		})
	}
}

// TestExtremes checks that K = 10⁵ and loads up to 1000× capacity (and far
// beyond, on the log-space path) stay finite and sensible.
func TestExtremes(t *testing.T) {
	mu := make([]float64, 512)
	for i := range mu {
		mu[i] = float64(i+1) / (5 + 0.2*float64(i+1))
	}
	for _, qlen := range []int{0, 1, 100, 99_488} {
		q, err := NewQueue(mu, qlen)
		if err != nil {
			t.Fatal(err)
		}
		capacity := q.Capacity()
		for _, load := range []float64{1e-12, 1e-3, 0.5, 0.999999, 1, 1.000001, 2, 1000, 1e30, 1e200} {
			lambda := load * capacity
			s, err := q.Solve(lambda)
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range map[string]float64{"X": s.Throughput, "L": s.AvgInSystem, "Lq": s.AvgQueued, "B̄": s.AvgBatch,
				"T": s.RespTime, "S": s.ServTime, "W": s.Wait, "pK": s.Blocking, "p0": s.Idle, "U": s.Utilization} {
				if !finite(v) || v < 0 {
					t.Fatalf("Q=%d load=%g: %s = %v", qlen, load, name, v)
				}
			}
			if s.Throughput > capacity*(1+1e-9) || s.Throughput > lambda*(1+1e-12) {
				t.Errorf("Q=%d load=%g: throughput %g exceeds min(λ, μ(N)) = %g", qlen, load, s.Throughput, math.Min(lambda, capacity))
			}
			if load >= 1000 && s.Utilization < 0.999 {
				t.Errorf("Q=%d load=%g: utilisation %g, want ≈ 1", qlen, load, s.Utilization)
			}
			if load >= 1000 && !closeTo(s.AvgQueued, float64(qlen), 2e-3) {
				t.Errorf("Q=%d load=%g: queue %g, want ≈ %d", qlen, load, s.AvgQueued, qlen)
			}
		}
	}
}

func TestQueueRejectsBadInput(t *testing.T) {
	if _, err := NewQueue(nil, 1); !isParam(err, "max-batch-size") {
		t.Errorf("empty μ: got %v", err)
	}
	if _, err := NewQueue([]float64{1, math.NaN()}, 1); err == nil {
		t.Error("NaN μ accepted")
	}
	if _, err := NewQueue([]float64{1}, -1); !isParam(err, "max-queue-size") {
		t.Errorf("negative Q: got %v", err)
	}
	q := constantQueue(t, 1, 3)
	for _, lambda := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := q.Solve(lambda); !isParam(err, "rate") {
			t.Errorf("Solve(%v): got %v", lambda, err)
		}
	}
}

func isParam(err error, param string) bool {
	var pe *ParamError
	return errors.As(err, &pe) && pe.Param == param
}

// TestAffineAndTableHeadsAgree: the head's two forms of 1/μ(n), affine
// (with the reciprocals table) and tabulated, give the same sums for the
// same rates — through the tail cut (light load), rescaling (overload),
// and past the end of the reciprocals table (N = 5 000).
func TestAffineAndTableHeadsAgree(t *testing.T) {
	for _, n := range []int{1, 2, 17, 256, 5000} {
		for _, p := range [][2]float64{{20, 0.05}, {0.1, 3}, {1e5, 0}, {0, 2}} {
			aff := affineQueue(p[0], p[1], n, 100)
			inv := make([]float64, n)
			for i := range inv {
				inv[i] = aff.inv(i + 1)
			}
			tab, err := newQueueInv(inv, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []float64{1e-6, 0.3, 0.99, 1.01, 50, 1e30} {
				lambda := f / aff.inv(n)
				a, b := aff.head(lambda), tab.head(lambda)
				// Compare the masses, not the scale: e^{logScale} is a
				// whole power of 1e200 in both.
				if a.logScale != b.logScale || !near(a.sum, b.sum) || !near(a.sumBelowN, b.sumBelowN) ||
					!near(a.weighted, b.weighted) || !near(a.last, b.last) {
					t.Errorf("N %d, 1/μ(n) = %g + %g/n, λ = %g·μ(N): affine %+v, table %+v", n, p[1], p[0], f, a, b)
				}
			}
		}
	}
}

// near: equal within 10⁻¹⁰ relative (the two forms round differently).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-10*math.Max(math.Abs(a), math.Abs(b))
}
