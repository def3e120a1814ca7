package admission

import "math"

// The calibrator's linear algebra: its square-root information filter,
// and the projection of its fit onto the coefficients' bounds. Everything
// is three-dimensional and on the stack.

// rotateIn folds the row (a, b) — one more equation aᵀθ ≈ b, of unit
// weight — into the triangular system g·θ = z by Givens rotations, a
// column at a time from column from (the row's earlier entries are 0).
// The rotations keep g upper triangular with a non-negative diagonal, and
// gᵀg grows by exactly a·aᵀ, to rounding (Golub & Van Loan, Matrix
// Computations, 4th ed., 2013, §5.1.8 and §6.5.4).
func rotateIn(g *[3][3]float64, z *[3]float64, a [3]float64, b float64, from int) {
	for i := from; i < 3; i++ {
		if a[i] == 0 {
			continue
		}
		cs, sn, _ := givens(g[i][i], a[i])
		for j := i; j < 3; j++ {
			g[i][j], a[j] = cs*g[i][j]+sn*a[j], cs*a[j]-sn*g[i][j]
		}
		z[i], b = cs*z[i]+sn*b, cs*b-sn*z[i]
	}
}

// solveUpper solves g·θ = z by back substitution.
func solveUpper(g *[3][3]float64, z [3]float64) [3]float64 {
	var t [3]float64
	for i := 2; i >= 0; i-- {
		t[i] = z[i]
		for j := i + 1; j < 3; j++ {
			t[i] -= g[i][j] * t[j]
		}
		t[i] /= g[i][i]
	}
	return t
}

// predictionVariance is xᵀPx = |a|², gᵀa = x (forward substitution).
func predictionVariance(g *[3][3]float64, x [3]float64) float64 {
	var a [3]float64
	q := 0.0
	for i := range 3 {
		a[i] = x[i]
		for j := range i {
			a[i] -= g[j][i] * a[j]
		}
		a[i] /= g[i][i]
		q += a[i] * a[i]
	}
	return q
}

// variances is diag P, from W = g⁻¹ (upper triangular).
func variances(g *[3][3]float64) [3]float64 {
	w00, w11, w22 := 1/g[0][0], 1/g[1][1], 1/g[2][2]
	w12 := -g[1][2] * w22 * w11
	w01 := -g[0][1] * w11 * w00
	w02 := -(g[0][1]*w12 + g[0][2]*w22) * w00
	return [3]float64{w00*w00 + w01*w01 + w02*w02, w11*w11 + w12*w12, w22 * w22}
}

// covariance is P = W·Wᵀ, W = g⁻¹ (upper triangular): exactly symmetric,
// with a diagonal that is a sum of squares.
func covariance(g *[3][3]float64) [3][3]float64 {
	var w, p [3][3]float64
	for j := range 3 {
		w[j][j] = 1 / g[j][j]
		for i := j - 1; i >= 0; i-- {
			sum := 0.0
			for k := i + 1; k <= j; k++ {
				sum += g[i][k] * w[k][j]
			}
			w[i][j] = -sum / g[i][i]
		}
	}
	for i := range 3 {
		for j := i; j < 3; j++ {
			for k := j; k < 3; k++ {
				p[i][j] += w[i][k] * w[j][k]
			}
			p[j][i] = p[i][j]
		}
	}
	return p
}

func allFinite(g *[3][3]float64, z, theta [3]float64) bool {
	for i := range 3 {
		if !finite(z[i]) || !finite(theta[i]) || !(g[i][i] > 0) {
			return false
		}
		for j := range 3 {
			if !finite(g[i][j]) {
				return false
			}
		}
	}
	return true
}

// project is the point of the box [0, hi] closest to the unconstrained
// fit θ in the metric of P⁻¹. Up to a constant, the sum of squares the
// filter minimises (prior, forgetting and all) is (θ' − θ)ᵀ·P⁻¹·(θ' − θ),
// so its minimiser within the bounds is this point: the bounded
// least-squares fit itself, not an approximation of it (Simon, Kalman
// filtering with state constraints: a survey, IET Control Theory &
// Applications 4(8), 2010, estimate projection). The coefficients
// correlated with one at its bound take up what it cannot: β0 absorbs a
// slope β1 may not take below 0.
//
// Two shortcuts are wrong, and were the calibrator's until it learned
// 0.7 s from requests that took 0 (TestCalibratorLearnsNothingFromNothing).
// Projecting one coefficient at a time along P's columns and then
// clamping is not the closest point when two coefficients leave the box:
// the second projection undoes the first, and the clamp undoes the
// compensation. And feeding the projected point back as the next update's
// starting point, with P unchanged, makes the filter take the projected
// point's prediction for one its past observations back, so that it
// barely moves from it, however far it is from them.
//
// The minimiser lies on some face of the box: a set of coefficients at a
// bound, the others free. With three coefficients the 26 faces can be
// tried outright; on each, the free coefficients solve a small
// least-squares problem, and the feasible candidate of least cost is the
// minimiser. P⁻¹ is far too ill-conditioned to form (10¹⁵ and more, from
// regressors of 10⁴ and a residual of 10⁻⁶ s), so the problem is solved
// in square-root form: the cost is ‖G·(θ' − θ)‖².
func (c *Calibrator) project() [3]float64 {
	if c.inBox(c.theta) {
		return c.theta
	}
	best, least := c.clamp(c.theta), math.Inf(1)
	for free := range 7 { // bit i: coefficient i free; 7, all free, is θ itself
		var f freeSet
		f.factor(&c.g, free)
		for at := range 1 << (3 - f.k) { // bit m: the m-th other coefficient at its upper bound, else at 0
			cand, cost := c.onFace(&f, at)
			if cost < least && c.inBox(cand) {
				best, least = cand, cost
			}
		}
	}
	return best
}

