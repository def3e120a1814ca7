package queueing

import (
	"fmt"
	"math"
)

// Targets are the service-level objectives a replica is sized against.
// A zero field means "no target".
type Targets struct {
	TTFTMs float64 // largest acceptable average TTFT, ms
	ITLMs  float64 // largest acceptable average ITL, ms
	// TPS is a throughput objective in output tokens/s for the whole model.
	// It does not limit the per-replica rate; it sets a demand floor of
	// TPS/o requests/s when replicas are counted (docs/queueing.md).
	TPS float64
	// TTFTAttainment, when set (0 < a < 1), judges the TTFT target per
	// request instead of on average: the largest rate is the one at which
	// a share a of the arriving requests gets its first token within
	// TTFTMs ([Analyzer.TTFTAttainment]). 0 sizes for the mean.
	TTFTAttainment float64
}

// Validate checks that every target is finite and ≥ 0.
func (t Targets) Validate() error {
	for _, c := range []struct {
		name string
		v    float64
	}{{"target-ttft", t.TTFTMs}, {"target-itl", t.ITLMs}, {"target-tps", t.TPS}} {
		if err := checkNonNegative(c.name, c.v); err != nil {
			return err
		}
	}
	if !(t.TTFTAttainment >= 0 && t.TTFTAttainment < 1) {
		return &ParamError{Param: "ttft-attainment", Value: t.TTFTAttainment, Reason: "must be at least 0 and below 1 (0 sizes for the mean TTFT)"}
	}
	return nil
}

// Sizing is the answer of [Analyzer.Size].
type Sizing struct {
	RateTTFTRPS float64 // λ_TTFT: largest rate meeting the TTFT target (λmax if none or non-binding)
	RateITLRPS  float64 // λ_ITL: largest rate meeting the ITL target (λmax if none or non-binding)
	RateStarRPS float64 // λ* = min(λ_TTFT, λ_ITL)
	CapacityRPS float64 // per-replica capacity: throughput at λ*
	// Binding names the target that sets λ*: "ttft", "itl", or "" when
	// neither binds below λmax.
	Binding string
	AtStar  Metrics // the replica at λ*
	// TTFTAttainment is the predicted share of arrivals at λ* whose TTFT
	// is within the target when sizing judged TTFT per request
	// (Targets.TTFTAttainment > 0); otherwise 0: sizing for the mean does
	// not need it, and [Analyzer.TTFTAttainment] computes it on request.
	TTFTAttainment float64
	MinRateRPS     float64 // lightest load the search considers
	DemandFloorRPS float64 // TPS/o, the least demand the TPS target implies
}

// relTol is the relative tolerance on λ of the bisection.
const relTol = 1e-6

// minRateFraction sets the lightest load the search considers, as a fraction
// of the smaller of μ(1) and μ(N).
const minRateFraction = 1e-3

// Size finds the largest per-replica arrival rate that meets the targets.
// For each latency target it searches [λmin, λmax] for the crossing, keeping
// a bracket throughout (Brent's method: bisection safeguarded by secant and
// inverse quadratic steps) to a relative tolerance of 1e-6: a target met at
// λmax does not bind, and a target missed even at the lightest load is an
// [InfeasibleError]. The search only assumes that the latency crosses the
// target once; it never infers a direction from the end points, so flat
// curves (N = 1) are handled.
func (a *Analyzer) Size(t Targets) (Sizing, error) {
	return a.SizeNear(t, Hints{})
}

// Hints are rates (requests/s) near which the largest rate meeting each
// target is expected, for example last cycle's answers. They only speed the
// search up: a wrong hint costs two extra solves, never a wrong answer. Zero
// means none; the iteration model then uses its closed form.
type Hints struct {
	TTFTRPS, ITLRPS float64
}

// hintWidth is the relative half-width of the bracket tried around a hint.
const hintWidth = 0.02

