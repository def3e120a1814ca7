// The Engine, its State across cycles and one cycle's phases in the order
// they run (prepare, tune, model analysis, allocation, drain, saturation,
// arbitration, enforcement). Over 400 lines because the phases' shared
// per-variant and per-model state is defined here beside them.

package engine

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Engine runs decision cycles and keeps the state between them. It is not
// safe for concurrent use; the controller and the simulator call it from one
// loop.
type Engine struct {
	store tuner.Store
	// mu serialises Plan with the fast loop's Wake and Surge and with the
	// seeding calls, which the controller makes from other goroutines.
	mu    sync.Mutex
	state State
	// fleet is the fleet capacity model (SetCapacityModel), or nil;
	// fleetBase its curves' frames of reference (fleetCapacity), under
	// baseMu (the cycle sizes models in parallel).
	fleet     *CapacityModel
	baseMu    sync.Mutex
	fleetBase map[FleetKey]float64
}

// State is what the engine carries from one cycle to the next.
type State struct {
	// LastGood is each variant's last decision made from good metrics.
	LastGood map[string]int
	// LastTraffic is when each model last saw a request.
	LastTraffic map[string]time.Time
	// Recommendations are each variant's recent targets, for the
	// scale-down stabilisation window.
	Recommendations map[string][]Recommendation
	// Sizing holds each variant's last λ_TTFT and λ_ITL: next cycle's
	// search starts there (it changes only the cost, never the answer).
	Sizing map[string]queueing.Hints
	// Forecasts are each model's arrival-rate forecasters.
	Forecasts map[string]*Forecast
	// Provisioning learns each variant's time from scale-up to Ready.
	Provisioning map[string]*Provisioning
	// Planned is what each model's last cycle planned for (the fast
	// loop's surge baseline).
	Planned map[string]planned
	// Feedback is each model's attainment feedback.
	Feedback map[string]*Feedback
	// TunerSteps is when each variant's tuner last stepped: where more
	// variants want a step than Config.TunerBudget allows, the longest
	// waiting go first.
	TunerSteps map[string]time.Time
}

// Recommendation is one cycle's target for a variant.
type Recommendation struct {
	Time    time.Time `json:"time"`
	Replica int       `json:"replicas"`
}

// New returns an engine that keeps learned parameters in store (a
// MemoryStore when nil).
func New(store tuner.Store) *Engine {
	if store == nil {
		store = tuner.NewMemoryStore()
	}
	return &Engine{store: store, fleetBase: map[FleetKey]float64{}, state: State{
		LastGood: map[string]int{}, LastTraffic: map[string]time.Time{}, Recommendations: map[string][]Recommendation{},
		Sizing: map[string]queueing.Hints{}, Forecasts: map[string]*Forecast{}, Provisioning: map[string]*Provisioning{},
		Planned: map[string]planned{}, Feedback: map[string]*Feedback{}, TunerSteps: map[string]time.Time{},
	}}
}

// State returns the engine's state (for inspection and persistence).
func (e *Engine) State() *State { return &e.state }

// modelState is a model during one cycle.
type modelState struct {
	m        *Model
	key      string
	variants []*variantState
	// Arrival-weighted workload over healthy pods with traffic (the WVA
	// queueing-model guide §4).
	demand                       float64
	inTok, outTok, ttftMs, itlMs float64
	// waiting is the model's backlog: requests waiting at the gateway and
	// in the replicas whose metrics are usable (set once in prepare).
	waiting float64
	// finished is the rate the pods finished requests at, where it
	// exceeds the arrival rate while a backlog waits (drainingRate); else 0.
	finished float64
	// provisional: every variant the model sized, it sized with a warming
	// tuner's parameters (tuneProvisional).
	provisional      bool
	tokensPerRequest float64
	sat              []*satGroup
	sum              ModelSummary
	modelOK          bool
	tpsFloor         float64
	// idleSeconds: how long the model has seen no request (0 while busy).
	idleSeconds float64
	// planned is the demand the allocator covers before the TPS floor:
	// the measured demand, raised to the forecast's quantile over the
	// horizon (seconds) when forecasting.
	planned, forecastMean, horizon float64
	// satCfg is the saturation thresholds in force for the model: the
	// defaults, the snapshot's, then the model's own.
	satCfg SaturationConfig
	// slo is the targets the queueing model sized the variants for.
	slo queueing.Targets
	// reporting counts the healthy pods with metrics; current the
	// replicas (ready or starting) of all variants.
	reporting, current int
	// attainment is the model's target share of requests within both
	// targets (attainmentTarget).
	attainment float64
	// surgeRatio is the model's declared surge (surgeRatioFor; 1: none);
	// surged: it set the planned rate this cycle (surge).
	surgeRatio float64
	surged     bool
	// observation caches the window's observed attainment (observed):
	// the feedback and the SLO-miss rule read it in different phases.
	observation *observation
}

