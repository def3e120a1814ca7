package baselines

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/drain"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// wvaEpoch anchors the simulator's clock for the engine.
var wvaEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WVA runs the decision engine on what the simulated metrics pipeline
// shows, keeping the engine (its state and learned parameters) across
// cycles.
type WVA struct {
	cfg   scenario.WVAConfig
	e     *engine.Engine
	b     snapshot.Builder
	trace func(now float64, p *engine.Plan) // tests inspect the plans
	// victims of the last plan, and the pods marked so far: a mark stays
	// on a pod until it is set again, so marks no longer meant are reset.
	victims map[string]bool
	marked  map[string]bool
	// drainOut and drainBack are the last decision's drain marks: the
	// pods to take out of rotation and to put back (see Drains).
	drainOut, drainBack []string
	// errs counts the engine's errors by message; firstErr is the time of
	// each one's first occurrence. Both end up as warnings on the result.
	errs     map[string]int
	firstErr map[string]float64
	// parts is the last plan's cost breakdown per model (cost per hour)
	// from partsSince on; spent is what the plans before it added up to.
	parts      map[string]engine.Breakdown
	partsSince float64
	spent      map[string]*engine.Breakdown
	// unreachable counts, per model, the plans that said its attainment
	// target was out of reach; the run reports them as a warning.
	unreachable map[string]*unreachable
}

// unreachable is a model's record of plans that said its attainment
// target was out of reach: how many, the first one's time and note.
type unreachable struct {
	cycles int
	first  float64
	note   string
}

var (
	_ sim.DeletionCoster = (*WVA)(nil)
	_ sim.Drainer        = (*WVA)(nil)
	_ sim.FastLooper     = (*WVA)(nil)
	_ sim.Warner         = (*WVA)(nil)
	_ sim.Breakdowner    = (*WVA)(nil)
)

// victimCost is the pod-deletion-cost WVA puts on the pods it chose to
// remove (the ReplicaSet removes the lowest first; unmarked pods have 0).
const victimCost = -100

// DeletionCosts implements DeletionCoster: the last plan's victims get
// victimCost, pods marked before and no longer victims get 0 back.
func (w *WVA) DeletionCosts(*sim.View) map[string]int32 {
	out := map[string]int32{}
	for name := range w.marked {
		if !w.victims[name] {
			out[name] = 0
			delete(w.marked, name)
		}
	}
	for name := range w.victims {
		out[name] = victimCost
		w.marked[name] = true
	}
	return out
}

func init() {
	sim.RegisterBaseline(sim.Baseline{Name: "wva", Order: 10, Default: true, Sweep: true,
		Summary: "WVA's decision engine, the same code as the controller",
		New:     func(sc *scenario.Scenario, _ string) (sim.Autoscaler, error) { return newWVA(sc), nil },
		Knobs: map[string]sim.Knob{
			"spareQuantile": {Grid: []float64{0.5, 0.8, 0.95, 0.99}, Field: func(a *scenario.Autoscalers) *float64 { return &a.WVA.SpareQuantile }, Check: sim.FromZero(1, false, true)},
			"attainment": {Grid: []float64{0.9, engine.DefaultAttainment}, Field: func(a *scenario.Autoscalers) *float64 { return &a.WVA.Attainment }, Unset: engine.DefaultAttainment,
				// ttftAttainment stands for the target where none is set.
				UnsetFrom: func(a *scenario.Autoscalers) float64 { return a.WVA.TTFTAttainment }, Check: sim.FromZero(1, true, true)},
			"ttftAttainment":      {Grid: []float64{0, 0.99}, Field: func(a *scenario.Autoscalers) *float64 { return &a.WVA.TTFTAttainment }, Check: sim.FromZero(1, false, true)},
			"kvCacheThreshold":    {Grid: []float64{0.7, 0.8, 0.9}, Field: func(a *scenario.Autoscalers) *float64 { return &a.WVA.KVCacheThreshold }, Unset: engine.DefaultKVCacheThreshold, Check: kvThreshold},
			"drainTimeoutSeconds": {Field: drainTimeout, Check: sim.FromZero(scenario.MaxDrainTimeoutSeconds, false, false)},
			"surgeRatio":          {Field: func(a *scenario.Autoscalers) *float64 { return &a.WVA.SurgeRatio }, Unset: 1, Check: surgeRatio},
			// No default grid, like surgeRatio; a point below the
			// kvCacheThreshold swept with it is that threshold.
			"kvScaleUpThreshold": {Field: func(a *scenario.Autoscalers) *float64 { return &a.WVA.KVScaleUpThreshold },
				UnsetFrom: func(a *scenario.Autoscalers) float64 { return a.WVA.KVCacheThreshold }, Unset: engine.DefaultKVCacheThreshold, Check: kvThreshold},
		}})
}

