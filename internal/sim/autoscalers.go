package sim

// Autoscaler decides replica counts from what a real one could observe.
type Autoscaler interface {
	Name() string
	// Interval is how often Decide runs, in seconds.
	Interval() float64
	// Decide returns the desired replicas per variant (indexed as
	// View.Variants); a negative entry means "no change".
	Decide(v *View) []int
}

// FastLooper is an autoscaler with a second, faster loop between its
// decisions: WVA's fast loop, which the controller runs every
// WVA_SCALE_FROM_ZERO_INTERVAL (2 s) on the gateway's signals.
type FastLooper interface {
	// FastInterval is how often Fast runs, in seconds (0: never).
	FastInterval() float64
	// Fast sees a view without pod metrics (the gateway's queue and
	// arrival rate, and the replica counts). It returns the desired
	// replicas per variant like Decide (a negative entry means "no
	// change"), and whether to run an extra autoscaling cycle now (the
	// periodic cycles keep their times, as the controller's do).
	Fast(v *View) (want []int, cycleNow bool)
}

// Warner is an autoscaler that reports problems of its run (engine errors)
// as warnings on the result.
type Warner interface{ Warnings() []string }

// Breakdowner is an autoscaler that splits what its decisions asked for by
// the rule that asked for each replica (WVA's plan breakdown): per model,
// each part's cost from the start to end (seconds), in the cost units of
// the result. The result carries it as costBreakdown.
type Breakdowner interface {
	CostBreakdown(end float64) map[string]map[string]float64
}
