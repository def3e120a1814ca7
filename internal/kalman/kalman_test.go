package kalman

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func diag(v ...float64) *mat.SymDense {
	s := mat.NewSymDense(len(v), nil)
	for i, x := range v {
		s.SetSym(i, i, x)
	}
	return s
}

// textbookKF is the linear Kalman filter written out with explicit inverses
// (Simon, Optimal State Estimation, ch. 5): the reference the EKF must match when f and h are linear.
func textbookKF(x *mat.VecDense, p *mat.Dense, f, h, q, r *mat.Dense, z *mat.VecDense) (*mat.VecDense, *mat.Dense) {
	var xp mat.VecDense
	xp.MulVec(f, x)
	var pp, tmp mat.Dense
	tmp.Mul(f, p)
	pp.Mul(&tmp, f.T())
	pp.Add(&pp, q)
	var s, ph, sInv, k mat.Dense
	ph.Mul(&pp, h.T())
	s.Mul(h, &ph)
	s.Add(&s, r)
	if err := sInv.Inverse(&s); err != nil {
		panic(err)
	}
	k.Mul(&ph, &sInv)
	var hx, y, ky mat.VecDense
	hx.MulVec(h, &xp)
	y.SubVec(z, &hx)
	ky.MulVec(&k, &y)
	var xn mat.VecDense
	xn.AddVec(&xp, &ky)
	n, _ := p.Dims()
	var ikh, pn mat.Dense
	ikh.Mul(&k, h)
	eye := mat.NewDense(n, n, nil)
	for i := range n {
		eye.Set(i, i, 1)
	}
	ikh.Sub(eye, &ikh)
	pn.Mul(&ikh, &pp)
	return &xn, &pn
}

func TestLinearMatchesTextbook(t *testing.T) {
	// Constant-velocity model observed in position and velocity.
	fm := mat.NewDense(2, 2, []float64{1, 0.5, 0, 1})
	hm := mat.NewDense(2, 2, []float64{1, 0, 0.3, 1})
	q := diag(0.01, 0.02)
	r := diag(0.5, 0.2)
	x0 := []float64{1, -2}
	p0 := diag(4, 3)
	filt, err := New(x0, p0)
	if err != nil {
		t.Fatal(err)
	}
	ref := mat.NewVecDense(2, append([]float64(nil), x0...))
	refP := mat.DenseCopyOf(p0)
	rng := rand.New(rand.NewPCG(1, 2))
	lin := func(m *mat.Dense) Func {
		return func(x []float64) []float64 {
			var v mat.VecDense
			v.MulVec(m, mat.NewVecDense(len(x), append([]float64(nil), x...)))
			return v.RawVector().Data
		}
	}
	for step := range 50 {
		z := []float64{float64(step) + rng.NormFloat64(), 1 + rng.NormFloat64()}
		filt.Predict(lin(fm), func([]float64) *mat.Dense { return fm }, q)
		if _, err := filt.Update(z, lin(hm), nil, r); err != nil {
			t.Fatal(err)
		}
		ref, refP = textbookKF(ref, refP, fm, hm, mat.DenseCopyOf(q), mat.DenseCopyOf(r), mat.NewVecDense(2, z))
		x := filt.State()
		p := filt.Covariance()
		for i := range 2 {
			if math.Abs(x[i]-ref.AtVec(i)) > 1e-12*math.Max(1, math.Abs(ref.AtVec(i))) {
				t.Fatalf("step %d: x[%d] = %.15g, textbook %.15g", step, i, x[i], ref.AtVec(i))
			}
			for j := range 2 {
				if math.Abs(p.At(i, j)-refP.At(i, j)) > 1e-12 {
					t.Fatalf("step %d: P[%d,%d] = %.15g, textbook %.15g", step, i, j, p.At(i, j), refP.At(i, j))
				}
			}
		}
	}
}

func TestNumericalJacobian(t *testing.T) {
	fn := func(x []float64) []float64 {
		return []float64{x[0] * x[0] * x[1], math.Sin(x[1]) + math.Exp(x[2]), x[2] / (1 + x[0])}
	}
	x := []float64{1.5, 0, -0.7}
	want := [][]float64{
		{2 * 1.5 * 0, 1.5 * 1.5, 0},
		{0, math.Cos(0), math.Exp(-0.7)},
		{0.7 / (2.5 * 2.5), 0, 1 / 2.5},
	}
	j := NumericalJacobian(fn, x, DefaultJacobianStep)
	for r := range 3 {
		for c := range 3 {
			if math.Abs(j.At(r, c)-want[r][c]) > 1e-3*math.Max(1, math.Abs(want[r][c])) {
				t.Errorf("J[%d,%d] = %.8g, want %.8g", r, c, j.At(r, c), want[r][c])
			}
		}
	}
}

// TestConstantFromNoise estimates a constant from noisy readings: the
// estimate converges and NIS averages the measurement dimension (1).
func TestConstantFromNoise(t *testing.T) {
	const truth, sigma = 42.0, 3.0
	filt, err := New([]float64{0}, diag(1e4))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 9))
	h := func(x []float64) []float64 { return []float64{x[0]} }
	nisSum, n := 0.0, 0
	for step := range 4000 {
		filt.Predict(nil, nil, diag(1e-6))
		u, err := filt.Update([]float64{truth + sigma*rng.NormFloat64()}, h, nil, diag(sigma*sigma))
		if err != nil {
			t.Fatal(err)
		}
		if step >= 10 {
			nisSum += u.NIS
			n++
		}
	}
	x := filt.State()[0]
	sd := math.Sqrt(filt.Covariance().At(0, 0))
	if math.Abs(x-truth) > 4*sd || math.Abs(x-truth) > 0.5 {
		t.Errorf("estimate %v ± %v, truth %v", x, sd, truth)
	}
	if mean := nisSum / float64(n); math.Abs(mean-1) > 0.1 {
		t.Errorf("mean NIS %v, want ≈ 1", mean)
	}
}

