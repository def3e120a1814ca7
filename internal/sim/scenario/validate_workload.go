package scenario

import (
	"math"
	"strconv"
)

func validateWorkload(p string, w Workload, add func(string, string, ...any)) {
	switch w.Arrival {
	case "", "poisson", "constant", "gamma":
	default:
		add(p+".arrival", "must be poisson, gamma or constant, got %q", w.Arrival)
	}
	switch {
	case !(w.CV >= 0 && w.CV <= MaxCV):
		add(p+".cv", "must be a number between 0 and %d, got %v", MaxCV, w.CV)
	case w.Arrival == "gamma" && w.CV == 0:
		add(p+".cv", "gamma arrivals need a cv > 0")
	}
	if w.Trace == "" {
		validateRate(p+".rate", w.Rate, add)
	}
	validateClasses(p, w.Classes, add)
	validateClassesAdmission(p, w.Classes, add)
	validateNewPrefixGroups(p, w, add)
	if w.NumRequests < 0 {
		add(p+".numRequests", "must be ≥ 0 (0: no limit), got %d", w.NumRequests)
	}
	if w.PrefixGroups < 0 || w.PrefixGroups > MaxPrefixGroups {
		add(p+".prefixGroups", "must be between 0 and %d, got %d", MaxPrefixGroups, w.PrefixGroups)
	}
	if w.PrefixTokens < 0 || w.PrefixTokens > MaxTokens || (w.PrefixGroups > 0 && w.PrefixTokens == 0) {
		add(p+".prefixTokens", "must be between 0 and %d tokens, and > 0 with prefix groups, got %d", MaxTokens, w.PrefixTokens)
	}
	if w.Trace != "" {
		return // the trace gives the token counts
	}
	validateTokens(p+".input", w.Input, add)
	validateTokens(p+".output", w.Output, add)
}

