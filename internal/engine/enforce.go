package engine

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llm-d-incubation/wva/internal/alloc"
	"github.com/llm-d-incubation/wva/internal/queueing"
)

// enforce applies, in order: holds on bad metrics, scale to and from zero,
// min/max, the per-cycle scale-up limit, the inventory (limited mode), and
// the scale-down stabilisation window.
func (c *cycle) enforce() {
	for _, vs := range c.all {
		c.hold(vs)
	}
	for _, ms := range c.models {
		c.zero(ms)
	}
	for _, vs := range c.all {
		c.clamp(vs)
		c.limitScaleUp(vs)
	}
	if c.s.Optimizer == OptimizerLimited && c.mode != ModeModelOnly {
		c.inventory()
	}
	if c.s.Optimizer == OptimizerLimited { // elsewhere nil: nothing waits
		c.waiting = c.waitingUnits()
	}
	for _, vs := range c.all {
		vs.preWindow = vs.target
		c.stabilize(vs)
		if !vs.held {
			c.e.state.LastGood[vs.key] = vs.target
		}
		if vs.hints != (queueing.Hints{}) {
			c.e.state.Sizing[vs.key] = vs.hints
		}
	}
}

// hold keeps a variant whose metrics are missing, stale or non-finite at
// its last good decision (or its current count) and says so (the
// MetricsAvailable gate of the WVA paper §IV.H; docs/engine.md §5).
func (c *cycle) hold(vs *variantState) {
	if !vs.held {
		return
	}
	vs.target = vs.v.CurrentReplicas
	if last, ok := c.e.state.LastGood[vs.key]; ok {
		vs.target = last
	}
	vs.reason = ReasonHoldMetrics
	vs.notes = []string{"holding " + strconv.Itoa(vs.target) + ": " + vs.holdWhy}
}

// zero handles scale to zero (minReplicas 0 and no request for the
// retention period) and scale from zero (requests for a model with no
// replica).
func (c *cycle) zero(ms *modelState) {
	busy := ms.demand > 0 || ms.m.GatewayWaitingRequests > 0
	idle := c.idleFor(ms, busy)
	ms.idleSeconds = idle
	current, target := 0, 0
	for _, vs := range ms.variants {
		current += vs.v.CurrentReplicas
		target += vs.target
	}
	switch {
	case current == 0 && target == 0 && busy:
		if vs := cheapest(ms.variants); vs != nil {
			vs.target, vs.reason = 1, ReasonScaleFromZero
			vs.note("scale from zero: %.0f request(s) waiting at the gateway, %.3g rps arriving", ms.m.GatewayWaitingRequests, ms.demand)
		}
	case busy:
	case idle >= c.cfg.ScaleToZeroRetentionSeconds:
		c.scaleToZero(ms, idle)
	case target == 0 && current > 0:
		c.retainOne(ms, idle)
	}
}

// scaleToZero takes every variant that allows it (minReplicas 0, not
// held) to zero after idle seconds without a request.
func (c *cycle) scaleToZero(ms *modelState, idle float64) {
	for _, vs := range ms.variants {
		if vs.v.minReplicas() == 0 && !vs.held && vs.target != 0 {
			vs.target, vs.reason = 0, ReasonScaleToZero
			vs.note("scale to zero: no request for %.0f s (retention %.0f s)", idle, c.cfg.ScaleToZeroRetentionSeconds)
		}
	}
}

// retainOne keeps one replica of the cheapest running variant of a model
// idle, but not for long enough to scale to zero.
func (c *cycle) retainOne(ms *modelState, idle float64) {
	var running []*variantState
	for _, vs := range ms.variants {
		if vs.v.CurrentReplicas > 0 {
			running = append(running, vs)
		}
	}
	if vs := cheapest(running); vs != nil {
		vs.target, vs.reason = 1, ReasonIdleRetention
		vs.note("idle for %.0f s, below the %.0f s retention before scale to zero", idle, c.cfg.ScaleToZeroRetentionSeconds)
	}
}

