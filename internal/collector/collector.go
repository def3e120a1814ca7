// Package collector defines where the controller's metrics come from: a
// Source reads, for one model in one namespace, the vLLM metrics of every
// pod serving it and returns them as the engine's Pod records, with the
// problems it found. The Prometheus source (package prometheus) is the
// production one; the seam lets tests and the simulator plug in others
// (seed 004 §IV.C, MetricsSource).
package collector

import (
	"context"
	"fmt"
	"time"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/registry"
)

// Target is one model's pods in one namespace: the series whose
// model_name label is Model.
type Target struct {
	Namespace string
	Model     string
}

func (t Target) String() string { return t.Namespace + "/" + t.Model }

// PodMetrics is one pod's metrics: the engine's record plus the labels of
// its series that the source was asked to keep (for example the label that
// names the pod's variant).
type PodMetrics struct {
	Namespace string
	Pod       engine.Pod
	Labels    map[string]string
}

// Report is what a source read for a target.
type Report struct {
	Target Target
	// Time is the evaluation time of the queries.
	Time time.Time
	// Pods are sorted by name. A pod some of whose required metrics are
	// missing or invalid has Pod.Missing set (the engine then holds its
	// variant) and a line in Problems.
	Pods []PodMetrics
	// Problems says, in words, what was missing, stale or invalid.
	Problems []string
}

// Source reads the metrics of a target's pods as of now.
type Source interface {
	Collect(ctx context.Context, now time.Time, t Target) (Report, error)
}

// Factory builds a source from its settings (a flat map, as a ConfigMap
// gives them).
type Factory func(settings map[string]string) (Source, error)

var sources = registry.New[Factory]("metrics source")

// Register makes a source kind available by name. It panics on a
// duplicate name, as registration happens at start-up.
func Register(name string, f Factory) { sources.Register(name, f) }

// New builds a registered source.
func New(name string, settings map[string]string) (Source, error) {
	f, ok := sources.Get(name)
	if !ok {
		return nil, fmt.Errorf("collector: no metrics source %q (have: %v)", name, Kinds())
	}
	return f(settings)
}

// Kinds lists the registered sources.
func Kinds() []string { return sources.Names() }

// DemandSource reads a demand signal per target: requests waiting for a
// model that has no replica to serve them (the scale-from-zero trigger).
// The query is source-specific (PromQL for Prometheus).
type DemandSource interface {
	Demand(ctx context.Context, now time.Time, query string) (map[Target]float64, error)
}