// surgeRatio checks a sweep's declared surge: 1 (none) to
// engine.MaxSurgeRatio.
func surgeRatio(v float64) error {
	if !engine.SurgeRatioOK(v) {
		return fmt.Errorf("must be in [1, %g] (1: no surge), got %g", engine.MaxSurgeRatio, v)
	}
	return nil
}

// kvThreshold checks a sweep's KV threshold (kvThresholdOK).
func kvThreshold(v float64) error {
	if !scenario.KVThresholdOK(v) {
		return fmt.Errorf("must be in (%g, 1], above the saturation analyzer's spare trigger, got %g", engine.DefaultKVSpareTrigger, v)
	}
	return nil
}

// drainTimeout is the knob's field: the scenario's drain timeout, the
// default when it sets none. The field is a pointer, so each call gives
// the Autoscalers a fresh one: sweep points copied from one scenario must
// not share it.
func drainTimeout(a *scenario.Autoscalers) *float64 {
	v := scenario.DefaultDrainTimeoutSeconds
	if a.WVA.DrainTimeoutSeconds != nil {
		v = *a.WVA.DrainTimeoutSeconds
	}
	a.WVA.DrainTimeoutSeconds = &v
	return &v
}

func newWVA(sc *scenario.Scenario) *WVA {
	e := engine.New(nil)
	if sc.Autoscalers.WVA.CapacityModel == engine.CapacityFleet {
		e.SetCapacityModel(fleetCurves())
	}
	return &WVA{cfg: sc.Autoscalers.WVA, e: e, victims: map[string]bool{}, marked: map[string]bool{},
		errs: map[string]int{}, firstErr: map[string]float64{}}
}

// Name implements Autoscaler.
func (w *WVA) Name() string { return "wva" }

// Interval implements Autoscaler.
func (w *WVA) Interval() float64 { return w.cfg.IntervalSeconds }

// Decide implements Autoscaler.
func (w *WVA) Decide(v *sim.View) []int {
	out, pos := unchanged(v)
	built := w.b.Build(wvaTime(v.Now), w.settings(v), w.models(v))
	for t, err := range built.Held {
		// The controller holds the model and says why on its variants'
		// status; the run reports it at the end.
		w.fail(v.Now, fmt.Sprintf("model %s held: %v", t.Model, err))
	}
	if len(built.Snapshot.Models) == 0 {
		return out
	}
	plan, err := built.Plan(w.e)
	if err != nil {
		// The controller holds every variant and reports the error on
		// their status; the run does the same.
		w.fail(v.Now, "the engine failed, holding every variant: "+err.Error())
		return out
	}
	if w.trace != nil {
		w.trace(v.Now, plan)
	}
	w.account(v.Now, plan)
	w.noteReach(v.Now, plan)
	clear(w.victims)
	w.drainOut, w.drainBack = w.drainOut[:0], w.drainBack[:0]
	for _, d := range plan.Variants {
		i, ok := pos[d.Model+"/"+d.Variant]
		if !ok {
			continue
		}
		st := w.drain(v, &v.Variants[i], d)
		out[i] = st.Replicas
		for _, name := range st.Remove {
			w.victims[name] = true
		}
		w.drainOut = append(w.drainOut, st.Drain...)
		w.drainBack = append(w.drainBack, st.Restore...)
	}
	return out
}

