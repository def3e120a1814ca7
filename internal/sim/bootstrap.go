package sim

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Interval is an estimate with its 95 % confidence interval, in ms.
type Interval struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// bootstrapResamples is B, the resamples of a percentile bootstrap: enough
// for the 2.5 % and 97.5 % points of the resampled quantiles to move by
// well under their interval's width from one B to another (Efron &
// Tibshirani, An Introduction to the Bootstrap, 1993, §13.3 and §19.3:
// B of 1 000 or more for percentile intervals).
const bootstrapResamples = 2000

// QuantileSorted is the p-quantile of ascending v, linearly interpolated
// at rank p·(n − 1) as percentiles (and numpy) do.
func QuantileSorted(v []float64, p float64) float64 {
	x := p * float64(len(v)-1)
	i := int(x)
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (x-float64(i))*(v[i+1]-v[i])
}

// BootstrapQuantiles returns, for each p of ps, the sample's p-quantile
// and its 95 % percentile-bootstrap interval (Efron & Tibshirani, §13.3):
// the 2.5 % and 97.5 % points of the p-quantiles of B resamples of n
// values drawn with replacement. sorted is the sample, ascending; the
// values are multiplied by scale.
//
// A resample's quantile needs only its order statistics at ranks i and
// i + 1 (i = ⌊p·(n − 1)⌋), and those are drawn directly instead of
// drawing n values: a draw from the sample is sorted[⌊u·n⌋] for a uniform
// u, so the resample's k-th smallest value is sorted[⌊U₍ₖ₎·n⌋], where the
// k-th smallest of n uniforms U₍ₖ₎ is Beta(k, n + 1 − k), and the next
// one is U₍ₖ₎ + (1 − U₍ₖ₎)·M, M the smallest of n − k uniforms,
// Beta(1, n − k) (H. A. David, H. N. Nagaraja, Order Statistics, 3rd ed.,
// Wiley, 2003, §2.1–2.2). Each resample's quantile has exactly the
// distribution it has under naive resampling, at O(1) cost instead of
// O(n); the intervals are marginal, so each quantile has its own draws.
func BootstrapQuantiles(sorted []float64, ps []float64, scale float64, rng *rand.Rand) []Interval {
	out := make([]Interval, len(ps))
	n := len(sorted)
	if n == 0 {
		return out
	}
	est := make([]float64, bootstrapResamples)
	at := func(u float64) float64 { return sorted[min(int(u*float64(n)), n-1)] }
	for k, p := range ps {
		x := p * float64(n-1)
		i := int(x)
		frac := x - float64(i)
		for b := range est {
			u := betaSample(rng, float64(i+1), float64(n-i))
			lo, hi := at(u), at(u)
			if frac > 0 && i+1 < n {
				m := 1 - math.Pow(rng.Float64(), 1/float64(n-i-1))
				hi = at(u + (1-u)*m)
			}
			est[b] = lo + frac*(hi-lo)
		}
		sort.Float64s(est)
		out[k] = Interval{Value: scale * QuantileSorted(sorted, p), Low: scale * QuantileSorted(est, 0.025),
			High: scale * QuantileSorted(est, 0.975)}
	}
	return out
}

// betaSample draws Beta(a, b) as X/(X + Y) of X ~ Gamma(a), Y ~ Gamma(b).
func betaSample(rng *rand.Rand, a, b float64) float64 {
	x := gammaSample(rng, a)
	return x / (x + gammaSample(rng, b))
}
