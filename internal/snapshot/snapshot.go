// Package snapshot builds the decision engine's input from what one cycle
// observed, and runs the engine on it. The controller and the simulator
// both plan through a Builder, so that the simulator measures exactly the
// rules the controller applies between the platform and the engine: the
// mode and the tuner's period, minReplicas 0 read as 1 unless scale to
// zero is on, which pods count as ready, pod ages, the isolation of a
// model whose input is invalid, and the seeding of a new engine from what
// the platform already shows (the scale-down window from the current
// replicas, the last good decisions from the published ones).
//
// Each caller translates its own world (VariantAutoscalings, Deployments
// and pods; or the simulator's view) into Model and Variant; the rules
// from there on are here. The package imports nothing from Kubernetes.
package snapshot

import (
	"sort"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// Settings are the cycle's configuration.
type Settings struct {
	// Mode of the engine; empty resolves to hybrid when a queueing-model
	// configuration is present (QueueingModel) and to capacity-only
	// otherwise.
	Mode          engine.Mode
	QueueingModel bool
	// Tuning: the operator allows the tuner (the tuner's and the
	// queueing model's switches). It runs only when the mode uses the
	// model, and at most once per TunerPeriod (0: every cycle).
	Tuning      bool
	TunerPeriod time.Duration
	// ScaleToZero lets a variant's minReplicas 0 stand; without it
	// minReplicas 0 means 1.
	ScaleToZero    bool
	Optimizer      engine.OptimizerKind
	Engine         engine.Config // TuningEnabled is set by the Builder
	Saturation     *engine.SaturationConfig
	ServiceClasses map[string]engine.ServiceClass
	Inventory      map[string]int
}

// Model is one model as observed: the engine's Model without variants or
// pods, its variants, and its pods' metrics (or why they could not be
// read).
type Model struct {
	Model    engine.Model
	Variants []Variant
	Report   collector.Report
	// Err: the metrics could not be collected; the model is left out and
	// its decisions are held.
	Err error
}

// Target is the model's key in the maps the Builder returns.
func (m *Model) Target() collector.Target {
	return collector.Target{Namespace: m.Model.Namespace, Model: m.Model.ID}
}

// PodTimes are a pod's creation and Ready times (zero: unknown), as
// Kubernetes records them: its creationTimestamp and its Ready condition's
// lastTransitionTime.
type PodTimes struct {
	Created, Ready time.Time
}

// Variant is one variant as observed: the engine's Variant as the platform
// reports it (CurrentReplicas the desired count, ReadyReplicas the ready
// pods), without pods.
type Variant struct {
	Variant engine.Variant
	// Owns says whether a pod's metrics belong to this variant and, when
	// known, when the pod was created and became ready (its age then
	// counts from there, and its start-up is the time between, if the
	// source did not give them).
	Owns func(collector.PodMetrics) (mine bool, times PodTimes)
	// Group, when set, names the replica a pod belongs to when a replica is
	// several pods (a LeaderWorkerSet's group): the pods of one group are
	// one replica to the engine (mergeGroup). Empty: the pod is a replica.
	Group func(collector.PodMetrics) string
	// LastGood is the decision last published for the variant (by this
	// controller or a previous leader), -1 when there is none.
	LastGood int
}

// Builder builds each cycle's snapshot; it keeps the time the tuner last
// ran. The zero value is ready to use; a Builder is not safe for
// concurrent use.
type Builder struct {
	lastTune time.Time
}

// Result is a built cycle.
type Result struct {
	Snapshot *engine.Snapshot
	// Held are the models left out of the snapshot, with why: their
	// metrics could not be collected, or their input alone fails the
	// engine's validation (one bad model does not stop the others).
	Held map[collector.Target]error
	// lastGood are the published decisions, by engine variant key parts.
	lastGood []seed
}

type seed struct {
	namespace, model, variant string
	replicas                  int
}

// Build turns the observed models into the engine's snapshot at now.
// Models are planned in the order of their targets' names.
func (b *Builder) Build(now time.Time, set Settings, models []Model) Result {
	mode := set.Mode
	if mode == "" {
		mode = engine.ModeCapacityOnly
		if set.QueueingModel {
			mode = engine.ModeHybrid
		}
	}
	cfg := set.Engine
	cfg.TuningEnabled = mode != engine.ModeCapacityOnly && set.Tuning
	// Between tuner periods the learned parameters are still used; only
	// the tuner's step waits.
	cfg.TunerIdle = cfg.TuningEnabled && set.TunerPeriod > 0 && !b.lastTune.IsZero() && now.Sub(b.lastTune) < set.TunerPeriod
	if cfg.TuningEnabled && !cfg.TunerIdle {
		b.lastTune = now
	}
	r := Result{
		Snapshot: &engine.Snapshot{Time: now, Mode: mode, Optimizer: set.Optimizer, Config: cfg, Saturation: set.Saturation,
			ServiceClasses: set.ServiceClasses, Inventory: set.Inventory},
		Held: map[collector.Target]error{},
	}
	order := make([]int, len(models))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		return models[order[i]].Target().String() < models[order[j]].Target().String()
	})
	for _, i := range order {
		m := &models[i]
		if m.Err != nil {
			r.Held[m.Target()] = m.Err
			continue
		}
		em := m.Model
		em.Variants = make([]engine.Variant, 0, len(m.Variants))
		for j := range m.Variants {
			v := &m.Variants[j]
			em.Variants = append(em.Variants, variant(v, m.Report, set.ScaleToZero))
			if v.LastGood >= 0 {
				r.lastGood = append(r.lastGood, seed{em.Namespace, em.ID, v.Variant.Name, v.LastGood})
			}
		}
		r.Snapshot.Models = append(r.Snapshot.Models, em)
	}
	for t, err := range isolateInvalid(r.Snapshot) {
		r.Held[t] = err
	}
	return r
}

