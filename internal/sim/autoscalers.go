package sim

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llm-d-incubation/wva/internal/alloc"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// NewAutoscaler builds an autoscaler by name: wva, hpa, keda, clairvoyant,
// oracle or static:N (N replicas of every variant).
func NewAutoscaler(name string, sc *Scenario) (Autoscaler, error) {
	c := sc.withDefaults()
	switch {
	case name == "wva":
		return newWVA(&c), nil
	case name == "hpa":
		return &HPA{cfg: c.Autoscalers.HPA, recs: map[int][]rec{}}, nil
	case name == "keda":
		k := &KEDA{cfg: c.Autoscalers.KEDA, recs: map[int][]rec{}, lastActive: map[int]float64{}}
		for _, m := range c.Models {
			tokens := m.Workload.Input.mean() + m.Workload.Output.mean()
			for _, v := range m.Variants {
				// Unless set, a replica's threshold is the requests it can
				// hold at once: its batch size or what its KV cache fits.
				t := c.Autoscalers.KEDA.Threshold
				if t == 0 {
					fit := math.Min(float64(v.MaxBatchSize), math.Floor(float64(v.KVBlocks*v.BlockSize)/tokens))
					t = math.Max(1, c.Autoscalers.KEDA.ThresholdFraction*fit)
				}
				k.threshold = append(k.threshold, t)
			}
		}
		return k, nil
	case name == "oracle":
		return &Oracle{interval: c.Autoscalers.OracleIntervalSeconds}, nil
	case name == "clairvoyant":
		return &Clairvoyant{interval: c.Autoscalers.OracleIntervalSeconds, margin: c.Autoscalers.ClairvoyantMargin}, nil
	case strings.HasPrefix(name, "static:"):
		n, err := staticReplicas(name)
		if err != nil {
			return nil, err
		}
		return &Static{n: n}, nil
	}
	return nil, fmt.Errorf("unknown autoscaler %q (want wva, hpa, keda, clairvoyant, oracle or static:N)", name)
}

// staticReplicas reads the N of static:N.
func staticReplicas(name string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "static:"))
	if err != nil || n < 0 || n > MaxReplicasPerVariant {
		return 0, fmt.Errorf("static:N needs a replica count between 0 and %d, got %q", MaxReplicasPerVariant, name)
	}
	return n, nil
}

// CheckAutoscalers checks a list of autoscaler names: each known, and none
// twice (static:2 and static:02 are the same).
func CheckAutoscalers(names []string) error {
	seen := map[string]bool{}
	for _, name := range names {
		key := name
		switch {
		case name == "wva", name == "hpa", name == "keda", name == "clairvoyant", name == "oracle":
		case strings.HasPrefix(name, "static:"):
			n, err := staticReplicas(name)
			if err != nil {
				return err
			}
			key = "static:" + strconv.Itoa(n)
		default:
			return fmt.Errorf("unknown autoscaler %q (want wva, hpa, keda, clairvoyant, oracle or static:N)", name)
		}
		if seen[key] {
			return fmt.Errorf("%s is listed twice", key)
		}
		seen[key] = true
	}
	return nil
}

// Static keeps N replicas of every variant.
type Static struct{ n int }

// Name implements Autoscaler.
func (s *Static) Name() string { return "static:" + strconv.Itoa(s.n) }

// Interval implements Autoscaler.
func (s *Static) Interval() float64 { return 3600 }

// Decide implements Autoscaler.
func (s *Static) Decide(v *View) []int {
	out := make([]int, len(v.Variants))
	for i := range out {
		out[i] = s.n
	}
	return out
}

type rec struct {
	t float64
	n int
}

// stabilized returns the highest recommendation of the window (the HPA's
// scale-down stabilisation), after adding n.
func stabilized(recs map[int][]rec, i int, now, window float64, n int) int {
	keep := recs[i][:0]
	for _, r := range recs[i] {
		if now-r.t < window {
			keep = append(keep, r)
		}
	}
	keep = append(keep, rec{t: now, n: n})
	recs[i] = keep
	best := n
	for _, r := range keep {
		best = max(best, r.n)
	}
	return best
}

