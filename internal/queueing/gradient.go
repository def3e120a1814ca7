package queueing

import (
	"fmt"
	"math"
)

// MaxParams is the most parameters a service model has (Linear's four).
const MaxParams = 4

// Gradient holds the derivatives of the predicted latencies with respect
// to the service model's parameters, in the model's order: α, β, γ for
// Iteration; α, β, γ, δ for Linear. Units are ms per parameter unit.
type Gradient struct {
	Params int // how many entries of TTFT and ITL are used
	TTFT   [MaxParams]float64
	ITL    [MaxParams]float64
}

// gradModel is a service model whose parameters can be read and set by
// index, which EvaluateGradient needs to perturb them.
type gradModel[M any] interface {
	ServiceModel
	paramVector() ([MaxParams]float64, int)
	withParam(j int, v float64) M
}

func (m Iteration) paramVector() ([MaxParams]float64, int) {
	return [MaxParams]float64{m.Alpha, m.Beta, m.Gamma}, 3
}

func (m Iteration) withParam(j int, v float64) Iteration {
	switch j {
	case 0:
		m.Alpha = v
	case 1:
		m.Beta = v
	default:
		m.Gamma = v
	}
	return m
}

func (m Linear) paramVector() ([MaxParams]float64, int) {
	return [MaxParams]float64{m.Alpha, m.Beta, m.Gamma, m.Delta}, 4
}

func (m Linear) withParam(j int, v float64) Linear {
	switch j {
	case 0:
		m.Alpha = v
	case 1:
		m.Beta = v
	case 2:
		m.Gamma = v
	default:
		m.Delta = v
	}
	return m
}

// gradientStep is the relative step of the central differences taken
// through the solve's O(1) part (see EvaluateGradient).
const gradientStep = 1e-6

// EvaluateGradient is Evaluate with the derivatives of TTFT and ITL with
// respect to every parameter of the service model (*Iteration, Iteration,
// *Linear or Linear; other models are an error). It does not allocate.
//
// Both service models are affine in the batch size and linear in their
// parameters, so a parameter moves the queue only through the service
// line's base τ(0) and slope τ(1) − τ(0). The O(N) part of the solve, the
// product-form head, is differentiated exactly with respect to those two
// in the same pass that sums it: ∂log t_n/∂base = Σ_{k≤n} 1/(k·slope +
// base) and ∂log t_n/∂slope = Σ_{k≤n} k/(k·slope + base). Everything after
// it (the geometric tail, the normalisation and the model's latencies) is
// O(1) and is differentiated by central differences with a relative step
// of 10⁻⁶, the head's sums carried to each perturbed parameter to first
// order. So a gradient costs about three head passes instead of the
// 2k + 1 solves of differencing the whole model, and is accurate to about
// 10⁻⁹ relative. When the load is so far above one request's service
// rate that the solve runs in log space, the whole solve is differenced.
func EvaluateGradient(cfg Config, rateRPS float64) (Metrics, Gradient, error) {
	switch m := cfg.Model.(type) {
	case *Iteration:
		if m != nil {
			return evaluateGradient(cfg, *m, rateRPS)
		}
	case Iteration:
		return evaluateGradient(cfg, m, rateRPS)
	case *Linear:
		if m != nil {
			return evaluateGradient(cfg, *m, rateRPS)
		}
	case Linear:
		return evaluateGradient(cfg, m, rateRPS)
	}
	if cfg.Model == nil {
		panic("queueing: EvaluateGradient called with a nil service model")
	}
	return Metrics{}, Gradient{}, fmt.Errorf("queueing: no gradient for the %q service model", cfg.Model.Name())
}