// drain runs the controller's drain planner on a variant's decision: the
// count to apply now, the pods to take out of rotation or put back, and
// the drained pods to mark for deletion. With draining off (a
// drainTimeoutSeconds of 0) it is the decision, its victims marked.
func (w *WVA) drain(v *sim.View, vv *sim.VariantView, d engine.VariantDecision) drain.Step {
	pol := drain.Policy{Timeout: time.Duration(*w.cfg.DrainTimeoutSeconds * float64(time.Second))}
	if !pol.Enabled() {
		return drain.Step{Replicas: d.Desired, Remove: d.Victims}
	}
	inFlight := make(map[string]float64, len(vv.Pods))
	for _, p := range vv.Pods {
		inFlight[p.Name] = p.RunningRequests + p.WaitingRequests
	}
	pods := make([]drain.Pod, 0, len(vv.Members))
	for _, m := range vv.Members {
		n, ok := inFlight[m.Name]
		if !ok {
			n = -1
		}
		pods = append(pods, drain.Pod{Name: m.Name, Ready: m.Ready, Draining: m.Draining, Since: wvaTime(m.DrainSince), InFlight: n})
	}
	return drain.Plan(wvaTime(v.Now), pol, vv.Current, d.Desired, d.Victims, pods)
}

// account adds the last plan's cost breakdown over the time since it was
// made and keeps this plan's. A model the plan leaves out (held by the
// snapshot builder) keeps its last breakdown, as its replicas do.
func (w *WVA) account(now float64, p *engine.Plan) {
	w.spend(now)
	if w.parts == nil {
		w.parts = map[string]engine.Breakdown{}
	}
	for _, m := range p.Models {
		if m.CostBreakdown != nil {
			w.parts[m.Model] = *m.CostBreakdown
		}
	}
}

// spend adds the current breakdown's cost from partsSince to now.
func (w *WVA) spend(now float64) {
	if now <= w.partsSince {
		return
	}
	if w.spent == nil {
		w.spent = map[string]*engine.Breakdown{}
	}
	for m, b := range w.parts {
		if w.spent[m] == nil {
			w.spent[m] = &engine.Breakdown{}
		}
		w.spent[m].Add(b, (now-w.partsSince)/3600)
	}
	w.partsSince = now
}

// CostBreakdown implements Breakdowner: each model's cost by the part of
// the plans' breakdown that asked for it, to the run's end.
func (w *WVA) CostBreakdown(end float64) map[string]map[string]float64 {
	w.spend(end)
	out := make(map[string]map[string]float64, len(w.spent))
	for m, b := range w.spent {
		parts := map[string]float64{}
		for _, p := range b.Parts() {
			if p.Value != 0 {
				parts[p.Name] = p.Value
			}
		}
		out[m] = parts
	}
	return out
}

// Drains implements Drainer: the last decision's drain marks.
func (w *WVA) Drains(*sim.View) (out, back []string) { return w.drainOut, w.drainBack }

// noteReach counts the plan's models whose attainment target it said was
// out of reach (engine.ModelSummary.AttainmentOutOfReach).
func (w *WVA) noteReach(now float64, p *engine.Plan) {
	for _, m := range p.Models {
		if !m.AttainmentOutOfReach {
			continue
		}
		if w.unreachable == nil {
			w.unreachable = map[string]*unreachable{}
		}
		u := w.unreachable[m.Model]
		if u == nil {
			u = &unreachable{first: now, note: m.FeedbackNote}
			w.unreachable[m.Model] = u
		}
		u.cycles++
	}
}

// fail counts a problem of a cycle for the run's warnings.
func (w *WVA) fail(now float64, msg string) {
	if w.errs[msg] == 0 {
		w.firstErr[msg] = now
	}
	w.errs[msg]++
}

// unchanged returns a decision that changes nothing (−1 per variant) and
// each variant's index by "model/variant".
func unchanged(v *sim.View) ([]int, map[string]int) {
	out := make([]int, len(v.Variants))
	pos := make(map[string]int, len(v.Variants))
	for i, vv := range v.Variants {
		out[i] = -1
		pos[v.Scenario.Models[vv.Model].Name+"/"+vv.Name] = i
	}
	return out, pos
}

// FastInterval implements FastLooper: the controller's fast loop period.
func (w *WVA) FastInterval() float64 { return w.cfg.ScaleFromZeroIntervalSeconds }

