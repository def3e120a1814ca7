package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// scaleFromZero is the fast loop: every WVA_SCALE_FROM_ZERO_INTERVAL
// (default 2 s) it reads the gateway's signals, requests waiting in its
// queue (WVA_SCALE_FROM_ZERO_QUERY, by default the flow-control queue) and
// the arrival rate (WVA_GATEWAY_RATE_QUERY). For a model whose variants all
// have zero replicas and that has waiting requests, it scales the cheapest
// variant to one replica at once (engine.Engine.Wake). For a model with
// replicas whose load has outrun the last plan (engine.Engine.Surge; on
// with WVA_SURGE=true) it makes the optimisation loop run an extra cycle
// now; the periodic cycles keep their times. Only the leader runs it.
type scaleFromZero struct {
	Planner *planner
	Clock   clock.Clock
	Log     logr.Logger
}

var _ manager.LeaderElectionRunnable = (*scaleFromZero)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *scaleFromZero) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends.
func (s *scaleFromZero) Start(ctx context.Context) error {
	for {
		if _, err := s.check(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error(err, "scale from zero")
		}
		interval := s.Planner.Config.settings().Main.ScaleFromZeroInterval
		if interval <= 0 {
			interval = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.Clock.After(interval):
		}
	}
}

// candidate is a variant of a model the fast loop checks.
type candidate struct {
	va   *wvav1.VariantAutoscaling
	d    *workload
	cost float64
}

// fastModels groups the variants by model and says which models have a
// replica somewhere (those are not at zero).
func (s *scaleFromZero) fastModels(ctx context.Context, set settings) (map[collector.Target][]candidate, map[collector.Target]bool, error) {
	p := s.Planner
	var list wvav1.VariantAutoscalingList
	if err := p.Client.List(ctx, &list, p.ListOptions...); err != nil {
		return nil, nil, fmt.Errorf("listing VariantAutoscalings: %w", err)
	}
	groups := map[collector.Target][]candidate{}
	busy := map[collector.Target]bool{}
	conflicts := targetConflicts(list.Items)
	for i := range list.Items {
		va := &list.Items[i]
		if _, lost := conflicts[types.NamespacedName{Namespace: va.Namespace, Name: va.Name}]; lost || va.DeletionTimestamp != nil {
			continue
		}
		d, err := getWorkload(ctx, p.Client, va)
		if err != nil {
			continue
		}
		t := collector.Target{Namespace: va.Namespace, Model: va.Spec.ModelID}
		if d.SpecReplicas > 0 || d.StatusReplicas > 0 {
			busy[t] = true
		}
		groups[t] = append(groups[t], candidate{va: va, d: d, cost: variantCost(va, acceleratorOf(va, d), set.Accelerators, variantSettings(va, d).accelerators)})
	}
	return groups, busy, nil
}

// fastModel is what the fast loop tells the engine about a model: its
// variants' replica counts and bounds, and the gateway's signals.
func fastModel(t collector.Target, cs []candidate, waiting, rate float64) engine.Model {
	m := engine.Model{ID: t.Model, Namespace: t.Namespace, GatewayWaitingRequests: waiting, ArrivalRateRPS: rate}
	for _, c := range cs {
		if hi := c.va.Spec.MaxReplicas; hi != nil && *hi < 1 {
			continue // may have no replica (the engine reads 0 as no bound)
		}
		cur := int(c.d.SpecReplicas)
		v := engine.Variant{Name: c.va.Name, Accelerator: acceleratorOf(c.va, c.d), Cost: c.cost, CurrentReplicas: cur,
			ReadyReplicas: min(int(c.d.ReadyReplicas), cur)}
		v.MinReplicas, v.MaxReplicas = replicaBounds(c.va) // as the cycle's snapshot bounds them
		m.Variants = append(m.Variants, v)
	}
	return m
}

