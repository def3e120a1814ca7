package alloc

import (
	"math"
	"sort"
)

// bestEffort gives the servers that limited mode could not satisfy what is
// left of the inventory, as the saturation policy says (docs/engine.md §4;
// the WVA optimizer's processUnallocated* functions). Each server draws on
// the first option, in order of value, that has room for one replica, up to
// what that option would need to carry the demand.
func bestEffort(servers []Server, out []Assignment, unsatisfied []int, free map[string]int, policy Policy, phi float64) {
	if len(unsatisfied) == 0 || policy == PolicyNone || policy == "" {
		return
	}
	sort.SliceStable(unsatisfied, func(a, b int) bool {
		return servers[unsatisfied[a]].Priority < servers[unsatisfied[b]].Priority
	})
	switch policy {
	case PolicyPriorityExhaustive:
		for _, s := range unsatisfied {
			grantExhaustive(servers[s], &out[s], free, phi)
		}
	case PolicyPriorityRoundRobin:
		for i := 0; i < len(unsatisfied); {
			j := i
			for j < len(unsatisfied) && servers[unsatisfied[j]].Priority == servers[unsatisfied[i]].Priority {
				j++
			}
			roundRobin(servers, out, unsatisfied[i:j], free, phi)
			i = j
		}
	case PolicyRoundRobin:
		roundRobin(servers, out, unsatisfied, free, phi)
	}
}

// ticket is a server's best-effort claim: the option it draws on and how
// many replicas that option would need.
type ticket struct {
	s, opt, want int
}

// pickOption returns the first candidate option (by value) with room for a
// replica, and the replicas it would need for the demand.
func pickOption(s Server, free map[string]int, phi float64) (opt, want int, ok bool) {
	for _, c := range candidates(s, phi) {
		if c.chosen < 0 {
			continue
		}
		o := s.Options[c.chosen]
		if free[o.Accelerator] >= max(o.Units, 1) {
			return c.chosen, c.replicas[c.chosen], true
		}
	}
	return 0, 0, false
}

func grantExhaustive(s Server, a *Assignment, free map[string]int, phi float64) {
	opt, want, ok := pickOption(s, free, phi)
	if !ok {
		return
	}
	o := s.Options[opt]
	n := min(want, free[o.Accelerator]/max(o.Units, 1))
	free[o.Accelerator] -= n * max(o.Units, 1)
	a.Replicas[opt] += n
	a.Chosen, a.BestEffort = opt, true
	a.Cost += float64(n) * o.Cost
}

func roundRobin(servers []Server, out []Assignment, group []int, free map[string]int, phi float64) {
	var tickets []ticket
	for _, s := range group {
		if opt, want, ok := pickOption(servers[s], free, phi); ok {
			tickets = append(tickets, ticket{s: s, opt: opt, want: want})
		}
	}
	for progress := true; progress; {
		progress = false
		for _, t := range tickets {
			a := &out[t.s]
			o := servers[t.s].Options[t.opt]
			units := max(o.Units, 1)
			if a.Replicas[t.opt] >= t.want || free[o.Accelerator] < units {
				continue
			}
			free[o.Accelerator] -= units
			a.Replicas[t.opt]++
			a.Chosen, a.BestEffort = t.opt, true
			a.Cost += o.Cost
			progress = true
		}
	}
}

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
