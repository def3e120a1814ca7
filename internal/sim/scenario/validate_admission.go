package scenario

import (
	"math"
	"strconv"

	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// validateAdmission checks gateway.admission, naming each field by its
// path. The ranges are internal/admission's (its constructors check them
// again, in seconds).
func validateAdmission(p string, a *Admission, add func(string, string, ...any)) {
	switch a.Policy {
	case PolicyAlways, PolicyTokenBucket, PolicySLOGated, PolicyPredictive:
	default:
		add(p+".policy", "must be always, token-bucket, slo-gated or predictive, got %q", a.Policy)
	}
	validatePredictive(p, a, add)
	validateTokenBucket(p, a, add)
	validateSLOGated(p, a, add)
	if a.Calibrate && a.Policy != PolicyPredictive {
		add(p+".calibrate", "needs policy predictive (the calibrator learns its TTFT model), got %q", a.Policy)
	}
	if f := a.Fairness; f != nil {
		if f.Share != 0 && !(f.Share > 0 && f.Share < 1) {
			add(p+".fairness.share", "must be in (0, 1) (0: the default 0.05), got %v", f.Share)
		}
		if !(f.WindowSeconds >= 0 && f.WindowSeconds <= MaxDurationSeconds) {
			add(p+".fairness.windowSeconds", "must be ≥ 0 seconds and at most %g (0: the default 60), got %v", float64(MaxDurationSeconds), f.WindowSeconds)
		}
	}
}

// validatePredictive checks the predictive policy's and the calibrator's
// settings.
func validatePredictive(p string, a *Admission, add func(string, string, ...any)) {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"budgetsMs.critical", a.BudgetsMs.Critical}, {"budgetsMs.standard", a.BudgetsMs.Standard},
		{"budgetsMs.sheddable", a.BudgetsMs.Sheddable}, {"stepTimeMs", a.StepTimeMs},
		{"coefficients.beta0Ms", a.Coefficients.Beta0Ms}, {"coefficients.beta1Ms", a.Coefficients.Beta1Ms},
		{"coefficients.queue", a.Coefficients.Queue},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add(p+"."+f.name, "must be a finite number ≥ 0 (0: the default), got %v", f.v)
		}
	}
	within := func(name string, v, lo, hi float64, def string) {
		if v != 0 && !(v >= lo && v <= hi) {
			add(p+"."+name, "must be in [%v, %v] (0: the default %s), got %v", lo, hi, def, v)
		}
	}
	within("headroom", a.Headroom, 0.5, 3, "1")
	within("forgetting", a.Forgetting, 0.9, 1, "0.999")
	if !(a.KVLimit >= 0 && a.KVLimit <= 1) {
		add(p+".kvLimit", "must be a KV-cache utilisation in (0, 1] (0: no limit), got %v", a.KVLimit)
	}
}

// validateTokenBucket checks the token bucket's settings, given only to
// its policy and required by it.
func validateTokenBucket(p string, a *Admission, add func(string, string, ...any)) {
	b := a.TokenBucket
	switch {
	case b == nil && a.Policy == PolicyTokenBucket:
		add(p+".tokenBucket", "must be set for policy token-bucket (its rate, requests/s)")
		return
	case b == nil:
		return
	case a.Policy != PolicyTokenBucket:
		add(p+".tokenBucket", "is set, but the policy is %q", a.Policy)
	}
	if !(b.Rate > 0) || math.IsInf(b.Rate, 0) {
		add(p+".tokenBucket.rate", "must be a finite number of requests/s > 0, got %v", b.Rate)
	}
	if !(b.Burst == 0 || b.Burst >= 1) || math.IsInf(b.Burst, 0) {
		add(p+".tokenBucket.burst", "must be 0 (one second of rate) or a finite number ≥ 1, got %v", b.Burst)
	}
}

// validateSLOGated checks the SLO gate's settings, given only to its
// policy.
func validateSLOGated(p string, a *Admission, add func(string, string, ...any)) {
	g := a.SLOGated
	if g == nil {
		return
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"standardThreshold", g.StandardThreshold}, {"sheddableThreshold", g.SheddableThreshold}} {
		if f.v < 0 {
			add(p+".sloGated."+f.name, "must be ≥ 1 waiting requests (0: the default), got %d", f.v)
		}
	}
	if g.Fleet != "" && g.Fleet != "min" && g.Fleet != "max" {
		add(p+".sloGated.fleet", "must be min or max, got %q", g.Fleet)
	}
	if a.Policy != PolicySLOGated {
		add(p+".sloGated", "is set, but the policy is %q", a.Policy)
	}
}

// validateClassesAdmission checks each class's criticality.
func validateClassesAdmission(p string, cs []Class, add func(string, string, ...any)) {
	for i, c := range cs {
		switch c.Criticality {
		case "", "critical", "standard", "sheddable":
		default:
			add(p+".classes["+strconv.Itoa(i)+"].criticality", "must be critical, standard or sheddable, got %q", c.Criticality)
		}
	}
}

// validateNewPrefixGroups checks the prefix groups that appear during the
// run.
func validateNewPrefixGroups(p string, w Workload, add func(string, string, ...any)) {
	total := 0.0
	for i, g := range w.NewPrefixGroups {
		gp := p + ".newPrefixGroups[" + strconv.Itoa(i) + "]"
		if !(g.AtSeconds >= 0 && g.AtSeconds <= MaxDurationSeconds) {
			add(gp+".atSeconds", "must be ≥ 0 seconds and at most %g, got %v", float64(MaxDurationSeconds), g.AtSeconds)
		}
		if !(g.Share > 0 && g.Share < 1) {
			add(gp+".share", "must be in (0, 1), got %v", g.Share)
		}
		total += g.Share
	}
	if len(w.NewPrefixGroups) > 0 && w.PrefixGroups == 0 {
		add(p+".newPrefixGroups", "needs prefixGroups > 0 (the groups there from the start)")
	}
	if len(w.NewPrefixGroups) > 0 && w.Trace != "" {
		add(p+".newPrefixGroups", "is for a synthetic workload; a trace names each request's prefix")
	}
	if total >= 1 {
		add(p+".newPrefixGroups", "shares must add up to less than 1, got %v", total)
	}
}

// validateScheduling checks a variant's scheduling policy.
func validateScheduling(p string, v Variant, add func(string, string, ...any)) {
	switch v.SchedulingPolicy {
	case "", server.PolicyFCFS, server.PolicyPriority:
	default:
		add(p+".schedulingPolicy", "must be fcfs or priority-fcfs, got %q", v.SchedulingPolicy)
	}
}
