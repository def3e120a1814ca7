package scenario

import (
	"math"
	"math/rand/v2"
)

// At is the pattern's arrival rate at time t (requests/s).
func (r Rate) At(t float64) float64 {
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
		if r.PeriodSeconds <= 0 || t < r.StartSeconds {
			return r.Mean
		}
		return math.Max(0, r.Mean+r.Amplitude*math.Sin(2*math.Pi*(t-r.StartSeconds)/r.PeriodSeconds))
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

// Peak bounds the pattern over [0, end] (for thinning).
func (r Rate) Peak(end float64) float64 {
	m := r.At(0)
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

// Draw samples a token count, at least 1.
func (t Tokens) Draw(rng *rand.Rand) int {
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
	return t.Bound(v)
}

// Bound applies Min and Max and rounds to a count between 1 and
// MaxTokens (a lognormal's tail can go far beyond, even overflow an int).
func (t Tokens) Bound(v float64) int {
	if t.Min > 0 {
		v = math.Max(v, t.Min)
	}
	if t.Max > 0 {
		v = math.Min(v, t.Max)
	}
	return max(int(math.Round(math.Min(v, MaxTokens))), 1)
}

// BoundedMean is the distribution's BoundedMean after bounding, estimated once by
// sampling with a fixed seed (exact for constant).
func (t Tokens) BoundedMean() float64 {
	if t.Dist == "" || t.Dist == "constant" {
		return float64(t.Draw(nil))
	}
	if t.Dist == "empirical" {
		sum := 0.0
		for _, v := range t.Values {
			sum += float64(t.Bound(v))
		}
		return sum / float64(len(t.Values))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	sum := 0.0
	const n = 20000
	for range n {
		sum += float64(t.Draw(rng))
	}
	return sum / n
}

// DrawClass picks one of a workload's classes by share (0 without
// classes, or with one), from one uniform draw of rng.
func DrawClass(cs []Class, rng *rand.Rand) int {
	if len(cs) < 2 {
		return 0
	}
	u := rng.Float64()
	for i, c := range cs {
		if u < c.Share {
			return i
		}
		u -= c.Share
	}
	return len(cs) - 1
}
