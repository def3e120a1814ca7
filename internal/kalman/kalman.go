// Over 400 lines: predict, the (iterated) update and their numerical
// safeguards share the filter's state and are kept together.

// Package kalman is a general Extended Kalman Filter (Simon, Optimal State
// Estimation, ch. 13; docs/references.md) over gonum matrices: predict and update for nonlinear
// transition and observation functions, Jacobians by symmetric finite
// differences or supplied by the caller, a Joseph-form covariance update kept
// symmetric positive-definite, an iterated (Gauss–Newton) update for strongly
// nonlinear observations, state bounds, and stash/unstash for rollback.
//
// The filter never inverts the innovation covariance S: it factorises it
// (Cholesky) and solves. All arithmetic is float64. The package never logs.
package kalman

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Func maps a state vector to a vector: the transition f or the observation h.
// It must not keep or modify x.
type Func func(x []float64) []float64

// JacobianFunc returns ∂fn/∂x at x, one row per output.
type JacobianFunc func(x []float64) *mat.Dense

// ErrIllConditioned is returned (wrapped) when the innovation covariance S is
// too ill-conditioned to solve reliably. It is a soft error: the filter state
// is left as it was, and the returned Update still carries the innovation.
var ErrIllConditioned = errors.New("kalman: ill-conditioned innovation covariance")

// ErrNonFinite is returned when the observation function or its Jacobian
// yields NaN or ±Inf, or the update would. The filter state is unchanged.
var ErrNonFinite = errors.New("kalman: observation function returned a non-finite value")

// MaxCondition is the largest condition number of S that an update accepts.
const MaxCondition = 1e12

// DefaultJacobianStep is the relative step of the symmetric finite
// differences: a 1 % change of each component.
const DefaultJacobianStep = 0.01

// Filter holds the estimate x and its covariance P.
type Filter struct {
	x *mat.VecDense
	p *mat.SymDense
	// Lower and Upper, when not nil, bound every component of x; the state
	// is clamped to them after each update (projection onto the bounds; Simon,
	// Optimal State Estimation, ch. 7).
	Lower, Upper []float64

	stashX *mat.VecDense
	stashP *mat.SymDense
}

// New returns a filter at x0 with covariance p0, which must be symmetric
// positive-definite and match x0 in size.
func New(x0 []float64, p0 *mat.SymDense) (*Filter, error) {
	if p0.SymmetricDim() != len(x0) {
		return nil, fmt.Errorf("kalman: covariance is %d×%d for a state of %d", p0.SymmetricDim(), p0.SymmetricDim(), len(x0))
	}
	var chol mat.Cholesky
	if !chol.Factorize(p0) {
		return nil, errors.New("kalman: initial covariance is not positive-definite")
	}
	f := &Filter{x: mat.NewVecDense(len(x0), append([]float64(nil), x0...)), p: mat.NewSymDense(len(x0), nil)}
	f.p.CopySym(p0)
	return f, nil
}

// State returns a copy of x.
func (f *Filter) State() []float64 { return append([]float64(nil), f.x.RawVector().Data...) }

// Covariance returns a copy of P.
func (f *Filter) Covariance() *mat.SymDense {
	p := mat.NewSymDense(f.p.SymmetricDim(), nil)
	p.CopySym(f.p)
	return p
}

// SetState replaces x (bounds are applied) and, when p is not nil, P.
func (f *Filter) SetState(x []float64, p *mat.SymDense) {
	if len(x) != f.x.Len() {
		panic(fmt.Sprintf("kalman: SetState with %d components for a state of %d", len(x), f.x.Len()))
	}
	for i, v := range x {
		f.x.SetVec(i, v)
	}
	f.clamp()
	if p != nil {
		f.p.CopySym(p)
	}
}

