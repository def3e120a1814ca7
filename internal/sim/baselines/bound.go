package baselines

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/capmodel"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// The bounds' allocation: per model, the cheapest replicas whose measured
// capacity covers a demand, and with an inventory the cheapest choice for
// all models together that fits it. A model's capacity is the sum of its
// variants' (each measured alone; the router pools them, so a mix carries
// a little more). The search is exact: every fewest-replica mix of a
// model's variants that covers its demand, then, where an inventory
// limits an accelerator type, a dynamic program over the models on the
// accelerators used. When the inventory cannot cover every model's demand,
// each model gets the same, largest, share of its demand that fits.

const (
	// maxPlans bounds the mixes listed per model; maxStates the dynamic
	// program's states (beyond, it takes each model's cheapest mix that
	// fits what is left, in order); maxVisits the mixes looked at per
	// model.
	maxPlans  = 20_000
	maxVisits = 1 << 20
	maxStates = 1 << 20
	// shareBisections: steps of the search for the share of demand an
	// inventory allows.
	shareBisections = 10
)

// bound holds a scenario's capacity curves for the bounds.
type bound struct {
	sc     *scenario.Scenario
	curves [][]*capmodel.Curve // per model, per variant
	// limited are the inventory's types some variant uses, sorted.
	limited []string
}

func newBound(sc *scenario.Scenario) *bound {
	b := &bound{sc: sc}
	used := map[string]bool{}
	for m, mod := range sc.Models {
		cs := make([]*capmodel.Curve, 0, len(mod.Variants))
		for j, v := range mod.Variants {
			cs = append(cs, capmodel.NewCurve(sc, m, j, sc.Autoscalers.ClairvoyantAttainment, v.MaxReplicas))
			if _, ok := sc.Inventory[v.Accelerator]; ok {
				used[v.Accelerator] = true
			}
		}
		b.curves = append(b.curves, cs)
	}
	b.limited = slices.Sorted(maps.Keys(used))
	return b
}

// plan is one model's mix: replicas per variant, its cost per hour and
// the limited accelerators it holds (indexed as bound.limited).
type plan struct {
	counts []int
	cost   float64
	use    []int
}

// provision returns the replicas per view variant for each model's peak
// true rate over the next ahead(model) seconds, times 1 + margin.
func (b *bound) provision(v *sim.View, ahead func(model int) float64, margin float64) []int {
	ctx := v.Context()
	for _, cs := range b.curves {
		for _, c := range cs {
			c.WithContext(ctx)
		}
	}
	demand := make([]float64, len(b.sc.Models))
	for m, mod := range b.sc.Models {
		demand[m] = peakRate(mod.Workload, v.Now, v.Now+ahead(m)) * (1 + margin)
	}
	chosen, ok := b.choose(demand, 1)
	if !ok {
		lo, hi := 0.0, 1.0
		chosen, _ = b.choose(demand, 0)
		for range shareBisections {
			mid := (lo + hi) / 2
			if c, ok := b.choose(demand, mid); ok {
				lo, chosen = mid, c
			} else {
				hi = mid
			}
		}
	}
	out := make([]int, len(v.Variants))
	next := make([]int, len(b.sc.Models))
	for i, vv := range v.Variants {
		if c := chosen[vv.Model]; c != nil {
			out[i] = c.counts[next[vv.Model]]
		}
		next[vv.Model]++
	}
	return out
}

// choose picks one plan per model covering share × demand, the cheapest
// together within the inventory; ok is false when none fits. A model whose
// variants cannot carry its demand even at their maxima gets them all at
// their maxima: only the inventory makes the models share.
func (b *bound) choose(demand []float64, share float64) ([]*plan, bool) {
	all := make([][]plan, len(demand))
	for m := range demand {
		all[m] = b.plans(m, share*demand[m])
		if len(all[m]) == 0 {
			counts := make([]int, len(b.sc.Models[m].Variants))
			for j, v := range b.sc.Models[m].Variants {
				counts[j] = v.MaxReplicas
			}
			all[m] = []plan{b.planOf(m, counts)}
		}
	}
	if len(b.limited) == 0 {
		out := make([]*plan, len(demand))
		for m := range all {
			out[m] = cheapestPlan(all[m])
		}
		return out, true
	}
	return b.fit(all)
}

