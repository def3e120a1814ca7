package queueing

import "math"

// Targets are the service-level objectives a replica is sized against.
// A zero field means "no target".
type Targets struct {
	TTFTMs float64 // largest acceptable average TTFT, ms
	ITLMs  float64 // largest acceptable average ITL, ms
	// TPS is a throughput objective in output tokens/s for the whole model.
	// It does not limit the per-replica rate; it sets a demand floor of
	// TPS/o requests/s when replicas are counted (ARCHITECTURE.md §4).
	TPS float64
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
	Binding        string
	AtStar         Metrics // the replica at λ*
	MinRateRPS     float64 // lightest load the search considers
	DemandFloorRPS float64 // TPS/o, the least demand the TPS target implies
}

// relTol is the relative tolerance on λ of the bisection (seed 000 §5.4).
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
	if err := t.Validate(); err != nil {
		return Sizing{}, err
	}
	hi := a.MaxRate()
	lo := minRateFraction * 1000 * math.Min(1/a.queue.inv(1), a.queue.Capacity())
	s := Sizing{RateTTFTRPS: hi, RateITLRPS: hi, MinRateRPS: lo,
		DemandFloorRPS: t.TPS / a.cfg.Workload.OutputTokens}
	// Both latencies at both ends come from one solve per end.
	ttftHi, itlHi := a.latencies(hi)
	ttftLo, itlLo := a.latencies(lo)
	var err error
	if t.TTFTMs > 0 {
		if s.RateTTFTRPS, err = a.search(a.ttft, TargetTTFT, t.TTFTMs, lo, hi, ttftLo, ttftHi); err != nil {
			return Sizing{}, err
		}
	}
	if t.ITLMs > 0 {
		if s.RateITLRPS, err = a.search(a.itl, TargetITL, t.ITLMs, lo, hi, itlLo, itlHi); err != nil {
			return Sizing{}, err
		}
	}
	s.RateStarRPS = math.Min(s.RateTTFTRPS, s.RateITLRPS)
	switch {
	case s.RateStarRPS >= hi:
	case s.RateTTFTRPS <= s.RateITLRPS:
		s.Binding = TargetTTFT
	default:
		s.Binding = TargetITL
	}
	s.AtStar = a.analyze(s.RateStarRPS)
	s.CapacityRPS = s.AtStar.ThroughputRPS
	return s, nil
}

func (a *Analyzer) latencies(rateRPS float64) (ttft, itl float64) {
	return a.cfg.Model.Latencies(a.cfg.Workload, a.queue.solve(rateRPS/1000), a.cfg.MaxBatchSize)
}

// search returns the largest rate in [lo, hi] at which f(rate) ≤ target,
// given f at both ends.
func (a *Analyzer) search(f func(float64) float64, name string, target, lo, hi, fLo, fHi float64) (float64, error) {
	if fHi <= target {
		return hi, nil // not binding
	}
	if fLo > target {
		best := a.analyze(lo)
		return 0, &InfeasibleError{Target: name, TargetMs: target, BestTTFTMs: best.TTFTMs, BestITLMs: best.ITLMs}
	}
	return brent(func(x float64) float64 { return f(x) - target }, lo, hi, fLo-target, fHi-target), nil
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
	return ceilRatio(d, s.CapacityRPS), nil
}
