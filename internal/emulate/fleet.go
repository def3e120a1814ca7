package emulate

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/llm-d-incubation/wva/internal/servermetrics"
	"github.com/llm-d-incubation/wva/internal/sim"
)

// Fleet is the emulated servers of every Deployment in a spec, in model
// time: (wall time since the start) × the time scale. It is safe for
// concurrent use: the reconciler advances and scales it, the servers'
// /metrics handlers read it.
type Fleet struct {
	mu    sync.Mutex
	live  *sim.Live
	clock clock.PassiveClock
	start time.Time
	scale float64
	// div divides the latencies the pages export: 1 (model seconds) or
	// the time scale (wall seconds).
	div     float64
	targets []Target
	models  int
	// modelNames and modelNS: each model's name and the namespace of its
	// Deployments (the gateway's series carry it).
	modelNames, modelNS []string
	hists               map[int]podHists
	// families are what each server serves (its vLLM metric set), with
	// the finish reasons besides length its vLLM counts.
	families     []servermetrics.Family
	descs        []*prometheus.Desc
	otherReasons []string
}

// Target is one Deployment the fleet emulates: variant Index of the
// simulation, serving Model.
type Target struct {
	Index      int
	Model      string
	ModelIndex int
	Namespace  string // "" for any
	Name       string
}

// FleetOptions set a fleet's clock and time scale.
type FleetOptions struct {
	// Clock is read for the wall time (default: the real clock).
	Clock clock.PassiveClock
	// TimeScale is model seconds per wall second (default 1).
	TimeScale float64
	// WallSecondLatencies exports latencies in wall seconds (model
	// seconds / TimeScale) instead of model seconds.
	WallSecondLatencies bool
	// Metrics is the vLLM metric set the servers serve: MetricsCurrent
	// (the default) or MetricsLegacy.
	Metrics string
}

// NewFleet starts a fleet for the spec at the clock's current time, every
// Deployment at zero servers.
func NewFleet(spec Spec, o FleetOptions) (*Fleet, error) {
	sc, err := spec.Scenario()
	if err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if !(o.TimeScale > 0 && o.TimeScale <= MaxTimeScale) {
		return nil, fmt.Errorf("time scale must be > 0 and at most %d, got %v", MaxTimeScale, o.TimeScale)
	}
	families, err := MetricSet(o.Metrics)
	if err != nil {
		return nil, err
	}
	f := &Fleet{clock: o.Clock, start: o.Clock.Now(), scale: o.TimeScale, div: 1, hists: map[int]podHists{}, families: families,
		descs:        familyDescs(families),
		otherReasons: []string{"abort", "error", "repetition", "stop"}}
	if o.Metrics == MetricsLegacy {
		f.otherReasons = []string{"abort", "stop"} // vLLM 0.10's FinishReason
	}
	if o.WallSecondLatencies {
		f.div = o.TimeScale
	}
	if f.live, err = sim.NewLive(sc, f.observe); err != nil {
		return nil, err
	}
	f.models = len(spec.Models)
	f.modelNames = make([]string, len(spec.Models))
	f.modelNS = make([]string, len(spec.Models))
	for mi, m := range spec.Models {
		f.modelNames[mi] = m.Name
		for _, d := range m.Deployments {
			f.targets = append(f.targets, Target{Index: len(f.targets), Model: m.Name, ModelIndex: mi, Namespace: d.Namespace, Name: d.Name})
		}
	}
	return f, nil
}

// MaxTimeScale bounds --time-scale: beyond it a tick of wall time is more
// model time than a replica's iteration, and the emulator falls behind.
const MaxTimeScale = 1000

// observe records an observation (called by the simulation, under mu).
func (f *Fleet) observe(o sim.Observation) {
	h, ok := f.hists[o.Replica]
	if !ok {
		h = newPodHists()
		f.hists[o.Replica] = h
	}
	h.observe(o, f.div)
}

