package tuner

import (
	"fmt"
	"math"

	"github.com/llm-d-incubation/wva/internal/kalman"
)

// The robust strategy's fit: the maximum a-posteriori estimate of the
// log-parameters x from a Gaussian prior (x₀, P₀) and a batch of
// observations, each giving log TTFT and log ITL with independent noise,
//
//	C(x) = (x − x₀)ᵀP₀⁻¹(x − x₀) + Σᵢ (zᵢ − hᵢ(x))²/rᵢ,
//
// minimised by Gauss–Newton with a backtracking line search: the iterated
// EKF update (Bell and Cathey 1993), written in information form so that
// every matrix is k×k (k ≤ 4 parameters) whatever the batch size, held in
// fixed arrays. x_{i+1} = x₀ + A⁻¹b with A = P₀⁻¹ + ΣJᵀr⁻¹J and
// b = ΣJᵀr⁻¹(z − h(xᵢ) − J(x₀ − xᵢ)) is the IEKF's iterate by the matrix
// inversion lemma, and A⁻¹ is its Joseph-form covariance.

// fitTolerance is the step, in every log-parameter, below which the
// Gauss–Newton iterations stop: 10⁻³ is a 0.1 % change of a parameter, a
// fifteenth of the smallest posterior standard deviation the tuner
// reaches (about 1.5 % after hundreds of cycles).
const fitTolerance = 1e-3

// jacobianCell is the side, in every log-parameter, of the grid cells at
// whose centres the Jacobians are taken: 2 % of each parameter. An
// observation's predicted values are always exact at the iterate; only
// their slopes come from the centre of the iterate's cell, at most 1 % of
// each parameter away. That moves the fixed point of the iterations by
// the product of the slopes' change and the residuals — a small fraction
// of the posterior's standard deviation — while a steady-state cycle, whose
// iterates stay in one cell, differentiates only its new observation. The
// cells are fixed, so the fit stays a function of its inputs alone: a
// tuner restored from its record steps exactly as the one that wrote it.
const jacobianCell = 0.1

// measured is one observation as the fit sees it: log TTFT and log ITL and
// their variances.
type measured struct {
	z, r [2]float64
}

// measureOne returns obs's log-latencies and their variances, σ = (ε/t)/√g
// relative to the observed value (docs/tuner.md §1), which in log units is
// the constant σ itself; a TTFT's σ is widened by its queueing-wait share
// by the estimate at (see waitShare), and a TTFT that is mostly queueing
// wait by what the pods report (queueDominated) is not used at all: its
// variance is infinite, its weight in the fit zero. The ITL has no queue
// in it — in an overload it is the running batch's step (see
// evaluator.atRunningBatch) — and stays.
func (t *Tuner) measureOne(o Observation, at vec) measured {
	noise := t.cfg.relNoise()
	m := measured{z: [2]float64{math.Log(o.TTFTMs), math.Log(o.ITLMs)}, r: [2]float64{math.Inf(1), sq(noise)}}
	if !t.queueDominated(o) {
		rt, ri := t.rateSpread(o, at)
		m.r[0] = sq(noise) + sq(0.5*t.waitShare(o, at)) + rt
		m.r[1] += ri
	}
	return m
}

// maxRateSpread caps the log-variance rateSpread adds: an observation so
// near saturation that one standard deviation more load has no steady
// state keeps a weight of a fortieth of a log-unit's.
const maxRateSpread = 1.0

// rateSpread returns the log-variances (TTFT, ITL) that the error of o's
// arrival rate adds: the rate is a count over RateWindowSeconds, Poisson,
// so its relative standard deviation is s = 1/√(λ·W), and the model's
// latencies at the estimate at move by log h(λ(1 + s)) − log h(λ) when the
// rate is one s higher. At light load that is nothing; at 85 % of a
// replica's throughput (8 requests/s on step-slow-start's one replica, s
// 4.6 %) the ITL moves by 20–30 %, which is what such cycles' ITLs did
// from one minute to the next — errors in the variables, which an
// unwidened fit reads as exact, so that a few near-saturated cycles
// outweighed a full batch's ITL. Only the robust strategy calls it, for
// observations without a queue (a queued cycle's ITL is read at its
// running batch, whatever the rate), and not for a Steady one (a
// synthetic trace's rate is exact).
func (t *Tuner) rateSpread(o Observation, at vec) (ttft, itl float64) {
	w := t.cfg.RateWindowSeconds
	if !(w > 0) || !(o.RateRPS > 0) || o.Steady {
		return 0, 0
	}
	s := 1 / math.Sqrt(o.RateRPS*w)
	p := t.toParams(at)
	m0, err := t.analyze(p, o)
	if err != nil || !(m0.TTFTMs > 0) || !(m0.ITLMs > 0) {
		return 0, 0
	}
	hi := o
	hi.RateRPS *= 1 + s
	m1, err := t.analyze(p, hi)
	if err != nil || !(m1.TTFTMs > 0) || !(m1.ITLMs > 0) {
		return maxRateSpread, maxRateSpread
	}
	return math.Min(sq(math.Log(m1.TTFTMs/m0.TTFTMs)), maxRateSpread), math.Min(sq(math.Log(m1.ITLMs/m0.ITLMs)), maxRateSpread)
}