// HPA is the Kubernetes Horizontal Pod Autoscaler algorithm, one per
// variant, cost-blind: desired = ceil(current × metric / target) for the
// average queue depth and KV usage (the paper's targets 3 and 0.5), the
// larger of the two, with a 10 % tolerance, the default scale-up policy
// (double or +4 pods per sync, whichever is more) and a 300 s scale-down
// stabilisation window.
type HPA struct {
	cfg  HPAConfig
	recs map[int][]rec
}

// Name implements Autoscaler.
func (h *HPA) Name() string { return "hpa" }

// Interval implements Autoscaler.
func (h *HPA) Interval() float64 { return h.cfg.SyncSeconds }

// Decide implements Autoscaler.
func (h *HPA) Decide(v *View) []int {
	out := make([]int, len(v.Variants))
	for i, vv := range v.Variants {
		out[i] = -1
		if len(vv.Pods) == 0 || vv.Current == 0 {
			continue
		}
		var q, kv float64
		for _, p := range vv.Pods {
			q += p.WaitingRequests
			kv += p.KVCacheUsage
		}
		n := float64(len(vv.Pods))
		cur := vv.Current
		// Like the HPA controller: each metric proposes a replica count
		// (the current one when its ratio is within the tolerance) and
		// the largest proposal wins.
		desired := 0
		for _, ratio := range []float64{q / n / h.cfg.QueueTarget, kv / n / h.cfg.KVTarget} {
			d := cur
			if math.Abs(ratio-1) > h.cfg.Tolerance {
				d = alloc.CeilCount(n*ratio, math.MaxInt32) // a huge ratio is many replicas, not an overflow
			}
			desired = max(desired, d)
		}
		desired = min(desired, max(2*cur, cur+4))
		desired = max(min(desired, vv.MaxReplicas), max(vv.MinReplicas, 1))
		if desired < cur {
			desired = min(cur, stabilized(h.recs, i, v.Now, h.cfg.StabilizationSeconds, desired))
		} else {
			stabilized(h.recs, i, v.Now, h.cfg.StabilizationSeconds, desired)
		}
		out[i] = desired
	}
	return out
}

// KEDA scales each variant on requests in the system (waiting + running,
// plus the gateway's for a variant at zero) against a per-replica
// threshold (by default the requests a replica holds at once), wakes a variant at zero when the metric passes the activation
// threshold, and scales it to zero after a cooldown with no requests.
type KEDA struct {
	cfg        KEDAConfig
	threshold  []float64 // per variant
	recs       map[int][]rec
	lastActive map[int]float64
}

// Name implements Autoscaler.
func (k *KEDA) Name() string { return "keda" }

// Interval implements Autoscaler.
func (k *KEDA) Interval() float64 { return k.cfg.PollingSeconds }

// Decide implements Autoscaler.
func (k *KEDA) Decide(v *View) []int {
	out := make([]int, len(v.Variants))
	first := map[int]bool{}
	for i, vv := range v.Variants {
		metric := 0.0
		for _, p := range vv.Pods {
			metric += p.WaitingRequests + p.RunningRequests
		}
		if !first[vv.Model] {
			first[vv.Model] = true
			metric += float64(v.GatewayWaiting[vv.Model])
		}
		if metric > 0 {
			k.lastActive[i] = v.Now
		}
		lo := vv.MinReplicas
		if k.cfg.MinReplicaCount > 0 {
			lo = k.cfg.MinReplicaCount
		}
		desired := alloc.CeilCount(metric/k.threshold[i], math.MaxInt32)
		switch {
		case vv.Current == 0 && metric > k.cfg.Activation:
			desired = max(desired, 1)
		case vv.Current > 0 && desired == 0 && v.Now-k.lastActive[i] < k.cfg.CooldownSeconds:
			desired = 1
		}
		desired = max(min(desired, vv.MaxReplicas), lo)
		if desired < vv.Current && desired > 0 {
			desired = min(vv.Current, stabilized(k.recs, i, v.Now, k.cfg.StabilizationSecs, desired))
		} else {
			stabilized(k.recs, i, v.Now, k.cfg.StabilizationSecs, desired)
		}
		out[i] = desired
	}
	return out
}

