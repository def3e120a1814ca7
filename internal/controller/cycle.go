// The optimisation cycle: resolve the variants, collect, plan, decide
// (actuate and describe each variant), publish and persist. Per-cycle
// state lives in cycleState, not in the planner.

package controller

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// cycle runs one optimisation cycle.
func (p *planner) cycle(ctx context.Context) error {
	now := p.Clock.Now()
	done := func(failed bool) { p.Emitter.CycleDone(p.Clock.Since(now), failed) }
	set := p.Config.settings()
	var list wvav1.VariantAutoscalingList
	if err := p.Client.List(ctx, &list, p.ListOptions...); err != nil {
		done(true)
		return fmt.Errorf("listing VariantAutoscalings: %w", err)
	}
	if !p.Store.isLoaded() { // a failed read at start: try again, never overwrite
		if _, err := p.Store.load(ctx); err != nil {
			p.Log.Error(err, "restoring tuner state; learning continues in memory and is saved once the state is read")
		}
	}
	c := &cycleState{now: now, drain: set.Main.Drain}
	c.decisions, c.groups, c.keep, c.keepTuner = p.resolve(ctx, now, list.Items)
	c.index()
	built, reports, collectErrs := p.snapshot(ctx, c, set)
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
	plan, err := p.plan(c, built)
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
	p.Emitter.TunerStepsDeferred(plan.TunerDeferred)
	p.decide(ctx, c, plan, snap)
	c.fillHeld()
	p.finish(ctx, c, plan)
	done(false)
	return nil
}

// cycleState is what one cycle collects on its way.
type cycleState struct {
	now       time.Time
	decisions map[types.NamespacedName]decision
	groups    map[collector.Target][]*variant
	// byKey and targetOf index the groups' variants (see index).
	byKey       map[types.NamespacedName]*variant
	targetOf    map[types.NamespacedName]collector.Target
	keep        map[types.NamespacedName]bool
	keepTuner   map[tuner.Key]bool
	reports     map[collector.Target]collector.Report
	collectErrs map[collector.Target]error
	// warnings are problems with a model's settings, added to its
	// variants' explanations.
	warnings map[collector.Target][]string
	// drain is how scale-downs drain (WVA_DRAIN_*).
	drain config.Drain
}

// index builds byKey and targetOf from the groups, once per cycle.
func (c *cycleState) index() {
	c.byKey = map[types.NamespacedName]*variant{}
	c.targetOf = map[types.NamespacedName]collector.Target{}
	for t, vs := range c.groups {
		for _, v := range vs {
			c.byKey[v.key], c.targetOf[v.key] = v, t
		}
	}
}

// variantAutoscaling is the cycle's VariantAutoscaling of key, or nil.
func (c *cycleState) variantAutoscaling(k types.NamespacedName) *wvav1.VariantAutoscaling {
	if v := c.byKey[k]; v != nil {
		return v.va
	}
	return nil
}