// measure returns measureOne of every observation of batch, in a buffer the
// tuner reuses (valid until the next call).
func (t *Tuner) measure(batch []Observation, at vec) []measured {
	t.meas = t.meas[:0]
	for _, o := range batch {
		t.meas = append(t.meas, t.measureOne(o, at))
	}
	return t.meas
}

// linCacheSize is the number of observations whose Jacobians are kept: a
// power of two above the window and the pending rejections.
const linCacheSize = 32

type linEntry struct {
	obs  Observation
	at   vec
	jac  [2]vec
	used uint64 // the cache's clock at the last use; 0 = empty
}

// linCache keeps recent observations' Jacobians, two-way set-associative
// by the observation's hash (the less recently used slot of a set is
// replaced).
type linCache struct {
	slots [linCacheSize]linEntry
	clock uint64
}

// slot returns the slot holding o's Jacobian at `at` and whether it does;
// on a miss, the slot to overwrite.
func (c *linCache) slot(o Observation, at vec) (*linEntry, bool) {
	c.clock++
	i := obsHash(o) & (linCacheSize - 2)
	a, b := &c.slots[i], &c.slots[i+1]
	for _, s := range [2]*linEntry{a, b} {
		if s.used != 0 && s.obs == o && s.at == at {
			s.used = c.clock
			return s, true
		}
	}
	if b.used < a.used {
		a = b
	}
	a.used = c.clock
	return a, false
}

// cellCentre returns the centre of x's Jacobian cell.
func (t *Tuner) cellCentre(x vec) vec {
	var c vec
	for i := range t.n {
		c[i] = (math.Floor(x[i]/jacobianCell) + 0.5) * jacobianCell
	}
	return c
}

