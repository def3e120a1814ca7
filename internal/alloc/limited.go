package alloc

import (
	"math"
	"sort"
)

// Policy is what limited mode does with servers it could not satisfy
// ("best-effort allocation"; docs/engine.md §4).
type Policy string

// Saturation policies.
const (
	PolicyNone               Policy = "None"               // nothing more
	PolicyPriorityExhaustive Policy = "PriorityExhaustive" // by priority, each takes what fits of its best option
	PolicyPriorityRoundRobin Policy = "PriorityRoundRobin" // one replica at a time, round-robin within each priority
	PolicyRoundRobin         Policy = "RoundRobin"         // one replica at a time, round-robin across all
)

// Server is one model competing for accelerators in limited mode.
type Server struct {
	Name     string
	Priority int // 1 is the highest
	Demand   float64
	Options  []Option
}

// Assignment is limited mode's answer for one server.
type Assignment struct {
	Replicas []int // per option
	// Chosen is the option that carries the demand, -1 if none.
	Chosen int
	// Satisfied is true when the demand is covered; BestEffort when the
	// saturation policy gave the server what was left.
	Satisfied  bool
	BestEffort bool
	Cost       float64
}

// candidate is one way to satisfy a server: option Chosen carries the
// demand, every other option stays at its minimum.
type candidate struct {
	replicas []int
	chosen   int
	units    map[string]int
	cost     float64
	value    float64 // cost + transition penalty (TransitionPenalty)
}

// Limited allocates under a per-type inventory with the priority greedy of
// the WVA optimizer (docs/engine.md §4, limited mode): every server's candidates sorted by value
// (cost plus transition penalty); servers taken by priority, then by regret
// (the value lost by falling back to the next candidate: largest first, as in
// the reference optimizer's code; its written description says "lowest delta"); a
// server whose candidate does not fit moves to its next candidate and is
// re-inserted. Servers left unsatisfied get the saturation policy.
// phi is the accelerator-change factor of the transition penalty.
func Limited(servers []Server, inventory map[string]int, policy Policy, phi float64) []Assignment {
	free := make(map[string]int, len(inventory))
	for k, v := range inventory {
		free[k] = v
	}
	out := make([]Assignment, len(servers))
	type entry struct {
		s     int
		cands []candidate
		cur   int
	}
	delta := func(e *entry) float64 {
		if e.cur+1 < len(e.cands) {
			return e.cands[e.cur+1].value - e.cands[e.cur].value
		}
		return math.Inf(1)
	}
	var queue []*entry
	for i, s := range servers {
		out[i] = Assignment{Chosen: -1, Replicas: make([]int, len(s.Options))}
		if c := candidates(s, phi); len(c) > 0 {
			queue = append(queue, &entry{s: i, cands: c})
		}
	}
	less := func(a, b *entry) bool {
		pa, pb := servers[a.s].Priority, servers[b.s].Priority
		if pa != pb {
			return pa < pb
		}
		if da, db := delta(a), delta(b); da != db {
			return da > db
		}
		return a.s < b.s
	}
	sort.SliceStable(queue, func(i, j int) bool { return less(queue[i], queue[j]) })
	var unsatisfied []int
	for len(queue) > 0 {
		top := queue[0]
		queue = queue[1:]
		c := top.cands[top.cur]
		if fits(free, c.units) {
			take(free, c.units)
			out[top.s] = Assignment{Replicas: c.replicas, Chosen: c.chosen, Satisfied: true, Cost: c.cost}
			continue
		}
		top.cur++
		if top.cur == len(top.cands) {
			unsatisfied = append(unsatisfied, top.s)
			continue
		}
		at := sort.Search(len(queue), func(i int) bool { return less(top, queue[i]) })
		queue = append(queue[:at], append([]*entry{top}, queue[at:]...)...)
	}
	bestEffort(servers, out, unsatisfied, free, policy, phi)
	return out
}

// candidates lists a server's allocations sorted by value.
func candidates(s Server, phi float64) []candidate {
	curCost, curAcc := currentAllocation(s.Options)
	var out []candidate
	add := func(replicas []int, chosen int) {
		c := candidate{replicas: replicas, chosen: chosen, units: map[string]int{}}
		for i, n := range replicas {
			o := s.Options[i]
			c.units[o.Accelerator] += n * max(o.Units, 1)
			c.cost += float64(n) * o.Cost
		}
		acc := ""
		if chosen >= 0 {
			acc = s.Options[chosen].Accelerator
		}
		c.value = c.cost + TransitionPenalty(curCost, c.cost, curAcc == "" || acc == "" || acc == curAcc, phi)
		out = append(out, c)
	}
	mins := func() []int {
		r := make([]int, len(s.Options))
		for i, o := range s.Options {
			r[i] = max(o.Min, 0)
		}
		return r
	}
	if s.Demand <= 0 {
		add(mins(), -1)
		return out
	}
	for i, o := range s.Options {
		if o.Capacity <= 0 {
			continue
		}
		r := mins()
		other := 0.0
		for j, n := range r {
			if j != i {
				other += float64(n) * s.Options[j].Capacity
			}
		}
		n := max(r[i], CeilCount((s.Demand-other)/o.Capacity-coverEps, o.max()+1))
		if n > o.max() {
			continue // this option alone cannot carry the demand
		}
		r[i] = n
		add(r, i)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].value < out[b].value })
	return out
}

// currentAllocation returns the cost of the server's current replicas and
// the accelerator type that carries most of them.
func currentAllocation(opts []Option) (float64, string) {
	cost, acc, most := 0.0, "", 0
	for _, o := range opts {
		cost += float64(o.Current) * o.Cost
		if o.Current > most {
			acc, most = o.Accelerator, o.Current
		}
	}
	return cost, acc
}

// TransitionPenalty (docs/engine.md §4): |C_new − C_cur| on the same
// accelerator type, plus φ·(C_cur + C_new) when the type changes.
func TransitionPenalty(curCost, newCost float64, sameAccelerator bool, phi float64) float64 {
	p := math.Abs(newCost - curCost)
	if !sameAccelerator {
		p += phi * (curCost + newCost)
	}
	return p
}

func fits(free, units map[string]int) bool {
	for k, n := range units {
		if n > free[k] {
			return false
		}
	}
	return true
}

func take(free, units map[string]int) {
	for k, n := range units {
		free[k] -= n
	}
}
