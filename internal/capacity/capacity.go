package capacity

import (
	"context"
	"fmt"
	"math"
)

// Attainment runs the fleet at a constant Poisson rate (requests/s) and
// returns what it served. A target in (0, 1] lets the run stop early, with
// Outcome.Stopped, once more requests have missed the SLO than the target
// allows; 0 runs to the end.
func Attainment(ctx context.Context, f *Fleet, rateRPS, target float64, set Settings) (Outcome, error) {
	if err := check(f, set); err != nil {
		return Outcome{}, err
	}
	if !(rateRPS > 0) || math.IsInf(rateRPS, 0) || rateRPS > set.MaxRate {
		return Outcome{}, fmt.Errorf("capacity: the rate must be a positive number of requests/s up to %g, got %g", set.MaxRate, rateRPS)
	}
	if !(target >= 0 && target <= 1) {
		return Outcome{}, fmt.Errorf("capacity: the attainment target must be between 0 and 1, got %g", target)
	}
	r := newRun(f, set, rateRPS, target, false)
	err := r.execute(ctx)
	return r.o, err
}

// Analyze runs the fleet at a constant Poisson rate to its end and
// returns what it served with the latency percentiles.
func Analyze(ctx context.Context, f *Fleet, rateRPS float64, set Settings) (Outcome, error) {
	if err := check(f, set); err != nil {
		return Outcome{}, err
	}
	if !(rateRPS > 0) || math.IsInf(rateRPS, 0) || rateRPS > set.MaxRate {
		return Outcome{}, fmt.Errorf("capacity: the rate must be a positive number of requests/s up to %g, got %g", set.MaxRate, rateRPS)
	}
	r := newRun(f, set, rateRPS, 0, true)
	err := r.execute(ctx)
	return r.o, err
}

// MaxRate is the largest constant Poisson rate, in requests/s, at which
// the fleet serves at least a share p of the requests within their SLO:
// bracketed by doubling from half a request per second per replica (or
// halving, down to 1/64 req/s; 0 when even that misses), then bisected
// set.Bisections times. Every run draws the same random numbers, so
// attainment falls smoothly with the rate. A fleet that keeps up at
// set.MaxRate reports set.MaxRate.
func MaxRate(ctx context.Context, f *Fleet, p float64, set Settings) (float64, error) {
	if err := check(f, set); err != nil {
		return 0, err
	}
	if !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("capacity: the attainment must be in (0, 1], got %g", p)
	}
	var runErr error
	ok := func(rate float64) bool {
		if runErr != nil {
			return false
		}
		r := newRun(f, set, rate, p, false)
		if runErr = r.execute(ctx); runErr != nil {
			return false
		}
		return !r.o.Stopped && r.o.Attainment >= p
	}
	lo, hi, done := bracket(ok, math.Min(0.5*float64(f.Replicas), set.MaxRate), set.MaxRate)
	if done || runErr != nil {
		return lo, runErr
	}
	for range set.Bisections {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, runErr
}

// bracket finds lo < hi with ok(lo) and not ok(hi), starting from hi:
// doubling while ok holds (up to maxRate: done, lo = maxRate), else halving
// down to 1/64 (done, lo = 0 when even that fails).
func bracket(ok func(float64) bool, hi, maxRate float64) (lo, _ float64, done bool) {
	if ok(hi) {
		for lo = hi; hi < maxRate; lo = hi {
			hi = math.Min(hi*2, maxRate)
			if !ok(hi) {
				return lo, hi, false
			}
		}
		return maxRate, maxRate, true
	}
	for hi > 1.0/64 {
		if ok(hi / 2) {
			return hi / 2, hi, false
		}
		hi /= 2
	}
	return 0, hi, true
}

func check(f *Fleet, set Settings) error {
	if f == nil {
		return fmt.Errorf("capacity: no fleet")
	}
	if err := f.Validate(); err != nil {
		return err
	}
	return set.Validate()
}
