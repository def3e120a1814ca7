package sim

import (
	"math"
	"math/rand/v2"
)

// rateAt is the pattern's arrival rate at time t (requests/s).
func (r Rate) rateAt(t float64) float64 {
	switch r.Pattern {
	case "staircase":
		v := 0.0
		for _, s := range r.Steps {
			if t >= s.AtSeconds {
				v = s.RPS
			}
		}
		return v
	case "ramp":
		switch {
		case t <= r.StartSeconds:
			return r.From
		case t >= r.EndSeconds:
			return r.To
		}
		return r.From + (r.To-r.From)*(t-r.StartSeconds)/(r.EndSeconds-r.StartSeconds)
	case "diurnal":
		if r.PeriodSeconds <= 0 {
			return r.Mean
		}
		return math.Max(0, r.Mean+r.Amplitude*math.Sin(2*math.Pi*t/r.PeriodSeconds))
	case "spikes":
		v := r.RPS
		for _, s := range r.Spikes {
			if t >= s.AtSeconds && t < s.AtSeconds+s.DurationSeconds {
				v = math.Max(v, s.RPS)
			}
		}
		return v
	}
	return r.RPS
}

// maxRate bounds the pattern over [0, end] (for thinning).
func (r Rate) maxRate(end float64) float64 {
	m := r.rateAt(0)
	for _, s := range r.Steps {
		m = math.Max(m, s.RPS)
	}
	for _, s := range r.Spikes {
		m = math.Max(m, s.RPS)
	}
	m = math.Max(m, math.Max(r.From, r.To))
	m = math.Max(m, r.Mean+math.Abs(r.Amplitude))
	m = math.Max(m, r.RPS)
	_ = end
	return m
}

// stream generates one model's arrivals.
type stream struct {
	w     Workload
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
	if s.w.rows != nil {
		if s.pos >= len(s.w.rows) {
			return math.Inf(1)
		}
		s.pos++
		return math.Max(s.w.rows[s.pos-1].t, t)
	}
	if s.peak <= 0 {
		return math.Inf(1)
	}
	switch s.w.Arrival {
	case "constant", "gamma":
		for t < end {
			r := s.w.Rate.rateAt(t)
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
		if s.rng.Float64()*s.peak <= s.w.Rate.rateAt(t) {
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

// draw samples a token count, at least 1.
func (t Tokens) draw(rng *rand.Rand) int {
	var v float64
	switch t.Dist {
	case "empirical":
		v = t.Values[rng.IntN(len(t.Values))]
	case "normal":
		v = t.Mean + t.SD*rng.NormFloat64()
	case "lognormal":
		if t.SD > 0 {
			s2 := math.Log(1 + t.SD*t.SD/(t.Mean*t.Mean))
			v = math.Exp(math.Log(t.Mean) - s2/2 + math.Sqrt(s2)*rng.NormFloat64())
		} else {
			v = t.Mean
		}
	default:
		v = t.Mean
	}
	return t.bound(v)
}

// bound applies Min and Max and rounds to a count between 1 and
// MaxTokens (a lognormal's tail can go far beyond, even overflow an int).
func (t Tokens) bound(v float64) int {
	if t.Min > 0 {
		v = math.Max(v, t.Min)
	}
	if t.Max > 0 {
		v = math.Min(v, t.Max)
	}
	return max(int(math.Round(math.Min(v, MaxTokens))), 1)
}

// mean is the distribution's mean after bounding, estimated once by
// sampling with a fixed seed (exact for constant).
func (t Tokens) mean() float64 {
	if t.Dist == "" || t.Dist == "constant" {
		return float64(t.draw(nil))
	}
	if t.Dist == "empirical" {
		sum := 0.0
		for _, v := range t.Values {
			sum += float64(t.bound(v))
		}
		return sum / float64(len(t.Values))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	sum := 0.0
	const n = 20000
	for range n {
		sum += float64(t.draw(rng))
	}
	return sum / n
}