// variant applies the shared rules to one variant and gives it its pods.
func variant(v *Variant, rep collector.Report, scaleToZero bool) engine.Variant {
	ev := v.Variant
	ev.Pods = nil
	if ev.MinReplicas != nil && *ev.MinReplicas == 0 && !scaleToZero {
		one := 1
		ev.MinReplicas = &one
	}
	groups := map[string]int{} // group → index in ev.Pods
	for _, pm := range rep.Pods {
		mine, times := v.Owns(pm)
		if !mine {
			continue
		}
		pod := pm.Pod
		if ready := times.Ready; !ready.IsZero() && pod.AgeSeconds == 0 {
			pod.AgeSeconds = max(rep.Time.Sub(ready).Seconds(), 0)
		}
		if !times.Ready.IsZero() && !times.Created.IsZero() && pod.StartupSeconds == 0 {
			pod.StartupSeconds = max(times.Ready.Sub(times.Created).Seconds(), 0)
		}
		g := ""
		if v.Group != nil {
			g = v.Group(pm)
		}
		if i, ok := groups[g]; ok && g != "" {
			ev.Pods[i] = mergeGroup(ev.Pods[i], pod)
			continue
		}
		groups[g] = len(ev.Pods)
		ev.Pods = append(ev.Pods, pod)
	}
	// Terminating pods may still count as ready during a scale-down; and a
	// ready pod Prometheus has not scraped yet is not serving as far as
	// the engine can tell: it counts as starting. Without any scraped pod
	// the ready count stands, and the engine holds the variant (its
	// metrics are missing).
	ev.ReadyReplicas = max(min(ev.ReadyReplicas, ev.CurrentReplicas), 0)
	if len(ev.Pods) > 0 {
		ev.ReadyReplicas = min(ev.ReadyReplicas, len(ev.Pods))
	}
	return ev
}

