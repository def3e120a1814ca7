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
	itlMs     float64 // mean inter-token latency; 0 when unknown
	outTok    float64 // mean output tokens per request; 0 when unknown
	finished  float64 // requests finished per second over the window; 0 when unknown
	age       float64 // seconds since Ready; 0 when unknown
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
// marked transient (markTransient), and where the replicas holding the
// backlog have a measured service rate (or it waited for them to start),
// the backlog is sized by the time it takes to clear, at most as the
// batches it would fill (drainBacklog).
func analyzeSaturation(cfg SaturationConfig, role string, group []*variantState, drainQueue bool, bl satBacklog) *satGroup {
	g := &satGroup{cfg: cfg, down: cfg, variants: group, drainQueue: drainQueue, bl: bl}
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
	if drainQueue {
		// The queueing model sizes the model: the scale-up is a hold for
		// metrics that contradict it, from KVScaleUpThreshold; the
		// scale-down check below keeps the guide's threshold.
		g.cfg = cfg.scaleUp()
	}
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
		vs.muSum, vs.muN = 0, 0
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
			g.servedBy(p)
		}
		if !g.down.saturates(p.kv, g.queueOf(p)) {
			g.nonSatDown++
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
	// cfg is the analysis's thresholds (the scale-up's: KVScaleUpThreshold
	// where the queueing model sizes the model), down the scale-down
	// check's (the configured ones).
	cfg, down SaturationConfig
	d         SaturationDetail
	variants  []*variantState
	unit      func(*variantState) float64
	// drainQueue: the queueing model plans for the queues (see
	// analyzeSaturation).
	drainQueue bool
	// capKV is the KV capacity of the reporting replicas, for the
	// scale-down simulation.
	capKV    float64
	queuedKV float64 // the part of LoadKV that queued requests will need
	// batchSum/batchN: running requests of the pods with waiting ones.
	batchSum float64
	batchN   int
	// muSum/muN: the service rates of the pods with waiting requests
	// whose latency is measured (servedBy); youngAge: the oldest of those
	// without a measurement that became Ready less than youngPodSeconds
	// ago (0: none).
	muSum           float64
	muN             int
	youngAge        float64
	bl              satBacklog
	nonSat, pending int
	// nonSatDown counts the replicas the scale-down check finds
	// unsaturated: against down, where nonSat is against cfg.
	nonSatDown int
	text       string // summary, once formatted
}

// saturated is Eq. 2: KV usage at its threshold or, unless the drain
// planner owns the queues, a queue at its threshold.
func (g *satGroup) saturated(p satPod) bool {
	return g.cfg.saturates(p.kv, g.queueOf(p))
}

// queueOf is the queue Eq. 2 reads: none where the drain planner owns the
// queues.
func (g *satGroup) queueOf(p satPod) float64 {
	if g.drainQueue {
		return 0
	}
	return p.queue
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
	nonSat, n, capLeft := g.nonSatDown, g.d.Replicas, g.capKV
	for vs, k := range removed {
		nonSat -= k
		n -= k
		capLeft -= float64(k) * g.unit(vs)
	}
	c := g.down
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
				capTokens: float64(p.KVBlocks) * float64(p.BlockSize), tokPerReq: p.AvgInputTokens + p.AvgOutputTokens,
				itlMs: p.AvgITLMs, outTok: p.AvgOutputTokens, finished: p.ArrivalRateRPS, age: p.AgeSeconds}
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
	d := &g.d
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
	timed := g.timesBacklog()
	// The rule in batches' deficits, which bound a scale-up sized by time.
	inBatches := deficits{kvDef, qDef + g.bl.gateway}
	if timed {
		// The backlog is sized by the time it takes to clear
		// (drainBacklog), at most as the batches it would fill: only
		// the KV of the requests running is a deficit here.
		kvDef -= g.queuedKV
		qDef = 0
	}
	switch {
	case kvDef > 0 || qDef > 0:
		if !g.cover(kvDef, qDef) {
			d.Note = "every variant is at its maximum; the headroom cannot be restored"
			return
		}
	case timed:
	case g.pending > 0:
		d.Note = fmt.Sprintf("%d pending replica(s) already cover the headroom", g.pending)
		return
	default:
		// Uneven load: the averages trip the trigger while the aggregate
		// does not; one more replica restores the margin.
		if !g.cover(math.SmallestNonzeroFloat64, 0) {
			d.Note = "every variant is at its maximum; the headroom cannot be restored"
			return
		}
	}
	if timed {
		g.drainBacklog(kvDef, inBatches)
	}
}