// Targets lists the Deployments of the spec.
func (f *Fleet) Targets() []Target { return append([]Target(nil), f.targets...) }

// Lookup finds the target of a Deployment.
func (f *Fleet) Lookup(namespace, name string) (Target, bool) {
	for _, t := range f.targets {
		if t.Name == name && (t.Namespace == "" || t.Namespace == namespace) {
			return t, true
		}
	}
	return Target{}, false
}

// ModelTime is the model time at wall time now, in seconds.
func (f *Fleet) ModelTime(now time.Time) float64 {
	return now.Sub(f.start).Seconds() * f.scale
}

// WallDuration converts model seconds to wall time.
func (f *Fleet) WallDuration(modelSeconds float64) time.Duration {
	return time.Duration(modelSeconds / f.scale * float64(time.Second))
}

// Advance runs the simulation up to the clock's current time and returns
// the model time.
func (f *Fleet) Advance() float64 {
	t := f.ModelTime(f.clock.Now())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live.AdvanceTo(t)
	return f.live.Now()
}

// Scale sets the target's servers to n after applying the pod-deletion
// costs (replica ID → cost) of its servers, and returns them.
func (f *Fleet) Scale(index, n int, costs map[int]int32) []sim.LiveReplica {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range costs {
		f.live.SetDeletionCost(id, c)
	}
	f.live.Scale(index, n)
	reps := f.live.Replicas(index)
	f.forgetGone()
	return reps
}

// SetRotation puts the servers in the gateway's rotation or takes them out
// (replica ID → out of rotation), as the endpoint picker follows the
// pods' active-ports annotations.
func (f *Fleet) SetRotation(out map[int]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, o := range out {
		f.live.SetInRotation(id, !o)
	}
}

// Replicas lists the target's servers.
func (f *Fleet) Replicas(index int) []sim.LiveReplica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live.Replicas(index)
}

// forgetGone drops the histograms of servers that are gone (under mu).
func (f *Fleet) forgetGone() {
	for id := range f.hists {
		if _, ok := f.live.Stats(id); !ok {
			delete(f.hists, id)
		}
	}
}

// page is a snapshot of a server's metrics; false when it is gone.
func (f *Fleet) page(model string, id int) (*podMetrics, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.live.Stats(id)
	if !ok {
		return nil, false
	}
	p := &podMetrics{model: model, st: st, families: f.families, descs: f.descs, otherReasons: f.otherReasons}
	if h, ok := f.hists[id]; ok {
		p.h = h.clone()
	} else {
		p.h = newPodHists()
	}
	return p, true
}

// Summary is the run's progress: model time, requests arrived, completed
// and failed, and those waiting at each model's gateway.
type Summary struct {
	ModelSeconds               float64
	Arrived, Completed, Failed int64
	GatewayWaiting             []int
}

// Summary reads the run's progress.
func (f *Fleet) Summary() Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Summary{ModelSeconds: f.live.Now()}
	s.Arrived, s.Completed, s.Failed = f.live.Totals()
	for m := range f.models {
		s.GatewayWaiting = append(s.GatewayWaiting, f.live.GatewayWaiting(m))
	}
	return s
}

func (h *hist) clone() hist {
	c := *h
	c.counts = append([]uint64(nil), h.counts...)
	return c
}

// SetModelNamespace sets the namespace of model m's gateway series (that
// of its Deployments).
func (f *Fleet) SetModelNamespace(m int, ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modelNS[m] = ns
}

// gatewayPage is a snapshot of the gateway's series: per model with a
// namespace, the requests held and the requests arrived.
func (f *Fleet) gatewayPage() *gatewayMetrics {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := &gatewayMetrics{}
	for m, name := range f.modelNames {
		if f.modelNS[m] == "" {
			continue
		}
		g.rows = append(g.rows, gatewayRow{model: name, namespace: f.modelNS[m], waiting: f.live.GatewayWaiting(m), arrived: f.live.Arrivals(m)})
	}
	return g
}
