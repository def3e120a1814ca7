package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/metrics"
	"github.com/llm-d-incubation/wva/internal/snapshot"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// LabelAccelerator is the target label the seeds' system reads the
// accelerator type from when the VariantAutoscaling does not say it.
const LabelAccelerator = "inference.optimization/acceleratorName"

// SourceFactory builds the metrics source for the current main
// configuration (called again when it changes).
type SourceFactory func(m config.Main) (collector.Source, error)

// Planner runs the optimisation cycle: it reads every VariantAutoscaling
// and its Deployment, collects the pods' metrics, runs the engine, hands
// each decision to the variant's actuator, publishes the metrics, persists
// the tuner state, and leaves the decisions in the cache for the
// reconciler. Only the leader runs it.
type Planner struct {
	Client    client.Client // reads VariantAutoscalings and Deployments; patches /scale
	Reader    client.Reader // reads pods and nodes (uncached)
	Clock     clock.Clock
	Config    *ConfigState
	Engine    *engine.Engine
	Store     *ConfigMapStore
	Emitter   *metrics.Emitter
	Cache     *DecisionCache
	Actuators map[string]Actuator
	Sources   SourceFactory
	// Notify is called for each VariantAutoscaling after a cycle, to
	// reconcile its status (nil: nobody is told).
	Notify func(types.NamespacedName)
	Log    logr.Logger
	// ListOptions restrict the VariantAutoscalings planned (tests; in the
	// manager the cache's namespaces do).
	ListOptions []client.ListOption

	srcMu         sync.Mutex
	source        collector.Source
	sourceFor     *config.Main
	lastInventory map[string]int
	warnings      map[collector.Target][]string // this cycle's, by model
	builder       snapshot.Builder
	// Wake makes the loop run a cycle now and restart its period (a
	// configuration change); Surge makes it run an extra cycle now, the
	// periodic one keeping its time (the fast loop's surge check).
	Wake, Surge chan struct{}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (p *Planner) NeedLeaderElection() bool { return true }

// Start runs cycles every GLOBAL_OPT_INTERVAL until ctx ends. It first
// restores the tuner state persisted by the previous leader.
func (p *Planner) Start(ctx context.Context) error {
	if skipped, err := p.Store.Load(ctx); err != nil {
		p.Log.Error(err, "restoring tuner state; starting from cold")
	} else if len(skipped) > 0 {
		p.Log.Info("tuner state entries skipped", "entries", skipped)
	}
	cycle := func() {
		if err := p.Cycle(ctx); err != nil && ctx.Err() == nil {
			p.Log.Error(err, "optimisation cycle")
		}
	}
	for {
		cycle()
		interval := p.Config.Settings().Main.Interval
		if interval <= 0 {
			interval = time.Minute
		}
		t := p.Clock.NewTimer(interval)
	wait:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
				break wait
			case <-p.Wake:
				t.Stop()
				break wait
			case <-p.Surge:
				cycle() // an extra cycle: the periodic one keeps its time
			}
		}
	}
}

// variant is one VariantAutoscaling during a cycle.
type variant struct {
	va     *wvav1.VariantAutoscaling
	target *appsv1.Deployment
	key    types.NamespacedName
	pods   []string // names of its pods that report metrics (this cycle)
	// listErr is why its pods could not be listed (this cycle), if so.
	listErr error
}

// Cycle runs one optimisation cycle.
func (p *Planner) Cycle(ctx context.Context) error {
	now := p.Clock.Now()
	done := func(failed bool) { p.Emitter.CycleDone(p.Clock.Since(now), failed) }
	set := p.Config.Settings()
	var list wvav1.VariantAutoscalingList
	if err := p.Client.List(ctx, &list, p.ListOptions...); err != nil {
		done(true)
		return fmt.Errorf("listing VariantAutoscalings: %w", err)
	}
	p.warnings = nil
	if !p.Store.Loaded() { // a failed read at start: try again, never overwrite
		if _, err := p.Store.Load(ctx); err != nil {
			p.Log.Error(err, "restoring tuner state; learning continues in memory and is saved once the state is read")
		}
	}
	c := &cycleState{now: now}
	c.decisions, c.groups, c.keep, c.keepTuner = p.resolve(ctx, now, list.Items)
	built, reports, collectErrs := p.snapshot(ctx, now, set, c.groups)
	snap := built.Snapshot
	c.reports, c.collectErrs = reports, collectErrs
	for t, err := range collectErrs {
		p.Log.Error(err, "collecting metrics; the model's decisions are held", "namespace", t.Namespace, "model", t.Model)
	}
	invalid := map[collector.Target]error{}
	for t, err := range built.Held {
		if collectErrs[t] == nil {
			invalid[t] = err
		}
	}
	c.hold(invalid, "this model's snapshot is invalid, its decisions are held: ")
	before := p.tunerCounts()
	if len(snap.Models) == 0 {
		// Nothing to plan (no variant, or no model's metrics could be read).
		c.fillHeld()
		p.finish(ctx, c, nil)
		done(false)
		return nil
	}
	plan, err := built.Plan(p.Engine)
	if err != nil {
		all := map[collector.Target]error{}
		for t := range c.groups {
			all[t] = err
		}
		c.hold(all, "the engine failed, decisions are held: ")
		p.finish(ctx, c, nil)
		done(true)
		return fmt.Errorf("engine: %w", err)
	}
	p.countTunerSteps(before)
	p.decide(ctx, c, plan, snap)
	c.fillHeld()
	p.finish(ctx, c, plan)
	done(false)
	return nil
}