// hold marks the variants of the given models as undecided, with why.
func (c *cycleState) hold(models map[collector.Target]error, prefix string) {
	for t, err := range models {
		for _, v := range c.groups[t] {
			dec := decision{Time: c.now, OptimizationReason: wvav1.ReasonOptimizationFailed, OptimizationMessage: prefix + err.Error(),
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
func (p *planner) countTunerSteps(before [2]int) {
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
func (p *planner) decide(ctx context.Context, c *cycleState, plan *engine.Plan, snap *engine.Snapshot) {
	models := make(map[[2]string]*engine.ModelSummary, len(plan.Models))
	for i := range plan.Models {
		m := &plan.Models[i]
		models[[2]string{m.Namespace, m.Model}] = m
	}
	for i, d := range plan.Variants {
		k := types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}
		v := c.byKey[k]
		if v == nil {
			continue
		}
		t := c.targetOf[k]
		if w := c.warnings[t]; len(w) > 0 {
			d.Explanation += " (" + strings.Join(w, "; ") + ")"
		}
		dec := decision{Time: c.now, Decided: true, Decision: d, MetricsOK: true}
		metricsStatus(&dec, d, c.collectErrs[t], c.reports[t], v)
		tuningStatus(&dec, d, snap.Mode, snap.Config.TuningEnabled)
		attainmentStatus(&dec, models[[2]string{d.Namespace, d.Model}])
		if d.Reason == engine.ReasonHoldMetrics {
			dec.OptimizationReason, dec.OptimizationMessage = wvav1.ReasonMetricsUnavailable, "holding the last decision: "+d.Explanation
		}
		p.actuate(ctx, &dec, v, c)
		plan.Variants[i] = dec.Decision // the published count is the drain's
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
			dec := decision{Time: c.now, OptimizationReason: wvav1.ReasonMetricsUnavailable, Actuator: actuatorName(v.va),
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

// unresolved counts the variants whose target could not be resolved, by
// namespace and reason, for wva_variants_unresolved.
func unresolved(decisions map[types.NamespacedName]decision) map[[2]string]int {
	counts := map[[2]string]int{}
	for k, d := range decisions {
		switch d.OptimizationReason {
		case wvav1.ReasonTargetConflict, wvav1.ReasonTargetNotFound:
			counts[[2]string{k.Namespace, d.OptimizationReason}]++
		}
	}
	return counts
}

// finish stores the decisions, publishes the metrics (with a safety net
// for undecided variants: their last desired count, else their current),
// persists the tuner state and tells the reconciler.
func (p *planner) finish(ctx context.Context, c *cycleState, plan *engine.Plan) {
	// A variant the scale-from-zero loop woke while this cycle ran keeps
	// that newer decision (the cycle saw it at zero replicas).
	woken := p.Cache.wokenAfter(c.now)
	for k, d := range woken {
		c.decisions[k], c.keep[k] = d, true
	}
	pub := p.published(c, plan, woken)
	p.Emitter.Publish(pub)
	p.Emitter.SetUnresolved(unresolved(c.decisions))
	if plan != nil {
		p.Emitter.CycleSucceeded(p.Clock.Now())
	}
	if p.Announcer != nil {
		p.Announcer.announce(c.variantAutoscaling, pub)
		p.Announcer.announceSettings(c.byKey)
	}
	for k, d := range c.decisions {
		p.Cache.set(k, d)
	}
	p.Cache.retain(c.keep)
	p.drains.retain(c.keep)
	p.Store.retain(c.keepTuner)
	if err := p.Store.flush(ctx); err != nil {
		p.Log.Error(err, "persisting tuner state")
	}
	p.notifyAll(c.decisions)
}

// published is the plan the metrics show, sorted by namespace and name:
// the cycle's decisions, the woken variants' newer ones in place of theirs,
// and a hold for every other variant (see heldAtLast).
func (p *planner) published(c *cycleState, plan *engine.Plan, woken map[types.NamespacedName]decision) *engine.Plan {
	pub := &engine.Plan{Time: c.now}
	if plan != nil {
		for _, d := range plan.Variants {
			if _, ok := woken[types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}]; !ok {
				pub.Variants = append(pub.Variants, d)
			}
		}
	}
	for _, d := range woken {
		pub.Variants = append(pub.Variants, d.Decision)
	}
	decided := map[types.NamespacedName]bool{}
	for _, d := range pub.Variants {
		decided[types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}] = true
	}
	for k := range woken {
		decided[k] = true
	}
	for _, vs := range c.groups {
		for _, v := range vs {
			if !decided[v.key] {
				pub.Variants = append(pub.Variants, p.heldAtLast(c, v))
			}
		}
	}
	sort.Slice(pub.Variants, func(i, j int) bool {
		a, b := pub.Variants[i], pub.Variants[j]
		return a.Namespace+"/"+a.Variant < b.Namespace+"/"+b.Variant
	})
	return pub
}

// heldAtLast is the safety net for a variant the cycle did not decide: a
// hold at its last desired count, the cached decision's (which its decision
// keeps showing) or else its status's, and at its current count when it
// has neither.
func (p *planner) heldAtLast(c *cycleState, v *variant) engine.VariantDecision {
	cur := int(v.target.SpecReplicas)
	desired := cur
	if prev, ok := p.Cache.get(v.key); ok && prev.Decided {
		desired = prev.Decision.Desired
		d := c.decisions[v.key]
		d.Decision = prev.Decision // keep showing the last good decision
		c.decisions[v.key] = d
	} else if !v.va.Status.DesiredOptimizedAlloc.LastRunTime.IsZero() {
		desired = int(v.va.Status.DesiredOptimizedAlloc.NumReplicas)
	}
	dec := c.decisions[v.key]
	why := dec.MetricsMessage
	if dec.MetricsReason == wvav1.ReasonMetricsFound {
		why = dec.OptimizationMessage
	}
	return engine.VariantDecision{Model: v.va.Spec.ModelID, Namespace: v.va.Namespace, Variant: v.va.Name,
		Accelerator: acceleratorOf(v.va, v.target), Current: cur, Desired: desired, Reason: engine.ReasonHoldMetrics,
		Hold: holdCauseOf(dec.MetricsReason), Explanation: why}
}

// holdCauseOf is the hold cause of a variant the cycle could not plan, from
// its MetricsAvailable reason: the source failed (prometheus-error), or its
// metrics were stale, invalid, implausible or missing; metrics that were
// read but not planned (an invalid snapshot, an engine error) are invalid
// input.
func holdCauseOf(metricsReason string) engine.HoldCause {
	switch metricsReason {
	case wvav1.ReasonPrometheusError:
		return engine.HoldPrometheusError
	case wvav1.ReasonMetricsStale:
		return engine.HoldStale
	case wvav1.ReasonMetricsImplausible:
		return engine.HoldImplausible
	case wvav1.ReasonMetricsMissing:
		return engine.HoldMissing
	default:
		return engine.HoldInvalid
	}
}

// notifyAll tells the reconciler of every variant given a decision this
// cycle, in name order.
func (p *planner) notifyAll(decisions map[types.NamespacedName]decision) {
	if p.Notify == nil {
		return
	}
	keys := make([]types.NamespacedName, 0, len(decisions))
	for k := range decisions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		p.Notify(k)
	}
}

// tunerCounts sums the accepted and rejected updates of every record.
func (p *planner) tunerCounts() [2]int {
	var c [2]int
	for _, e := range p.Store.list("", "", "") {
		c[0] += e.Record.Updates
		c[1] += e.Record.Rejections
	}
	return c
}

// actuate hands a decision to the variant's actuator. A scale-down drains
// first (drain.go): the decision's count becomes the one the drain allows
// now, which is also what the metrics publish for HPA and KEDA, and its
// victims the drained pods.
func (p *planner) actuate(ctx context.Context, dec *decision, v *variant, c *cycleState) {
	now := c.now
	name := actuatorName(v.va)
	dec.Actuator = name
	a, ok := p.Actuators[name]
	if !ok {
		dec.ActuationErr = fmt.Sprintf("no actuator %q (have %v)", name, actuatorNames())
		return
	}
	if dec.Decision.Reason == engine.ReasonHoldMetrics {
		// Blind, WVA removes nothing: pods draining go back into rotation.
		if _, _, err := p.drainStep(ctx, now, c.drain, v, c.reports[c.targetOf[v.key]], int(v.target.SpecReplicas), nil); err != nil {
			p.Log.Error(err, "drain", "variant", v.key)
		}
		dec.Actuation = observe(v.target, replicas32(dec.Decision.Desired))
		return
	}
	s := Scaling{Desired: replicas32(dec.Decision.Desired), Victims: dec.Decision.Victims}
	st, drained, drainErr := p.drainStep(ctx, now, c.drain, v, c.reports[c.targetOf[v.key]], int(bounded(v.va, s.Desired)), s.Victims)
	if drained {
		s = Scaling{Desired: replicas32(st.Replicas), Victims: st.Remove}
		if st.Note != "" {
			dec.Decision.Desired, dec.Decision.Victims = st.Replicas, st.Remove
			dec.Decision.Explanation = joinMessage(dec.Decision.Explanation, st.Note)
			dec.Decision.Draining = len(st.Drain) + len(st.Waiting)
		}
	}
	res, err := a.Apply(ctx, v.va, v.target, s)
	if drainErr != nil {
		res.Message = joinMessage(res.Message, drainErr.Error())
	}
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
func (p *planner) resolve(ctx context.Context, now time.Time, items []wvav1.VariantAutoscaling) (map[types.NamespacedName]decision,
	map[collector.Target][]*variant, map[types.NamespacedName]bool, map[tuner.Key]bool) {
	decisions := map[types.NamespacedName]decision{}
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
			decisions[k] = decision{Time: now, OptimizationReason: wvav1.ReasonTargetConflict, OptimizationMessage: msg}
			continue
		}
		w, err := getWorkload(ctx, p.Client, va)
		if err != nil {
			reason := wvav1.ReasonTargetNotFound
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				reason = wvav1.ReasonOptimizationFailed
			}
			kind, _ := va.TargetKind()
			decisions[k] = decision{Time: now, OptimizationReason: reason, OptimizationMessage: fmt.Sprintf("%s %s: %v", strings.ToLower(kind), va.TargetName(), err)}
			continue
		}
		t := collector.Target{Namespace: va.Namespace, Model: va.Spec.ModelID}
		groups[t] = append(groups[t], &variant{va: va, target: w, key: k})
	}
	return decisions, groups, keep, keepTuner
}

// replicas32 is a replica count as the Kubernetes API holds it. The engine
// bounds counts far below (maxReplicas, WVA_MAX_REPLICAS_DEFAULT, the
// sizing's MaxInt32 check); the clamp keeps a conversion from wrapping.
func replicas32(n int) int32 {
	return int32(min(max(n, 0), math.MaxInt32))
}