// cover adds the replicas that close a KV deficit and a queue deficit,
// on the variants of the lowest cost per unit of KV capacity first, within
// their maxima. It reports whether both deficits are closed.
func (g *satGroup) cover(kvDef, qDef float64) bool {
	cfg, d := g.cfg, &g.d
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
			return true
		}
	}
	return false
}

// youngPodSeconds: a pod Ready for less than this has not served long
// enough for its latency averages (rates over a minute) to exist.
const youngPodSeconds = 60

// servedBy counts the service rate of a pod with waiting requests: the
// larger of two measures, each of which can only understate it. One is
// Little's law, the batch it holds over the time a request spends in it
// (one step for its prefill and one per output token at the measured
// inter-token latency): the batch is a gauge read at one instant, and a
// pod that just preempted most of its batch reports a fraction of it. The
// other is the rate at which it finished requests over the window
// (vLLM's request_success_total): that is its service rate only if it
// queued the whole window. A pod without a latency measurement that
// became Ready recently sets the group's youngAge (waitedFor).
func (g *satGroup) servedBy(p satPod) {
	res := p.itlMs / 1000 * (p.outTok + 1)
	if !(res > 0) || math.IsInf(res, 0) || !(p.outTok > 0) {
		if p.age > 0 && p.age < youngPodSeconds {
			g.youngAge = math.Max(g.youngAge, p.age)
		}
		return
	}
	mu := math.Max(p.running/res, p.finished)
	p.vs.muSum += mu
	p.vs.muN++
	g.muSum += mu
	g.muN++
}

// serviceRate is the requests/s one replica of vs serves with a full
// batch: the mean of its pods' (servedBy), else of the group's, else 0.
func (g *satGroup) serviceRate(vs *variantState) float64 {
	return variantElseGroup(vs.muSum, vs.muN, g.muSum, g.muN)
}

// variantElseGroup is a variant's mean (sum over n), else its group's,
// else 0.
func variantElseGroup(sum float64, n int, groupSum float64, groupN int) float64 {
	switch {
	case n > 0:
		return sum / float64(n)
	case groupN > 0:
		return groupSum / float64(groupN)
	}
	return 0
}

// deficits are a scale-up's KV and queue deficits.
type deficits struct{ kv, queue float64 }

// batchBound is how many replicas of vs the rule in batches would add for
// the backlog: those for its deficits (inBatches) less those already added
// for the KV deficit without it (kvDef).
func (g *satGroup) batchBound(vs *variantState, kvDef float64, inBatches deficits) int {
	cfg := g.cfg
	perKV := g.unit(vs) * (cfg.KVCacheThreshold - cfg.KVSpareTrigger)
	perQ := cfg.QueueLengthThreshold - cfg.QueueSpareTrigger + g.batch(vs)
	all := math.Max(math.Max(inBatches.kv/perKV, inBatches.queue/perQ), 0)
	running := math.Max(kvDef/perKV, 0)
	return max(alloc.CeilCount(all, math.MaxInt32)-alloc.CeilCount(running, math.MaxInt32), 0)
}

// satBacklog is what the saturation analyzer needs to size a backlog by
// time: the model's arrival rate, the requests waiting at the gateway and
// the provisioning horizon (the longest time any of the group's variants
// takes from scale-up to Ready).
type satBacklog struct {
	lambda, gateway, horizon float64
	// growing: the model's backlog grew since its last cycle by more than
	// the square root of what it was (one Poisson deviation).
	growing bool
}

