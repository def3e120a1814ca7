package sim

import (
	"fmt"
	"strconv"
)

func init() {
	registerBaseline(Baseline{Name: "static", Order: 60, Example: "static:3",
		Summary: "N replicas of every variant, whatever the load",
		Param:   staticReplicas,
		New: func(_ *Scenario, arg string) (Autoscaler, error) {
			n, err := strconv.Atoi(arg)
			return &Static{n: n}, err
		}})
}

// staticReplicas reads the N of static:N, in canonical form.
func staticReplicas(arg string) (string, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 0 || n > MaxReplicasPerVariant {
		return "", fmt.Errorf("static:N needs a replica count between 0 and %d, got %q", MaxReplicasPerVariant, "static:"+arg)
	}
	return strconv.Itoa(n), nil
}

// Static keeps N replicas of every variant.
type Static struct{ n int }

// Name implements Autoscaler.
func (s *Static) Name() string { return "static:" + strconv.Itoa(s.n) }

// Interval implements Autoscaler.
func (s *Static) Interval() float64 { return 3600 }

// Decide implements Autoscaler.
func (s *Static) Decide(v *View) []int {
	out := make([]int, len(v.Variants))
	for i := range out {
		out[i] = s.n
	}
	return out
}
