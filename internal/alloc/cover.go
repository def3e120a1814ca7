// Package alloc decides how many replicas of which variants to run:
// the cheapest mix of a model's variants that covers its demand (unlimited
// mode), the global greedy under an accelerator inventory (limited mode),
// and Greedy-by-Saturation for capacity-driven scale-ups (the WVA paper
// §IV.G). docs/engine.md §4 explains each one with its source.
// It is pure Go over plain values.
package alloc

import (
	"math"
	"slices"
	"sort"
)

// Option is one variant a model can run on.
type Option struct {
	Name        string
	Accelerator string  // accelerator type
	Units       int     // accelerators per replica (≥ 1)
	Cost        float64 // per replica
	// Capacity is the requests/s one replica serves within the SLO; 0 means
	// the variant cannot be sized and adds no capacity.
	Capacity float64
	Min, Max int // replica bounds; Max ≤ 0 means no upper bound
	Current  int
}

func (o Option) max() int {
	if o.Max <= 0 {
		return math.MaxInt32
	}
	return o.Max
}

// Cover is a replica count per option.
type Cover struct {
	Replicas []int
	Capacity float64 // Σ replicas × capacity
	Cost     float64 // Σ replicas × cost
	// Feasible is false when even every option at its maximum cannot cover
	// the demand; Replicas is then every sizable option at its maximum.
	Feasible bool
}

func (c *Cover) total(opts []Option) {
	c.Capacity, c.Cost = 0, 0
	for i, n := range c.Replicas {
		c.Capacity += float64(n) * opts[i].Capacity
		c.Cost += float64(n) * opts[i].Cost
	}
}

// coverEps forgives rounding when capacity meets demand exactly.
const coverEps = 1e-9

// CheapestCover returns the exact minimum-cost replica counts with
// Σ n_i·capacity_i ≥ demand and Min_i ≤ n_i ≤ Max_i: a small integer
// programme (a bounded covering knapsack) solved by depth-first branch and
// bound over the options in order of cost per unit of capacity, pruned by
// the linear-programming bound (the remaining demand at the best remaining
// ratio). Ties go to fewer replicas, then to the earlier option.
func CheapestCover(opts []Option, demand float64) Cover {
	opts = sane(opts)
	if !(demand <= math.MaxFloat64) { // +Inf or NaN: no fleet covers it
		return GreedyCover(opts, math.Inf(1))
	}
	base := make([]int, len(opts))
	need := demand
	for i, o := range opts {
		base[i] = max(o.Min, 0)
		need -= float64(base[i]) * o.Capacity
	}
	if need <= coverEps*math.Max(demand, 1) {
		c := Cover{Replicas: base, Feasible: true}
		c.total(opts)
		return c
	}
	order := efficiencyOrder(opts)
	s := search{opts: opts, order: order, best: math.Inf(1), cur: append([]int(nil), base...)}
	// The greedy answer is a good first incumbent.
	g := GreedyCover(opts, demand)
	if !g.Feasible {
		return g
	}
	s.best, s.bestN, s.bestReplicas = g.Cost, sum(g.Replicas), append([]int(nil), g.Replicas...)
	s.ratio = suffixBestRatio(opts, order)
	s.dfs(0, need, costOf(opts, base), demand)
	c := Cover{Replicas: s.bestReplicas, Feasible: true}
	c.total(opts)
	return c
}

type search struct {
	opts         []Option
	order        []int
	ratio        []float64 // best cost/capacity over order[k:]
	cur          []int
	best         float64
	bestN        int
	bestReplicas []int
}

