package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// decision is what the planner concluded for one VariantAutoscaling in its
// last cycle; the reconciler turns it into status (the WVA paper §IV.B,
// decisionCache).
type decision struct {
	Time time.Time
	// Decided is false when the cycle could not decide for this variant
	// (the engine failed, or the target is missing); the fields below
	// then describe why.
	Decided  bool
	Decision engine.VariantDecision
	// Metrics: ok, or the reason and message of MetricsAvailable=False.
	MetricsOK      bool
	MetricsReason  string
	MetricsMessage string
	// OptimizationMessage explains OptimizationReady=False.
	OptimizationReason, OptimizationMessage string
	// Tuning describes the tuner's state: TuningActive's reason and message.
	TuningActive                bool
	TuningReason, TuningMessage string
	// Attainment describes the model's attainment feedback:
	// AttainmentReachable's status and message ("" while the feedback
	// does not run).
	AttainmentReachable bool
	AttainmentMessage   string
	Actuation           Actuation
	ActuationErr        string
	Actuator            string
	ActuatedAt          time.Time
}

// conflict says the decision is a TargetConflict: an older VariantAutoscaling
// targets the same Deployment (the message names it), so this one is
// neither planned nor actuated.
func (d decision) conflict() bool { return d.OptimizationReason == wvav1.ReasonTargetConflict }

// decisionCache holds the last decision per VariantAutoscaling.
type decisionCache struct {
	mu sync.RWMutex
	m  map[types.NamespacedName]decision
}

// newDecisionCache returns an empty cache.
func newDecisionCache() *decisionCache {
	return &decisionCache{m: map[types.NamespacedName]decision{}}
}

// get returns the decision of a VariantAutoscaling.
func (c *decisionCache) get(k types.NamespacedName) (decision, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.m[k]
	return d, ok
}

// set stores a decision.
func (c *decisionCache) set(k types.NamespacedName, d decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = d
}

// wokenAfter returns the scale-from-zero decisions made after t.
func (c *decisionCache) wokenAfter(t time.Time) map[types.NamespacedName]decision {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[types.NamespacedName]decision{}
	for k, d := range c.m {
		if d.Decided && d.Decision.Reason == engine.ReasonScaleFromZero && d.Time.After(t) {
			out[k] = d
		}
	}
	return out
}

// retain forgets the decisions of VariantAutoscalings not in keep.
func (c *decisionCache) retain(keep map[types.NamespacedName]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !keep[k] {
			delete(c.m, k)
		}
	}
}