// idleFor returns how long the model has seen no request, recording now as
// the last traffic when it is busy. Without history (and no idleSeconds in
// the snapshot) the model counts as just seen: it never scales to zero on
// the first cycle it is observed.
func (c *cycle) idleFor(ms *modelState, busy bool) float64 {
	st := c.e.state.LastTraffic
	switch {
	case busy:
		st[ms.key] = c.now
	case ms.m.IdleSeconds != nil:
		st[ms.key] = c.now.Add(-secondsDuration(*ms.m.IdleSeconds))
	default:
		if _, ok := st[ms.key]; !ok {
			st[ms.key] = c.now
		}
	}
	return math.Max(c.now.Sub(st[ms.key]).Seconds(), 0)
}

// cheapest is the variant a model wakes on, or keeps while idle: the
// lowest cost per replica, then the name, among those allowed a replica.
func cheapest(vss []*variantState) *variantState {
	var best *variantState
	for _, vs := range vss {
		if vs.held || vs.v.maxReplicas() < 1 {
			continue
		}
		if best == nil || cheaper(vs.v, best.v) {
			best = vs
		}
	}
	return best
}

func cheaper(a, b *Variant) bool {
	return a.cost() < b.cost() || (a.cost() == b.cost() && a.Name < b.Name)
}

func (c *cycle) clamp(vs *variantState) {
	if lo := vs.v.minReplicas(); vs.target < lo {
		vs.note("raised from %d to minReplicas %d", vs.target, lo)
		vs.target, vs.reason = lo, ReasonMinReplicas
	}
	if hi := vs.v.maxReplicas(); vs.target > hi {
		vs.note("capped from %d at maxReplicas %d", vs.target, hi)
		vs.target, vs.reason = hi, ReasonMaxReplicas
	}
}

// limitScaleUp bounds one cycle's scale-up to max(current × factor,
// current + replicas), never below minReplicas: a legitimate step takes a
// cycle or two more at most, and no metric, however wrong, orders
// thousands of replicas at once.
func (c *cycle) limitScaleUp(vs *variantState) {
	cur := vs.v.CurrentReplicas
	if vs.target <= cur {
		return
	}
	f, n := c.cfg.ScaleUpLimitFactor, c.cfg.ScaleUpLimitReplicas
	if vs.v.ScaleUpLimitFactor > 0 {
		f = vs.v.ScaleUpLimitFactor
	}
	if vs.v.ScaleUpLimitReplicas > 0 {
		n = vs.v.ScaleUpLimitReplicas
	}
	limit := max(cur+n, vs.v.minReplicas())
	if byFactor := float64(cur) * f; byFactor > float64(limit) {
		limit = int(math.Min(byFactor, float64(vs.v.maxReplicas())))
	}
	if vs.target > limit {
		vs.note("scale-up limited from %d to %d this cycle (at most ×%g or +%d per cycle)", vs.target, limit, f, n)
		vs.target, vs.reason = limit, ReasonScaleUpLimited
	}
}

