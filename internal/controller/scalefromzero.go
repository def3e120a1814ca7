package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// ScaleFromZero is the fast loop for models with no replica: every
// WVA_SCALE_FROM_ZERO_INTERVAL (default 2 s) it reads the demand signal
// (WVA_SCALE_FROM_ZERO_QUERY, by default the gateway's flow-control queue)
// and, for a model whose variants all have zero replicas and that has
// waiting requests, scales its cheapest variant to one replica at once,
// without waiting for the next optimisation cycle. Only the leader runs it.
type ScaleFromZero struct {
	Planner *Planner
	Clock   clock.Clock
	Log     logr.Logger
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *ScaleFromZero) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends.
func (s *ScaleFromZero) Start(ctx context.Context) error {
	for {
		if _, err := s.Check(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error(err, "scale from zero")
		}
		interval := s.Planner.Config.Settings().Main.ScaleFromZeroInterval
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

// candidate is a variant at zero replicas that could be woken.
type candidate struct {
	va   *wvav1.VariantAutoscaling
	d    *appsv1.Deployment
	cost float64
}

// idleModels groups the variants at zero replicas by model, and says which
// models have a replica somewhere (those are not at zero).
func (s *ScaleFromZero) idleModels(ctx context.Context, set Settings) (map[collector.Target][]candidate, map[collector.Target]bool, error) {
	p := s.Planner
	var list wvav1.VariantAutoscalingList
	if err := p.Client.List(ctx, &list, p.ListOptions...); err != nil {
		return nil, nil, fmt.Errorf("listing VariantAutoscalings: %w", err)
	}
	groups := map[collector.Target][]candidate{}
	busy := map[collector.Target]bool{}
	for i := range list.Items {
		va := &list.Items[i]
		if va.DeletionTimestamp != nil {
			continue
		}
		var d appsv1.Deployment
		if err := p.Client.Get(ctx, types.NamespacedName{Namespace: va.Namespace, Name: va.TargetName()}, &d); err != nil {
			continue
		}
		t := collector.Target{Namespace: va.Namespace, Model: va.Spec.ModelID}
		if specReplicas(&d) > 0 || d.Status.Replicas > 0 {
			busy[t] = true
			continue
		}
		if va.Spec.MaxReplicas != nil && *va.Spec.MaxReplicas < 1 {
			continue
		}
		groups[t] = append(groups[t], candidate{va: va, d: &d, cost: variantCost(va, acceleratorOf(va, &d), set.Accelerators)})
	}
	return groups, busy, nil
}

// wakeChoice applies the engine's wake rule (the simulator's as well) to a
// model's variants at zero.
func wakeChoice(t collector.Target, cs []candidate, waiting float64) (candidate, engine.VariantDecision, bool) {
	m := engine.Model{ID: t.Model, Namespace: t.Namespace, GatewayWaitingRequests: waiting}
	for _, c := range cs {
		v := engine.Variant{Name: c.va.Name, Accelerator: acceleratorOf(c.va, c.d), Cost: c.cost}
		if lo := c.va.Spec.MinReplicas; lo != nil {
			n := int(*lo)
			v.MinReplicas = &n
		}
		if hi := c.va.Spec.MaxReplicas; hi != nil {
			v.MaxReplicas = int(*hi)
		}
		m.Variants = append(m.Variants, v)
	}
	d, ok := engine.Wake(&m)
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

// Check runs one pass and returns the variants it woke.
func (s *ScaleFromZero) Check(ctx context.Context) ([]types.NamespacedName, error) {
	p := s.Planner
	set := p.Config.Settings()
	groups, busy, err := s.idleModels(ctx, set)
	if err != nil {
		return nil, err
	}
	idle := 0
	for t := range groups {
		if !busy[t] {
			idle++
		}
	}
	if idle == 0 {
		return nil, nil
	}
	src, err := p.currentSource(set.Main)
	if err != nil {
		return nil, err
	}
	ds, ok := src.(collector.DemandSource)
	if !ok {
		return nil, fmt.Errorf("the metrics source cannot read a demand signal; scale from zero waits for the optimisation cycle")
	}
	now := s.Clock.Now()
	demand, err := ds.Demand(ctx, now, set.Main.ScaleFromZeroQuery)
	if err != nil {
		return nil, err
	}
	targets := make([]collector.Target, 0, len(groups))
	for t := range groups {
		targets = append(targets, t)
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].String() < targets[j].String() })
	var woke []types.NamespacedName
	for _, t := range targets {
		if busy[t] || demand[t] <= 0 {
			continue
		}
		c, d, ok := wakeChoice(t, groups[t], demand[t])
		if !ok {
			continue
		}
		k := types.NamespacedName{Namespace: c.va.Namespace, Name: c.va.Name}
		if prev, ok := p.Cache.Get(k); ok && prev.Decided && prev.Decision.Reason == engine.ReasonScaleFromZero && prev.Decision.Desired >= 1 &&
			c.va.Spec.Actuator != wvav1.ActuatorDirect {
			continue // already woken; HPA or KEDA is acting on it
		}
		dec := Decision{Time: now, Decided: true, Decision: d, MetricsOK: true, MetricsReason: wvav1.ReasonMetricsFound,
			MetricsMessage: fmt.Sprintf("demand signal: %g waiting requests", demand[t])}
		p.actuate(ctx, &dec, &variant{va: c.va, target: c.d, key: k}, now)
		p.Emitter.Wake(d)
		p.Cache.Set(k, dec)
		if p.Notify != nil {
			p.Notify(k)
		}
		s.Log.Info("scaling from zero", "variant", k, "model", t.Model, "waiting", demand[t])
		woke = append(woke, k)
	}
	return woke, nil
}