// attainmentTarget resolves a model's attainment target: the model's own,
// else its service class's, else the configuration's.
func (c *cycle) attainmentTarget(m *Model) float64 {
	if m.Attainment > 0 {
		return m.Attainment
	}
	if sc, ok := c.s.ServiceClasses[m.ServiceClass]; ok && sc.Attainment > 0 {
		return sc.Attainment
	}
	return c.cfg.Attainment
}

// surgeRatioFor resolves a model's declared surge: the model's own, else
// the configuration's, else 1 (none).
func (c *cycle) surgeRatioFor(m *Model) float64 {
	switch {
	case m.SurgeRatio > 0:
		return m.SurgeRatio
	case c.cfg.SurgeRatio > 0:
		return c.cfg.SurgeRatio
	}
	return 1
}

// variantState is a variant during one cycle.
type variantState struct {
	model     *modelState
	v         *Variant
	key       string
	pods      []*Pod // healthy pods (in the snapshot)
	held      bool
	holdCause HoldCause
	holdWhy   string
	sat       *satGroup
	// capTarget and modelTarget are the analyzers' proposals, -1 if none.
	capTarget, modelTarget int
	detail                 *ModelDetail
	// noParams: the queueing model had no parameters to size the variant
	// with (cold start before the tuner warms up, no profile).
	noParams bool
	// provisional: sized with a warming tuner's parameters; the model may
	// only raise the saturation analysis's target (arbitrate.go).
	provisional bool
	// paramsSD is the tuner's standard deviation of the parameters after
	// this cycle's step (nil when no step ran).
	paramsSD *tuner.Params
	// stored is what this cycle's tuner step stored for the variant (its
	// service model, updates and parameters), which the sizing reads
	// instead of the store's whole record; nil when the step stored
	// nothing.
	stored *tuner.Summary
	// tuneNow: the variant's tuner steps this cycle (scheduleTuning).
	tuneNow  bool
	capacity float64 // requests/s per replica within the SLO
	maxRate  float64 // requests/s per replica at a full batch (λmax)
	// spare is the part of modelTarget that covers the forecast's spare
	// and transient the part added to drain a backlog; neither enters the
	// scale-down stabilisation window.
	spare, transient int
	// capTransient is the part of capTarget added for queues alone.
	capTransient int
	victims      []string
	hints        queueing.Hints
	capSum       float64 // KV capacity of its pods (saturation analysis)
	capN         int
	// batchSum/batchN: running requests of its pods that have waiting
	// requests (saturation analysis: what a replica holds at this load).
	batchSum float64
	batchN   int
	// muSum/muN: the measured service rates of those pods (satGroup.servedBy).
	muSum  float64
	muN    int
	target int
	reason Reason
	notes  []string
	// arbTarget and arbReason are the target and reason arbitration
	// left, preWindow the target before the scale-down window, and parts
	// the desired replicas by the rule that asks for them (breakdown.go).
	arbTarget, preWindow int
	arbReason            Reason
	parts                *Breakdown
}

func (vs *variantState) note(format string, args ...any) {
	vs.notes = append(vs.notes, fmt.Sprintf(format, args...))
}

// cycle is one run of Plan.
type cycle struct {
	e      *Engine
	s      *Snapshot
	cfg    Config
	mode   Mode
	now    time.Time
	models []*modelState
	all    []*variantState
	// free is, in limited mode, the inventory left after the global
	// allocation, by accelerator: what the drain planner may still use.
	free map[string]int
	// tunerDeferred counts the tuner steps the budget deferred.
	tunerDeferred int
	// waiting is, in limited mode, the accelerators per type that this
	// cycle's scale-ups need beyond what the running replicas leave free:
	// a scale-down on such a type skips the stabilisation window (release).
	waiting map[string]int
}