// wakeChoice applies the engine's wake rule (the simulator's as well) to a
// model at zero.
func (s *scaleFromZero) wakeChoice(t collector.Target, cs []candidate, waiting float64) (candidate, engine.VariantDecision, bool) {
	m := fastModel(t, cs, waiting, 0)
	d, ok := s.Planner.Engine.Wake(&m)
	if !ok {
		return candidate{}, d, false
	}
	for _, c := range cs {
		if c.va.Name == d.Variant {
			return c, d, true
		}
	}
	return candidate{}, d, false
}

// check runs one pass and returns the variants it woke.
func (s *scaleFromZero) check(ctx context.Context) ([]types.NamespacedName, error) {
	p := s.Planner
	set := p.Config.settings()
	groups, busy, err := s.fastModels(ctx, set)
	if err != nil {
		return nil, err
	}
	surge := set.Main.Surge
	if !surge && len(busy) == len(groups) {
		return nil, nil // nothing at zero, and surges are off
	}
	if len(groups) == 0 {
		return nil, nil
	}
	src, err := p.currentSource(set.Main)
	if err != nil {
		return nil, err
	}
	if _, ok := src.(collector.DemandSource); !ok {
		return nil, fmt.Errorf("the metrics source cannot read the gateway's signals; scaling waits for the optimisation cycle")
	}
	now := s.Clock.Now()
	gw := p.gatewaySignals(ctx, now, set.Main, src, nil, surge) // waking needs only the queue
	if gw.waiting == nil && gw.rate == nil {
		return nil, fmt.Errorf("the gateway's queue and arrival rate could not be read; scaling waits for the optimisation cycle")
	}
	targets := make([]collector.Target, 0, len(groups))
	for t := range groups {
		targets = append(targets, t)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].String() < targets[j].String() })
	var woke []types.NamespacedName
	for _, t := range targets {
		if busy[t] {
			if surge {
				s.surge(t, groups[t], gw, now)
			}
			continue
		}
		if k, ok := s.wake(ctx, t, groups[t], gw.waiting[t], now); ok {
			woke = append(woke, k)
		}
	}
	return woke, nil
}

// surge asks the optimisation loop for a cycle now when the engine says
// the model's load has outrun its last plan.
func (s *scaleFromZero) surge(t collector.Target, cs []candidate, gw gateway, now time.Time) {
	m := fastModel(t, cs, gw.waiting[t], gw.rate[t])
	why, ok := s.Planner.Engine.Surge(&m, now)
	if !ok {
		return
	}
	select {
	case s.Planner.Surge <- struct{}{}:
		s.Log.Info("load surge: running a cycle now", "model", t.Model, "namespace", t.Namespace, "why", why)
	default: // a cycle is already asked for
	}
}

// wake scales a model at zero with waiting requests to its cheapest
// variant's first replica.
func (s *scaleFromZero) wake(ctx context.Context, t collector.Target, cs []candidate, waiting float64, now time.Time) (types.NamespacedName, bool) {
	p := s.Planner
	if !(waiting > 0) {
		return types.NamespacedName{}, false
	}
	c, d, ok := s.wakeChoice(t, cs, waiting)
	if !ok {
		return types.NamespacedName{}, false
	}
	k := types.NamespacedName{Namespace: c.va.Namespace, Name: c.va.Name}
	if prev, ok := p.Cache.get(k); ok && prev.Decided && prev.Decision.Reason == engine.ReasonScaleFromZero && prev.Decision.Desired >= 1 &&
		c.va.Spec.Actuator != wvav1.ActuatorDirect {
		return types.NamespacedName{}, false // already woken; HPA or KEDA is acting on it
	}
	dec := decision{Time: now, Decided: true, Decision: d, MetricsOK: true, MetricsReason: wvav1.ReasonMetricsFound,
		MetricsMessage: fmt.Sprintf("demand signal: %g waiting requests", waiting)}
	p.actuate(ctx, &dec, &variant{va: c.va, target: c.d, key: k}, &cycleState{now: now}) // a scale-up: no drain
	p.Emitter.Wake(d)
	p.Cache.set(k, dec)
	if p.Notify != nil {
		p.Notify(k)
	}
	s.Log.Info("scaling from zero", "variant", k, "model", t.Model, "waiting", waiting)
	return k, true
}