func evaluateGradient[M gradModel[M]](cfg Config, m M, rateRPS float64) (Metrics, Gradient, error) {
	base, slope, err := serviceLine(cfg)
	if err != nil {
		return Metrics{}, Gradient{}, err
	}
	if err := checkAffineQueue(cfg.MaxBatchSize, cfg.MaxQueueSize); err != nil {
		return Metrics{}, Gradient{}, err
	}
	if err := checkRate(rateRPS); err != nil {
		return Metrics{}, Gradient{}, err
	}
	lambda := rateRPS / 1000
	q := affineQueue(base, slope, cfg.MaxBatchSize, cfg.MaxQueueSize)
	h, dBase, dSlope, exact := q.headTangent(lambda)
	var s State
	if exact {
		s = q.combine(lambda, h)
	} else {
		s = q.solve(lambda)
	}
	met := metricsOf(cfg, maxRateFraction*q.Capacity()*1000, rateRPS, s)

	dsBase, dsSlope := q.stateSlopes(lambda, h, dBase, dSlope, exact)

	// The latencies depend on the parameters directly and through the
	// state; both models' are O(1) arithmetic, differenced centrally with
	// the state carried along its derivative. Both models' service times
	// are linear in the parameters, so ∂base/∂θ_j and ∂slope/∂θ_j are
	// the service line of the unit parameter vector e_j.
	theta, k := m.paramVector()
	g := Gradient{Params: k}
	w := cfg.Workload
	var zero M
	for j := range k {
		unit := zero.withParam(j, 1)
		ub := unit.ServiceTime(w, 0)
		us := unit.ServiceTime(w, 1) - ub
		dsj := dsBase.scaled(ub).plus(dsSlope.scaled(us))
		eps := gradientStep * theta[j]
		if eps == 0 {
			eps = gradientStep * gradientStep
		}
		var ttft, itl [2]float64
		for side, sign := range [2]float64{1, -1} {
			ttft[side], itl[side] = m.withParam(j, theta[j]+sign*eps).Latencies(w, s.plus(dsj.scaled(sign*eps)), cfg.MaxBatchSize)
		}
		g.TTFT[j] = (ttft[0] - ttft[1]) / (2 * eps)
		g.ITL[j] = (itl[0] - itl[1]) / (2 * eps)
	}
	if !finite(met.TTFTMs) || !finite(met.ITLMs) {
		return met, g, nil
	}
	for j := range k {
		if !finite(g.TTFT[j]) || !finite(g.ITL[j]) {
			return met, g, fmt.Errorf("queueing: the latencies' derivative with respect to parameter %d is not finite at %v requests/s", j, rateRPS)
		}
	}
	return met, g, nil
}

// stateSlopes returns the state's derivatives with respect to the service
// line's base and slope: central differences of the O(1) combination, the
// head's sums carried to first order (whole solves where the head ran in
// log space, exact false).
func (q *Queue) stateSlopes(lambda float64, h, dBase, dSlope headSums, exact bool) (State, State) {
	base, slope, n := q.invBase, q.invSlope, float64(q.n)
	var out [2]State
	for d, move := range [2][2]float64{{1, 0}, {0, 1}} {
		eps := gradientStep * (move[0]*base + move[1]*slope)
		if eps == 0 { // a zero slope or base: step on the other's scale
			eps = gradientStep * (base + slope*n) / n
		}
		var at [2]State
		for side, sign := range [2]float64{1, -1} {
			db, ds := sign*eps*move[0], sign*eps*move[1]
			qp := affineQueue(base+db, slope+ds, q.n, q.maxQueue)
			if exact {
				at[side] = qp.combine(lambda, h.shifted(dBase, db, dSlope, ds))
			} else {
				at[side] = qp.solve(lambda)
			}
		}
		out[d] = at[0].minus(at[1], 1/(2*eps))
	}
	return out[0], out[1]
}

