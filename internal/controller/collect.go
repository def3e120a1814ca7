// Collection: the cycle's metrics source, its per-cycle deadline, the
// gateway's signals, the pods' owners, and the snapshot built from them
// through the builder the simulator shares.

package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// currentSource returns the metrics source for the main configuration,
// rebuilt when the configuration changed.
func (p *planner) currentSource(m config.Main) (collector.Source, error) {
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
func (p *planner) snapshot(ctx context.Context, c *cycleState, set settings) (
	snapshot.Result, map[collector.Target]collector.Report, map[collector.Target]error) {
	now, groups := c.now, c.groups
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
	cctx, cancel := withClockTimeout(ctx, p.Clock, collectDeadline(set.Main.Interval))
	defer cancel()
	// The gateway's two queries run beside the pods' collection, under the
	// same deadline; past it the model plans from its pods alone.
	gwc := make(chan gateway, 1)
	go func() { gwc <- p.gatewaySignals(cctx, now, set.Main, src, srcErr, true) }()
	collected := collectAll(cctx, src, srcErr, now, targets)
	var gw gateway
	select {
	case gw = <-gwc:
	case <-cctx.Done():
		select { // read at the deadline: keep it
		case gw = <-gwc:
		default:
		}
	}
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
		models = append(models, p.engineModel(ctx, c, t, vs, set, collected[i].rep, gw))
	}
	built := p.builder.Build(now, p.snapshotSettings(ctx, set), models)
	// Each variant's pods with metrics, for its status: every pod, also
	// those a group merges into one replica.
	planned := map[collector.Target]bool{}
	for _, m := range built.Snapshot.Models {
		planned[collector.Target{Namespace: m.Namespace, Model: m.ID}] = true
	}
	for _, m := range models {
		if !planned[m.Target()] {
			continue
		}
		for _, sv := range m.Variants {
			v := c.byKey[types.NamespacedName{Namespace: m.Model.Namespace, Name: sv.Variant.Name}]
			for _, pm := range m.Report.Pods {
				if mine, _ := sv.Owns(pm); v != nil && mine {
					v.pods = append(v.pods, pm.Pod.Name)
				}
			}
		}
	}
	return built, reports, errs
}

// snapshotSettings resolves the cycle's configuration for the builder,
// with the accelerator inventory in limited mode (the last one discovered
// when discovery fails; none known yet: planning without limits).
func (p *planner) snapshotSettings(ctx context.Context, set settings) snapshot.Settings {
	cfg := set.Main.Engine
	if cfg.SLOMultiplier == 0 {
		cfg.SLOMultiplier = set.QueueingModel.SLOMultiplier
	}
	cfg.Tuner = set.Tuner.Config
	cfg.TunerBudget = set.Tuner.Budget
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
func (p *planner) gatewaySignals(ctx context.Context, now time.Time, m config.Main, src collector.Source, srcErr error, rate bool) gateway {
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

// collectDeadline is how long a cycle's collection may take: half the
// cycle's interval, so that a slow metrics source leaves the engine and the
// actuation their time and the next cycle starts on schedule.
func collectDeadline(interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = config.DefaultInterval
	}
	return interval / 2
}

// withClockTimeout is context.WithTimeout on the planner's clock (a fake
// one in tests): the context ends with context.DeadlineExceeded when the
// clock's timer fires. It reports no Deadline, as the clock need not be
// the wall clock that network calls measure against.
func withClockTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clk.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel(context.DeadlineExceeded)
		case <-ctx.Done():
		}
	}()
	return clockDeadline{ctx}, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// clockDeadline reports a deadline its timer reached as
// context.DeadlineExceeded, as a context.WithTimeout would.
type clockDeadline struct{ context.Context }

func (c clockDeadline) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
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
func (p *planner) engineModel(ctx context.Context, c *cycleState, t collector.Target, vs []*variant, set settings, rep collector.Report, gw gateway) snapshot.Model {
	m := engine.Model{ID: t.Model, Namespace: t.Namespace, GatewayWaitingRequests: gw.waiting[t], ArrivalRateRPS: gw.rate[t]}
	if ref := classRef(vs); ref != nil {
		// An unknown class must not fail the whole cycle (the engine
		// rejects a snapshot naming one): the model plans without it and
		// its decisions say why.
		switch _, ok := set.ServiceClasses[ref.Key]; {
		case ref.Name != p.Config.names.ServiceClasses:
			c.warn(t, fmt.Sprintf("sloClassRef names ConfigMap %q, but service classes are read from %q; class ignored", ref.Name, p.Config.names.ServiceClasses))
		case !ok:
			c.warn(t, fmt.Sprintf("service class %q is not in ConfigMap %s; class ignored", ref.Key, ref.Name))
		default:
			m.ServiceClass = ref.Key
		}
	}
	if e := set.QueueingModel.For(t.Model, t.Namespace); e != nil {
		m.SLOMultiplier, m.Attainment, m.SurgeRatio = e.SLOMultiplier, e.Attainment, e.SurgeRatio
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

// warn records a problem with a model's settings for this cycle's decisions.
func (c *cycleState) warn(t collector.Target, msg string) {
	if c.warnings == nil {
		c.warnings = map[collector.Target][]string{}
	}
	c.warnings[t] = append(c.warnings[t], msg)
}

func (p *planner) inventory(ctx context.Context, set settings) (map[string]int, error) {
	src := set.Main.CapacitySource
	if src == "" {
		src = "nodes"
	}
	inv, err := newInventory(src, p.Reader, func() map[string]int { return p.Config.settings().Inventory })
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, len(set.Accelerators))
	for k := range set.Accelerators {
		types = append(types, k)
	}
	return inv.Discover(ctx, types)
}

func (p *planner) podOwners(ctx context.Context, m config.Main, vs []*variant) map[string]podInfo {
	out := map[string]podInfo{}
	if m.PodVariantLabel != "" || p.Reader == nil {
		return out
	}
	for _, v := range vs {
		lws := v.target.isLWS()
		sel := v.target.Selector
		if sel == nil || sel.Empty() {
			continue
		}
		var pods corev1.PodList
		if err := p.Reader.List(ctx, &pods, client.InNamespace(v.va.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			p.Log.Error(err, "listing pods", "variant", v.key)
			v.listErr = err
			continue
		}
		v.podList = pods.Items
		for _, pod := range pods.Items {
			if !ownedBy(&pod, v.target) {
				continue
			}
			info := podInfo{variant: v.va.Name, created: pod.CreationTimestamp.Time}
			if lws {
				info.group = pod.Labels[lwsGroupLabel]
			}
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