// isolateInvalid removes from the snapshot the models that fail the
// engine's validation on their own, so that one bad model does not stop
// the cycle for all. Problems that are not a single model's (the
// configuration) remain for Plan to report.
func isolateInvalid(s *engine.Snapshot) map[collector.Target]error {
	if s.Validate() == nil {
		return nil
	}
	bad := map[collector.Target]error{}
	kept := make([]engine.Model, 0, len(s.Models))
	for _, m := range s.Models {
		one := *s
		one.Models = []engine.Model{m}
		if err := one.Validate(); err != nil {
			bad[collector.Target{Namespace: m.Namespace, Model: m.ID}] = err
			continue
		}
		kept = append(kept, m)
	}
	if len(kept) == 0 {
		return nil // not a model's problem: Plan reports it
	}
	s.Models = kept
	return bad
}

// Plan seeds e with what the platform shows and runs it on the snapshot.
// An engine that has not planned a variant yet starts its scale-down
// window from the variant's current replicas (a restarted controller does
// not scale down at once) and takes the published decision as its last
// good one (a new leader holds a variant with bad metrics where its
// predecessor left it). Seeds never overwrite what e has learned itself.
func (r Result) Plan(e *engine.Engine) (*engine.Plan, error) {
	r.Seed(e)
	return e.Plan(r.Snapshot)
}

// Seed gives e the seeds Plan gives it, without planning (Replay then
// copies out the state the cycle starts from).
func (r Result) Seed(e *engine.Engine) {
	s := r.Snapshot
	for _, m := range s.Models {
		for _, v := range m.Variants {
			e.SeedScaleDownWindow(m.Namespace, m.ID, v.Name, s.Time, v.CurrentReplicas)
		}
	}
	for _, g := range r.lastGood {
		e.SeedLastGood(g.namespace, g.model, g.variant, g.replicas)
	}
}

// mergeGroup folds pod b into a, two servers of one replica: rates, queues,
// running requests and the KV cache's size add up; the token counts and
// latencies are arrival-weighted means; the KV usage is the fuller
// server's (the replica saturates with it); a missing pod makes the
// replica missing; the age and the sample are the older.
func mergeGroup(a, b engine.Pod) engine.Pod {
	out := a
	ra, rb := a.ArrivalRateRPS, b.ArrivalRateRPS
	mean := func(x, y float64) float64 {
		if ra+rb <= 0 {
			return max(x, y)
		}
		return (ra*x + rb*y) / (ra + rb)
	}
	out.AvgInputTokens, out.AvgOutputTokens = mean(a.AvgInputTokens, b.AvgInputTokens), mean(a.AvgOutputTokens, b.AvgOutputTokens)
	out.AvgTTFTMs, out.AvgITLMs = mean(a.AvgTTFTMs, b.AvgTTFTMs), mean(a.AvgITLMs, b.AvgITLMs)
	out.ArrivalRateRPS = ra + rb
	out.WaitingRequests += b.WaitingRequests
	out.RunningRequests += b.RunningRequests
	out.KVCacheUsage = max(a.KVCacheUsage, b.KVCacheUsage)
	if ta, tb := a.KVBlocks*a.BlockSize, b.KVBlocks*b.BlockSize; ta > 0 && tb > 0 && ta+tb <= engine.MaxKVCacheTokens {
		out.KVBlocks, out.BlockSize = ta+tb, 1
	}
	out.MaxBatchSize += b.MaxBatchSize
	out.Missing = a.Missing || b.Missing
	out.AgeSeconds = min(a.AgeSeconds, b.AgeSeconds)
	out.StartupSeconds = max(a.StartupSeconds, b.StartupSeconds) // the group is ready when its last pod is
	if !b.SampledAt.IsZero() && (out.SampledAt.IsZero() || b.SampledAt.Before(out.SampledAt)) {
		out.SampledAt = b.SampledAt
	}
	return out
}
