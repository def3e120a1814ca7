package engine

import (
	"fmt"
	"math"
)

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
	"avgTTFTMs", "avgITLMs", "runningRequests", "preemptionsPerSec"}

// InvalidMetrics is the one validity rule for a pod's figures, shared by
// every metrics source and the engine: each must be a finite number ≥ 0,
// and the KV-cache usage a fraction (at most 1, with a little room for
// rounding). Staleness and plausibility depend on the configuration and
// are the engine's to judge.
func InvalidMetrics(p *Pod) []MetricIssue {
	vals := [...]float64{p.ArrivalRateRPS, p.KVCacheUsage, p.WaitingRequests, p.AvgInputTokens, p.AvgOutputTokens,
		p.AvgTTFTMs, p.AvgITLMs, p.RunningRequests, p.PreemptionsPerSec}
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
	return append(out, invalidCache(p)...)
}

// MaxKVCacheTokens bounds a replica's KV cache (blocks × block size): 2^36
// tokens, thousands of times the largest GPU's cache, and far from
// overflowing an int or a float's integers.
const MaxKVCacheTokens = 1 << 36

// invalidCache checks the KV cache's size: block count and block size ≥ 0
// (0 is unknown) and their product within MaxKVCacheTokens. A cache read
// as smaller than it is (a negative pair, or an overflowed product)
// would make the model see no capacity and scale up.
func invalidCache(p *Pod) []MetricIssue {
	var out []MetricIssue
	if p.KVBlocks < 0 {
		out = append(out, MetricIssue{"kvBlocks", float64(p.KVBlocks), "negative"})
	}
	if p.BlockSize < 0 {
		out = append(out, MetricIssue{"blockSize", float64(p.BlockSize), "negative"})
	}
	if tokens := float64(p.KVBlocks) * float64(p.BlockSize); len(out) == 0 && tokens > MaxKVCacheTokens {
		out = append(out, MetricIssue{"kvBlocks", float64(p.KVBlocks), fmt.Sprintf("%d blocks of %d tokens exceed %d tokens", p.KVBlocks, p.BlockSize, MaxKVCacheTokens)})
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
