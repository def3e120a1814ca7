package engine

import (
	"fmt"
	"math"
	"sort"

	"github.com/llm-d-incubation/wva/internal/alloc"
)

// satPod is one healthy pod as the saturation analyzer sees it.
type satPod struct {
	vs        *variantState
	kv, queue float64
	running   float64 // requests in the batch; 0 when unknown
	capTokens float64 // KV capacity in tokens; 0 when unknown
	tokPerReq float64 // average tokens a request holds (input + output)
}

// analyzeSaturation is the saturation (capacity) analyzer (the WVA
// saturation guide; the WVA paper §III.B–C) for one group of variants (one model and role). It
// sets each variant's capTarget and returns the group's figures.
//
//  1. A replica is saturated when KV usage ≥ τ_kv or queue ≥ τ_q (Eq. 2).
//  2. Scale up when the average spare capacity over non-saturated replicas,
//     τ_m − U_m, falls below ε_m for any m (Eq. 3), when every replica is
//     saturated, or (beyond the WVA guide) when the aggregate load exceeds the
//     usable supply of step 3.
//  3. How many: the headroom rule Capacity_target = Load + δ_safety (Eq. 4).
//     Load is KV demand (tokens in use plus queued requests' tokens) and
//     queue demand; each ready or pending replica supplies (τ − ε) of its
//     capacity, and a replica added for the queue also takes a batch of it
//     (satGroup.batch). The deficit is covered with the replicas of the lowest cost
//     per unit of capacity (the WVA saturation guide: cheapest variant up).
//     Pending replicas count as supply, so a scale-up in progress is not
//     repeated.
//  4. Scale down only when the group needs no scale-up and none of its
//     replicas is pending, by removing replicas of the highest cost per
//     unit of capacity while the whole group's load spread over the rest
//     keeps the spares above their triggers and at least
//     MinNonSaturatedReplicasForScaleDown non-saturated replicas remain
//     (the WVA paper §III.C, fragmentation-aware safety, judged on the group: a
//     saturated replica no longer vetoes the scale-down; it is never one
//     of the victims).
//
// Where the queueing model sizes the model (hybrid mode, analysis
// succeeded) queues are its drain planner's: a replica is saturated by its
// KV usage alone, and queued requests count neither as KV load nor as queue
// demand. Elsewhere, the replicas a scale-up adds for the backlog alone are
// marked transient (markTransient).
func analyzeSaturation(cfg SaturationConfig, role string, group []*variantState, drainQueue bool) *satGroup {
	g := &satGroup{cfg: cfg, variants: group, drainQueue: drainQueue}
	g.d.Role = role
	d := &g.d
	pods, normalized := saturationPods(group)
	for _, vs := range group {
		vs.capTarget = vs.v.CurrentReplicas
		vs.sat = g
	}
	d.Replicas = len(pods)
	if len(pods) == 0 {
		d.Note = "no replica reports metrics"
		for _, vs := range group {
			vs.capTarget = -1 // no opinion
		}
		return g
	}
	g.unit = unitCapacity(pods, normalized)
	g.addSupply()
	g.addLoad(pods, normalized)
	nonSat := g.nonSat
	// Eq. 3 averages over the non-saturated replicas only, so a group whose
	// replicas are mostly saturated can look roomy through its one idle
	// replica. Beyond the WVA guide, an aggregate deficit (load above the
	// usable supply, Eq. 4) triggers a scale-up as well. Where the
	// queueing model sizes the model, queues are its drain planner's: they
	// neither trigger nor size a scale-up here.
	queueShort := !drainQueue && (d.AvgSpareQueue < cfg.QueueSpareTrigger || d.LoadQueue > d.SupplyQueue)
	deficit := d.LoadKV > d.SupplyKV
	d.ScaleUp = nonSat == 0 || d.AvgSpareKV < cfg.KVSpareTrigger || queueShort || deficit
	if d.ScaleUp {
		g.scaleUp()
		return g
	}
	if why := g.downBlocked(); why != "" {
		d.Note = why
		return g
	}
	g.scaleDown()
	return g
}