// Oracle knows the true parameters and the true load: every interval it
// provisions, instantly, the cheapest replicas that meet the SLO at the
// peak rate of the coming interval (queueing model sizing, exact cheapest
// cover). It bounds what an autoscaler can reach; it is not one, and no
// real fleet can match it (its replicas need no start-up).
type Oracle struct{ interval float64 }

// Name implements Autoscaler.
func (o *Oracle) Name() string { return "oracle" }

// Interval implements Autoscaler.
func (o *Oracle) Interval() float64 { return o.interval }

// Decide implements Autoscaler.
func (o *Oracle) Decide(v *View) []int {
	return provision(v, func(int) float64 { return o.interval }, 0)
}

// Clairvoyant knows the true future arrivals and the true parameters, but
// its replicas take the same start-up time as everyone's: every interval it
// provisions the cheapest replicas that meet the SLO at the peak rate from
// now until the replicas its next decision could order are ready (the
// interval plus the model's longest start-up, jitter included), times
// 1 + Margin. It is the reference an autoscaler can approach in practice.
type Clairvoyant struct {
	interval, margin float64
}

// Name implements Autoscaler.
func (c *Clairvoyant) Name() string { return "clairvoyant" }

// Interval implements Autoscaler.
func (c *Clairvoyant) Interval() float64 { return c.interval }

// Decide implements Autoscaler.
func (c *Clairvoyant) Decide(v *View) []int {
	ahead := func(m int) float64 {
		startup := 0.0
		for _, vv := range v.Variants {
			if vv.Model == m {
				startup = math.Max(startup, vv.Config.StartupSeconds+vv.Config.StartupJitterSeconds)
			}
		}
		return c.interval + startup
	}
	return provision(v, ahead, c.margin)
}

// provision returns, per variant, the cheapest replicas that meet each
// model's SLO at (1 + margin) × its peak true arrival rate over the next
// ahead(model) seconds, sized by the queueing model with the true
// parameters and an exact cheapest cover.
func provision(v *View, ahead func(model int) float64, margin float64) []int {
	out := make([]int, len(v.Variants))
	for m, mod := range v.Scenario.Models {
		peak := peakRate(mod.Workload, v.Now, v.Now+ahead(m)) * (1 + margin)
		w := queueing.Workload{InputTokens: mod.Workload.Input.mean(), OutputTokens: mod.Workload.Output.mean()}
		var opts []alloc.Option
		var idx []int
		for i, vv := range v.Variants {
			if vv.Model != m {
				continue
			}
			opts = append(opts, alloc.Option{Name: vv.Name, Cost: vv.Cost, Capacity: trueCapacity(vv.Config, w, mod.SLO),
				Min: vv.MinReplicas, Max: vv.MaxReplicas})
			idx = append(idx, i)
		}
		c := alloc.CheapestCover(opts, peak)
		for j, i := range idx {
			out[i] = c.Replicas[j]
		}
	}
	return out
}

// peakRate is the workload's highest true arrival rate over [from, to].
func peakRate(w Workload, from, to float64) float64 {
	if w.rows != nil {
		return traceRate(w.rows, from, to)
	}
	peak := 0.0
	for t := from; t <= to; t++ {
		peak = math.Max(peak, w.Rate.rateAt(t))
	}
	return peak
}