// cycleState is what one cycle collects on its way.
type cycleState struct {
	now         time.Time
	decisions   map[types.NamespacedName]Decision
	groups      map[collector.Target][]*variant
	keep        map[types.NamespacedName]bool
	keepTuner   map[tuner.Key]bool
	reports     map[collector.Target]collector.Report
	collectErrs map[collector.Target]error
}

// hold marks the variants of the given models as undecided, with why.
func (c *cycleState) hold(models map[collector.Target]error, prefix string) {
	for t, err := range models {
		for _, v := range c.groups[t] {
			dec := Decision{Time: c.now, OptimizationReason: wvav1.ReasonOptimizationFailed, OptimizationMessage: prefix + err.Error(),
				MetricsOK: true, MetricsReason: wvav1.ReasonMetricsFound, MetricsMessage: "metrics read", Actuator: actuatorName(v.va)}
			if cerr := c.collectErrs[t]; cerr != nil {
				dec.MetricsOK, dec.MetricsReason, dec.MetricsMessage = false, wvav1.ReasonPrometheusError, cerr.Error()
			}
			c.decisions[v.key] = dec
		}
	}
}

// countTunerSteps publishes the tuner's accepted and rejected steps since
// the counts before.
func (p *Planner) countTunerSteps(before [2]int) {
	after := p.tunerCounts()
	for i := 0; i < max(after[0]-before[0], 0); i++ {
		p.Emitter.TunerStep(true)
	}
	for i := 0; i < max(after[1]-before[1], 0); i++ {
		p.Emitter.TunerStep(false)
	}
}

// decide turns the plan into decisions, actuating each; variants the plan
// does not cover (their model could not be collected) are held.
func (p *Planner) decide(ctx context.Context, c *cycleState, plan *engine.Plan, snap *engine.Snapshot) {
	byKey := map[types.NamespacedName]*variant{}
	targetOf := map[types.NamespacedName]collector.Target{}
	for t, vs := range c.groups {
		for _, v := range vs {
			byKey[v.key] = v
			targetOf[v.key] = t
		}
	}
	for _, d := range plan.Variants {
		k := types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}
		v := byKey[k]
		if v == nil {
			continue
		}
		t := targetOf[k]
		if w := p.warnings[t]; len(w) > 0 {
			d.Explanation += " (" + strings.Join(w, "; ") + ")"
		}
		dec := Decision{Time: c.now, Decided: true, Decision: d, MetricsOK: true}
		p.metricsStatus(&dec, d, c.collectErrs[t], c.reports[t], v)
		p.tuningStatus(&dec, d, snap.Mode, snap.Config.TuningEnabled)
		if d.Reason == engine.ReasonHoldMetrics {
			dec.OptimizationReason, dec.OptimizationMessage = wvav1.ReasonMetricsUnavailable, "holding the last decision: "+d.Explanation
		}
		p.actuate(ctx, &dec, v, c.now)
		c.decisions[k] = dec
	}
}

// fillHeld gives every variant the cycle did not decide (its model's
// metrics could not be collected) a held decision that says why.
func (c *cycleState) fillHeld() {
	for t, vs := range c.groups {
		for _, v := range vs {
			if _, ok := c.decisions[v.key]; ok {
				continue
			}
			dec := Decision{Time: c.now, OptimizationReason: wvav1.ReasonMetricsUnavailable, Actuator: actuatorName(v.va),
				OptimizationMessage: "no decision this cycle; holding the last one", MetricsReason: wvav1.ReasonMetricsMissing,
				MetricsMessage: "the model was not planned this cycle"}
			if err := c.collectErrs[t]; err != nil {
				dec.MetricsReason, dec.MetricsMessage = wvav1.ReasonPrometheusError, err.Error()
				dec.OptimizationMessage = "metrics could not be read; holding the last decision"
			}
			c.decisions[v.key] = dec
		}
	}
}