// addSupply sums the usable supply (Eq. 4: threshold minus trigger per
// replica) and the pending replicas of the group's variants that are not
// held.
func (g *satGroup) addSupply() {
	cfg, d := g.cfg, &g.d
	for _, vs := range g.variants {
		if vs.held {
			continue // neither its load nor its supply is known
		}
		g.pending += vs.v.pending()
		capV := g.unit(vs)
		d.SupplyKV += float64(vs.v.CurrentReplicas) * capV * (cfg.KVCacheThreshold - cfg.KVSpareTrigger)
		d.SupplyQueue += float64(vs.v.CurrentReplicas) * (cfg.QueueLengthThreshold - cfg.QueueSpareTrigger)
	}
}

// addLoad sums the pods' load, counts the saturated ones (Eq. 2) and
// averages the spare capacity of the others (Eq. 3).
func (g *satGroup) addLoad(pods []satPod, normalized bool) {
	cfg, d := g.cfg, &g.d
	var spareKV, spareQ, capKV float64
	nonSat := 0
	for _, vs := range g.variants {
		vs.batchSum, vs.batchN = 0, 0
	}
	for _, p := range pods {
		c := capOf(p, normalized)
		capKV += c
		d.LoadKV += p.kv * c
		if !normalized && !g.drainQueue {
			d.LoadKV += p.queue * p.tokPerReq
			g.queuedKV += p.queue * p.tokPerReq
		}
		d.LoadQueue += p.queue
		if p.queue > 0 && p.running > 0 {
			p.vs.batchSum += p.running
			p.vs.batchN++
			g.batchSum += p.running
			g.batchN++
		}
		if g.saturated(p) {
			d.Saturated++
			continue
		}
		nonSat++
		spareKV += cfg.KVCacheThreshold - p.kv
		spareQ += cfg.QueueLengthThreshold - p.queue
	}
	if nonSat > 0 {
		d.AvgSpareKV, d.AvgSpareQueue = spareKV/float64(nonSat), spareQ/float64(nonSat)
	}
	g.capKV, g.nonSat = capKV, nonSat
}

// satGroup is the saturation analysis of one model and role, kept so that
// arbitration can check a proposed scale-down against it.
type satGroup struct {
	cfg      SaturationConfig
	d        SaturationDetail
	variants []*variantState
	unit     func(*variantState) float64
	// drainQueue: the queueing model plans for the queues (see
	// analyzeSaturation).
	drainQueue bool
	// capKV is the KV capacity of the reporting replicas, for the
	// scale-down simulation.
	capKV    float64
	queuedKV float64 // the part of LoadKV that queued requests will need
	// batchSum/batchN: running requests of the pods with waiting ones.
	batchSum        float64
	batchN          int
	nonSat, pending int
	text            string // summary, once formatted
}

// saturated is Eq. 2: KV usage at its threshold or, unless the drain
// planner owns the queues, a queue at its threshold.
func (g *satGroup) saturated(p satPod) bool {
	if g.drainQueue {
		return g.cfg.saturates(p.kv, 0)
	}
	return g.cfg.saturates(p.kv, p.queue)
}

// downBlocked says why no scale-down of this group is safe, or "".
func (g *satGroup) downBlocked() string {
	switch {
	case g.unit == nil:
		return "no replica reports metrics"
	case g.d.ScaleUp:
		return "the group needs more capacity"
	case g.pending > 0:
		return fmt.Sprintf("%d replica(s) starting", g.pending)
	}
	return ""
}

