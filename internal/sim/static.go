package sim

import (
	"strconv"
)

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
