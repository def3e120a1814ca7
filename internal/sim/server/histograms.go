package server

import "sort"

// vLLM's latency histogram buckets (vllm/v1/metrics/loggers.py): the upper
// bounds, in seconds, of time_to_first_token_seconds and of
// request_time_per_output_token_seconds (and inter_token_latency_seconds);
// a last bucket, +Inf, follows each. Counters keeps the server's counts per
// bucket, as Prometheus scrapes them; an autoscaler reads the share of
// requests within an SLO from them (engine.Bucket).
var (
	TTFTBucketBounds = [...]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
		20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	TPOTBucketBounds = [...]float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
		20.0, 40.0, 80.0}
)

// bucketOf is the index of the bucket that holds x: the first bound ≥ x,
// or len(bounds) (+Inf).
func bucketOf(bounds []float64, x float64) int { return sort.SearchFloat64s(bounds, x) }