// trueCapacity is a replica's SLO capacity (requests/s) under the true
// parameters (iteration model; 0 for the linear model, which the queueing
// model does not size here). The KV cache may hold fewer requests than the
// batch size.
func trueCapacity(c *Variant, w queueing.Workload, slo SLO) float64 {
	if c.LatencyModel != "iteration" {
		return 0
	}
	n := max(1, min(c.MaxBatchSize, int(float64(c.KVBlocks*c.BlockSize)/(w.InputTokens+w.OutputTokens))))
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: c.Params.Alpha, Beta: c.Params.Beta, Gamma: c.Params.Gamma},
		Workload: w, MaxBatchSize: n, MaxQueueSize: queueing.DefaultMaxQueueSize})
	if err != nil {
		return 0
	}
	sz, err := a.Size(queueing.Targets{TTFTMs: slo.TTFTMs, ITLMs: slo.ITLMs})
	if err != nil {
		return 0
	}
	return sz.CapacityRPS
}

// wvaEpoch anchors the simulator's clock for the engine.
var wvaEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WVA runs the decision engine on what the simulated metrics pipeline
// shows, keeping the engine (its state and learned parameters) across
// cycles.
type WVA struct {
	cfg   WVAConfig
	e     *engine.Engine
	b     snapshot.Builder
	trace func(now float64, p *engine.Plan) // tests inspect the plans
	// victims of the last plan, and the pods marked so far: a mark stays
	// on a pod until it is set again, so marks no longer meant are reset.
	victims map[string]bool
	marked  map[string]bool
	// errs counts the engine's errors by message; firstErr is the time of
	// each one's first occurrence. Both end up as warnings on the result.
	errs     map[string]int
	firstErr map[string]float64
}

var (
	_ DeletionCoster = (*WVA)(nil)
	_ FastLooper     = (*WVA)(nil)
	_ Warner         = (*WVA)(nil)
)

// victimCost is the pod-deletion-cost WVA puts on the pods it chose to
// remove (the ReplicaSet removes the lowest first; unmarked pods have 0).
const victimCost = -100