// onFace is the point closest to θ with the coefficients f does not free
// at the bounds that at selects, and its cost ‖G·(θ' − θ)‖² (+Inf when it
// cannot be computed).
func (c *Calibrator) onFace(f *freeSet, at int) ([3]float64, float64) {
	var b [3]float64 // G·(θ' − θ) over the coefficients at a bound
	out := c.theta
	for m := range 3 - f.k {
		i := f.fixed[m]
		out[i] = 0
		if at&(1<<m) != 0 {
			out[i] = c.hi[i]
		}
		for j := range 3 {
			b[j] += c.g[j][i] * (out[i] - c.theta[i])
		}
	}
	t, cost := f.solve(b)
	for m := range f.k {
		out[f.free[m]] += t[m]
	}
	if !finite(cost) || !finite(t[0]) || !finite(t[1]) {
		cost = math.Inf(1)
	}
	return out, cost
}

// freeSet is the QR factorisation of G's columns for the free
// coefficients of a face: the least-squares problem min ‖A·t + b‖² over
// them, A those columns, solved for any b by replaying the rotations.
type freeSet struct {
	free, fixed [3]int // the free coefficients, then the others
	k           int    // how many are free (at most 2)
	r           [2][2]float64
	rot         [3][2][2]float64 // (cos, sin) of the rotation of row j into column i
}

// factor triangularises the columns of g that mask selects by Givens
// rotations, a row at a time (Golub & Van Loan, Matrix Computations,
// §5.1.8 and §6.5): stable whatever the rows' scales, which here span the
// square roots of P's.
func (f *freeSet) factor(g *[3][3]float64, mask int) {
	nf := 0
	for i := range 3 {
		if mask&(1<<i) != 0 {
			f.free[f.k] = i
			f.k++
		} else {
			f.fixed[nf] = i
			nf++
		}
	}
	for j := range 3 {
		var row [2]float64
		for m := range f.k {
			row[m] = g[j][f.free[m]]
		}
		for i := range row[:f.k] {
			cs, sn, h := givens(f.r[i][i], row[i])
			f.rot[j][i] = [2]float64{cs, sn}
			f.r[i][i], row[i] = h, 0
			for m := i + 1; m < f.k; m++ {
				f.r[i][m], row[m] = cs*f.r[i][m]+sn*row[m], cs*row[m]-sn*f.r[i][m]
			}
		}
	}
}

// solve minimises ‖A·t + b‖² and returns t and the minimum.
func (f *freeSet) solve(b [3]float64) ([2]float64, float64) {
	var rb, t [2]float64
	cost := 0.0
	for j := range 3 {
		rhs := b[j]
		for i := range f.k {
			cs, sn := f.rot[j][i][0], f.rot[j][i][1]
			rb[i], rhs = cs*rb[i]+sn*rhs, cs*rhs-sn*rb[i]
		}
		cost += rhs * rhs
	}
	for i := f.k - 1; i >= 0; i-- { // R·t = −rb
		t[i] = -rb[i]
		for m := i + 1; m < f.k; m++ {
			t[i] -= f.r[i][m] * t[m]
		}
		t[i] /= f.r[i][i]
	}
	return t, cost
}

// givens is the rotation (cos, sin) that takes (a, b) to (h, 0), h ≥ 0;
// the identity when b is 0.
func givens(a, b float64) (float64, float64, float64) {
	if b == 0 {
		return 1, 0, a
	}
	h := math.Sqrt(a*a + b*b)
	if h == 0 || math.IsInf(h, 1) { // under- or overflow: rare, and slower
		h = math.Hypot(a, b)
	}
	return a / h, b / h, h
}

func (c *Calibrator) inBox(theta [3]float64) bool {
	for i := range 3 {
		if !(theta[i] >= 0 && theta[i] <= c.hi[i]) {
			return false
		}
	}
	return true
}

func (c *Calibrator) clamp(theta [3]float64) [3]float64 {
	for i := range 3 {
		theta[i] = math.Min(math.Max(theta[i], 0), c.hi[i])
	}
	return theta
}