// actuatorName is the VA's actuator (metrics-only by default).
func actuatorName(va *wvav1.VariantAutoscaling) string {
	if va.Spec.Actuator == "" {
		return wvav1.ActuatorMetricsOnly
	}
	return va.Spec.Actuator
}

// finish stores the decisions, publishes the metrics (with a safety net
// for undecided variants: their last desired count, else their current),
// persists the tuner state and tells the reconciler.
func (p *Planner) finish(ctx context.Context, c *cycleState, plan *engine.Plan) {
	now, decisions, keep, keepTuner, groups := c.now, c.decisions, c.keep, c.keepTuner, c.groups
	pub := &engine.Plan{Time: now}
	if plan != nil {
		pub.Variants = append(pub.Variants, plan.Variants...)
	}
	// A variant the scale-from-zero loop woke while this cycle ran keeps
	// that newer decision (the cycle saw it at zero replicas).
	woken := p.Cache.WokenAfter(now)
	for k, d := range woken {
		decisions[k], keep[k] = d, true
	}
	kept := pub.Variants[:0]
	for _, d := range pub.Variants {
		if _, ok := woken[types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}]; !ok {
			kept = append(kept, d)
		}
	}
	pub.Variants = kept
	for _, d := range woken {
		pub.Variants = append(pub.Variants, d.Decision)
	}
	decided := map[types.NamespacedName]bool{}
	for _, d := range pub.Variants {
		decided[types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}] = true
	}
	for _, vs := range groups {
		for _, v := range vs {
			if decided[v.key] {
				continue
			}
			if _, ok := woken[v.key]; ok {
				continue
			}
			cur := int(specReplicas(v.target))
			desired := cur
			if prev, ok := p.Cache.Get(v.key); ok && prev.Decided {
				desired = prev.Decision.Desired
				d := decisions[v.key]
				d.Decision = prev.Decision // keep showing the last good decision
				decisions[v.key] = d
			} else if !v.va.Status.DesiredOptimizedAlloc.LastRunTime.IsZero() {
				desired = int(v.va.Status.DesiredOptimizedAlloc.NumReplicas)
			}
			pub.Variants = append(pub.Variants, engine.VariantDecision{Model: v.va.Spec.ModelID, Namespace: v.va.Namespace, Variant: v.va.Name,
				Accelerator: acceleratorOf(v.va, v.target), Current: cur, Desired: desired, Reason: engine.ReasonHoldMetrics})
		}
	}
	sort.Slice(pub.Variants, func(i, j int) bool {
		a, b := pub.Variants[i], pub.Variants[j]
		return a.Namespace+"/"+a.Variant < b.Namespace+"/"+b.Variant
	})
	p.Emitter.Publish(pub)
	for k, d := range decisions {
		p.Cache.Set(k, d)
	}
	p.Cache.Retain(keep)
	p.Store.Retain(keepTuner)
	if err := p.Store.Flush(ctx); err != nil {
		p.Log.Error(err, "persisting tuner state")
	}
	if p.Notify != nil {
		keys := make([]types.NamespacedName, 0, len(decisions))
		for k := range decisions {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			p.Notify(k)
		}
	}
}

// tunerCounts sums the accepted and rejected updates of every record.
func (p *Planner) tunerCounts() [2]int {
	var c [2]int
	for _, e := range p.Store.List("", "", "") {
		c[0] += e.Record.Updates
		c[1] += e.Record.Rejections
	}
	return c
}

// currentSource returns the metrics source for the main configuration,
// rebuilt when the configuration changed.
func (p *Planner) currentSource(m config.Main) (collector.Source, error) {
	p.srcMu.Lock() // the scale-from-zero loop asks too
	defer p.srcMu.Unlock()
	if p.source != nil && p.sourceFor != nil && sameSource(*p.sourceFor, m) {
		return p.source, nil
	}
	s, err := p.Sources(m)
	if err != nil {
		return nil, err
	}
	p.source, p.sourceFor = s, &m
	return s, nil
}

func sameSource(a, b config.Main) bool {
	return a.Prometheus == b.Prometheus && a.PodVariantLabel == b.PodVariantLabel
}

