package sim

import (
	"math"
	"math/rand/v2"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// stream generates one model's arrivals.
type stream struct {
	w     scenario.Workload
	rng   *rand.Rand
	peak  float64
	pos   int // next trace row
	count int // arrivals so far
	// scrapes are the gateway's request counter for the model as
	// Prometheus stores it (GIE's inference_objective_request_total).
	scrapes []gatewaySample
}

type gatewaySample struct {
	t     float64
	count int
}

// next returns the time of the next arrival after t, or +Inf when the
// pattern stays at zero. Poisson arrivals use thinning against the peak
// rate; gamma and constant arrivals are renewal processes whose mean gap is
// 1/λ at the current time.
func (s *stream) next(t, end float64) float64 {
	if s.w.Rows != nil {
		if s.pos >= len(s.w.Rows) {
			return math.Inf(1)
		}
		s.pos++
		return math.Max(s.w.Rows[s.pos-1].Time, t)
	}
	if s.peak <= 0 {
		return math.Inf(1)
	}
	switch s.w.Arrival {
	case "constant", "gamma":
		for t < end {
			r := s.w.Rate.At(t)
			if r <= 0 {
				t += 1
				continue
			}
			if s.w.Arrival == "constant" {
				return t + 1/r
			}
			k := 1 / (s.w.CV * s.w.CV) // shape; mean gap k·θ = 1/r
			return t + gammaSample(s.rng, k)/(k*r)
		}
		return math.Inf(1)
	}
	for t < end {
		t += s.rng.ExpFloat64() / s.peak
		if s.rng.Float64()*s.peak <= s.w.Rate.At(t) {
			return t
		}
	}
	return math.Inf(1)
}

// gammaSample draws Gamma(k, 1) by Marsaglia and Tsang (2000), boosting
// shapes below 1.
func gammaSample(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaSample(rng, k+1) * math.Pow(rng.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
