package engine

import (
	"math"
	"sort"
	"strings"

	"github.com/llm-d-incubation/wva/internal/alloc"
)

// options describes a model's variants to the allocator. A variant that
// could not be sized (or whose metrics are held) keeps its current replicas
// and adds no capacity: the allocator covers the demand with the others.
func (c *cycle) options(ms *modelState) []alloc.Option {
	opts := make([]alloc.Option, len(ms.variants))
	for i, vs := range ms.variants {
		v := vs.v
		o := alloc.Option{Name: v.Name, Accelerator: v.Accelerator, Units: v.acceleratorsPerReplica(), Cost: v.cost(),
			Capacity: vs.capacity, Min: v.minReplicas(), Max: v.MaxReplicas, Current: v.CurrentReplicas}
		if vs.held || (vs.detail != nil && vs.detail.Error != "") {
			// The solvers never add replicas to an option without capacity,
			// so Min pins it at its current count.
			o.Capacity, o.Min = 0, v.CurrentReplicas
		}
		opts[i] = o
	}
	return opts
}

// demandOf is the demand the allocator must cover: the observed arrival
// rate raised to the forecast's quantile (see forecast), at least the TPS
// floor (docs/queueing.md §3).
func (ms *modelState) demandOf() float64 {
	return math.Max(math.Max(ms.demand, ms.planned), ms.tpsFloor)
}

// allocate turns capacities into model targets: per model in unlimited mode
// (docs/engine.md §4), globally under the inventory in limited mode.
func (c *cycle) allocate() {
	if c.s.Optimizer == OptimizerLimited {
		c.allocateLimited()
		return
	}
	for _, ms := range c.models {
		if !ms.modelOK {
			continue
		}
		opts := c.options(ms)
		coverOf := func(d float64) alloc.Cover {
			if c.cfg.AllocationAlgorithm == "greedy" {
				return alloc.GreedyCover(opts, d)
			}
			return alloc.CheapestCover(opts, d)
		}
		cover := coverOf(ms.demandOf())
		steady := cover
		// The same cover without the forecast's spare: the difference is
		// the spare, released as soon as the forecast drops (unless the
		// window keeps it, SpareHeld).
		if d := math.Max(ms.demand, ms.tpsFloor); d < ms.demandOf() {
			steady = coverOf(d)
		}
		for i, vs := range ms.variants {
			vs.modelTarget = cover.Replicas[i]
			vs.spare = max(cover.Replicas[i]-steady.Replicas[i], 0)
		}
		if !cover.Feasible {
			ms.sum.ModelError = "the demand exceeds what every variant at its maximum can serve within the SLO"
		}
	}
}

// allocateLimited runs limited mode's global greedy (docs/engine.md §4) over every model
// whose analysis succeeded, under the inventory that the other models'
// current replicas leave free.
func (c *cycle) allocateLimited() {
	free := map[string]int{}
	for k, n := range c.s.Inventory {
		free[k] = n
	}
	var servers []alloc.Server
	var who []*modelState
	for _, ms := range c.models {
		if !ms.modelOK {
			for _, vs := range ms.variants {
				free[vs.v.Accelerator] -= vs.v.CurrentReplicas * vs.v.acceleratorsPerReplica()
			}
			continue
		}
		servers = append(servers, alloc.Server{Name: ms.key, Priority: c.priority(ms.m), Demand: ms.demandOf(),
			Options: c.options(ms)})
		who = append(who, ms)
	}
	for k, n := range free {
		free[k] = max(n, 0)
	}
	res := alloc.Limited(servers, free, alloc.Policy(c.cfg.SaturationPolicy), c.cfg.AcceleratorPenaltyFactor)
	for i, ms := range who {
		a := res[i]
		for j, vs := range ms.variants {
			vs.modelTarget = a.Replicas[j]
			free[vs.v.Accelerator] -= vs.modelTarget * vs.v.acceleratorsPerReplica()
			if len(a.MovedOff) > 0 {
				vs.note("limited mode: the model moved off %s to make room for other models (%+.3g cost)", strings.Join(a.MovedOff, ", "), a.ExtraCost)
			}
		}
		ms.limitedSpare()
		switch {
		case a.BeyondMax:
			ms.sum.ModelError = "the demand exceeds what every variant at its maximum can serve within the SLO"
		case a.BestEffort:
			ms.sum.ModelError = "inventory too small for the SLO; got a best-effort share (" + c.cfg.SaturationPolicy + ")"
		case !a.Satisfied:
			ms.sum.ModelError = "inventory too small for the SLO; keeps at most the replicas it runs (saturation policy None)"
		}
	}
	c.free = free
}

// priority is the model's priority: its own, else its service class's,
// else 1.
func (c *cycle) priority(m *Model) int {
	if m.Priority > 0 {
		return m.Priority
	}
	if sc, ok := c.s.ServiceClasses[m.ServiceClass]; ok {
		return sc.Priority
	}
	return 1
}

// limitedSpare marks, in limited mode, the replicas of a model's
// allocation that only the forecast's spare needs: the allocation's
// replicas of the highest cost per unit of capacity that the model's
// current demand (with its TPS floor) can do without. As in unlimited mode
// they are its spare, which the scale-down window does not keep unless the
// target is above the default (SpareHeld). The allocator's choice of
// variants stands; only the count above the steady need is marked.
func (ms *modelState) limitedSpare() {
	need := math.Max(ms.demand, ms.tpsFloor)
	if need >= ms.demandOf() {
		return
	}
	supply := 0.0
	order := make([]*variantState, 0, len(ms.variants))
	for _, vs := range ms.variants {
		vs.spare = 0
		if vs.capacity > 0 && !vs.held {
			supply += float64(vs.modelTarget) * vs.capacity
			order = append(order, vs)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		return order[i].v.cost()/order[i].capacity > order[j].v.cost()/order[j].capacity
	})
	for _, vs := range order {
		for vs.modelTarget-vs.spare > vs.v.minReplicas() && supply-vs.capacity >= need {
			vs.spare++
			supply -= vs.capacity
		}
	}
}