// SizeNear is Size with hints.
func (a *Analyzer) SizeNear(t Targets, h Hints) (Sizing, error) {
	if err := t.Validate(); err != nil {
		return Sizing{}, err
	}
	sz := sizer{a: a, lo: minRateFraction * 1000 * math.Min(1/a.queue.inv(1), a.queue.Capacity()), hi: a.MaxRate()}
	s := Sizing{RateTTFTRPS: sz.hi, RateITLRPS: sz.hi, MinRateRPS: sz.lo,
		DemandFloorRPS: t.TPS / a.cfg.Workload.OutputTokens}
	var err error
	switch {
	case t.TTFTMs > 0 && t.TTFTAttainment > 0:
		g := func(x float64) float64 { return t.TTFTAttainment - a.attainment(x, t.TTFTMs, sz.solved(x)) }
		if s.RateTTFTRPS, err = sz.search(g, TargetTTFT, t.TTFTMs, a.attainmentHint(h.TTFTRPS, t)); err != nil {
			return Sizing{}, err
		}
	case t.TTFTMs > 0:
		g := func(x float64) float64 { return sz.latency(0, x) - t.TTFTMs }
		if s.RateTTFTRPS, err = sz.search(g, TargetTTFT, t.TTFTMs, a.hint(h.TTFTRPS, TargetTTFT, t.TTFTMs)); err != nil {
			return Sizing{}, err
		}
	}
	if t.ITLMs > 0 {
		g := func(x float64) float64 { return sz.latency(1, x) - t.ITLMs }
		if s.RateITLRPS, err = sz.search(g, TargetITL, t.ITLMs, a.hint(h.ITLRPS, TargetITL, t.ITLMs)); err != nil {
			return Sizing{}, err
		}
	}
	s.RateStarRPS = math.Min(s.RateTTFTRPS, s.RateITLRPS)
	switch {
	case s.RateStarRPS >= sz.hi:
	case s.RateTTFTRPS <= s.RateITLRPS:
		s.Binding = TargetTTFT
	default:
		s.Binding = TargetITL
	}
	s.AtStar = a.metrics(s.RateStarRPS, sz.state(s.RateStarRPS))
	if t.TTFTMs > 0 && t.TTFTAttainment > 0 {
		s.TTFTAttainment = a.attainment(s.RateStarRPS, t.TTFTMs, sz.solved(s.RateStarRPS))
	}
	s.CapacityRPS = s.AtStar.ThroughputRPS
	return s, nil
}

// sizer is one Size call: the search bracket and the solves made so far,
// so that no rate is solved twice (the ends serve both targets, and the
// answer was solved during its search).
type sizer struct {
	a      *Analyzer
	lo, hi float64
	memo   [4]struct {
		rate float64
		sol  solution
	}
	next int
}

// state solves the queue at rateRPS, or recalls the solve.
func (z *sizer) state(rateRPS float64) State {
	return z.solved(rateRPS).st
}

// solved is state with the admitted masses the attainment needs, both
// from one pass over the head.
func (z *sizer) solved(rateRPS float64) solution {
	for _, m := range z.memo {
		if m.rate == rateRPS && rateRPS != 0 {
			return m.sol
		}
	}
	sol := z.a.queue.solveMasses(rateRPS / 1000)
	z.memo[z.next].rate, z.memo[z.next].sol = rateRPS, sol
	z.next = (z.next + 1) % len(z.memo)
	return sol
}

// latency returns TTFT (which = 0) or ITL (which = 1) at rateRPS.
func (z *sizer) latency(which int, rateRPS float64) float64 {
	ttft, itl := z.a.cfg.Model.Latencies(z.a.cfg.Workload, z.state(rateRPS), z.a.cfg.MaxBatchSize)
	if which == 0 {
		return ttft
	}
	return itl
}

// hint returns the caller's hint, else the model's own estimate, else 0.
func (a *Analyzer) hint(given float64, name string, target float64) float64 {
	if given > 0 {
		return given
	}
	if it, ok := a.cfg.Model.(Iteration); ok {
		h := it.rateHint(a.cfg.Workload, name, target)
		if name == TargetTTFT {
			// The closed form has no queue, so its TTFT stays low up to
			// saturation; the solver's TTFT turns up just below λmax.
			h = math.Min(h, ttftHintFraction*a.MaxRate())
		}
		return h
	}
	return 0
}

// attainmentHint is the caller's hint, else the rate at which the mean TTFT
// meets the target scaled down by the share that must meet it: only a start
// for the search.
func (a *Analyzer) attainmentHint(given float64, t Targets) float64 {
	if given > 0 {
		return given
	}
	return a.hint(0, TargetTTFT, t.TTFTMs) * t.TTFTAttainment
}

// ttftHintFraction of λmax is where the search for a TTFT target starts
// when the closed form would start it higher.
const ttftHintFraction = 0.98

// rateHint inverts the closed form (the WVA queueing-model guide §9): the rate at which the
// light-traffic TTFT or ITL reaches the target. For ITL it aims δ̄(1 + 1/o)
// lower, the solver's extra work of a request's own iterations at light load
// (see TestClosedFormAtLightLoad). It is only a starting point for the
// search.
func (m Iteration) rateHint(w Workload, name string, target float64) float64 {
	work := m.Work(w)
	iter := target - m.Beta - m.Gamma*(w.InputTokens+(w.OutputTokens+1)/2) - work*(1+1/w.OutputTokens)
	if name == TargetTTFT {
		iter = target - (m.Beta+m.Gamma)*w.InputTokens
	}
	perRequest := (w.OutputTokens + 1) * work
	if iter <= m.Alpha || perRequest <= 0 {
		return 0
	}
	return 1000 * (1 - m.Alpha/iter) / perRequest
}

