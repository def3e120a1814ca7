package sim

import (
	"fmt"
	"strconv"
	"strings"
)

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

// NewAutoscaler builds an autoscaler by name: wva, hpa, keda, clairvoyant,
// oracle or static:N (N replicas of every variant).
func NewAutoscaler(name string, sc *Scenario) (Autoscaler, error) {
	c := sc.withDefaults()
	switch {
	case name == "wva":
		return newWVA(&c), nil
	case name == "hpa":
		return &HPA{cfg: c.Autoscalers.HPA, recs: map[int][]rec{}}, nil
	case name == "keda":
		return newKEDA(&c), nil
	case name == "oracle":
		return &Oracle{interval: c.Autoscalers.OracleIntervalSeconds}, nil
	case name == "clairvoyant":
		return &Clairvoyant{interval: c.Autoscalers.OracleIntervalSeconds, margin: c.Autoscalers.ClairvoyantMargin}, nil
	case strings.HasPrefix(name, "static:"):
		n, err := staticReplicas(name)
		if err != nil {
			return nil, err
		}
		return &Static{n: n}, nil
	}
	return nil, fmt.Errorf("unknown autoscaler %q (want wva, hpa, keda, clairvoyant, oracle or static:N)", name)
}

// staticReplicas reads the N of static:N.
func staticReplicas(name string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "static:"))
	if err != nil || n < 0 || n > MaxReplicasPerVariant {
		return 0, fmt.Errorf("static:N needs a replica count between 0 and %d, got %q", MaxReplicasPerVariant, name)
	}
	return n, nil
}

// CheckAutoscalers checks a list of autoscaler names: each known, and none
// twice (static:2 and static:02 are the same).
func CheckAutoscalers(names []string) error {
	seen := map[string]bool{}
	for _, name := range names {
		key := name
		switch {
		case name == "wva", name == "hpa", name == "keda", name == "clairvoyant", name == "oracle":
		case strings.HasPrefix(name, "static:"):
			n, err := staticReplicas(name)
			if err != nil {
				return err
			}
			key = "static:" + strconv.Itoa(n)
		default:
			return fmt.Errorf("unknown autoscaler %q (want wva, hpa, keda, clairvoyant, oracle or static:N)", name)
		}
		if seen[key] {
			return fmt.Errorf("%s is listed twice", key)
		}
		seen[key] = true
	}
	return nil
}

type rec struct {
	t float64
	n int
}

// stabilized returns the highest recommendation of the window (the HPA's
// scale-down stabilisation), after adding n.
func stabilized(recs map[int][]rec, i int, now, window float64, n int) int {
	keep := recs[i][:0]
	for _, r := range recs[i] {
		if now-r.t < window {
			keep = append(keep, r)
		}
	}
	keep = append(keep, rec{t: now, n: n})
	recs[i] = keep
	best := n
	for _, r := range keep {
		best = max(best, r.n)
	}
	return best
}