// Plan runs one decision cycle. An invalid snapshot is an error naming the
// field; every other problem (missing or bad metrics, an analysis that
// fails) is reported in the plan and the affected variants hold.
func (e *Engine) Plan(s *Snapshot) (*Plan, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := &cycle{e: e, s: s, cfg: s.Config.withDefaults(), mode: s.Mode, now: s.Time}
	if c.mode == "" {
		c.mode = ModeCapacityOnly
	}
	c.prepare()
	if c.cfg.TuningEnabled && !c.cfg.TunerIdle {
		c.parallel(c.tuneCandidates)
		c.scheduleTuning()
		c.parallel(c.tune)
	}
	// The model analysis comes first: where it succeeds, the backlog is
	// the drain planner's and the saturation analyzer judges KV only.
	if c.mode != ModeCapacityOnly {
		c.parallel(c.analyzeModel)
		c.allocate()
		c.drainAll()
	}
	if c.mode != ModeModelOnly {
		c.parallel(c.saturation)
	}
	c.parallel(c.arbitrate)
	c.enforce()
	c.parallel(c.reach)
	c.parallel(c.account)
	c.parallel(c.pickVictims)
	c.recordPlanned()
	p := c.plan()
	p.TunerDeferred = c.tunerDeferred
	return p, nil
}

// parallel runs fn for every model on GOMAXPROCS workers. Each call reads
// the snapshot and writes only its own model's state, so the result does not
// depend on the order; the tuner store must be safe for concurrent use
// (MemoryStore is).
func (c *cycle) parallel(fn func(*modelState)) {
	forEach(len(c.models), func(i int) { fn(c.models[i]) })
}

