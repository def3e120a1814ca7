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
// For each latency target it searches (0, λmax] by bracketed bisection to a
// relative tolerance of 1e-6: a target met at λmax does not bind, and a
// target missed even at the lightest load is an [InfeasibleError].
// The search only assumes that the latency does not decrease with the rate;
// it never infers a direction from the end points, so flat curves (N = 1)
// are handled.
func (a *Analyzer) Size(t Targets) (Sizing, error) {
	if err := t.Validate(); err != nil {
		return Sizing{}, err
	}
	hi := a.MaxRate()
	lo := minRateFraction * 1000 * math.Min(1/a.queue.inv(1), a.queue.Capacity())
	s := Sizing{RateTTFTRPS: hi, RateITLRPS: hi, MinRateRPS: lo,
		DemandFloorRPS: t.TPS / a.cfg.Workload.OutputTokens}
	var err error
	if t.TTFTMs > 0 {
		if s.RateTTFTRPS, err = a.search(a.ttft, TargetTTFT, t.TTFTMs, lo, hi); err != nil {
			return Sizing{}, err
		}
	}
	if t.ITLMs > 0 {
		if s.RateITLRPS, err = a.search(a.itl, TargetITL, t.ITLMs, lo, hi); err != nil {
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

// search returns the largest rate in [lo, hi] at which f(rate) ≤ target.
func (a *Analyzer) search(f func(float64) float64, name string, target, lo, hi float64) (float64, error) {
	if f(hi) <= target {
		return hi, nil // not binding
	}
	if f(lo) > target {
		best := a.analyze(lo)
		return 0, &InfeasibleError{Target: name, TargetMs: target, BestTTFTMs: best.TTFTMs, BestITLMs: best.ITLMs}
	}
	// Invariant: f(lo) ≤ target < f(hi).
	for hi-lo > relTol*hi {
		mid := lo + (hi-lo)/2
		if f(mid) <= target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
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