// Stash saves (x, P) so that Unstash can roll an update back (a rejected
// update, docs/tuner.md).
func (f *Filter) Stash() {
	f.stashX = mat.VecDenseCopyOf(f.x)
	f.stashP = mat.NewSymDense(f.p.SymmetricDim(), nil)
	f.stashP.CopySym(f.p)
}

// Unstash restores the last stashed (x, P). It reports false if nothing was
// stashed.
func (f *Filter) Unstash() bool {
	if f.stashX == nil {
		return false
	}
	f.x.CopyVec(f.stashX)
	f.p.CopySym(f.stashP)
	return true
}

// Predict runs the time update x = f(x), P = F P Fᵀ + Q. A nil fn is the
// identity transition (F = I); a nil jac with a non-nil fn uses symmetric
// finite differences.
func (f *Filter) Predict(fn Func, jac JacobianFunc, q *mat.SymDense) {
	n := f.x.Len()
	if fn != nil {
		x := f.State()
		jf := jacobianOf(fn, jac, x)
		f.x = mat.NewVecDense(n, fn(x))
		var fp, fpf mat.Dense
		fp.Mul(jf, f.p)
		fpf.Mul(&fp, jf.T())
		f.p = symmetrize(&fpf)
	}
	if q != nil {
		f.p.AddSym(f.p, q)
	}
}

// Update is what a measurement update computed.
type Update struct {
	Innovation []float64     // y = z − h(x⁻) at the prior estimate
	S          *mat.SymDense // innovation covariance H P Hᵀ + R at the prior
	Gain       *mat.Dense    // Kalman gain at the final linearisation
	NIS        float64       // yᵀ S⁻¹ y, χ² with len(z) degrees of freedom when the filter is consistent
	Cond       float64       // condition number estimate of S
	Iterations int           // Gauss–Newton iterations (1 for a plain EKF update)
	// Cost is the MAP cost (x − x⁻)ᵀP⁻¹(x − x⁻) + (z − h(x))ᵀR⁻¹(z − h(x)) at
	// the new estimate, for iterated updates: it ranks fits from different
	// starts.
	Cost float64
}

// Update runs the EKF measurement update with observation z, observation
// function h (Jacobian jac, or finite differences when nil) and noise
// covariance r, using the Joseph form
// P = (I − KH) P (I − KH)ᵀ + K R Kᵀ.
func (f *Filter) Update(z []float64, h Func, jac JacobianFunc, r *mat.SymDense) (Update, error) {
	return f.update(z, h, jac, r, 1, nil)
}

// UpdateIterated is the iterated EKF update: Gauss–Newton on the MAP cost
// (x − x⁻)ᵀP⁻¹(x − x⁻) + (z − h(x))ᵀR⁻¹(z − h(x)), relinearising h at each
// iterate, halving steps that do not lower the cost, for at most maxIter
// iterations. With maxIter = 1 it is the plain EKF update. It copes with
// observations far from the prior, where one linearisation overshoots.
func (f *Filter) UpdateIterated(z []float64, h Func, jac JacobianFunc, r *mat.SymDense, maxIter int) (Update, error) {
	return f.update(z, h, jac, r, max(maxIter, 1), nil)
}

// UpdateIteratedFrom is UpdateIterated with the Gauss–Newton iterations
// started at start instead of the prior estimate (the MAP cost, and so the
// answer, are the same; a start near the answer saves iterations). Stacking
// several observations in z makes it a batch fit of all of them against the
// prior.
func (f *Filter) UpdateIteratedFrom(z []float64, h Func, jac JacobianFunc, r *mat.SymDense, maxIter int, start []float64) (Update, error) {
	if len(start) != f.x.Len() {
		panic(fmt.Sprintf("kalman: start has %d components for a state of %d", len(start), f.x.Len()))
	}
	return f.update(z, h, jac, r, max(maxIter, 2), start)
}

// Evaluate returns the innovation, its covariance and the NIS of z at the
// current estimate without changing the filter.
func (f *Filter) Evaluate(z []float64, h Func, jac JacobianFunc, r *mat.SymDense) (Update, error) {
	out, _, _, _, err := f.innovation(z, h, jac, r)
	return out, err
}