// snapshot builds the engine's input through the snapshot builder the
// simulator shares: one model per (namespace, modelID), one variant per
// VariantAutoscaling, with its pods' metrics and the gateway's signals.
func (p *Planner) snapshot(ctx context.Context, now time.Time, set Settings, groups map[collector.Target][]*variant) (
	snapshot.Result, map[collector.Target]collector.Report, map[collector.Target]error) {
	reports := map[collector.Target]collector.Report{}
	errs := map[collector.Target]error{}
	targets := make([]collector.Target, 0, len(groups))
	for t := range groups {
		targets = append(targets, t)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].String() < targets[j].String() })
	src, srcErr := p.currentSource(set.Main)
	// A slow source must not make the cycle overrun its interval: what is
	// not read by the deadline is held, like an unreachable source.
	cctx, cancel := context.WithTimeout(ctx, CollectDeadline(set.Main.Interval))
	defer cancel()
	gw := p.gatewaySignals(cctx, now, set.Main, src, srcErr, true)
	collected := collectAll(cctx, src, srcErr, now, targets)
	models := make([]snapshot.Model, 0, len(targets))
	for i, t := range targets {
		vs := groups[t]
		sort.Slice(vs, func(i, j int) bool { return vs[i].va.Name < vs[j].va.Name })
		if err := collected[i].err; err != nil {
			errs[t] = err
			models = append(models, snapshot.Model{Model: engine.Model{ID: t.Model, Namespace: t.Namespace}, Err: err})
			continue
		}
		reports[t] = collected[i].rep
		models = append(models, p.engineModel(ctx, t, vs, set, collected[i].rep, gw))
	}
	built := p.builder.Build(now, p.snapshotSettings(ctx, set), models)
	// Each variant's pods with metrics, for its status.
	byKey := map[types.NamespacedName]*variant{}
	for _, vs := range groups {
		for _, v := range vs {
			byKey[v.key] = v
		}
	}
	for _, m := range built.Snapshot.Models {
		for _, ev := range m.Variants {
			if v := byKey[types.NamespacedName{Namespace: m.Namespace, Name: ev.Name}]; v != nil {
				for _, pod := range ev.Pods {
					v.pods = append(v.pods, pod.Name)
				}
			}
		}
	}
	return built, reports, errs
}

// snapshotSettings resolves the cycle's configuration for the builder,
// with the accelerator inventory in limited mode (the last one discovered
// when discovery fails; none known yet: planning without limits).
func (p *Planner) snapshotSettings(ctx context.Context, set Settings) snapshot.Settings {
	cfg := set.Main.Engine
	if cfg.SLOMultiplier == 0 {
		cfg.SLOMultiplier = set.QueueingModel.SLOMultiplier
	}
	cfg.Tuner = set.Tuner.Config
	sat := set.Saturation.Default
	out := snapshot.Settings{Mode: set.Main.Mode, QueueingModel: set.QueueingModel.Present,
		Tuning: set.Tuner.Enabled && set.QueueingModel.TuningEnabled, TunerPeriod: set.Tuner.Period, ScaleToZero: set.Main.ScaleToZero,
		Optimizer: set.Main.Optimizer, Engine: cfg, Saturation: &sat, ServiceClasses: set.ServiceClasses}
	if out.Optimizer != engine.OptimizerLimited {
		return out
	}
	inv, err := p.inventory(ctx, set)
	switch {
	case err == nil:
		out.Inventory, p.lastInventory = inv, inv
	case p.lastInventory != nil:
		p.Log.Error(err, "discovering accelerator inventory; using the last one discovered")
		out.Inventory = p.lastInventory
	default:
		p.Log.Error(err, "discovering accelerator inventory; none known yet, planning without limits")
		out.Optimizer = engine.OptimizerUnlimited
	}
	return out
}

// gateway are the gateway's signals per model: requests waiting in its
// queue and the arrival rate (absent: unknown).
type gateway struct {
	waiting, rate map[collector.Target]float64
}

// gatewaySignals reads the gateway's queue (WVA_SCALE_FROM_ZERO_QUERY) and,
// when asked, its arrival rate (WVA_GATEWAY_RATE_QUERY), where the source
// can. Either may be missing: the engine then plans from the pods alone.
func (p *Planner) gatewaySignals(ctx context.Context, now time.Time, m config.Main, src collector.Source, srcErr error, rate bool) gateway {
	var g gateway
	ds, ok := src.(collector.DemandSource)
	if !ok || srcErr != nil {
		return g
	}
	var err error
	if g.waiting, err = ds.Demand(ctx, now, m.ScaleFromZeroQuery); err != nil {
		p.Log.V(1).Info("gateway queue unavailable", "error", err.Error())
	}
	if q := m.GatewayRateQuery; rate && q != "" && q != config.GatewayRateQueryOff {
		if g.rate, err = ds.Demand(ctx, now, q); err != nil {
			p.Log.V(1).Info("gateway arrival rate unavailable", "error", err.Error())
		}
	}
	return g
}

// collectWorkers bounds the concurrent collections of a cycle.
const collectWorkers = 8

// CollectDeadline is how long a cycle's collection may take: half the
// cycle's interval, so that a slow metrics source leaves the engine and the
// actuation their time and the next cycle starts on schedule.
func CollectDeadline(interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = config.DefaultInterval
	}
	return interval / 2
}