// inventory trims capacity-driven scale-ups to the accelerators left free
// with Greedy-by-Saturation (the WVA paper §IV.G): least spare capacity first,
// then the cheapest.
func (c *cycle) inventory() {
	free := map[string]int{}
	for k, n := range c.s.Inventory {
		free[k] = n
	}
	var ups []*variantState
	for _, vs := range c.all {
		free[vs.v.Accelerator] -= min(vs.target, vs.v.CurrentReplicas) * vs.v.acceleratorsPerReplica()
		if vs.target > vs.v.CurrentReplicas && vs.reason != ReasonMinReplicas {
			ups = append(ups, vs)
		}
	}
	reqs := make([]alloc.Request, len(ups))
	for i, vs := range ups {
		spare := math.Inf(1)
		if vs.sat != nil && vs.sat.unit != nil {
			spare = math.Min(vs.sat.d.AvgSpareKV/vs.sat.cfg.KVCacheThreshold, vs.sat.d.AvgSpareQueue/vs.sat.cfg.QueueLengthThreshold)
		}
		reqs[i] = alloc.Request{Accelerator: vs.v.Accelerator, Units: vs.v.acceleratorsPerReplica(),
			Want: vs.target - vs.v.CurrentReplicas, Spare: spare, Cost: vs.v.cost(), Name: vs.key}
	}
	for k, n := range free {
		free[k] = max(n, 0)
	}
	granted := alloc.BySaturation(reqs, free)
	for i, vs := range ups {
		if granted[i] < reqs[i].Want {
			vs.note("inventory: %d of %d more replica(s) fit on free %s", granted[i], reqs[i].Want, vs.v.Accelerator)
			vs.target, vs.reason = vs.v.CurrentReplicas+granted[i], ReasonInventoryLimited
		}
	}
}

// secondsDuration converts seconds to a time.Duration, at most
// maxDurationSeconds (about 31 years): a snapshot's idleSeconds is only
// bounded as a finite number, and converting more than 292 years of
// nanoseconds overflows (a window or an idle spell then reads as negative).
func secondsDuration(s float64) time.Duration {
	if !(s > 0) {
		return 0 // also NaN
	}
	return time.Duration(min(s, maxDurationSeconds) * float64(time.Second))
}

const maxDurationSeconds = 1e9

// maxRecommendations bounds the recommendations a variant's scale-down
// window remembers (a 300-s window at one cycle a second).
const maxRecommendations = 300

// stabilize follows the highest recommendation of the scale-down
// stabilisation window (as the HPA's): a scale-down happens only when every
// recent cycle agreed it could.
func (c *cycle) stabilize(vs *variantState) {
	window := secondsDuration(c.cfg.ScaleDownStabilizationSeconds)
	recs := c.e.state.Recommendations[vs.key]
	keep := recs[:0]
	for _, r := range recs {
		if c.now.Sub(r.Time) < window && !r.Time.After(c.now) {
			keep = append(keep, r)
		}
	}
	keep = recordRecommendation(keep, c.now, recommendation(vs, keep))
	c.e.state.Recommendations[vs.key] = keep
	if vs.held || vs.target >= vs.v.CurrentReplicas {
		return
	}
	// The scale-to-zero retention is this scale-down's own stabilisation:
	// once the model has been idle for the whole window too, every record
	// in it is an idle cycle's hold of the retained replica, not a need.
	if vs.reason == ReasonScaleToZero && vs.model.idleSeconds >= window.Seconds() {
		return
	}
	// A model idle for a whole rate window (no request arriving, finishing
	// or waiting since its last busy cycle, idleReleaseSeconds ago or
	// more) whose pods hold nothing (no request running, no KV in use)
	// keeps one replica for the retention, and that is all the records
	// made while it was busy still stand for: the capacity they held serves
	// nothing now, and a return of traffic meets the retained replica while
	// more start, as after the retention (engine.md §5). A shorter idle
	// spell may be a cold start's first scrape, before any request reached
	// the pods.
	var idleSince time.Time
	if idle := vs.model.idleSeconds; idle >= idleReleaseSeconds && vs.model.empty() {
		idleSince = c.now.Add(-secondsDuration(idle))
	}
	highest := vs.target
	for _, r := range keep {
		rep := r.Replica
		if !idleSince.IsZero() && !r.Time.After(idleSince) {
			rep = min(rep, 1)
		}
		highest = max(highest, rep)
	}
	if stable := c.release(vs, min(highest, vs.v.CurrentReplicas)); stable > vs.target {
		vs.note("scale-down to %d deferred: a recommendation of %d within the last %.0f s", vs.target, highest, c.cfg.ScaleDownStabilizationSeconds)
		vs.target, vs.reason = stable, ReasonStabilized
	}
}

