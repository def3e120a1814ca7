package engine

import "math"

// MetricIssue is one figure of a pod that no server can report.
type MetricIssue struct {
	// Metric is the Pod field's name as snapshots spell it (arrivalRate,
	// kvCacheUsage, ...).
	Metric string
	Value  float64
	// Why says in words what is wrong ("NaN", "negative", "above 1").
	Why string
}

// podMetricNames name the figures InvalidMetrics checks, in Pod's order.
var podMetricNames = [...]string{"arrivalRate", "kvCacheUsage", "waitingRequests", "avgInputTokens", "avgOutputTokens",
	"avgTTFTMs", "avgITLMs", "runningRequests"}

// InvalidMetrics is the one validity rule for a pod's figures, shared by
// every metrics source and the engine: each must be a finite number ≥ 0,
// and the KV-cache usage a fraction (at most 1, with a little room for
// rounding). Staleness and plausibility depend on the configuration and
// are the engine's to judge.
func InvalidMetrics(p *Pod) []MetricIssue {
	vals := [...]float64{p.ArrivalRateRPS, p.KVCacheUsage, p.WaitingRequests, p.AvgInputTokens, p.AvgOutputTokens,
		p.AvgTTFTMs, p.AvgITLMs, p.RunningRequests}
	var out []MetricIssue
	for i, v := range vals {
		switch {
		case math.IsNaN(v):
			out = append(out, MetricIssue{podMetricNames[i], v, "NaN"})
		case math.IsInf(v, 0):
			out = append(out, MetricIssue{podMetricNames[i], v, "infinite"})
		case v < 0:
			out = append(out, MetricIssue{podMetricNames[i], v, "negative"})
		}
	}
	if p.KVCacheUsage > 1.001 && !math.IsInf(p.KVCacheUsage, 0) {
		out = append(out, MetricIssue{"kvCacheUsage", p.KVCacheUsage, "above 1"})
	}
	return out
}

// Worse is the more severe of two hold causes (implausible, invalid,
// stale, missing, none).
func (h HoldCause) Worse(o HoldCause) HoldCause {
	if o.severity() > h.severity() {
		return o
	}
	return h
}