// safeToRemove simulates removing the given replicas (non-saturated ones:
// the victims the engine names). The group is judged as a whole, not by
// its busiest replica (the intent of the WVA paper's §III.C
// fragmentation-aware rule): the whole group's KV load spread over the
// replicas left must keep the spare at or above its trigger, so must the
// queue per replica, and MinNonSaturatedReplicasForScaleDown non-saturated
// replicas must remain.
func (g *satGroup) safeToRemove(removed map[*variantState]int) bool {
	if g.downBlocked() != "" {
		return false
	}
	nonSat, n, capLeft := g.nonSat, g.d.Replicas, g.capKV
	for vs, k := range removed {
		nonSat -= k
		n -= k
		capLeft -= float64(k) * g.unit(vs)
	}
	c := g.cfg
	if nonSat < max(c.MinNonSaturatedReplicasForScaleDown, 1) || capLeft <= 0 {
		return false
	}
	return c.KVCacheThreshold-g.d.LoadKV/capLeft >= c.KVSpareTrigger &&
		c.QueueLengthThreshold-g.d.LoadQueue/float64(n) >= c.QueueSpareTrigger
}

// saturationPods collects the healthy pods of the group. normalized is true
// when some pod lacks KV block counts: capacities are then one unit per
// replica and KV load is the sum of usage fractions.
func saturationPods(group []*variantState) ([]satPod, bool) {
	n := 0
	for _, vs := range group {
		n += len(vs.pods)
	}
	pods := make([]satPod, 0, n)
	normalized := false
	for _, vs := range group {
		if vs.held {
			continue
		}
		for _, p := range vs.pods {
			sp := satPod{vs: vs, kv: p.KVCacheUsage, queue: p.WaitingRequests, running: p.RunningRequests,
				capTokens: float64(p.KVBlocks) * float64(p.BlockSize), tokPerReq: p.AvgInputTokens + p.AvgOutputTokens}
			if sp.tokPerReq == 0 {
				sp.tokPerReq = vs.model.tokensPerRequest
			}
			if sp.capTokens <= 0 {
				normalized = true
			}
			pods = append(pods, sp)
		}
	}
	return pods, normalized
}

func capOf(p satPod, normalized bool) float64 {
	if normalized {
		return 1
	}
	return p.capTokens
}

// unitCapacity returns a function giving a variant's KV capacity per
// replica: the mean over its pods, or over all pods for a variant without
// any (it may be at zero replicas).
func unitCapacity(pods []satPod, normalized bool) func(*variantState) float64 {
	if normalized {
		return func(*variantState) float64 { return 1 }
	}
	total := 0.0
	for _, p := range pods {
		p.vs.capSum, p.vs.capN = 0, 0
	}
	for _, p := range pods {
		p.vs.capSum += p.capTokens
		p.vs.capN++
		total += p.capTokens
	}
	all := total / float64(len(pods))
	return func(vs *variantState) float64 {
		if vs.capN == 0 {
			return all
		}
		return vs.capSum / float64(vs.capN)
	}
}

// byCostPerCapacity orders variants by cost per unit of KV capacity, then
// by name; descending reverses the cost order (the name order stays).
func byCostPerCapacity(group []*variantState, unit func(*variantState) float64, descending bool) []*variantState {
	out := append([]*variantState(nil), group...)
	sort.SliceStable(out, func(i, j int) bool {
		ci, cj := out[i].v.cost()/unit(out[i]), out[j].v.cost()/unit(out[j])
		if ci != cj {
			return (ci < cj) != descending
		}
		return out[i].v.Name < out[j].v.Name
	})
	return out
}

