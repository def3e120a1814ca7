package alloc

import (
	"math"
	"sort"
)

// Request is a capacity-driven scale-up asking for accelerators.
type Request struct {
	Accelerator string
	Units       int     // accelerators per replica
	Want        int     // extra replicas requested
	Spare       float64 // the requester's remaining spare capacity (lower is more urgent)
	Cost        float64 // per replica
	Name        string  // tie-breaker
}

// BySaturation is Greedy-by-Saturation (the WVA paper §IV.G; the WVA
// GPU-limiter guide): scale-up requests
// sorted by remaining spare capacity (ascending: nearest to saturation
// first), then by cost (ascending), each granted as many of its replicas as
// the free accelerators of its type allow, until the budget is exhausted. It
// returns the replicas granted per request.
func BySaturation(reqs []Request, free map[string]int) []int {
	idx := make([]int, len(reqs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ra, rb := reqs[idx[a]], reqs[idx[b]]
		if ra.Spare != rb.Spare && !(math.IsNaN(ra.Spare) || math.IsNaN(rb.Spare)) {
			return ra.Spare < rb.Spare
		}
		if ra.Cost != rb.Cost {
			return ra.Cost < rb.Cost
		}
		return ra.Name < rb.Name
	})
	granted := make([]int, len(reqs))
	for _, i := range idx {
		r := reqs[i]
		units := max(r.Units, 1)
		n := min(r.Want, free[r.Accelerator]/units)
		if n > 0 {
			granted[i] = n
			free[r.Accelerator] -= n * units
		}
	}
	return granted
}