// forEach runs fn(0) … fn(n−1) on GOMAXPROCS workers (in order on one).
// The workers take the next index from a shared counter: the items' work
// varies (a model's variants, its pods), so a fixed split would leave one
// worker idle, and a channel costs a hand-off per item.
func forEach(n int, fn func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// prepare builds the working state: pod health and workload aggregation.
// The states are made one model after another (their order is the
// snapshot's), the pods checked and the workload aggregated in parallel
// (each model's own state), and the learners fed one model after another
// again, since they create entries in the engine's shared maps.
func (c *cycle) prepare() {
	// The states are allocated in one block per kind for the whole cycle,
	// not per model: the cycle holds them all until the plan is built.
	total := 0
	for i := range c.s.Models {
		total += len(c.s.Models[i].Variants)
	}
	mss := make([]modelState, len(c.s.Models))
	copies := make([]Variant, total)
	vss := make([]variantState, total)
	ptrs := make([]*variantState, total)
	c.models = make([]*modelState, 0, len(c.s.Models))
	c.all = make([]*variantState, 0, total)
	k := 0
	for i := range c.s.Models {
		m := &c.s.Models[i]
		ms := &mss[i]
		*ms = modelState{m: m, key: modelKey(m.Namespace, m.ID), satCfg: defaultSaturation.merged(c.s.Saturation).merged(m.Saturation)}
		ms.sum = ModelSummary{Model: m.ID, Namespace: m.Namespace}
		ms.attainment = c.attainmentTarget(m)
		ms.surgeRatio = c.surgeRatioFor(m)
		ms.variants = ptrs[k : k+len(m.Variants) : k+len(m.Variants)]
		for j := range m.Variants {
			v := c.variant(&m.Variants[j], &copies[k])
			vs := &vss[k]
			*vs = variantState{model: ms, v: v, key: variantKey(m.Namespace, m.ID, v.Name), capTarget: -1, modelTarget: -1}
			vs.hints = c.e.state.Sizing[vs.key]
			ms.variants[j] = vs
			c.all = append(c.all, vs)
			k++
		}
		c.models = append(c.models, ms)
	}
	c.parallel(c.gather)
	for _, ms := range c.models {
		c.learn(ms)
	}
}

// gather checks one model's pods and aggregates its workload: the demand
// and its token and latency averages, weighted by each pod's arrival rate.
func (c *cycle) gather(ms *modelState) {
	m := ms.m
	var wIn, wOut, wTTFT, wITL float64
	for _, vs := range ms.variants {
		v := vs.v
		c.checkPods(vs)
		ms.reporting += len(vs.pods)
		ms.current += v.CurrentReplicas
		for _, p := range vs.pods {
			if p.ArrivalRateRPS <= 0 {
				continue
			}
			r := p.ArrivalRateRPS
			ms.demand += r
			wIn += r * p.AvgInputTokens
			wOut += r * p.AvgOutputTokens
			wTTFT += r * p.AvgTTFTMs
			wITL += r * p.AvgITLMs
		}
	}
	ms.waiting = ms.backlog()
	if ms.demand > 0 {
		ms.inTok, ms.outTok = wIn/ms.demand, wOut/ms.demand
		ms.ttftMs, ms.itlMs = wTTFT/ms.demand, wITL/ms.demand
		ms.tokensPerRequest = ms.inTok + ms.outTok
		r := m.ArrivalRateRPS
		switch {
		case !(r > 0 && r <= math.MaxFloat64):
		case r > ms.demand:
			// Requests served by pods already gone count too (their
			// token averages are unknown; the pods' stand for them).
			ms.demand = r
		case ms.waiting > 0 && ms.demand > drainingRate(r):
			// The pods finish more than arrives while requests wait:
			// they are clearing a backlog, which the drain planner
			// sizes; the demand is what arrives.
			ms.finished, ms.demand = ms.demand, r
		}
	}
	c.plausible(ms)
	ms.sum.DemandRPS = ms.demand
}

// variant makes dst the cycle's copy of a snapshot variant, capped at the
// configured default when its maxReplicas is unset (never below its
// minimum or what it runs now: the cap bounds growth, it does not shrink a
// fleet).
func (c *cycle) variant(src, dst *Variant) *Variant {
	*dst = *src
	if dst.MaxReplicas == 0 {
		dst.MaxReplicas = max(c.cfg.MaxReplicasDefault, dst.minReplicas(), dst.CurrentReplicas)
	}
	return dst
}

// plausible holds every variant of a model whose demand no server could
// have produced: a pod over MaxPodArrivalRPS (podProblem), the gateway's
// rate beyond what MaxPodArrivalRPS allows every replica, or a pod serving
// ImplausibleCapacityFactor times what its variant's known parameters
// allow one replica. A wrong counter must not order
// replicas: the model holds its last good decision, as on missing metrics.
func (c *cycle) plausible(ms *modelState) {
	why := ""
	if r := ms.m.ArrivalRateRPS; r > c.cfg.MaxPodArrivalRPS*float64(max(ms.current, 1)+c.cfg.ScaleUpLimitReplicas) {
		why = fmt.Sprintf("the gateway reports %.3g requests/s, beyond %g per replica", r, c.cfg.MaxPodArrivalRPS)
	}
	for _, vs := range ms.variants {
		if vs.holdCause == HoldImplausible && why == "" {
			why = vs.v.Name + "'s " + vs.holdWhy
		}
	}
	for _, vs := range ms.variants {
		if why != "" || ms.demand == 0 {
			break
		}
		if vs.held || len(vs.pods) == 0 {
			continue
		}
		limit := c.podRateLimit(ms, vs)
		for _, p := range vs.pods {
			if p.ArrivalRateRPS > limit {
				why = fmt.Sprintf("pod %s reports %.3g requests/s, over %g× the %.3g one replica of %s can serve",
					p.Name, p.ArrivalRateRPS, ImplausibleCapacityFactor, limit/ImplausibleCapacityFactor, vs.v.Name)
				break
			}
		}
	}
	if why == "" {
		return
	}
	for _, vs := range ms.variants {
		vs.held, vs.holdCause, vs.holdWhy = true, HoldImplausible, "implausible metrics: "+why
	}
}

// podRateLimit is ImplausibleCapacityFactor times the most requests/s one
// replica of the variant can serve at the model's token counts, from its
// profiled or learned parameters; +Inf when they are unknown.
func (c *cycle) podRateLimit(ms *modelState, vs *variantState) float64 {
	p, _, _ := c.params(vs)
	if p == nil {
		return math.Inf(1)
	}
	maxRate, err := queueing.MaxRateOf(c.analyzerConfig(ms, vs, p))
	if err != nil {
		return math.Inf(1)
	}
	return ImplausibleCapacityFactor * maxRate
}

// learn feeds the model's forecaster with this cycle's demand (when every
// variant's metrics are usable: otherwise the sum is partial) and each
// variant's provisioning learner with its replica counts.
func (c *cycle) learn(ms *modelState) {
	held := false
	for _, vs := range ms.variants {
		held = held || vs.held
		p := c.e.state.Provisioning[vs.key]
		if p == nil {
			p = &Provisioning{}
			c.e.state.Provisioning[vs.key] = p
		}
		p.observe(c.now, vs.v.CurrentReplicas, vs.v.ReadyReplicas)
		p.seed(vs.v.Pods)
	}
	// The attainment feedback's state is made here, one model after
	// another: the model analyses that update it run in parallel. It is
	// kept with the feedback off too: the SLO-miss rule reads and keeps
	// its record of the fleet's last shortage (arbitrate.go, settling).
	fb := c.e.state.Feedback[ms.key]
	if fb == nil {
		fb = &Feedback{}
		c.e.state.Feedback[ms.key] = fb
	}
	if ms.finished > 0 {
		fb.LastClearing = c.now
	}
	if held || ms.reporting == 0 || c.cfg.DisableForecast {
		return
	}
	f := c.e.state.Forecasts[ms.key]
	if f == nil {
		f = &Forecast{}
		c.e.state.Forecasts[ms.key] = f
	}
	f.observe(c.now, ms.demand)
}

// provisioning is the variant's time from scale-up to Ready: learned, else
// the configured default.
func (c *cycle) provisioning(vs *variantState) float64 {
	if p := c.e.state.Provisioning[vs.key]; p != nil && p.Samples > 0 {
		return p.Seconds
	}
	return c.cfg.ProvisioningSeconds
}

// checkPods keeps the pods with usable metrics and holds the variant when
// any of its pods has none (graceful degradation; docs/engine.md §5).
func (c *cycle) checkPods(vs *variantState) {
	v := vs.v
	if v.ReadyReplicas > 0 && len(v.Pods) == 0 {
		vs.held, vs.holdCause, vs.holdWhy = true, HoldMissing, fmt.Sprintf("no metrics for its %d ready replica(s)", v.ReadyReplicas)
		return
	}
	var bad []string
	vs.pods = make([]*Pod, 0, len(v.Pods))
	for i := range v.Pods {
		p := &v.Pods[i]
		if cause, why := c.podProblem(p); cause != "" {
			bad = append(bad, p.Name+": "+why)
			if cause.severity() > vs.holdCause.severity() {
				vs.holdCause = cause
			}
			continue
		}
		vs.pods = append(vs.pods, p)
	}
	if len(bad) > 0 {
		vs.held, vs.holdWhy = true, "metrics unusable ("+strings.Join(bad, "; ")+")"
	}
}

// podProblem says what is wrong with a pod's metrics, if anything: the
// kind and, for a person, the detail.
func (c *cycle) podProblem(p *Pod) (HoldCause, string) {
	if p.Missing {
		return HoldMissing, "missing"
	}
	if !p.SampledAt.IsZero() {
		age := c.now.Sub(p.SampledAt).Seconds()
		if age > c.cfg.MetricsMaxAgeSeconds {
			return HoldStale, fmt.Sprintf("stale (sampled %.0f s ago)", age)
		}
		// A clock ahead by more than the staleness bound: such metrics
		// would never go stale.
		if -age > c.cfg.MetricsMaxAgeSeconds {
			return HoldInvalid, fmt.Sprintf("sampled %.0f s in the future (a clock is wrong)", -age)
		}
	}
	if bad := InvalidMetrics(p); len(bad) > 0 {
		if bad[0].Why == "above 1" {
			return HoldInvalid, fmt.Sprintf("kvCacheUsage is %v (above 1)", p.KVCacheUsage)
		}
		return HoldInvalid, fmt.Sprintf("%s is %v", bad[0].Metric, bad[0].Value)
	}
	if p.ArrivalRateRPS > c.cfg.MaxPodArrivalRPS {
		return HoldImplausible, fmt.Sprintf("arrivalRate is %.3g requests/s, above the plausible %g per pod", p.ArrivalRateRPS, c.cfg.MaxPodArrivalRPS)
	}
	return "", ""
}

// saturation runs the saturation analyzer once per role of the model.
func (c *cycle) saturation(ms *modelState) {
	cfg := ms.satCfg
	roles := map[string][]*variantState{}
	var order []string
	for _, vs := range ms.variants {
		r := vs.v.Role
		if r == "both" {
			r = ""
		}
		if _, ok := roles[r]; !ok {
			order = append(order, r)
		}
		roles[r] = append(roles[r], vs)
	}
	sort.Strings(order)
	for _, r := range order {
		g := analyzeSaturation(cfg, r, roles[r], plansBacklog(c.mode, ms), c.satBacklog(ms, roles[r]))
		ms.sat = append(ms.sat, g)
		ms.sum.Saturation = append(ms.sum.Saturation, g.d)
	}
}

// satBacklog is what the saturation analysis of a group needs to size its
// backlog by time: the model's arrival rate (the gateway's where the pods
// report none yet), the requests waiting at the gateway (the group without
// a role only: a disaggregated model's gateway queue is its prefill's) and
// the group's provisioning horizon.
func (c *cycle) satBacklog(ms *modelState, group []*variantState) satBacklog {
	bl := satBacklog{lambda: ms.demand}
	if r := ms.m.ArrivalRateRPS; r > bl.lambda && r <= math.MaxFloat64 {
		bl.lambda = r
	}
	// The arrival rate is a rate over the last minute: it lags a surge,
	// whose first sign is a growing backlog. Sized by time on that rate, a
	// growing backlog would wait for the rate to catch up.
	if last, ok := c.e.state.Planned[ms.key]; ok {
		bl.growing = ms.waiting > last.backlog+math.Sqrt(last.backlog)
	}
	if w := ms.m.GatewayWaitingRequests; group[0].v.Role != "decode" && w > 0 && w <= math.MaxFloat64 {
		bl.gateway = w
	}
	for _, vs := range group {
		bl.horizon = math.Max(bl.horizon, c.provisioning(vs))
	}
	return bl
}

// drainingRate is the rate the pods' finished requests must exceed, with
// requests waiting, to say that they clear a backlog rather than serve the
// arrival rate r: both are rates over a minute, of one stream a request's
// latency apart, so the margin is a fifth of r and three Poisson
// deviations of a minute's count.
func drainingRate(r float64) float64 {
	return 1.2*r + 3*math.Sqrt(r/60)
}

// backlog is the model's requests waiting at the gateway and in the
// replicas whose metrics are usable.
func (ms *modelState) backlog() float64 {
	b := ms.m.GatewayWaitingRequests
	if !(b > 0 && b <= math.MaxFloat64) {
		b = 0
	}
	for _, vs := range ms.variants {
		for _, p := range vs.pods {
			b += p.WaitingRequests
		}
	}
	return b
}

// SeedScaleDownWindow records replicas as a variant's recommendation at
// time at, when the engine has none for it: an engine that starts on a
// running fleet (a new leader, a restart) then waits a full stabilisation
// window before scaling it down, as the previous engine would have.
func (e *Engine) SeedScaleDownWindow(namespace, model, variant string, at time.Time, replicas int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := variantKey(namespace, model, variant)
	if len(e.state.Recommendations[key]) == 0 {
		e.state.Recommendations[key] = []Recommendation{{Time: at, Replica: replicas}}
	}
}

// SeedLastGood records replicas as a variant's last good decision when the
// engine has none: an engine that takes over a fleet (a new leader) holds
// a variant with bad metrics at the decision its predecessor made, not at
// the replicas the variant happens to have.
func (e *Engine) SeedLastGood(namespace, model, variant string, replicas int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := variantKey(namespace, model, variant)
	if _, ok := e.state.LastGood[key]; !ok {
		e.state.LastGood[key] = replicas
	}
}

// variantKey keys a variant in the engine's State.
func variantKey(namespace, model, variant string) string {
	return namespace + "/" + model + "/" + variant
}