func (g *satGroup) scaleUp() {
	cfg, d := g.cfg, &g.d
	defer g.markTransient()
	kvDef := d.LoadKV - d.SupplyKV
	qDef := d.LoadQueue - d.SupplyQueue
	if g.drainQueue {
		qDef = 0
	}
	// A pending replica was added to take a batch of the queue, as the
	// replicas added below will: it supplies that batch too, or a scale-up
	// still starting would be asked for again.
	for _, vs := range g.variants {
		if !vs.held && qDef > 0 {
			qDef -= float64(vs.v.pending()) * g.batch(vs)
		}
	}
	if kvDef <= 0 && qDef <= 0 {
		if g.pending > 0 {
			d.Note = fmt.Sprintf("%d pending replica(s) already cover the headroom", g.pending)
			return
		}
		// Uneven load: the averages trip the trigger while the aggregate
		// does not; one more replica restores the margin.
		kvDef = math.SmallestNonzeroFloat64
	}
	for _, vs := range byCostPerCapacity(g.variants, g.unit, false) {
		if vs.held {
			continue
		}
		perKV := g.unit(vs) * (cfg.KVCacheThreshold - cfg.KVSpareTrigger)
		perQ := cfg.QueueLengthThreshold - cfg.QueueSpareTrigger + g.batch(vs)
		// Each replica added closes perKV of the KV deficit and perQ of the
		// queue's: enough replicas for the larger, within the maximum (all
		// of it when a step is not positive).
		need := 0.0
		if kvDef > 0 {
			need = math.Max(need, kvDef/perKV)
		}
		if qDef > 0 {
			need = math.Max(need, qDef/perQ)
		}
		n := alloc.CeilCount(need, vs.v.maxReplicas()-vs.capTarget)
		vs.capTarget += n
		d.ExtraReplicas += n
		kvDef -= float64(n) * perKV
		qDef -= float64(n) * perQ
		if kvDef <= 0 && qDef <= 0 {
			return
		}
	}
	d.Note = "every variant is at its maximum; the headroom cannot be restored"
}

// batch is how many requests a new replica of vs takes into its batch
// from the queue's demand: the mean running requests of its pods that
// have waiting requests (a pod queues once its batch, its KV cache or its
// step's token budget is full, so that is what a replica holds under this
// load), else of the group's such pods, else 0 (running counts unknown).
// Without it a queue was sized as if each new replica held only τ_q − ε_q
// waiting requests and nothing running: a backlog of a few hundred
// requests on a replica batching 250 asked for a hundred replicas.
func (g *satGroup) batch(vs *variantState) float64 {
	switch {
	case vs.batchN > 0:
		return vs.batchSum / float64(vs.batchN)
	case g.batchN > 0:
		return g.batchSum / float64(g.batchN)
	}
	return 0
}

// markTransient marks the part of a scale-up target that serves only the
// backlog (queued requests, and the KV they will need): the replicas beyond
// what the KV in use needs, on the variants scale-ups go to first. It is
// released once the backlog has drained, not through the stabilisation
// window. While a scale-up is still starting, its replicas are marked
// again on every cycle.
func (g *satGroup) markTransient() {
	if g.queuedKV == 0 && g.d.LoadQueue == 0 {
		return
	}
	order := byCostPerCapacity(g.variants, g.unit, false)
	total := 0
	for _, vs := range order {
		if !vs.held {
			total += vs.capTarget
		}
	}
	perKV := g.unit(order[0]) * (g.cfg.KVCacheThreshold - g.cfg.KVSpareTrigger)
	steady := max(int(math.Ceil((g.d.LoadKV-g.queuedKV)/perKV)), 1)
	excess := total - steady
	for _, vs := range order {
		if excess <= 0 {
			break
		}
		if vs.held {
			continue
		}
		vs.capTransient = min(excess, vs.capTarget)
		excess -= vs.capTransient
	}
}

// scaleDown removes replicas of the highest cost per unit of capacity, one
// at a time, while the removal stays safe.
func (g *satGroup) scaleDown() {
	removed := map[*variantState]int{}
	for _, vs := range byCostPerCapacity(g.variants, g.unit, true) {
		if vs.held {
			continue
		}
		floor := max(vs.v.minReplicas(), 0)
		for vs.capTarget > floor {
			removed[vs]++
			if !g.safeToRemove(removed) {
				removed[vs]--
				break
			}
			vs.capTarget--
			g.d.Removable++
		}
	}
	g.d.ScaleDownSafe = g.d.Removable > 0
	if !g.d.ScaleDownSafe {
		g.d.Note = "scale-down unsafe: the load spread over one replica fewer would leave too little spare capacity"
	}
}