// innovation computes the prior innovation, S, its factorisation and the NIS.
func (f *Filter) innovation(z []float64, h Func, jac JacobianFunc, r *mat.SymDense) (Update, *mat.Cholesky, []float64, *mat.Dense, error) {
	m := len(z)
	if r.SymmetricDim() != m {
		panic(fmt.Sprintf("kalman: R is %d×%d for %d observations", r.SymmetricDim(), r.SymmetricDim(), m))
	}
	prior := f.State()
	hx := h(prior)
	hj := jacobianOf(h, jac, prior)
	y := mat.NewVecDense(m, nil)
	y.SubVec(mat.NewVecDense(m, append([]float64(nil), z...)), mat.NewVecDense(m, hx))
	s := innovationCov(hj, f.p, r)
	chol := &mat.Cholesky{}
	out := Update{Innovation: append([]float64(nil), y.RawVector().Data...), S: s}
	if !allFinite(y.RawVector().Data) || !allFinite(hj.RawMatrix().Data) {
		return out, nil, nil, nil, ErrNonFinite
	}
	if !chol.Factorize(s) {
		return out, nil, nil, nil, fmt.Errorf("%w: S is not positive-definite", ErrIllConditioned)
	}
	out.Cond = chol.Cond()
	if out.Cond > MaxCondition || math.IsNaN(out.Cond) {
		return out, nil, nil, nil, fmt.Errorf("%w: condition number %.3g", ErrIllConditioned, out.Cond)
	}
	var siy mat.VecDense
	if err := chol.SolveVecTo(&siy, y); err != nil {
		return out, nil, nil, nil, fmt.Errorf("%w: %w", ErrIllConditioned, err)
	}
	out.NIS = mat.Dot(y, &siy)
	return out, chol, hx, hj, nil
}

func (f *Filter) update(z []float64, h Func, jac JacobianFunc, r *mat.SymDense, maxIter int, start []float64) (Update, error) {
	out, chol, hx, hj, err := f.innovation(z, h, jac, r)
	if err != nil {
		return out, err
	}
	prior := f.State()
	zv := mat.NewVecDense(len(z), append([]float64(nil), z...))
	if start != nil {
		hx = h(start)
		hj = jacobianOf(h, jac, start)
		if !allFinite(hx) || !allFinite(hj.RawMatrix().Data) || !chol.Factorize(innovationCov(hj, f.p, r)) {
			start, hx, hj = nil, h(prior), jacobianOf(h, jac, prior)
			chol.Factorize(innovationCov(hj, f.p, r))
		}
	}
	gn, err := f.iterate(prior, start, zv, h, jac, r, hj, hx, chol, maxIter)
	if err != nil {
		return out, err
	}
	out.Gain, out.Iterations, out.Cost = gn.gain, gn.iters, gn.cost
	if !allFinite(gn.x) {
		return out, ErrNonFinite
	}
	f.x = mat.NewVecDense(len(gn.x), gn.x)
	f.clamp()
	f.p = joseph(f.p, gn.gain, gn.hj, r)
	return out, nil
}

// gaussNewton is what iterate found: the new state, the gain and Jacobian
// of the last linearisation, the iterations, and the MAP cost at x (0 for
// a plain update).
type gaussNewton struct {
	x        []float64
	gain, hj *mat.Dense
	iters    int
	cost     float64
}