type collected struct {
	rep collector.Report
	err error
}

// collectAll reads every target's metrics, up to collectWorkers at a time
// (a fleet of a hundred models is a hundred times fourteen queries). It
// returns when all are read or ctx ends, whichever is first: a target not
// read by then gets ctx's error, even from a source that ignores ctx (its
// late answer is dropped).
func collectAll(ctx context.Context, src collector.Source, srcErr error, now time.Time, targets []collector.Target) []collected {
	out := make([]collected, len(targets))
	if srcErr != nil {
		for i := range out {
			out[i].err = srcErr
		}
		return out
	}
	type result struct {
		i int
		collected
	}
	results := make(chan result, len(targets)) // late senders never block
	sem := make(chan struct{}, collectWorkers)
	go func() {
		for i, t := range targets {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				defer func() { <-sem }()
				rep, err := src.Collect(ctx, now, t)
				results <- result{i, collected{rep, err}}
			}()
		}
	}()
	done := make([]bool, len(targets))
	for range targets {
		select {
		case r := <-results:
			out[r.i], done[r.i] = r.collected, true
		case <-ctx.Done():
			err := ctx.Err()
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("metrics not read within the cycle's collection deadline (half the optimisation interval): %w", err)
			}
			for i := range out {
				if !done[i] {
					out[i].err = err
				}
			}
			return out
		}
	}
	return out
}

// engineModel translates one model: its SLO class, per-model settings,
// the gateway's signals and its variants.
func (p *Planner) engineModel(ctx context.Context, t collector.Target, vs []*variant, set Settings, rep collector.Report, gw gateway) snapshot.Model {
	m := engine.Model{ID: t.Model, Namespace: t.Namespace, GatewayWaitingRequests: gw.waiting[t], ArrivalRateRPS: gw.rate[t]}
	if ref := classRef(vs); ref != nil {
		// An unknown class must not fail the whole cycle (the engine
		// rejects a snapshot naming one): the model plans without it and
		// its decisions say why.
		switch _, ok := set.ServiceClasses[ref.Key]; {
		case ref.Name != p.Config.names.ServiceClasses:
			p.warn(t, fmt.Sprintf("sloClassRef names ConfigMap %q, but service classes are read from %q; class ignored", ref.Name, p.Config.names.ServiceClasses))
		case !ok:
			p.warn(t, fmt.Sprintf("service class %q is not in ConfigMap %s; class ignored", ref.Key, ref.Name))
		default:
			m.ServiceClass = ref.Key
		}
	}
	if e := set.QueueingModel.For(t.Model, t.Namespace); e != nil {
		m.SLOMultiplier = e.SLOMultiplier
		if e.TargetTTFTMs > 0 && e.TargetITLMs > 0 {
			m.SLO = &engine.SLO{TTFTMs: e.TargetTTFTMs, ITLMs: e.TargetITLMs}
		}
	}
	m.Saturation = set.Saturation.For(t.Model, t.Namespace)
	owners := p.podOwners(ctx, set.Main, vs)
	out := snapshot.Model{Model: m, Report: rep}
	for _, v := range vs {
		out.Variants = append(out.Variants, engineVariant(v, set, owners))
	}
	return out
}

// classRef is the model's SLO class reference: the first variant's that
// has one (variants of a model should agree).
func classRef(vs []*variant) *wvav1.ConfigMapKeyRef {
	for _, v := range vs {
		if v.va.Spec.SLOClassRef != nil {
			return v.va.Spec.SLOClassRef
		}
	}
	return nil
}

// warn records a problem with a model's settings for this cycle's decisions.
func (p *Planner) warn(t collector.Target, msg string) {
	if p.warnings == nil {
		p.warnings = map[collector.Target][]string{}
	}
	p.warnings[t] = append(p.warnings[t], msg)
}

func (p *Planner) inventory(ctx context.Context, set Settings) (map[string]int, error) {
	src := set.Main.CapacitySource
	if src == "" {
		src = "nodes"
	}
	inv, err := NewInventory(src, p.Reader, func() map[string]int { return p.Config.Settings().Inventory })
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, len(set.Accelerators))
	for k := range set.Accelerators {
		types = append(types, k)
	}
	return inv.Discover(ctx, types)
}

// podOwners maps pod names to the VariantAutoscaling whose Deployment
// selects them (when no pod label names the variant), with each pod's
// ready time.
type podInfo struct {
	variant string
	ready   time.Time
}