// Fast implements FastLooper with the engine's rules of the controller's
// fast loop, on what that loop reads: the gateway's queue and arrival rate
// and the replica counts. It wakes a model at zero, and runs the cycle now
// when a model's load has outran its last plan.
func (w *WVA) Fast(v *sim.View) ([]int, bool) {
	out, pos := unchanged(v)
	now := wvaTime(v.Now)
	cycleNow := false
	for m, mod := range v.Scenario.Models {
		em := engine.Model{ID: mod.Name, GatewayWaitingRequests: float64(v.GatewayWaiting[m]), ArrivalRateRPS: max(v.GatewayArrivalRPS[m], 0)}
		for _, vv := range v.Variants {
			if vv.Model == m {
				lo := vv.MinReplicas
				em.Variants = append(em.Variants, engine.Variant{Name: vv.Name, Accelerator: vv.Accelerator, Cost: vv.Cost,
					MinReplicas: &lo, MaxReplicas: vv.MaxReplicas, CurrentReplicas: vv.Current, ReadyReplicas: vv.Ready})
			}
		}
		if d, ok := w.e.Wake(&em); ok {
			out[pos[d.Model+"/"+d.Variant]] = d.Desired
			continue
		}
		if w.cfg.Surge {
			if _, ok := w.e.Surge(&em, now); ok {
				cycleNow = true
			}
		}
	}
	return out, cycleNow
}

// Warnings implements Warner: each problem of the run's cycles, how often
// and since when, and each model whose attainment target the plans said
// was out of reach.
func (w *WVA) Warnings() []string {
	msgs := make([]string, 0, len(w.errs))
	for m := range w.errs {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("wva: in %d cycle(s) from t=%.0f s: %s", w.errs[m], w.firstErr[m], m))
	}
	models := make([]string, 0, len(w.unreachable))
	for m := range w.unreachable {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		u := w.unreachable[m]
		out = append(out, fmt.Sprintf("wva: model %s: the plan said the attainment target was out of reach in %d cycle(s) from t=%.0f s; the first: %s",
			m, u.cycles, u.first, u.note))
	}
	return out
}

// wvaTime is the engine's clock at simulated time t.
func wvaTime(t float64) time.Time { return wvaEpoch.Add(time.Duration(t * float64(time.Second))) }

// fleetCurves is the fleet capacity model the simulator's WVA runs share:
// synchronous (a curve's point is computed when a cycle first needs it, so
// a run is deterministic) and process-wide (a sweep computes each point
// once; a point's value does not depend on which run computed it).
var fleetCurves = sync.OnceValue(func() *engine.CapacityModel { return engine.NewCapacityModel(0) })

// settings are the engine's settings from the scenario, as the
// controller's ConfigMaps would give them (scale to zero allowed: a
// scenario's minReplicas 0 means it).
func (w *WVA) settings(v *sim.View) snapshot.Settings {
	tuning := w.cfg.Tuning == nil || *w.cfg.Tuning
	set := snapshot.Settings{Mode: engine.Mode(w.cfg.Mode), QueueingModel: true, Tuning: tuning, ScaleToZero: true,
		Optimizer: engine.OptimizerKind(w.cfg.Optimizer), Inventory: v.Scenario.Inventory,
		Engine: engine.Config{SaturationPolicy: w.cfg.SaturationPolicy, SpareQuantile: w.cfg.SpareQuantile, SurgeRatio: w.cfg.SurgeRatio,
			DisableForecast: w.cfg.DisableForecast, DisableFeedback: w.cfg.DisableFeedback, TTFTAttainment: w.cfg.TTFTAttainment,
			CapacityModel: w.cfg.CapacityModel, Attainment: w.cfg.Attainment, TokenCV: w.cfg.TokenCV,
			ProvisioningSeconds: w.cfg.ProvisioningSeconds, ScaleDownStabilizationSeconds: w.cfg.ScaleDownStabilizationSeconds}}
	if n, kv, up := w.cfg.MinNonSaturatedReplicas, w.cfg.KVCacheThreshold, w.cfg.KVScaleUpThreshold; n > 0 || kv > 0 || up > 0 {
		set.Saturation = &engine.SaturationConfig{MinNonSaturatedReplicasForScaleDown: n, KVCacheThreshold: kv, KVScaleUpThreshold: up}
	}
	return set
}