// iterate runs the Gauss–Newton iterations from the prior.
func (f *Filter) iterate(prior, start []float64, z *mat.VecDense, h Func, jac JacobianFunc, r *mat.SymDense,
	hj *mat.Dense, hx []float64, chol *mat.Cholesky, maxIter int) (gaussNewton, error) {
	var cost func([]float64) (float64, []float64)
	if maxIter > 1 {
		var err error
		cost, err = mapCost(prior, f.p, z, h, r)
		if err != nil {
			return gaussNewton{}, err
		}
	}
	xi := append([]float64(nil), prior...)
	if start != nil {
		xi = append(xi[:0], start...)
	}
	var c0 float64 // the cost at xi, carried from one backtrack to the next
	if cost != nil {
		c0, _ = cost(xi)
	}
	for iters := 1; ; iters++ {
		gain, err := kalmanGain(f.p, hj, chol)
		if err != nil {
			return gaussNewton{}, err
		}
		// Linearised residual at xi: z − h(xi) − H(x⁻ − xi).
		res := mat.NewVecDense(z.Len(), nil)
		res.SubVec(z, mat.NewVecDense(z.Len(), hx))
		var d, hd mat.VecDense
		d.SubVec(mat.NewVecDense(len(prior), prior), mat.NewVecDense(len(xi), xi))
		hd.MulVec(hj, &d)
		res.SubVec(res, &hd)
		var kres mat.VecDense
		kres.MulVec(gain, res)
		next := make([]float64, len(prior))
		for i := range next {
			next[i] = prior[i] + kres.AtVec(i)
		}
		f.clampSlice(next)
		if maxIter == 1 {
			return gaussNewton{x: next, gain: gain, hj: hj, iters: iters}, nil
		}
		step, hStep, cStep, moved := backtrack(cost, xi, c0, next)
		c0 = cStep
		xi = step
		if !moved || iters >= maxIter {
			return gaussNewton{x: xi, gain: gain, hj: hj, iters: iters, cost: c0}, nil
		}
		hx = hStep
		hj = jacobianOf(h, jac, xi)
		s := innovationCov(hj, f.p, r)
		if !chol.Factorize(s) {
			return gaussNewton{}, fmt.Errorf("%w: S is not positive-definite at iteration %d", ErrIllConditioned, iters+1)
		}
	}
}

// backtrack moves from x, where the cost is c0, towards target, halving
// the step until the cost falls (at most 6 halvings). It returns the new
// point with h and the cost there, and whether x moved measurably.
func backtrack(cost func([]float64) (float64, []float64), x []float64, c0 float64, target []float64) ([]float64, []float64, float64, bool) {
	t := 1.0
	for range 7 {
		cand := make([]float64, len(x))
		size := 0.0
		for i := range x {
			cand[i] = x[i] + t*(target[i]-x[i])
			size = math.Max(size, math.Abs(cand[i]-x[i])/math.Max(math.Abs(x[i]), 1e-12))
		}
		if c, hc := cost(cand); c < c0 {
			return cand, hc, c, size > 1e-9
		}
		t /= 2
	}
	return x, nil, c0, false
}

// mapCost returns the MAP cost of the iterated update, and h at the point.
func mapCost(prior []float64, p *mat.SymDense, z *mat.VecDense, h Func, r *mat.SymDense) (func([]float64) (float64, []float64), error) {
	var pc, rc mat.Cholesky
	if !pc.Factorize(p) || !rc.Factorize(r) {
		return nil, fmt.Errorf("%w: P or R is not positive-definite", ErrIllConditioned)
	}
	return func(x []float64) (float64, []float64) {
		dx := mat.NewVecDense(len(x), nil)
		dx.SubVec(mat.NewVecDense(len(x), x), mat.NewVecDense(len(prior), prior))
		hx := h(x)
		dz := mat.NewVecDense(z.Len(), nil)
		dz.SubVec(z, mat.NewVecDense(z.Len(), hx))
		var a, b mat.VecDense
		if pc.SolveVecTo(&a, dx) != nil || rc.SolveVecTo(&b, dz) != nil {
			return math.Inf(1), hx
		}
		c := mat.Dot(dx, &a) + mat.Dot(dz, &b)
		if math.IsNaN(c) {
			c = math.Inf(1)
		}
		return c, hx
	}, nil
}

