package engine

import (
	"math"
	"sort"

	"github.com/llm-d-incubation/wva/internal/alloc"
)

// forecast raises the demand the allocator covers to the q-quantile of the
// model's arrival-rate forecast over its provisioning horizon: the longest
// time any of its variants takes from scale-up to Ready, plus one cycle. A
// replica ordered now serves from then on, so it is sized for the load
// expected then, with a margin for the forecast's error. An idle model is
// not forecast (scale to zero is decided on observed idleness). A declared
// surge (surgeRatio) then raises it further (surge).
func (c *cycle) forecast(ms *modelState) {
	ms.planned = ms.demand
	if ms.demand == 0 {
		return
	}
	f := c.e.state.Forecasts[ms.key]
	h := 0.0
	for _, vs := range ms.variants {
		h = math.Max(h, c.provisioning(vs))
	}
	if c.cfg.DisableForecast || f == nil {
		c.surge(ms, h)
		return
	}
	h += f.StepSeconds
	// q from the configuration, else from the model's attainment target;
	// above the default target the window keeps the spare (SpareHeld).
	q := c.cfg.SpareQuantile
	if q == 0 {
		q = SpareQuantileFor(ms.attainment)
	}
	mean, upper := f.quantile(h, q)
	if ms.provisional && f.Updates >= 2 {
		// A provisional target may only add replicas, and they stay
		// through the scale-down window: plan for the level and the
		// forecast's error, not its trend, which in a warm-up is mostly
		// the climb from no traffic to the first rate.
		level := math.Max(f.Level, 0)
		upper, mean = level+(upper-mean), level
	}
	ms.horizon, ms.forecastMean = h, mean
	ms.planned = math.Max(ms.demand, upper)
	ms.sum.PlannedRPS, ms.sum.HorizonSeconds = ms.planned, h
	ms.sum.SpareQuantile, ms.sum.SpareHeld = q, SpareHeld(ms.attainment)
	c.surge(ms, h)
}

// surge raises the planned rate to the model's declared surge: surgeRatio
// r times the demand measured now, the rise the user says the demand may
// make within one provisioning horizon h, faster than any replica ordered
// when it starts could be ready. The fleet holds the capacity for it the
// way it holds the forecast's spare (the replicas count as spare: they
// leave as soon as the demand falls, kept by the scale-down window only
// above the default attainment target), and the plan prices it. r = 1 (the
// default) declares no surge.
func (c *cycle) surge(ms *modelState, h float64) {
	if ms.surgeRatio <= 1 || ms.demand <= 0 {
		return
	}
	ms.sum.SurgeRatio = ms.surgeRatio
	s := ms.surgeRatio * ms.demand
	if s <= ms.planned {
		return
	}
	ms.planned, ms.surged, ms.horizon = s, true, h
	ms.sum.PlannedRPS, ms.sum.HorizonSeconds = ms.planned, h
	ms.sum.SpareHeld = SpareHeld(ms.attainment)
}

// drainAll runs the drain planner for every model: in parallel in
// unlimited mode; in limited mode one model after another, by priority,
// each taking its transient replicas out of the inventory the global
// allocation left free, so that no model's drain takes what a model of
// higher priority was allocated.
func (c *cycle) drainAll() {
	if c.free == nil {
		c.parallel(c.drain)
		return
	}
	order := make([]*modelState, len(c.models))
	copy(order, c.models)
	sort.SliceStable(order, func(i, j int) bool {
		return c.priority(order[i].m) < c.priority(order[j].m)
	})
	for _, ms := range order {
		c.drain(ms)
	}
}