// linearise returns the log TTFT and log ITL that x predicts for o and
// their gradients in the log-parameters: the values exact at x, the
// gradients at the centre of ref's Jacobian cell (ref is x, or a point
// within a cell of it: see gaussNewton) (queueing.EvaluateGradient;
// remembered per observation). ok is false where the model cannot be
// evaluated or differentiated.
func (t *Tuner) linearise(x, ref vec, o Observation) (h [2]float64, jac [2]vec, ok bool) {
	h, ok = t.caches().eval.logs(t.toParams(x), o)
	if !ok {
		return h, jac, false
	}
	at := t.cellCentre(ref)
	slot, hit := t.caches().lins.slot(o, at)
	if hit {
		return h, slot.jac, true
	}
	p := t.toParams(at)
	mc, g, err := t.caches().eval.gradient(p, o)
	if err != nil || !(mc.TTFTMs > 0) || !(mc.ITLMs > 0) {
		return h, jac, false
	}
	theta := vec{p.Alpha, p.Beta, p.Gamma, p.Delta}
	for j := range t.n {
		// ∂log h/∂log θ = θ·(∂h/∂θ)/h.
		jac[0][j] = theta[j] * g.TTFT[j] / mc.TTFTMs
		jac[1][j] = theta[j] * g.ITL[j] / mc.ITLMs
		if !finite(jac[0][j]) || !finite(jac[1][j]) {
			return h, jac, false
		}
	}
	slot.obs, slot.at, slot.jac = o, at, jac
	return h, jac, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// obsHash mixes the bits of an observation's fields.
func obsHash(o Observation) uint64 {
	return evalHash(Params{}, o)
}

// fitResult is a fit's estimate, covariance and MAP cost.
type fitResult struct {
	x     vec
	p     square
	cost  float64
	iters int
}

// errNotPositive: a prior or information matrix that cannot be factored.
var errNotPositive = fmt.Errorf("%w: the information matrix is not positive-definite", kalman.ErrIllConditioned)

// gaussNewton fits batch (measured as meas) against the prior (x0, p0),
// starting at start, or at x0 where the model cannot be evaluated at
// start. The iterations stop when a step moves no log-parameter by more
// than fitTolerance, when the line search finds no lower cost, or after
// MaxIterations; the covariance is A⁻¹ at the last linearisation.
func (t *Tuner) gaussNewton(x0 vec, p0 square, batch []Observation, meas []measured, start vec) (fitResult, error) {
	n := t.n
	lp, ok := cholesky(p0, n)
	if !ok {
		return fitResult{}, fmt.Errorf("%w: the prior covariance is not positive-definite", kalman.ErrIllConditioned)
	}
	p0inv := lp.inverse(n)
	xi := start
	c0 := t.mapCost(x0, p0inv, xi, batch, meas)
	if math.IsInf(c0, 1) {
		xi = x0
		if c0 = t.mapCost(x0, p0inv, xi, batch, meas); math.IsInf(c0, 1) {
			return fitResult{}, kalman.ErrNonFinite
		}
	}
	maxIter := max(t.cfg.MaxIterations, 2)
	// The Jacobians are taken in the start's cell while the iterates stay
	// within a cell of the start (a steady-state fit, whose few iterations
	// then share one set of slopes), in the iterate's own cell once they
	// go further (a fit from far off, where the slopes must follow).
	ref := xi
	for iters := 1; ; iters++ {
		if !t.within(xi, ref, jacobianCell) {
			ref = xi
		}
		a, b, err := t.normalEquations(x0, xi, ref, p0inv, batch, meas)
		if err != nil {
			return fitResult{iters: iters}, err
		}
		la, ok := cholesky(a, n)
		if !ok || !la.conditioned(n) {
			return fitResult{iters: iters}, errNotPositive
		}
		cov := la.inverse(n)
		step := la.solve(b, n)
		var next vec
		for i := range n {
			next[i] = x0[i] + step[i]
		}
		next = t.clamp(next)
		if t.within(next, xi, fitTolerance) {
			// Converged: the step the linearisation proposes is below
			// the tolerance, so xi, where A was taken, is the estimate.
			return fitResult{x: xi, p: cov, cost: c0, iters: iters}, nil
		}
		x, c, moved := t.backtrack(x0, p0inv, batch, meas, xi, c0, next)
		if !moved || iters >= maxIter {
			return fitResult{x: x, p: cov, cost: c, iters: iters}, nil
		}
		xi, c0 = x, c
	}
}

// within reports whether x and y differ by at most tol in every component.
func (t *Tuner) within(x, y vec, tol float64) bool {
	for i := range t.n {
		if math.Abs(x[i]-y[i]) > tol {
			return false
		}
	}
	return true
}

// normalEquations returns A = P₀⁻¹ + ΣJᵀr⁻¹J and b = ΣJᵀr⁻¹(z − h(xi) −
// J(x₀ − xi)) for the batch linearised at xi (slopes in ref's cell).
func (t *Tuner) normalEquations(x0, xi, ref vec, p0inv square, batch []Observation, meas []measured) (square, vec, error) {
	n := t.n
	a := p0inv
	var b vec
	for k, o := range batch {
		h, jac, ok := t.linearise(xi, ref, o)
		if !ok {
			return a, b, kalman.ErrNonFinite
		}
		for m := range 2 {
			w := 1 / meas[k].r[m]
			res := meas[k].z[m] - h[m]
			for j := range n {
				res -= jac[m][j] * (x0[j] - xi[j])
			}
			for i := range n {
				wi := w * jac[m][i]
				b[i] += wi * res
				for j := range n {
					a[i][j] += wi * jac[m][j]
				}
			}
		}
	}
	return a, b, nil
}

// backtrack halves the step from x towards target (up to seven times)
// until the MAP cost falls below c0. It returns the point, its cost and
// whether the step moved some log-parameter by more than fitTolerance.
func (t *Tuner) backtrack(x0 vec, p0inv square, batch []Observation, meas []measured, x vec, c0 float64, target vec) (vec, float64, bool) {
	f := 1.0
	for range 7 {
		var cand vec
		size := 0.0
		for i := range t.n {
			cand[i] = x[i] + f*(target[i]-x[i])
			size = math.Max(size, math.Abs(cand[i]-x[i]))
		}
		if c := t.mapCost(x0, p0inv, cand, batch, meas); c < c0 {
			return cand, c, size > fitTolerance
		}
		f /= 2
	}
	return x, c0, false
}

// mapCost is C(x); +Inf where the model cannot be evaluated.
func (t *Tuner) mapCost(x0 vec, p0inv square, x vec, batch []Observation, meas []measured) float64 {
	var d vec
	for i := range t.n {
		d[i] = x[i] - x0[i]
	}
	c := p0inv.quad(d, t.n) + t.dataCost(x, batch, meas)
	if math.IsNaN(c) {
		return math.Inf(1)
	}
	return c
}

// dataCost is Σ(z − h(x))²/r over batch; NaN where the model cannot be
// evaluated.
func (t *Tuner) dataCost(x vec, batch []Observation, meas []measured) float64 {
	p := t.toParams(x)
	c := 0.0
	for k, o := range batch {
		ln, ok := t.caches().eval.logs(p, o)
		if !ok {
			return math.NaN()
		}
		c += sq(meas[k].z[0]-ln[0])/meas[k].r[0] + sq(meas[k].z[1]-ln[1])/meas[k].r[1]
	}
	return c
}

// Matrix is a covariance of a variant's parameters, in their units: the
// leading N×N block of M is used.
type Matrix struct {
	N int
	M [maxDim][maxDim]float64
}

// Rows returns the N×N matrix as rows.
func (m Matrix) Rows() [][]float64 { return square(m.M).rows(m.N) }

// covariance is Covariance as a Matrix, without allocating.
func (t *Tuner) covariance() Matrix {
	p := t.cov()
	x := t.Params()
	theta := vec{x.Alpha, x.Beta, x.Gamma, x.Delta}
	out := Matrix{N: t.n}
	for i := range t.n {
		for j := range t.n {
			out.M[i][j] = p[i][j]
			if t.logSpace() {
				out.M[i][j] *= theta[i] * theta[j]
			}
		}
	}
	return out
}