// innovationCov returns H P Hᵀ + R.
func innovationCov(hj *mat.Dense, p, r *mat.SymDense) *mat.SymDense {
	var hp, hph mat.Dense
	hp.Mul(hj, p)
	hph.Mul(&hp, hj.T())
	s := symmetrize(&hph)
	s.AddSym(s, r)
	return s
}

// kalmanGain returns K = P Hᵀ S⁻¹ by solving S Kᵀ = H P.
func kalmanGain(p *mat.SymDense, hj *mat.Dense, chol *mat.Cholesky) (*mat.Dense, error) {
	var hp, kt mat.Dense
	hp.Mul(hj, p)
	if err := chol.SolveTo(&kt, &hp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIllConditioned, err)
	}
	k := mat.DenseCopyOf(kt.T())
	return k, nil
}

// joseph returns (I − KH) P (I − KH)ᵀ + K R Kᵀ, symmetrised.
func joseph(p *mat.SymDense, k, hj *mat.Dense, r *mat.SymDense) *mat.SymDense {
	n := p.SymmetricDim()
	var ikh mat.Dense
	ikh.Mul(k, hj)
	ikh.Scale(-1, &ikh)
	for i := range n {
		ikh.Set(i, i, ikh.At(i, i)+1)
	}
	var a, apa, kr, krk mat.Dense
	a.Mul(&ikh, p)
	apa.Mul(&a, ikh.T())
	kr.Mul(k, r)
	krk.Mul(&kr, k.T())
	apa.Add(&apa, &krk)
	return symmetrize(&apa)
}

// symmetrize returns (A + Aᵀ)/2.
func symmetrize(a *mat.Dense) *mat.SymDense {
	n, _ := a.Dims()
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, (a.At(i, j)+a.At(j, i))/2)
		}
	}
	return s
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func (f *Filter) clamp() {
	raw := f.x.RawVector().Data
	f.clampSlice(raw)
}

func (f *Filter) clampSlice(x []float64) {
	for i := range x {
		if f.Lower != nil && x[i] < f.Lower[i] {
			x[i] = f.Lower[i]
		}
		if f.Upper != nil && x[i] > f.Upper[i] {
			x[i] = f.Upper[i]
		}
	}
}

func jacobianOf(fn Func, jac JacobianFunc, x []float64) *mat.Dense {
	if jac != nil {
		return jac(x)
	}
	return NumericalJacobian(fn, x, DefaultJacobianStep)
}

// NumericalJacobian returns ∂fn/∂x at x by symmetric finite differences:
// column j is (fn(x + εe_j) − fn(x − εe_j)) / 2ε with ε = rel·|x_j|, or
// ε = rel when x_j = 0 (central differences). The error is O(ε²).
func NumericalJacobian(fn Func, x []float64, rel float64) *mat.Dense {
	return finiteDifferences(fn, x, func(v float64) float64 {
		if v == 0 {
			return rel
		}
		return rel * math.Abs(v)
	})
}

// NumericalJacobianAbs is NumericalJacobian with the same absolute step ε
// for every component: the natural choice for log-parameters, where a step
// of 0.01 is a 1 % change of the parameter whatever its magnitude.
func NumericalJacobianAbs(fn Func, x []float64, eps float64) *mat.Dense {
	return finiteDifferences(fn, x, func(float64) float64 { return eps })
}

func finiteDifferences(fn Func, x []float64, step func(float64) float64) *mat.Dense {
	var j *mat.Dense
	xp := append([]float64(nil), x...)
	for c := range x {
		eps := step(x[c])
		xp[c] = x[c] + eps
		hi := fn(xp)
		xp[c] = x[c] - eps
		lo := fn(xp)
		xp[c] = x[c]
		if j == nil {
			j = mat.NewDense(len(hi), len(x), nil)
		}
		for r := range hi {
			j.Set(r, c, (hi[r]-lo[r])/(2*eps))
		}
	}
	return j
}