func (p *Planner) podOwners(ctx context.Context, m config.Main, vs []*variant) map[string]podInfo {
	out := map[string]podInfo{}
	if m.PodVariantLabel != "" || p.Reader == nil {
		return out
	}
	for _, v := range vs {
		sel, err := metav1.LabelSelectorAsSelector(v.target.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		var pods corev1.PodList
		if err := p.Reader.List(ctx, &pods, client.InNamespace(v.va.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			p.Log.Error(err, "listing pods", "variant", v.key)
			v.listErr = err
			continue
		}
		for _, pod := range pods.Items {
			if !ownedBy(&pod, v.target) {
				continue
			}
			info := podInfo{variant: v.va.Name}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					info.ready = c.LastTransitionTime.Time
				}
			}
			out[pod.Name] = info
		}
	}
	return out
}

// ownedBy says whether a pod the Deployment's selector matches is really
// the Deployment's: its controller, when it has one, is the Deployment's
// ReplicaSet (named after the Deployment and the pod's template hash).
// Overlapping selectors of two Deployments then do not mix their pods.
func ownedBy(pod *corev1.Pod, d *appsv1.Deployment) bool {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return true
	}
	return ref.Kind == "ReplicaSet" && ref.Name == d.Name+"-"+pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}

// engineVariant translates a VariantAutoscaling and its Deployment; its
// pods are the report's that the variant label names, or else that its
// Deployment owns.
func engineVariant(v *variant, set Settings, owners map[string]podInfo) snapshot.Variant {
	va, d := v.va, v.target
	acc := acceleratorOf(va, d)
	ev := engine.Variant{Name: va.Name, Accelerator: acc, CurrentReplicas: int(specReplicas(d)), ReadyReplicas: int(d.Status.ReadyReplicas)}
	if r := va.Spec.Role; r == "prefill" || r == "decode" {
		ev.Role = r
	}
	if va.Spec.MinReplicas != nil {
		minR := int(*va.Spec.MinReplicas)
		ev.MinReplicas = &minR
	}
	if va.Spec.MaxReplicas != nil {
		ev.MaxReplicas = int(*va.Spec.MaxReplicas)
	}
	if l := va.Spec.ScaleUpLimit; l != nil {
		if l.Replicas != nil {
			ev.ScaleUpLimitReplicas = int(*l.Replicas)
		}
		if f, err := strconv.ParseFloat(l.Factor, 64); err == nil && f >= 1 && f <= math.MaxFloat64 {
			ev.ScaleUpLimitFactor = f
		}
	}
	prof := profileFor(va, acc)
	if prof != nil {
		ev.AcceleratorsPerReplica = int(prof.AccCount)
		ev.MaxBatchSize = int(prof.MaxBatchSize)
		if pp, ok := profiledParams(prof); ok {
			ev.ServiceModel, ev.Params = tuner.ModelLinear, &pp
		}
	}
	ev.Cost = variantCost(va, acc, set.Accelerators)
	out := snapshot.Variant{Variant: ev, LastGood: -1}
	if a := va.Status.DesiredOptimizedAlloc; !a.LastRunTime.IsZero() {
		out.LastGood = int(a.NumReplicas)
	}
	label := set.Main.PodVariantLabel
	out.Owns = func(pm collector.PodMetrics) (bool, time.Time) {
		if label != "" {
			return pm.Labels[label] == va.Name, time.Time{}
		}
		info, ok := owners[pm.Pod.Name]
		return ok && info.variant == va.Name, info.ready
	}
	return out
}

// acceleratorOf resolves a variant's accelerator type: the spec, the
// target's label, the only profile entry, else "unknown".
func acceleratorOf(va *wvav1.VariantAutoscaling, d *appsv1.Deployment) string {
	if va.Spec.Accelerator != "" {
		return va.Spec.Accelerator
	}
	if d != nil {
		if a := d.Labels[LabelAccelerator]; a != "" {
			return a
		}
		if a := d.Spec.Template.Labels[LabelAccelerator]; a != "" {
			return a
		}
	}
	if va.Spec.ModelProfile != nil && len(va.Spec.ModelProfile.Accelerators) == 1 {
		return va.Spec.ModelProfile.Accelerators[0].Acc
	}
	return "unknown"
}

func profileFor(va *wvav1.VariantAutoscaling, acc string) *wvav1.AcceleratorProfile {
	if va.Spec.ModelProfile == nil {
		return nil
	}
	for i := range va.Spec.ModelProfile.Accelerators {
		if a := &va.Spec.ModelProfile.Accelerators[i]; a.Acc == acc {
			return a
		}
	}
	return nil
}