// DeletionCosts implements DeletionCoster: the last plan's victims get
// victimCost, pods marked before and no longer victims get 0 back.
func (w *WVA) DeletionCosts(*View) map[string]int32 {
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

func newWVA(sc *Scenario) *WVA {
	return &WVA{cfg: sc.Autoscalers.WVA, e: engine.New(nil), victims: map[string]bool{}, marked: map[string]bool{},
		errs: map[string]int{}, firstErr: map[string]float64{}}
}

// Name implements Autoscaler.
func (w *WVA) Name() string { return "wva" }

// Interval implements Autoscaler.
func (w *WVA) Interval() float64 { return w.cfg.IntervalSeconds }

// Decide implements Autoscaler.
func (w *WVA) Decide(v *View) []int {
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
	clear(w.victims)
	for _, d := range plan.Variants {
		if i, ok := pos[d.Model+"/"+d.Variant]; ok {
			out[i] = d.Desired
		}
		for _, name := range d.Victims {
			w.victims[name] = true
		}
	}
	return out
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
func unchanged(v *View) ([]int, map[string]int) {
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
func (w *WVA) Fast(v *View) ([]int, bool) {
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
// and since when.
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
	return out
}

// wvaTime is the engine's clock at simulated time t.
func wvaTime(t float64) time.Time { return wvaEpoch.Add(time.Duration(t * float64(time.Second))) }

// settings are the engine's settings from the scenario, as the
// controller's ConfigMaps would give them (scale to zero allowed: a
// scenario's minReplicas 0 means it).
func (w *WVA) settings(v *View) snapshot.Settings {
	tuning := w.cfg.Tuning == nil || *w.cfg.Tuning
	set := snapshot.Settings{Mode: engine.Mode(w.cfg.Mode), QueueingModel: true, Tuning: tuning, ScaleToZero: true,
		Optimizer: engine.OptimizerKind(w.cfg.Optimizer), Inventory: v.Scenario.Inventory,
		Engine: engine.Config{SaturationPolicy: w.cfg.SaturationPolicy, SpareQuantile: w.cfg.SpareQuantile,
			DisableForecast: w.cfg.DisableForecast, TTFTAttainment: w.cfg.TTFTAttainment,
			ProvisioningSeconds: w.cfg.ProvisioningSeconds, ScaleDownStabilizationSeconds: w.cfg.ScaleDownStabilizationSeconds}}
	if n, kv := w.cfg.MinNonSaturatedReplicas, w.cfg.KVCacheThreshold; n > 0 || kv > 0 {
		set.Saturation = &engine.SaturationConfig{MinNonSaturatedReplicasForScaleDown: n, KVCacheThreshold: kv}
	}
	return set
}

// models translates the view: pod metrics through the controller's
// metrics-source seam (as the planner reads them from Prometheus), each
// pod's variant named by a label.
func (w *WVA) models(v *View) []snapshot.Model {
	src := ViewSource{View: v}
	now := wvaTime(v.Now)
	out := make([]snapshot.Model, 0, len(v.Scenario.Models))
	for m, mod := range v.Scenario.Models {
		rep, _ := src.Collect(context.Background(), now, collector.Target{Model: mod.Name}) // a view cannot fail
		em := engine.Model{ID: mod.Name, Priority: mod.Priority, SLO: &engine.SLO{TTFTMs: mod.SLO.TTFTMs, ITLMs: mod.SLO.ITLMs},
			GatewayWaitingRequests: float64(v.GatewayWaiting[m]), ArrivalRateRPS: max(v.GatewayArrivalRPS[m], 0)}
		sm := snapshot.Model{Model: em, Report: rep}
		for _, vv := range v.Variants {
			if vv.Model != m {
				continue
			}
			lo, name := vv.MinReplicas, vv.Name
			ev := engine.Variant{Name: vv.Name, Accelerator: vv.Accelerator, AcceleratorsPerReplica: vv.AcceleratorsPerReplica,
				Cost: vv.Cost, MinReplicas: &lo, MaxReplicas: vv.MaxReplicas, CurrentReplicas: vv.Current, ReadyReplicas: vv.Ready,
				MaxBatchSize: vv.Config.MaxBatchSize}
			if vv.Config.Profiled && vv.Config.LatencyModel == "iteration" {
				p := vv.Config.Params
				ev.Params = &p
			}
			sm.Variants = append(sm.Variants, snapshot.Variant{Variant: ev, LastGood: -1,
				Owns: func(pm collector.PodMetrics) (bool, time.Time) { return pm.Labels[variantLabel] == name, time.Time{} }})
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
type ViewSource struct{ View *View }

var _ collector.Source = ViewSource{}

// Collect implements collector.Source.
func (s ViewSource) Collect(_ context.Context, now time.Time, t collector.Target) (collector.Report, error) {
	rep := collector.Report{Target: t, Time: now}
	for _, vv := range s.View.Variants {
		if s.View.Scenario.Models[vv.Model].Name != t.Model {
			continue
		}
		for _, p := range vv.Pods {
			rep.Pods = append(rep.Pods, collector.PodMetrics{Namespace: t.Namespace, Labels: map[string]string{variantLabel: vv.Name},
				Pod: engine.Pod{Name: p.Name, AgeSeconds: p.AgeSeconds, ArrivalRateRPS: p.ArrivalRateRPS,
					AvgInputTokens: p.AvgInputTokens, AvgOutputTokens: p.AvgOutputTokens, AvgTTFTMs: p.AvgTTFTMs, AvgITLMs: p.AvgITLMs,
					KVCacheUsage: p.KVCacheUsage, WaitingRequests: p.WaitingRequests, RunningRequests: p.RunningRequests,
					KVBlocks: p.KVBlocks, BlockSize: p.BlockSize, MaxBatchSize: p.MaxBatchSize}})
		}
	}
	return rep, nil
}