// TestIteratedUpdate observes x² far from the prior: one linearisation
// overshoots, the iterated update lands on the MAP estimate.
func TestIteratedUpdate(t *testing.T) {
	h := func(x []float64) []float64 { return []float64{x[0] * x[0]} }
	for _, iters := range []int{1, 20} {
		filt, _ := New([]float64{1}, diag(100))
		u, err := filt.UpdateIterated([]float64{100}, h, nil, diag(1e-4), iters)
		if err != nil {
			t.Fatal(err)
		}
		got := filt.State()[0]
		if iters == 1 && math.Abs(got-10) < 1 {
			t.Errorf("plain EKF landed at %v: the test no longer shows the overshoot", got)
		}
		if iters > 1 && (math.Abs(got-10) > 1e-3 || u.Iterations < 2) {
			t.Errorf("iterated EKF: %v after %d iterations, want 10", got, u.Iterations)
		}
	}
}

func TestBoundsStashAndIllConditioned(t *testing.T) {
	filt, _ := New([]float64{1, 1}, diag(1, 1))
	filt.Lower, filt.Upper = []float64{0, 0}, []float64{2, 2}
	h := func(x []float64) []float64 { return []float64{x[0], x[1]} }
	filt.Stash()
	if _, err := filt.Update([]float64{10, -10}, h, nil, diag(1e-6, 1e-6)); err != nil {
		t.Fatal(err)
	}
	if x := filt.State(); x[0] != 2 || x[1] != 0 {
		t.Errorf("bounds not applied: %v", x)
	}
	if !filt.Unstash() || filt.State()[0] != 1 || filt.Covariance().At(0, 0) != 1 {
		t.Errorf("unstash did not restore: %v %v", filt.State(), filt.Covariance())
	}
	// Observing the same component twice with no noise: S is singular.
	flat := func(x []float64) []float64 { return []float64{x[0], x[0]} }
	u, err := filt.Update([]float64{1.5, 1.5}, flat, nil, diag(0, 1e-300))
	if !errors.Is(err, ErrIllConditioned) || len(u.Innovation) != 2 || filt.State()[0] != 1 {
		t.Errorf("ill-conditioned S: err %v, update %+v, state %v", err, u, filt.State())
	}
}

func TestJosephKeepsCovarianceSPD(t *testing.T) {
	filt, _ := New([]float64{5, 0.05, 5e-5}, diag(25, 0.0025, 2.5e-9))
	h := func(x []float64) []float64 { return []float64{x[0] + 1000*x[1], x[0] + x[1] + 2000*x[2]} }
	for range 200 {
		filt.Predict(nil, nil, diag(1e-6, 1e-10, 1e-16))
		if _, err := filt.Update([]float64{30, 8}, h, nil, diag(1e-4, 1e-4)); err != nil {
			t.Fatal(err)
		}
		p := filt.Covariance()
		var chol mat.Cholesky
		if !chol.Factorize(p) {
			t.Fatalf("P lost positive-definiteness: %v", mat.Formatted(p))
		}
	}
}

func TestIteratedFromAndEvaluate(t *testing.T) {
	h := func(x []float64) []float64 { return []float64{x[0] * x[0], x[0] + x[1]} }
	z, r := []float64{9, 5}, diag(1e-4, 1e-4)
	a, _ := New([]float64{1, 1}, diag(100, 100))
	ev, err := a.Evaluate(z, h, nil, r)
	if err != nil || a.State()[0] != 1 || math.Abs(ev.Innovation[0]-8) > 1e-12 || ev.NIS <= 0 {
		t.Fatalf("Evaluate: %+v, %v, state %v", ev, err, a.State())
	}
	ua, err := a.UpdateIterated(z, h, nil, r, 30)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New([]float64{1, 1}, diag(100, 100))
	ub, err := b.UpdateIteratedFrom(z, h, nil, r, 30, []float64{2.5, 2.5})
	if err != nil {
		t.Fatal(err)
	}
	xa, xb := a.State(), b.State()
	if math.Abs(xa[0]-3) > 1e-3 || math.Abs(xb[0]-xa[0]) > 1e-6 || math.Abs(xb[1]-xa[1]) > 1e-6 {
		t.Errorf("from prior %v, from (2.5, 2.5) %v; want x₀ = 3", xa, xb)
	}
	if ub.Iterations < 2 || ub.Cost <= 0 || math.Abs(ub.Cost-ua.Cost) > 1e-6 {
		t.Errorf("iterations %d vs %d, cost %v vs %v", ub.Iterations, ua.Iterations, ub.Cost, ua.Cost)
	}
}

func TestNonFiniteObservation(t *testing.T) {
	f, _ := New([]float64{1}, diag(1))
	h := func([]float64) []float64 { return []float64{math.NaN()} }
	if _, err := f.Update([]float64{1}, h, nil, diag(1)); !errors.Is(err, ErrNonFinite) || f.State()[0] != 1 {
		t.Errorf("NaN observation: %v, state %v", err, f.State())
	}
}
