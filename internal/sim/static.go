package sim

import (
	"fmt"
	"strconv"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

func init() {
	RegisterBaseline(Baseline{Name: "static", Order: 60, Example: "static:3",
		Summary: "N replicas of every variant, whatever the load",
		Param:   staticReplicas,
		New: func(_ *scenario.Scenario, arg string) (Autoscaler, error) {
			n, err := strconv.Atoi(arg)
			return &Static{n: n}, err
		}})
}

// staticReplicas reads the N of static:N, in canonical form.
func staticReplicas(arg string) (string, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 0 || n > scenario.MaxReplicasPerVariant {
		return "", fmt.Errorf("static:N needs a replica count between 0 and %d, got %q", scenario.MaxReplicasPerVariant, "static:"+arg)
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

// NewStatic is a fixed fleet of n replicas per variant.
func NewStatic(n int) *Static { return &Static{n: n} }