func (s *search) dfs(k int, need, cost, demand float64) {
	if need <= coverEps*math.Max(demand, 1) {
		if n := sum(s.cur); cost < s.best-1e-12 || (math.Abs(cost-s.best) <= 1e-12 && n < s.bestN) {
			s.best, s.bestN, s.bestReplicas = cost, n, append(s.bestReplicas[:0], s.cur...)
		}
		return
	}
	if k == len(s.order) || cost+need*s.ratio[k] > s.best+1e-12 {
		return
	}
	i := s.order[k]
	o := s.opts[i]
	if o.Capacity <= 0 {
		s.dfs(k+1, need, cost, demand)
		return
	}
	room := o.max() - s.cur[i]
	most := CeilCount(need/o.Capacity-coverEps, room)
	// The bound cost + x·c_i + (need − x·cap_i)·ratio[k+1] does not fall as
	// x falls (option i is the most efficient from k on), so once it
	// exceeds the incumbent no smaller x can do better: the loop visits
	// only the counts near the optimum, however large the demand.
	slope := o.Cost - o.Capacity*s.ratio[k+1]
	for x := most; x >= 0; x-- {
		if k+1 < len(s.order) && !math.IsInf(s.ratio[k+1], 1) && slope <= 0 &&
			cost+float64(x)*o.Cost+(need-float64(x)*o.Capacity)*s.ratio[k+1] > s.best+1e-12 {
			break
		}
		s.cur[i] += x
		s.dfs(k+1, need-float64(x)*o.Capacity, cost+float64(x)*o.Cost, demand)
		s.cur[i] -= x
	}
}

// GreedyCover is the cost-aware greedy of the WVA optimizer (cheapest
// capacity first, as in the WVA saturation guide): from
// every option at its minimum, add one replica at a time to the option with
// the lowest cost per unit of capacity that is below its maximum, until the
// demand is covered.
func GreedyCover(opts []Option, demand float64) Cover {
	opts = sane(opts)
	c := Cover{Replicas: make([]int, len(opts))}
	for i, o := range opts {
		c.Replicas[i] = max(o.Min, 0)
	}
	c.total(opts)
	for _, i := range efficiencyOrder(opts) {
		o := opts[i]
		if o.Capacity <= 0 {
			continue
		}
		for c.Capacity < demand*(1-coverEps) && c.Replicas[i] < o.max() {
			add := CeilCount((demand-c.Capacity)/o.Capacity-coverEps, o.max()-c.Replicas[i])
			add = max(add, 1)
			c.Replicas[i] += add
			c.Capacity += float64(add) * o.Capacity
			c.Cost += float64(add) * o.Cost
		}
	}
	c.Feasible = c.Capacity >= demand*(1-coverEps)
	return c
}

// sane returns the options with every one whose cost is not a finite
// non-negative number, or whose capacity is NaN, made unusable (capacity
// 0: it keeps its minimum and adds nothing), so that the searches' bounds
// hold; the engine validates costs, this guards other callers.
func sane(opts []Option) []Option {
	costOK := func(o Option) bool { return o.Cost >= 0 && o.Cost <= math.MaxFloat64 }
	bad := func(o Option) bool { return !costOK(o) || math.IsNaN(o.Capacity) }
	if !slices.ContainsFunc(opts, bad) {
		return opts
	}
	out := slices.Clone(opts)
	for i, o := range out {
		if bad(o) {
			out[i].Capacity = 0
		}
		if !costOK(o) {
			out[i].Cost = math.MaxFloat64
		}
	}
	return out
}

// CeilCount is ⌈x⌉ as a replica count, at least 0 and at most limit: a
// demand beyond any fleet (or an infinite or NaN one) reads as the limit
// instead of overflowing the conversion to int.
func CeilCount(x float64, limit int) int {
	if !(x < float64(limit)) { // also NaN
		return limit
	}
	return max(int(math.Ceil(x)), 0)
}

// efficiencyOrder sorts option indices by cost per unit of capacity (the
// options that add no capacity last), then by index.
func efficiencyOrder(opts []Option) []int {
	idx := make([]int, len(opts))
	for i := range idx {
		idx[i] = i
	}
	ratio := func(o Option) float64 {
		if o.Capacity <= 0 {
			return math.Inf(1)
		}
		return o.Cost / o.Capacity
	}
	sort.SliceStable(idx, func(a, b int) bool { return ratio(opts[idx[a]]) < ratio(opts[idx[b]]) })
	return idx
}

func suffixBestRatio(opts []Option, order []int) []float64 {
	r := make([]float64, len(order)+1)
	r[len(order)] = math.Inf(1)
	for k := len(order) - 1; k >= 0; k-- {
		o := opts[order[k]]
		x := math.Inf(1)
		if o.Capacity > 0 {
			x = o.Cost / o.Capacity
		}
		r[k] = math.Min(r[k+1], x)
	}
	return r
}

func costOf(opts []Option, n []int) float64 {
	c := 0.0
	for i, x := range n {
		c += float64(x) * opts[i].Cost
	}
	return c
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}
