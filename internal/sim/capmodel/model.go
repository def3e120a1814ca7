// Package capmodel gives the capacity of a simulator scenario's variants
// two ways: measured, by static-fleet runs of the simulator itself
// (measure.go; what the clairvoyant bound and the validation use), and
// predicted, by WVA's capacity model (internal/capacity) given the
// variant's parameters and the model's workload (model.go).
package capmodel

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// Fleet is what WVA's capacity model sizes for n replicas of variant j of
// model m of the defaulted scenario sc: the variant's server, the
// scenario's router, and the model's workload — its token distributions
// (a trace's token counts as empirical ones), classes with their SLOs and
// priorities, shared prefixes and arrival process. Prefix groups that
// appear during a run (newPrefixGroups) are left out: a capacity is a
// steady state.
func Fleet(sc *scenario.Scenario, m, j, n int) (*capacity.Fleet, error) {
	if m < 0 || m >= len(sc.Models) || j < 0 || j >= len(sc.Models[m].Variants) {
		return nil, fmt.Errorf("capmodel: no variant %d of model %d", j, m)
	}
	mod := &sc.Models[m]
	v := &mod.Variants[j]
	w := &workload{w: &mod.Workload, slo: mod.SLO, in: mod.Workload.Input, out: mod.Workload.Output}
	arr := capacity.Arrivals{Kind: mod.Workload.Arrival, CV: mod.Workload.CV}
	if mod.Workload.Rows != nil {
		w.in, w.out = traceTokens(mod.Workload.Rows)
		if arr.Kind == "" || arr.Kind == "trace" {
			arr.Kind = "poisson"
		}
	}
	return &capacity.Fleet{Server: sim.ServerConfig(v), Replicas: n, Router: RouterOf(&sc.Gateway), Workload: w, Arrivals: arr}, nil
}

// RouterOf is the capacity model's view of the scenario's gateway.
func RouterOf(g *scenario.Gateway) capacity.Router {
	r := capacity.DefaultRouter()
	r.RoundRobin = g.Router == "round-robin"
	if w := g.Weights; w != nil {
		r.KV, r.Queue, r.Batch, r.Prefix = w.KV, w.Queue, w.Batch, w.Prefix
	}
	r.QueueThreshold = g.QueueThreshold
	if g.TimeoutSeconds > 0 {
		r.TimeoutSeconds = g.TimeoutSeconds
	}
	if s := g.Saturation; s != nil {
		r.Saturation = &capacity.Saturation{QueueThreshold: s.QueueThreshold, KVThreshold: s.KVThreshold}
	}
	return r
}

// Predicted is WVA's capacity model's answer for n replicas of variant j
// of model m of the defaulted scenario sc at attainment p, in requests/s.
func Predicted(ctx context.Context, sc *scenario.Scenario, m, j, n int, p float64, set capacity.Settings) (float64, error) {
	f, err := Fleet(sc, m, j, n)
	if err != nil {
		return 0, err
	}
	return capacity.MaxRate(ctx, f, p, set)
}

// workload draws a scenario model's requests as the simulator does: the
// token counts, then the class and the prefix group.
type workload struct {
	w       *scenario.Workload
	slo     scenario.SLO
	in, out scenario.Tokens
}

// Draw implements capacity.Workload.
func (w *workload) Draw(rng *rand.Rand, r *capacity.Request) {
	r.Input, r.Output = w.in.Draw(rng), w.out.Draw(rng)
	slo, cs := w.slo, w.w.Classes
	r.Sheddable, r.Priority = true, 0
	if len(cs) > 0 {
		c := cs[scenario.DrawClass(cs, rng)]
		slo, r.Sheddable, r.Priority = c.SLO, c.Sheddable, c.RequestPriority()
	}
	r.TTFTMs, r.ITLMs = slo.TTFTMs, slo.ITLMs
	r.Prefix, r.PrefixTokens = -1, 0
	if w.w.PrefixGroups > 0 {
		r.Prefix = rng.IntN(w.w.PrefixGroups)
		r.PrefixTokens = min(w.w.PrefixTokens, r.Input-1)
	}
}
