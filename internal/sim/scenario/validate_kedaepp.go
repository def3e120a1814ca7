package scenario

import "math"

// validateKEDAEPP checks the four KEDA + EPP paths' settings; 0 is each
// setting's default.
func validateKEDAEPP(a Autoscalers, add func(string, string, ...any)) {
	validateEPPScaler("autoscalers.kedaQueue", a.KEDAQueue.EPPScaler, add)
	validateEPPScaler("autoscalers.kedaSaturation", a.KEDASaturation.EPPScaler, add)
	validateEPPScaler("autoscalers.kedaTokens", a.KEDATokens.EPPScaler, add)
	validateEPPScaler("autoscalers.kedaSlo", a.KEDASLO.EPPScaler, add)
	q, s, t, o := a.KEDAQueue, a.KEDASaturation, a.KEDATokens, a.KEDASLO
	for _, f := range []struct {
		name   string
		v, max float64
	}{
		{"kedaQueue.queueThreshold", q.QueueThreshold, 1e6}, {"kedaQueue.runningThreshold", q.RunningThreshold, 1e6},
		{"kedaSaturation.saturationThreshold", s.SaturationThreshold, 1e6}, {"kedaSaturation.runningThreshold", s.RunningThreshold, 1e6},
		{"kedaTokens.backlogSeconds", t.BacklogSeconds, 3600}, {"kedaTokens.kvThreshold", t.KVThreshold, 1},
		{"kedaTokens.prefillTokensPerSecond", t.PrefillTokensPerSecond, 1e9},
		{"kedaSlo.thetaUp", o.ThetaUp, 10}, {"kedaSlo.thetaDown", o.ThetaDown, 10}, {"kedaSlo.clamp", o.Clamp, 100},
		{"kedaSlo.windowSeconds", o.WindowSeconds, 3600}, {"kedaSlo.averageSeconds", o.AverageSeconds, 3600},
		{"kedaSlo.ruleSeconds", o.RuleSeconds, 3600},
	} {
		if !(f.v >= 0 && f.v <= f.max) {
			add("autoscalers."+f.name, "must be a number in (0, %g] (0: the default), got %v", f.max, f.v)
		}
	}
	if r := o.RuleSeconds; r > 0 && r < MinPeriodSeconds {
		add("autoscalers.kedaSlo.ruleSeconds", "must be at least %g seconds (0: the default), got %v", MinPeriodSeconds, r)
	}
	if !(o.Quantile >= 0 && o.Quantile < 1) {
		add("autoscalers.kedaSlo.quantile", "must be a quantile in (0, 1) (0: the default 0.9), got %v", o.Quantile)
	}
	d := o.withDefaults()
	if d.ThetaDown >= d.ThetaUp {
		add("autoscalers.kedaSlo.thetaDown", "must be below thetaUp (%v), got %v", d.ThetaUp, d.ThetaDown)
	}
}

// validateEPPScaler checks the settings the four paths share, under p.
func validateEPPScaler(p string, e EPPScaler, add func(string, string, ...any)) {
	if v := e.SyncSeconds; !(v >= 0) || math.IsInf(v, 0) || v > 0 && v < MinPeriodSeconds {
		add(p+".syncSeconds", "must be at least %g seconds (0: the default 15), got %v", MinPeriodSeconds, v)
	}
	if v := e.Tolerance; !(v >= 0 && v < 1) {
		add(p+".tolerance", "must be in [0, 1) (0: the default 0.1), got %v", v)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"minReplicaCount", e.MinReplicaCount}, {"maxReplicaCount", e.MaxReplicaCount}} {
		if f.v < 0 || f.v > MaxReplicasTotal {
			add(p+"."+f.name, "must be between 0 and %d (0: the default), got %d", MaxReplicasTotal, f.v)
		}
	}
	if e.MaxReplicaCount > 0 && e.MinReplicaCount > e.MaxReplicaCount {
		add(p+".maxReplicaCount", "must be at least minReplicaCount (%d), got %d", e.MinReplicaCount, e.MaxReplicaCount)
	}
	if e.Behavior != nil {
		e.Behavior.validate(p+".behavior", add)
	}
}
