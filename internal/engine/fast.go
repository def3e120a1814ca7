package engine

import (
	"fmt"
	"time"
)

// The fast loop runs every few seconds between cycles (the controller's
// WVA_SCALE_FROM_ZERO_INTERVAL, 2 s by default, and the simulator at the
// same period). It reads only the gateway's signals, one query each for all
// models: the requests waiting at the gateway and the gateway's arrival
// rate. It wakes a model at zero itself (Wake) and, for a model that has
// replicas, asks for a cycle now when the load has outrun the last plan
// (Surge).

// Surge settings.
const (
	// SurgeRateFactor: the gateway's arrival rate is a surge once it
	// reaches this multiple of the rate the last cycle planned for.
	SurgeRateFactor = 1.5
	// SurgeMinGapSeconds: a surge asks for a cycle at most this often per
	// model (a new cycle needs fresher pod metrics than the last one had;
	// Prometheus scrapes every 15 s by default).
	SurgeMinGapSeconds = 15
)

// planned is what a model's last cycle planned for, for the surge check.
type planned struct {
	at      time.Time
	rateRPS float64 // the demand sized for: max(measured, forecast quantile)
	waiting float64 // requests waiting at the gateway then
	backlog float64 // requests waiting at the gateway and in the replicas then
}

// Wake is the rule of the fast loop for a model with no replica: when none
// of its variants has a replica and requests wait for it
// (m.GatewayWaitingRequests), its cheapest variant allowed a replica goes
// to max(1, minReplicas) at once. It is the choice the cycle makes (scale
// from zero in zero()), made without waiting for the cycle. The decision
// becomes the variant's last good one, so that a cycle that finds the new
// replica ready but not yet scraped holds it instead of returning to zero.
func (e *Engine) Wake(m *Model) (VariantDecision, bool) {
	d, ok := wake(m)
	if ok {
		e.mu.Lock()
		e.state.LastGood[variantKey(m.Namespace, m.ID, d.Variant)] = d.Desired
		e.mu.Unlock()
	}
	return d, ok
}

func wake(m *Model) (VariantDecision, bool) {
	if !(m.GatewayWaitingRequests > 0) {
		return VariantDecision{}, false
	}
	var best *Variant
	for i := range m.Variants {
		v := &m.Variants[i]
		if v.CurrentReplicas > 0 {
			return VariantDecision{}, false // not at zero: the cycle decides
		}
		if v.maxReplicas() >= 1 && (best == nil || cheaper(v, best)) {
			best = v
		}
	}
	if best == nil {
		return VariantDecision{}, false
	}
	return VariantDecision{Model: m.ID, Namespace: m.Namespace, Variant: best.Name, Accelerator: best.Accelerator,
		Desired: min(max(1, best.minReplicas()), best.maxReplicas()), Action: ActionScaleUp, Reason: ReasonScaleFromZero,
		Explanation:    fmt.Sprintf("%g requests wait for %s, which has no replica: waking the cheapest variant", m.GatewayWaitingRequests, m.ID),
		CapacityTarget: -1, ModelTarget: -1}, true
}

// Surge is the fast loop's rule for a model that has replicas: it says
// whether the model needs a cycle before the next scheduled one, and why.
// It reads only the gateway's signals in m (GatewayWaitingRequests,
// ArrivalRateRPS) and the replica counts, and compares them with what the
// model's last cycle planned for:
//   - requests wait at the gateway (which holds them only when every ready
//     replica is saturated), at least one per ready replica, and more than
//     the last cycle saw; or
//   - the gateway's arrival rate reached SurgeRateFactor times the rate the
//     last cycle sized the fleet for.
//
// A model is not surged again within SurgeMinGapSeconds of its last cycle,
// nor before the engine has planned it once. The cycle that follows
// decides with the engine's usual rules; a surge decides nothing itself.
func (e *Engine) Surge(m *Model, now time.Time) (string, bool) {
	current, ready := 0, 0
	for i := range m.Variants {
		current += m.Variants[i].CurrentReplicas
		ready += m.Variants[i].ReadyReplicas
	}
	if current == 0 {
		return "", false // Wake's case
	}
	e.mu.Lock()
	last, ok := e.state.Planned[modelKey(m.Namespace, m.ID)]
	e.mu.Unlock()
	if !ok || now.Sub(last.at).Seconds() < SurgeMinGapSeconds {
		return "", false
	}
	if w := m.GatewayWaitingRequests; w >= float64(max(ready, 1)) && w > last.waiting {
		return fmt.Sprintf("%g requests wait at the gateway for %d ready replica(s) (%g at the last cycle)", w, ready, last.waiting), true
	}
	if r := m.ArrivalRateRPS; last.rateRPS > 0 && r >= SurgeRateFactor*last.rateRPS {
		return fmt.Sprintf("the gateway's arrival rate is %.3g rps, %.2g× the %.3g rps the last cycle planned for", r, r/last.rateRPS, last.rateRPS), true
	}
	return "", false
}

// recordPlanned keeps what each model's cycle planned for (Surge's baseline).
func (c *cycle) recordPlanned() {
	for _, ms := range c.models {
		c.e.state.Planned[ms.key] = planned{at: c.now, rateRPS: max(ms.demand, ms.planned), waiting: ms.m.GatewayWaitingRequests,
			backlog: ms.waiting}
	}
}