// plus returns s + d, field by field.
func (s State) plus(d State) State {
	return State{
		Rate: s.Rate + d.Rate, Throughput: s.Throughput + d.Throughput, AvgBatch: s.AvgBatch + d.AvgBatch,
		AvgInSystem: s.AvgInSystem + d.AvgInSystem, AvgQueued: s.AvgQueued + d.AvgQueued, RespTime: s.RespTime + d.RespTime,
		ServTime: s.ServTime + d.ServTime, Wait: s.Wait + d.Wait, Blocking: s.Blocking + d.Blocking, Idle: s.Idle + d.Idle,
		Utilization: s.Utilization + d.Utilization,
	}
}

// scaled returns f·s, field by field.
func (s State) scaled(f float64) State {
	return State{
		Rate: f * s.Rate, Throughput: f * s.Throughput, AvgBatch: f * s.AvgBatch, AvgInSystem: f * s.AvgInSystem,
		AvgQueued: f * s.AvgQueued, RespTime: f * s.RespTime, ServTime: f * s.ServTime, Wait: f * s.Wait,
		Blocking: f * s.Blocking, Idle: f * s.Idle, Utilization: f * s.Utilization,
	}
}

// minus returns f·(s − d), field by field.
func (s State) minus(d State, f float64) State { return s.plus(d.scaled(-1)).scaled(f) }

// shifted returns the head's sums carried to first order to a service
// line moved by db in its base and ds in its slope.
func (h headSums) shifted(dBase headSums, db float64, dSlope headSums, ds float64) headSums {
	h.sum += db*dBase.sum + ds*dSlope.sum
	h.sumBelowN += db*dBase.sumBelowN + ds*dSlope.sumBelowN
	h.weighted += db*dBase.weighted + ds*dSlope.weighted
	if h.last > 0 {
		h.last = math.Max(h.last+db*dBase.last+ds*dSlope.last, 0)
	}
	return h
}

// headTangent is head for an affine queue together with the derivatives of
// its sums with respect to the service line's base and slope (same scale,
// logScale unchanged). It reports false, and computes nothing, where head
// would run in log space.
func (q *Queue) headTangent(lambda float64) (h, dBase, dSlope headSums, ok bool) {
	if lambda*q.maxInvMu > maxStepRatio || q.invMu != nil {
		return h, dBase, dSlope, false
	}
	ls, lb := lambda*q.invSlope, lambda*q.invBase
	sum, weighted, t, fn := 1.0, 0.0, 1.0, 0.0
	// a, b: ∂log t/∂base and ∂log t/∂slope; sa, sb, wa, wb: the
	// derivatives of sum and weighted.
	var a, b, sa, sb, wa, wb float64
	for i := range q.n {
		fn++
		var r float64
		if i < len(reciprocals) {
			r = ls + lb*reciprocals[i]
		} else {
			r = ls + lb/fn
		}
		g := 1 / (fn*q.invSlope + q.invBase)
		a += g
		b += fn * g
		t *= r
		if t > rescaleAt {
			t /= rescaleAt
			sum /= rescaleAt
			weighted /= rescaleAt
			sa /= rescaleAt
			sb /= rescaleAt
			wa /= rescaleAt
			wb /= rescaleAt
			h.logScale += math.Log(rescaleAt)
		} else if t < tailCut*sum && r < 1 && t*r/(1-r) < tailCut*sum {
			t = 0
			break
		}
		if i == q.n-1 {
			h.sumBelowN, dBase.sumBelowN, dSlope.sumBelowN = sum, sa, sb
		}
		ta, tb := t*a, t*b
		sum += t
		weighted += fn * t
		sa += ta
		sb += tb
		wa += fn * ta
		wb += fn * tb
	}
	if t == 0 {
		h.sumBelowN, dBase.sumBelowN, dSlope.sumBelowN = sum, sa, sb
	}
	h.sum, h.weighted, h.last = sum, weighted, t
	dBase.sum, dBase.weighted, dBase.last = sa, wa, t*a
	dSlope.sum, dSlope.weighted, dSlope.last = sb, wb, t*b
	return h, dBase, dSlope, true
}