// validateRate checks every number of a rate pattern, whichever pattern
// uses it (the generator's peak rate looks at all of them): rates and
// times finite and ≥ 0.
func validateRate(p string, r Rate, add func(string, string, ...any)) {
	nonNeg := func(path string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			add(path, "must be a finite number ≥ 0, got %v", v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rps", r.RPS}, {"from", r.From}, {"to", r.To}, {"startSeconds", r.StartSeconds}, {"endSeconds", r.EndSeconds},
		{"mean", r.Mean}, {"amplitude", r.Amplitude}, {"periodSeconds", r.PeriodSeconds}} {
		nonNeg(p+"."+f.name, f.v)
	}
	validateRatePoints(p, r, nonNeg, add)
	switch r.Pattern {
	case "constant", "spikes":
	case "staircase":
		if len(r.Steps) == 0 {
			add(p+".steps", "a staircase needs at least one step")
		}
	case "ramp":
		if r.EndSeconds < r.StartSeconds {
			add(p+".endSeconds", "must be ≥ startSeconds (%v), got %v", r.StartSeconds, r.EndSeconds)
		}
	case "diurnal":
		if !(r.PeriodSeconds > 0) {
			add(p+".periodSeconds", "a diurnal pattern needs a period > 0 seconds, got %v", r.PeriodSeconds)
		}
	default:
		add(p+".pattern", "must be constant, staircase, ramp, diurnal or spikes, got %q", r.Pattern)
	}
}

// validateRatePoints checks a rate's steps (in time order) and spikes,
// each number with nonNeg.
func validateRatePoints(p string, r Rate, nonNeg func(string, float64), add func(string, string, ...any)) {
	if len(r.Steps) > MaxRatePoints || len(r.Spikes) > MaxRatePoints {
		add(p, "at most %d steps and %d spikes, got %d and %d", MaxRatePoints, MaxRatePoints, len(r.Steps), len(r.Spikes))
		return
	}
	for i, st := range r.Steps {
		sp := p + ".steps[" + strconv.Itoa(i) + "]"
		nonNeg(sp+".atSeconds", st.AtSeconds)
		nonNeg(sp+".rps", st.RPS)
		if i > 0 && st.AtSeconds < r.Steps[i-1].AtSeconds {
			add(sp+".atSeconds", "steps must be in time order, got %v after %v", st.AtSeconds, r.Steps[i-1].AtSeconds)
		}
	}
	for i, sk := range r.Spikes {
		sp := p + ".spikes[" + strconv.Itoa(i) + "]"
		nonNeg(sp+".atSeconds", sk.AtSeconds)
		nonNeg(sp+".durationSeconds", sk.DurationSeconds)
		nonNeg(sp+".rps", sk.RPS)
	}
}

// tokenCount reports a token count that is not finite, below lo or above
// MaxTokens.
func tokenCount(p string, v, lo float64, add func(string, string, ...any)) {
	if !(v >= lo && v <= MaxTokens) {
		add(p, "must be a token count between %v and %d, got %v", lo, MaxTokens, v)
	}
}

func validateTokens(p string, t Tokens, add func(string, string, ...any)) {
	switch t.Dist {
	case "", "constant", "normal", "lognormal":
		tokenCount(p+".mean", t.Mean, 1, add)
	case "empirical":
		validateEmpirical(p, t, add)
	default:
		add(p+".dist", "must be constant, normal, lognormal or empirical, got %q", t.Dist)
	}
	tokenCount(p+".sd", t.SD, 0, add)
	tokenCount(p+".min", t.Min, 0, add)
	tokenCount(p+".max", t.Max, 0, add)
	if t.Min > 0 && t.Max > 0 && t.Min > t.Max {
		add(p+".max", "must be ≥ min (%v), got %v", t.Min, t.Max)
	}
}

// validateEmpirical checks an empirical distribution: values or a file,
// not both, at most MaxEmpiricalValues token counts.
func validateEmpirical(p string, t Tokens, add func(string, string, ...any)) {
	if t.Mean != 0 {
		tokenCount(p+".mean", t.Mean, 0, add)
	}
	if len(t.Values) == 0 && t.File == "" {
		add(p+".values", "an empirical distribution needs values or a file")
	}
	if len(t.Values) > 0 && t.File != "" {
		add(p+".file", "give values or a file, not both")
	}
	if len(t.Values) > MaxEmpiricalValues {
		add(p+".values", "at most %d values, got %d", MaxEmpiricalValues, len(t.Values))
	}
	for i, v := range t.Values {
		if !(v >= 1 && v <= MaxTokens) || v != math.Trunc(v) {
			add(p+".values["+strconv.Itoa(i)+"]", "must be a whole token count between 1 and %d, got %v", MaxTokens, v)
			break
		}
	}
}

func validateClasses(p string, cs []Class, add func(string, string, ...any)) {
	if len(cs) > MaxClasses {
		add(p+".classes", "at most %d classes, got %d", MaxClasses, len(cs))
		return
	}
	share := 0.0
	names := map[string]bool{}
	for i, c := range cs {
		cp := p + ".classes[" + strconv.Itoa(i) + "]"
		if c.Name == "" || names[c.Name] {
			add(cp+".name", "must be set and unique, got %q", c.Name)
		}
		names[c.Name] = true
		validateName(cp+".name", c.Name, add)
		if !(c.Share > 0 && c.Share <= 1) {
			add(cp+".share", "must be in (0, 1], got %v", c.Share)
		}
		validateSLO(cp+".slo", c.SLO, add)
		if c.SLO.Attainment != 0 {
			add(cp+".slo.attainment", "is set per model (models[].slo.attainment): WVA sizes a model's classes together, got %v", c.SLO.Attainment)
		}
		share += c.Share
	}
	if len(cs) > 0 && math.Abs(share-1) > 1e-6 {
		add(p+".classes", "shares must add up to 1, got %v", share)
	}
}