// search returns the largest rate in [lo, hi] at which the latency is at
// most the target. A hint is tried first: a solve at the hint and one 2 %
// beyond it usually bracket the answer tightly, and the ends of the full
// range are then never needed. Otherwise the ends decide: a target met at
// hi does not bind, one missed at lo is infeasible, and Brent's method
// searches what is left of the bracket.
func (z *sizer) search(g func(float64) float64, name string, target, hint float64) (float64, error) {
	a, b := z.lo, z.hi
	var ga, gb float64
	knownA, knownB := false, false
	if hint > z.lo && hint < z.hi {
		probe := hint * (1 + hintWidth)
		if gh := g(hint); gh <= 0 {
			a, ga, knownA = hint, gh, true
		} else {
			b, gb, knownB = hint, gh, true
			probe = hint * (1 - hintWidth)
		}
		if probe > a && probe < b {
			if gp := g(probe); gp <= 0 {
				a, ga, knownA = probe, gp, true
			} else {
				b, gb, knownB = probe, gp, true
			}
		}
	}
	if !knownB {
		if gb = g(z.hi); gb <= 0 {
			return z.hi, nil // not binding
		}
	}
	if !knownA {
		if ga = g(z.lo); ga > 0 {
			best := z.a.metrics(z.lo, z.state(z.lo))
			return 0, &InfeasibleError{Target: name, TargetMs: target, BestTTFTMs: best.TTFTMs, BestITLMs: best.ITLMs}
		}
	}
	return brent(g, a, b, ga, gb), nil
}

// brent finds where g crosses zero in [lo, hi], with g(lo) ≤ 0 < g(hi), by
// Brent's method (Brent 1973, "Algorithms for Minimization without
// Derivatives", ch. 4): inverse quadratic interpolation and secant steps,
// falling back to bisection whenever they would not shrink the bracket fast
// enough. It returns the end of the final bracket where g ≤ 0, within a
// relative distance relTol of the crossing. It assumes only that g changes
// sign once, not that it is smooth or convex; the bracket is kept
// throughout, so a flat or kinked g costs at most about as many steps as
// bisection.
func brent(g func(float64) float64, lo, hi, gLo, gHi float64) float64 {
	a, b, ga, gb := lo, hi, gLo, gHi
	c, gc := a, ga
	d := b - a
	e := d
	for range 200 {
		if (gb > 0) == (gc > 0) {
			c, gc = a, ga
			d = b - a
			e = d
		}
		if math.Abs(gc) < math.Abs(gb) {
			a, b, c = b, c, b
			ga, gb, gc = gb, gc, gb
		}
		tol := 0.5 * relTol * math.Abs(b)
		m := 0.5 * (c - b)
		if math.Abs(m) <= tol || gb == 0 {
			break
		}
		if math.Abs(e) >= tol && math.Abs(ga) > math.Abs(gb) {
			var p, q float64
			s := gb / ga
			if a == c {
				p, q = 2*m*s, 1-s
			} else {
				qq, r := ga/gc, gb/gc
				p = s * (2*m*qq*(qq-r) - (b-a)*(r-1))
				q = (qq - 1) * (r - 1) * (s - 1)
			}
			if p > 0 {
				q = -q
			} else {
				p = -p
			}
			if 2*p < math.Min(3*m*q-math.Abs(tol*q), math.Abs(e*q)) {
				e, d = d, p/q
			} else {
				d, e = m, m
			}
		} else {
			d, e = m, m
		}
		a, ga = b, gb
		if math.Abs(d) > tol {
			b += d
		} else {
			b += math.Copysign(tol, m)
		}
		gb = g(b)
	}
	// The crossing lies between b and c; return the side where g ≤ 0.
	if gb <= 0 {
		return b
	}
	return c
}

// Replicas returns how many replicas serve demandRPS requests/s at the
// per-replica capacity: ceil(max(demand, TPS/o) / capacity). A zero demand
// (and no TPS target) needs zero replicas.
func (s Sizing) Replicas(demandRPS float64) (int, error) {
	if err := checkNonNegative("demand", demandRPS); err != nil {
		return 0, err
	}
	d := math.Max(demandRPS, s.DemandFloorRPS)
	if d == 0 {
		return 0, nil
	}
	if n := d / s.CapacityRPS * (1 - 1e-9); !(n <= math.MaxInt32) {
		return 0, &ParamError{Param: "demand", Value: demandRPS,
			Reason: fmt.Sprintf("needs more than %d replicas of %.4g requests/s each", math.MaxInt32, s.CapacityRPS)}
	}
	return ceilRatio(d, s.CapacityRPS), nil
}
