package capacity

import (
	"math"
	"math/rand/v2"
)

// Lognormal is a workload whose prompt and output lengths are lognormal
// with the given means and coefficients of variation (sd/mean), rounded
// and kept within [1, Max…]; every request is held to one SLO. It is what
// the engine knows of a model's traffic — average token counts — with an
// assumed spread: production chat traces are close to lognormal (Azure's
// LLM inference traces; docs/queueing.md §7).
type Lognormal struct {
	InputMean, InputCV   float64
	OutputMean, OutputCV float64
	MaxInput, MaxOutput  int
	TTFTMs, ITLMs        float64
}

// Draw implements Workload.
func (w *Lognormal) Draw(rng *rand.Rand, r *Request) {
	r.Input = lognormalTokens(rng, w.InputMean, w.InputCV, w.MaxInput)
	r.Output = lognormalTokens(rng, w.OutputMean, w.OutputCV, w.MaxOutput)
	r.TTFTMs, r.ITLMs, r.Sheddable = w.TTFTMs, w.ITLMs, true
}

// lognormalTokens draws a count with the given mean and coefficient of
// variation: σ² = ln(1 + cv²), μ = ln(mean) − σ²/2.
func lognormalTokens(rng *rand.Rand, mean, cv float64, most int) int {
	if most < 1 {
		most = math.MaxInt32
	}
	if !(mean >= 1) {
		return 1
	}
	x := mean
	if cv > 0 {
		s2 := math.Log1p(cv * cv)
		x = math.Exp(math.Log(mean) - s2/2 + math.Sqrt(s2)*rng.NormFloat64())
	}
	return int(math.Max(1, math.Min(math.Round(x), float64(most))))
}