// timesBacklog says whether the backlog is sized by time (drainBacklog)
// rather than by the batches it would fill: there is one, the analyzer
// owns it, the horizon is known, and either the replicas holding it have
// a measured service rate and it has not grown since the last cycle (a
// surge the arrival rate, a rate over a minute, has not caught up with
// yet), or it waited for them (g.waitedFor). A backlog that waited for its
// replicas grows until they take it in, whatever the arrival rate: there
// the growth says nothing of a surge.
func (g *satGroup) timesBacklog() bool {
	if g.drainQueue || !(g.bl.horizon > 0) || g.d.LoadQueue+g.bl.gateway <= 0 {
		return false
	}
	if g.muN == 0 {
		return g.waitedFor()
	}
	return !g.bl.growing
}

// waitedFor says whether the backlog is one that waited for replicas to
// become Ready (a wake from zero, a scale-up from saturated replicas)
// rather than one that built up while they served: the replicas holding
// it became Ready too recently to have a measured service rate, and more
// requests wait than arrived since the oldest of them did (at the
// gateway's rate; unknown, it cannot tell). Such a backlog
// is sized at the next cycle, by time, once they have served a while; a
// queue that built up on replicas serving is sized in batches at once.
func (g *satGroup) waitedFor() bool {
	return g.youngAge > 0 && g.bl.lambda > 0 && g.d.LoadQueue+g.bl.gateway > g.bl.lambda*g.youngAge
}

// drainBacklog sizes the backlog's scale-up as the drain planner does for a
// model the queueing model sizes (drain.go), with the service rate measured
// on the replicas instead of the model's: over the horizon H the backlog
// grows by the arrival rate λ less what the ready replicas serve (M₀); from
// then on it drains at what the whole group serves beyond λ (M₁). Replicas
// are added, on the variant of the lowest cost per request/s, only where
// that does not clear it within another H: a replica that would arrive
// after the backlog has cleared is not ordered, nor more than the rule in
// batches would add (cover: the replicas that take the whole backlog into
// their batches at once; more could not serve it sooner: inBatches are
// that rule's deficits). kvDef is the KV deficit already covered without
// the backlog. When the replicas holding
// the backlog have not served long enough to measure their rate, the
// sizing waits a cycle.
func (g *satGroup) drainBacklog(kvDef float64, inBatches deficits) {
	d := &g.d
	backlog := d.LoadQueue + g.bl.gateway
	if g.muN == 0 {
		d.Note = fmt.Sprintf("%.0f request(s) waiting on replicas Ready for under %d s: their service rate is not measured yet; the backlog is sized at the next cycle",
			backlog, youngPodSeconds)
		return
	}
	var m0, m1 float64
	var best *variantState
	for _, vs := range g.variants {
		if vs.held {
			continue
		}
		mu := g.serviceRate(vs)
		m0 += float64(vs.v.ReadyReplicas) * mu
		m1 += float64(vs.capTarget) * mu
		if vs.capTarget < vs.v.maxReplicas() && (best == nil || vs.v.cost()/mu < best.v.cost()/g.serviceRate(best)) {
			best = vs
		}
	}
	h, lambda := g.bl.horizon, g.bl.lambda
	atH, need := drainNeed(backlog, lambda, m0, m1, h)
	if need <= 0 {
		d.Note = fmt.Sprintf("%.0f request(s) waiting clear within %.0f s at %.3g requests/s served, %.3g arriving", backlog, 2*h, m1, lambda)
		return
	}
	if best == nil {
		d.Note = "every variant is at its maximum; the backlog cannot be cleared in time"
		return
	}
	room := best.v.maxReplicas() - best.capTarget
	if b := g.batchBound(best, kvDef, inBatches); b < room {
		room = b
	}
	k := alloc.CeilCount(need/g.serviceRate(best), room)
	if k == 0 {
		d.Note = fmt.Sprintf("%.0f request(s) waiting: the replicas it has take them into their batches", backlog)
		return
	}
	best.capTarget += k
	d.ExtraReplicas += k
	d.Note = fmt.Sprintf("%.0f request(s) waiting, %.0f expected in %.0f s; +%d to clear them within another %.0f s", backlog, atH, h, k, h)
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
	return variantElseGroup(vs.batchSum, vs.batchN, g.batchSum, g.batchN)
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