// idleReleaseSeconds is how long a model must have been idle for its
// scale-down window to hold no more than the retained replica: the
// collector's rate window (a minute).
const idleReleaseSeconds = 60

// empty says whether no pod of the model holds a request: none running,
// none waiting, no KV cache in use. A variant held for its metrics may
// hold some: not empty.
func (ms *modelState) empty() bool {
	for _, vs := range ms.variants {
		if vs.held {
			return false
		}
		for _, p := range vs.pods {
			if p.KVCacheUsage > 0 || p.RunningRequests > 0 || p.WaitingRequests > 0 {
				return false
			}
		}
	}
	return true
}

// recommendation is what this cycle records in the variant's scale-down
// window, given the window's earlier records keep: its target, less the
// forecast's spare (unless the target is above the default: SpareHeld)
// and a drain's transient replicas, which are released as soon as they
// are not needed.
func recommendation(vs *variantState, keep []Recommendation) int {
	switch vs.target {
	case vs.modelTarget:
		released := vs.spare
		if vs.model.sum.SpareHeld {
			released = 0
		}
		return max(vs.target-released-vs.transient, 0)
	case vs.capTarget:
		rec := max(vs.target-vs.capTransient, 0)
		// Before the model can size (cold start), a group waiting for its
		// replicas to start holds its size, but that is no new need: the
		// last recommendation stands, so that a backlog's transient
		// scale-up is not recorded while it starts.
		if g := vs.sat; g != nil && vs.modelTarget < 0 && g.pending > 0 && !g.d.ScaleUp && len(keep) > 0 {
			rec = min(rec, keep[len(keep)-1].Replica)
		}
		return rec
	}
	return vs.target
}

// recordRecommendation adds the recommendation rec at now to the window's
// record keep (oldest first, none after now). A second cycle at the same
// instant (a replay, a retried cycle) adds no time to the window: one
// record, the higher. Beyond maxRecommendations (bounded memory whatever
// the cycles' pace) the oldest fold into the first one kept, which holds
// their highest a little longer than they would have — never a scale-down
// before the window allows.
func recordRecommendation(keep []Recommendation, now time.Time, rec int) []Recommendation {
	if n := len(keep); n > 0 && keep[n-1].Time.Equal(now) {
		keep[n-1].Replica = max(keep[n-1].Replica, rec)
	} else {
		keep = append(keep, Recommendation{Time: now, Replica: rec})
	}
	over := len(keep) - maxRecommendations
	if over <= 0 {
		return keep
	}
	for _, r := range keep[:over] {
		keep[over].Replica = max(keep[over].Replica, r.Replica)
	}
	return append(keep[:0:0], keep[over:]...)
}

// waitingUnits is, per accelerator type, what the cycle's scale-ups need
// beyond what the running replicas leave free of the inventory (none where
// nothing scales up, even if the running replicas exceed the inventory).
func (c *cycle) waitingUnits() map[string]int {
	ups, used := map[string]int{}, map[string]int{}
	for _, vs := range c.all {
		u := vs.v.acceleratorsPerReplica()
		ups[vs.v.Accelerator] += max(vs.target-vs.v.CurrentReplicas, 0) * u
		used[vs.v.Accelerator] += vs.v.CurrentReplicas * u
	}
	waiting := map[string]int{}
	for k, up := range ups {
		if w := up - max(c.s.Inventory[k]-used[k], 0); w > 0 {
			waiting[k] = w
		}
	}
	return waiting
}