// drain plans for the backlog (requests waiting in the replicas' queues and
// at the gateway) instead of counting it as demand. The steady fleet is
// sized from the arrival rate; the backlog needs extra replicas only when
// that fleet cannot clear it in time. Over the provisioning horizon H the
// backlog grows by the arrival rate λ less what the ready replicas serve at
// full batches (M₀); from then on it drains at what the target fleet serves
// beyond λ (M₁ − λ). If that does not clear it within another H, a
// transient addition of the replicas with the lowest cost per request/s
// makes up the difference. It is not part of the scale-down window's
// record, so it goes as soon as the backlog has drained. In limited mode
// the addition comes out of the free inventory (see drainAll).
func (c *cycle) drain(ms *modelState) {
	if !plansBacklog(c.mode, ms) {
		return
	}
	backlog := ms.m.GatewayWaitingRequests
	var m0, m1, h float64
	var best *variantState
	for _, vs := range ms.variants {
		h = math.Max(h, c.provisioning(vs))
		if vs.held || vs.maxRate <= 0 {
			continue
		}
		for _, p := range vs.pods {
			backlog += p.WaitingRequests
		}
		m0 += float64(vs.v.ReadyReplicas) * vs.maxRate
		m1 += float64(vs.modelTarget) * vs.maxRate
		if c.drainRoom(vs) > 0 && (best == nil || vs.v.cost()/vs.maxRate < best.v.cost()/best.maxRate) {
			best = vs
		}
	}
	if backlog == 0 || h <= 0 || best == nil {
		return
	}
	lambda := ms.demand
	atH, need := drainNeed(backlog, lambda, m0, m1, h)
	if need <= 0 {
		return
	}
	k := alloc.CeilCount(need/best.maxRate, c.drainRoom(best))
	best.modelTarget += k
	best.transient = k
	if c.free != nil {
		c.free[best.v.Accelerator] -= k * best.v.acceleratorsPerReplica()
	}
	best.note("drain: %.0f request(s) waiting, %.0f expected in %.0f s; +%d to clear them within another %.0f s",
		backlog, atH, h, k, h)
}

// drainNeed is the drain rule shared by the drain planner and the
// saturation analyzer: a backlog B, arriving λ, M₀ requests/s served by
// the ready replicas and M₁ by the target fleet, over a horizon H. It
// returns the backlog expected at H, B_H = max(B + (λ − M₀)·H, 0), and the
// requests/s to add so that the fleet clears it within another H,
// B_H/H − (M₁ − λ) (none where that is not positive).
func drainNeed(backlog, lambda, m0, m1, h float64) (atH, need float64) {
	atH = math.Max(backlog+(lambda-m0)*h, 0)
	return atH, atH/h - (m1 - lambda)
}

// drainRoom is how many replicas the drain planner may add to a variant:
// up to its maximum and, in limited mode, within the free inventory.
func (c *cycle) drainRoom(vs *variantState) int {
	room := vs.v.maxReplicas() - vs.modelTarget
	if c.free != nil {
		room = min(room, max(c.free[vs.v.Accelerator], 0)/vs.v.acceleratorsPerReplica())
	}
	return room
}

// plansBacklog says whether the drain planner owns the model's backlog this
// cycle: where the model analysis sized it (hybrid or model-only mode) and
// there is demand. There the saturation analyzer judges KV usage only;
// elsewhere its queue trigger is what sizes for the requests waiting. One
// predicate for both, so that the backlog always has exactly one planner.
func plansBacklog(mode Mode, ms *modelState) bool {
	return mode != ModeCapacityOnly && ms.modelOK && !ms.provisional && ms.demand > 0
}

// pickVictims names, for each variant the plan scales down, the pods to
// remove: starting pods go first anyway (the ReplicaSet deletes pods that
// are not ready before ready ones), then the least-loaded ready pods, never
// a saturated one. The actuator marks them with a low
// controller.kubernetes.io/pod-deletion-cost before lowering the replica
// count, so that the requests in flight on busy pods are not cut.
func (c *cycle) pickVictims(ms *modelState) {
	for _, vs := range ms.variants {
		k := vs.v.CurrentReplicas - vs.target - vs.v.pending()
		if k <= 0 || vs.held {
			continue
		}
		var cands []*Pod
		for _, p := range vs.pods {
			if !ms.satCfg.saturates(p.KVCacheUsage, p.WaitingRequests) {
				cands = append(cands, p)
			}
		}
		sort.SliceStable(cands, func(i, j int) bool {
			a, b := cands[i], cands[j]
			if la, lb := a.RunningRequests+a.WaitingRequests, b.RunningRequests+b.WaitingRequests; la != lb {
				return la < lb
			}
			if a.KVCacheUsage != b.KVCacheUsage {
				return a.KVCacheUsage < b.KVCacheUsage
			}
			return a.Name < b.Name
		})
		for _, p := range cands[:min(k, len(cands))] {
			vs.victims = append(vs.victims, p.Name)
		}
	}
}