// models translates the view: pod metrics through the controller's
// metrics-source seam (as the planner reads them from Prometheus), each
// pod's variant named by a label.
func (w *WVA) models(v *sim.View) []snapshot.Model {
	src := ViewSource{View: v}
	now := wvaTime(v.Now)
	out := make([]snapshot.Model, 0, len(v.Scenario.Models))
	for m, mod := range v.Scenario.Models {
		rep, _ := src.Collect(context.Background(), now, collector.Target{Model: mod.Name}) // a view cannot fail
		em := engine.Model{ID: mod.Name, Priority: mod.Priority, SLO: &engine.SLO{TTFTMs: mod.SLO.TTFTMs, ITLMs: mod.SLO.ITLMs}, Attainment: mod.SLO.Attainment,
			SurgeRatio: mod.SurgeRatio, GatewayWaitingRequests: float64(v.GatewayWaiting[m]), ArrivalRateRPS: max(v.GatewayArrivalRPS[m], 0)}
		sm := snapshot.Model{Model: em, Report: rep}
		for _, vv := range v.Variants {
			if vv.Model != m {
				continue
			}
			lo, name := vv.MinReplicas, vv.Name
			ev := engine.Variant{Name: vv.Name, Accelerator: vv.Accelerator, AcceleratorsPerReplica: vv.AcceleratorsPerReplica,
				Cost: vv.Cost, MinReplicas: &lo, MaxReplicas: vv.MaxReplicas, CurrentReplicas: vv.Current, ReadyReplicas: vv.Ready,
				MaxBatchSize: vv.Config.MaxBatchSize}
			switch {
			case vv.Config.Profile != nil:
				p := *vv.Config.Profile
				ev.Params = &p
			case vv.Config.Profiled && vv.Config.LatencyModel == "iteration":
				p := vv.Config.Params
				ev.Params = &p
			}
			sm.Variants = append(sm.Variants, snapshot.Variant{Variant: ev, LastGood: -1,
				Owns: func(pm collector.PodMetrics) (bool, snapshot.PodTimes) {
					return pm.Labels[variantLabel] == name, snapshot.PodTimes{}
				}})
		}
		out = append(out, sm)
	}
	return out
}

// variantLabel is the label ViewSource puts on each pod: its variant.
const variantLabel = "variant"

// ViewSource is a collector.Source over a simulator View: the pods of a
// model (Target.Model; the simulator has one namespace) with their
// variant as a label, as the Prometheus source returns them to the
// controller.
type ViewSource struct{ View *sim.View }

var _ collector.Source = ViewSource{}

// Collect implements collector.Source.
// buckets is a histogram as the engine reads it: cumulative counts at
// bounds, then +Inf (nil without counts).
func buckets(bounds, cum []float64) []engine.Bucket {
	if len(cum) != len(bounds)+1 {
		return nil
	}
	out := make([]engine.Bucket, len(cum))
	for i, c := range cum {
		le := math.Inf(1)
		if i < len(bounds) {
			le = bounds[i]
		}
		out[i] = engine.Bucket{UpperBound: le, Count: c}
	}
	return out
}

func (s ViewSource) Collect(_ context.Context, now time.Time, t collector.Target) (collector.Report, error) {
	rep := collector.Report{Target: t, Time: now}
	for _, vv := range s.View.Variants {
		if s.View.Scenario.Models[vv.Model].Name != t.Model {
			continue
		}
		for _, p := range vv.Pods {
			rep.Pods = append(rep.Pods, collector.PodMetrics{Namespace: t.Namespace, Labels: map[string]string{variantLabel: vv.Name},
				Pod: engine.Pod{Name: p.Name, AgeSeconds: p.AgeSeconds, StartupSeconds: p.StartupSeconds, ArrivalRateRPS: p.ArrivalRateRPS,
					AvgInputTokens: p.AvgInputTokens, AvgOutputTokens: p.AvgOutputTokens, AvgTTFTMs: p.AvgTTFTMs, AvgITLMs: p.AvgITLMs,
					KVCacheUsage: p.KVCacheUsage, WaitingRequests: p.WaitingRequests, RunningRequests: p.RunningRequests, PreemptionsPerSec: p.PreemptionsPerSec,
					KVBlocks: p.KVBlocks, BlockSize: p.BlockSize, MaxBatchSize: p.MaxBatchSize,
					TTFTBuckets: buckets(server.TTFTBucketBounds[:], p.TTFTBuckets), TPOTBuckets: buckets(server.TPOTBucketBounds[:], p.TPOTBuckets)}})
		}
	}
	return rep, nil
}