// profiledParams reads the seeds' linear-model parameters (decode α, β;
// prefill γ, δ; ms). The API server checked their syntax.
func profiledParams(a *wvav1.AcceleratorProfile) (tuner.Params, bool) {
	if a.PerfParms == nil {
		return tuner.Params{}, false
	}
	var v [4]float64
	for i, s := range []string{a.PerfParms.DecodeParms.Alpha, a.PerfParms.DecodeParms.Beta, a.PerfParms.PrefillParms.Gamma, a.PerfParms.PrefillParms.Delta} {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x > 0) {
			return tuner.Params{}, false
		}
		v[i] = x
	}
	return tuner.Params{Alpha: v[0], Beta: v[1], Gamma: v[2], Delta: v[3]}, true
}

// variantCost: the spec's variantCost, else the accelerator's unit cost
// times the accelerators per replica, else the engine's default.
func variantCost(va *wvav1.VariantAutoscaling, acc string, accs map[string]config.Accelerator) float64 {
	if c, err := strconv.ParseFloat(va.Spec.VariantCost, 64); err == nil && c > 0 {
		return c
	}
	if a, ok := accs[acc]; ok && a.Cost > 0 {
		perReplica := 1
		if prof := profileFor(va, acc); prof != nil && prof.AccCount > 0 {
			perReplica = int(prof.AccCount)
		}
		return a.Cost * float64(perReplica)
	}
	return engine.DefaultVariantCost
}

// metricsStatus fills MetricsAvailable from the engine's verdict and the
// collector's problems for this variant's pods.
func (p *Planner) metricsStatus(dec *Decision, d engine.VariantDecision, collectErr error, rep collector.Report, v *variant) {
	if collectErr != nil {
		dec.MetricsOK, dec.MetricsReason, dec.MetricsMessage = false, wvav1.ReasonPrometheusError, collectErr.Error()
		return
	}
	if d.Reason != engine.ReasonHoldMetrics {
		dec.MetricsReason, dec.MetricsMessage = wvav1.ReasonMetricsFound, fmt.Sprintf("%d pods report metrics", len(v.pods))
		return
	}
	dec.MetricsOK = false
	// The engine's explanation names each pod and what is wrong with it;
	// the collector's problems for this variant's pods add which series.
	msg := d.Explanation
	mine := make(map[string]bool, len(v.pods))
	for _, name := range v.pods {
		mine[name] = true
	}
	var probs []collector.Problem
	for _, pr := range rep.Problems {
		if pr.Kind != "" && mine[pr.Pod] {
			probs = append(probs, pr)
		}
	}
	dec.MetricsReason = holdReason(d.Hold, probs)
	texts := make([]string, 0, min(len(probs), 4))
	for i, pr := range probs {
		if i == 3 {
			texts = append(texts, fmt.Sprintf("and %d more", len(probs)-3))
			break
		}
		texts = append(texts, pr.String())
	}
	if len(texts) > 0 {
		msg += "; " + strings.Join(texts, "; ")
	}
	switch {
	case len(v.pods) > 0:
	case apierrors.IsForbidden(v.listErr):
		dec.MetricsReason = wvav1.ReasonPodListForbidden
		msg = fmt.Sprintf("the controller may not list pods in namespace %s, so it cannot tell which pods are %s's: grant its service account "+
			"list on pods there, or set WVA_POD_VARIANT_LABEL (%v)", v.va.Namespace, v.va.Name, v.listErr)
	case v.listErr != nil:
		dec.MetricsReason = wvav1.ReasonPodListFailed
		msg = fmt.Sprintf("listing the pods of %s failed: %v", v.va.Name, v.listErr)
	default:
		msg = fmt.Sprintf("no vLLM metrics found for model %q of %s; ensure a ServiceMonitor or PodMonitor scrapes its pods", v.va.Spec.ModelID, v.va.Name)
	}
	dec.MetricsMessage = msg
}

// holdReason maps the worst of the engine's hold cause and the kinds of
// the collector's problems for the variant's own pods to a
// MetricsAvailable reason.
func holdReason(cause engine.HoldCause, probs []collector.Problem) string {
	for _, pr := range probs {
		cause = cause.Worse(pr.Kind)
	}
	switch cause {
	case engine.HoldImplausible:
		return wvav1.ReasonMetricsImplausible
	case engine.HoldInvalid:
		return wvav1.ReasonMetricsInvalid
	case engine.HoldStale:
		return wvav1.ReasonMetricsStale
	default:
		return wvav1.ReasonMetricsMissing
	}
}