// release lets a scale-down that the window would defer go at once as far
// as another scale-up waits for its accelerators (limited mode: the
// allocator moved this model off a type another one needs) and the
// model's ready replicas that stay, of this variant and the others, carry
// its current demand. It returns the count the window still holds
// (docs/engine.md §5). A move that frees nothing anyone waits for keeps
// the window: the allocator's choice between variants can flip back with
// the planned demand, and each flip would cost a start.
func (c *cycle) release(vs *variantState, stable int) int {
	u := vs.v.acceleratorsPerReplica()
	w := c.waiting[vs.v.Accelerator]
	if w <= 0 || stable <= vs.target || vs.model == nil || vs.modelTarget < 0 || vs.target != vs.modelTarget {
		return stable
	}
	ms := vs.model
	ready := 0.0
	for _, o := range ms.variants {
		if o != vs {
			ready += float64(min(o.v.ReadyReplicas, o.target)) * o.capacity
		}
	}
	// It keeps the ready replicas that carry what the others do not.
	short := ms.demand - ready
	keep := min(vs.v.ReadyReplicas, vs.v.CurrentReplicas)
	switch {
	case short <= 0:
		keep = 0
	case vs.capacity > 0:
		keep = min(keep, alloc.CeilCount(short/vs.capacity, keep))
	}
	n := min(stable-max(keep, vs.target), (w+u-1)/u)
	if n <= 0 {
		return stable
	}
	vs.note("%d replica(s) released at once: scale-ups wait for %d %s", n, w, vs.v.Accelerator)
	c.waiting[vs.v.Accelerator] = max(w-n*u, 0)
	return stable - n
}

// plan assembles the result: the models in the snapshot's order, the
// variants by namespace, model and variant name. Validate rejects
// duplicate models and variants, so ordering the models by namespace and
// name, and each model's variants by name, gives that order without
// moving the decisions themselves.
func (c *cycle) plan() *Plan {
	p := &Plan{Time: c.now, Mode: c.mode, Usage: map[string]GPUUsed{},
		Variants: make([]VariantDecision, 0, len(c.all)), Models: make([]ModelSummary, 0, len(c.models))}
	for _, ms := range c.models {
		for _, vs := range ms.variants {
			v := vs.v
			ms.sum.CostBefore += float64(v.CurrentReplicas) * v.cost()
			ms.sum.CostAfter += float64(vs.target) * v.cost()
			ms.sum.SpareCost += float64(vs.spare) * v.cost()
			u := p.Usage[v.Accelerator]
			u.Current += v.CurrentReplicas * v.acceleratorsPerReplica()
			u.Desired += vs.target * v.acceleratorsPerReplica()
			u.Available = c.s.Inventory[v.Accelerator]
			p.Usage[v.Accelerator] = u
		}
		p.Models = append(p.Models, ms.sum)
	}
	models := slices.Clone(c.models)
	slices.SortStableFunc(models, func(a, b *modelState) int {
		return cmp.Or(strings.Compare(a.m.Namespace, b.m.Namespace), strings.Compare(a.m.ID, b.m.ID))
	})
	var vss []*variantState
	for _, ms := range models {
		vss = append(vss[:0], ms.variants...)
		slices.SortStableFunc(vss, func(a, b *variantState) int { return strings.Compare(a.v.Name, b.v.Name) })
		for _, vs := range vss {
			p.Variants = append(p.Variants, c.decision(ms, vs))
		}
	}
	return p
}

// decision is one variant's part of the plan.
func (c *cycle) decision(ms *modelState, vs *variantState) VariantDecision {
	v := vs.v
	d := VariantDecision{Model: ms.m.ID, Namespace: ms.m.Namespace, Variant: v.Name, Accelerator: v.Accelerator,
		Current: v.CurrentReplicas, Ready: v.ReadyReplicas, Pending: v.pending(), Desired: vs.target,
		Reason: vs.reason, CapacityTarget: vs.capTarget, ModelTarget: vs.modelTarget, Queueing: vs.detail,
		Victims: vs.victims, Breakdown: vs.parts}
	if vs.held {
		d.Hold = vs.holdCause
	}
	d.Action = [...]Action{ActionScaleDown, ActionNoChange, ActionScaleUp}[direction(vs.target, v.CurrentReplicas)+1]
	d.Explanation = strings.Join(vs.notes, "; ")
	return d
}