func cheapestPlan(ps []plan) *plan {
	best := &ps[0]
	for i := range ps {
		if ps[i].cost < best.cost {
			best = &ps[i]
		}
	}
	return best
}

// plans lists model m's mixes that cover demand with the fewest replicas
// of its last variant for the others' counts (each variant at least its
// minimum, at most its maximum).
func (b *bound) plans(m int, demand float64) []plan {
	cs := b.curves[m]
	vs := b.sc.Models[m].Variants
	var out []plan
	counts := make([]int, len(cs))
	visits := 0
	var walk func(k int, left float64)
	walk = func(k int, left float64) {
		if visits++; len(out) >= maxPlans || visits > maxVisits {
			return
		}
		lo := vs[k].MinReplicas
		if k == len(cs)-1 {
			n, ok := cs[k].Fewest(lo, left)
			if !ok {
				return
			}
			counts[k] = n
			out = append(out, b.planOf(m, counts))
			return
		}
		// More of this variant than it needs alone is never cheaper.
		top, _ := cs[k].Fewest(lo, left)
		for n := lo; n <= top; n++ {
			counts[k] = n
			walk(k+1, left-cs[k].At(n))
		}
	}
	walk(0, demand)
	return out
}

func (b *bound) planOf(m int, counts []int) plan {
	p := plan{counts: slices.Clone(counts), use: make([]int, len(b.limited))}
	for j, v := range b.sc.Models[m].Variants {
		p.cost += float64(counts[j]) * v.Cost
		if t, ok := slices.BinarySearch(b.limited, v.Accelerator); ok {
			p.use[t] += counts[j] * v.AcceleratorsPerReplica
		}
	}
	return p
}

// fit is the dynamic program over the models: states are the limited
// accelerators held so far, each with its cheapest history.
func (b *bound) fit(all [][]plan) ([]*plan, bool) {
	type state struct {
		use   []int
		cost  float64
		picks []*plan
	}
	inv := make([]int, len(b.limited))
	for t, acc := range b.limited {
		inv[t] = b.sc.Inventory[acc]
	}
	states := map[string]*state{"": {use: make([]int, len(inv))}}
	for m := range all {
		next := map[string]*state{}
		for _, key := range slices.Sorted(maps.Keys(states)) {
			st := states[key]
			for i := range all[m] {
				p := &all[m][i]
				use, fits := addUse(st.use, p.use, inv)
				if !fits {
					continue
				}
				k := useKey(use)
				if cur, ok := next[k]; ok && cur.cost <= st.cost+p.cost {
					continue
				}
				next[k] = &state{use: use, cost: st.cost + p.cost, picks: append(slices.Clip(st.picks), p)}
				if len(next) > maxStates {
					return b.greedy(all, inv)
				}
			}
		}
		if len(next) == 0 {
			return make([]*plan, len(all)), false
		}
		states = next
	}
	var best *state
	for _, key := range slices.Sorted(maps.Keys(states)) {
		if st := states[key]; best == nil || st.cost < best.cost {
			best = st
		}
	}
	return best.picks, true
}

// greedy takes, model by model, the cheapest plan that fits what is left.
func (b *bound) greedy(all [][]plan, inv []int) ([]*plan, bool) {
	out := make([]*plan, len(all))
	use := make([]int, len(inv))
	for m, ps := range all {
		for i := range ps {
			if _, fits := addUse(use, ps[i].use, inv); fits && (out[m] == nil || ps[i].cost < out[m].cost) {
				out[m] = &ps[i]
			}
		}
		if out[m] == nil {
			return out, false
		}
		use, _ = addUse(use, out[m].use, inv)
	}
	return out, true
}

// addUse adds a plan's accelerators to a state's; fits is false beyond
// the inventory.
func addUse(a, p, inv []int) ([]int, bool) {
	out := make([]int, len(a))
	for t := range a {
		out[t] = a[t] + p[t]
		if out[t] > inv[t] {
			return nil, false
		}
	}
	return out, true
}

// useKey is a state's key: the accelerators held, each in 4 bytes (an
// inventory holds at most 2^30 of a type).
func useKey(use []int) string {
	b := make([]byte, 0, 4*len(use))
	for _, u := range use {
		b = binary.BigEndian.AppendUint32(b, uint32(min(max(u, 0), math.MaxInt32)))
	}
	return string(b)
}