func (p *Planner) tuningStatus(dec *Decision, d engine.VariantDecision, mode engine.Mode, enabled bool) {
	switch {
	case d.Queueing != nil && d.Queueing.ParamsSource == "profiled":
		dec.TuningReason, dec.TuningMessage = wvav1.ReasonProfiled, "using the profiled parameters of spec.modelProfile"
	case mode == engine.ModeCapacityOnly:
		dec.TuningReason, dec.TuningMessage = wvav1.ReasonTuningDisabled, "the engine runs in capacity-only mode"
	case !enabled && d.Queueing == nil:
		dec.TuningReason, dec.TuningMessage = wvav1.ReasonTuningDisabled, "tuning is disabled or waiting for its period"
	default:
		dec.TuningActive, dec.TuningReason = true, wvav1.ReasonTuning
		dec.TuningMessage = "learning the parameters online"
		if d.Queueing != nil {
			if d.Queueing.Params != nil {
				q := d.Queueing.Params
				dec.TuningMessage = fmt.Sprintf("α=%.4g β=%.4g γ=%.4g ms", q.Alpha, q.Beta, q.Gamma)
			}
			if d.Queueing.Tuning != "" {
				dec.TuningMessage += "; " + d.Queueing.Tuning
			}
		}
	}
}

// actuate hands a decision to the variant's actuator.
func (p *Planner) actuate(ctx context.Context, dec *Decision, v *variant, now time.Time) {
	name := actuatorName(v.va)
	dec.Actuator = name
	a, ok := p.Actuators[name]
	if !ok {
		dec.ActuationErr = fmt.Sprintf("no actuator %q (have %v)", name, ActuatorNames())
		return
	}
	if dec.Decision.Reason == engine.ReasonHoldMetrics {
		dec.Actuation = observe(v.target, int32(dec.Decision.Desired))
		return
	}
	res, err := a.Apply(ctx, v.va, v.target, Scaling{Desired: int32(dec.Decision.Desired), Victims: dec.Decision.Victims})
	if err != nil {
		dec.ActuationErr = err.Error()
		p.Log.Error(err, "actuation", "variant", v.key)
		return
	}
	dec.Actuation = res
	if res.Patched {
		dec.ActuatedAt = now
	}
}

// resolve reads each VariantAutoscaling's Deployment and groups the
// variants by model; variants without a target get an undecided decision.
func (p *Planner) resolve(ctx context.Context, now time.Time, items []wvav1.VariantAutoscaling) (map[types.NamespacedName]Decision,
	map[collector.Target][]*variant, map[types.NamespacedName]bool, map[tuner.Key]bool) {
	decisions := map[types.NamespacedName]Decision{}
	groups := map[collector.Target][]*variant{}
	keep := map[types.NamespacedName]bool{}
	keepTuner := map[tuner.Key]bool{}
	conflicts := targetConflicts(items)
	for i := range items {
		va := &items[i]
		k := types.NamespacedName{Namespace: va.Namespace, Name: va.Name}
		keep[k] = true
		keepTuner[tuner.Key{Namespace: va.Namespace, Model: va.Spec.ModelID, Variant: va.Name}] = true
		if va.DeletionTimestamp != nil {
			continue
		}
		if owner, ok := conflicts[k]; ok {
			msg := fmt.Sprintf("deployment %s is already the target of VariantAutoscaling %s (the older); this one is neither planned nor actuated until one of them targets another deployment", va.TargetName(), owner)
			decisions[k] = Decision{Time: now, OptimizationReason: wvav1.ReasonTargetConflict, OptimizationMessage: msg, Conflict: msg}
			continue
		}
		var d appsv1.Deployment
		err := p.Client.Get(ctx, types.NamespacedName{Namespace: va.Namespace, Name: va.TargetName()}, &d)
		if err != nil {
			reason := wvav1.ReasonTargetNotFound
			if !apierrors.IsNotFound(err) {
				reason = wvav1.ReasonOptimizationFailed
			}
			decisions[k] = Decision{Time: now, OptimizationReason: reason, OptimizationMessage: fmt.Sprintf("deployment %s: %v", va.TargetName(), err)}
			continue
		}
		t := collector.Target{Namespace: va.Namespace, Model: va.Spec.ModelID}
		groups[t] = append(groups[t], &variant{va: va, target: &d, key: k})
	}
	return decisions, groups, keep, keepTuner
}

// targetConflicts finds VariantAutoscalings whose Deployment an older one
// (by creation time, then name) already targets, each with that owner's
// name. Two autoscalers on one Deployment would fight over it.
func targetConflicts(items []wvav1.VariantAutoscaling) map[types.NamespacedName]string {
	order := make([]*wvav1.VariantAutoscaling, 0, len(items))
	for i := range items {
		if items[i].DeletionTimestamp == nil {
			order = append(order, &items[i])
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	owner := map[types.NamespacedName]string{}
	out := map[types.NamespacedName]string{}
	for _, va := range order {
		target := types.NamespacedName{Namespace: va.Namespace, Name: va.TargetName()}
		if o, ok := owner[target]; ok {
			out[types.NamespacedName{Namespace: va.Namespace, Name: va.Name}] = o
			continue
		}
		owner[target] = va.Name
	}
	return out
}
