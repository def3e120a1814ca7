// Package collector defines where the controller's metrics come from: a
// Source reads, for one model in one namespace, the vLLM metrics of every
// pod serving it and returns them as the engine's Pod records, with the
// problems it found. The Prometheus source (package prometheus) is the
// production one; the seam lets tests and the simulator plug in others
// (the WVA paper §IV.C, its MetricsSource).
package collector

import (
	"context"
	"fmt"
	"sort"
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
	// Pods are sorted by name. A pod some of whose required series are
	// absent has Pod.Missing set; one with a figure no server can report
	// keeps it (the engine judges it with the same rule, InvalidPod). Either
	// way the engine holds its variant, and Problems says why.
	Pods []PodMetrics
	// Problems are what was absent or invalid, by pod, sorted.
	Problems []Problem
}

// Problem is one thing wrong with a target's metrics. Its kind is the
// engine's hold cause it leads to.
type Problem struct {
	// Pod is the pod's name; empty for the target as a whole (no pod
	// reports metrics).
	Pod string
	// Metric names the series or figure (e.g. vllm:request_success_total,
	// kvCacheUsage); empty when the problem is the pod's or the target's.
	Metric string
	// Kind is empty for information that holds nothing (a pod too new
	// for a rate).
	Kind engine.HoldCause
	// Detail says what is wrong, for a person.
	Detail string
}

// String is the problem as the controller's status shows it: "pod: detail".
func (p Problem) String() string {
	if p.Pod == "" {
		return p.Detail
	}
	return p.Pod + ": " + p.Detail
}

// InvalidPod applies the engine's validity rule (engine.InvalidMetrics) to
// a pod and returns a problem for each figure it rejects.
func InvalidPod(p *engine.Pod) []Problem {
	bad := engine.InvalidMetrics(p)
	out := make([]Problem, 0, len(bad))
	for _, m := range bad {
		out = append(out, Problem{Pod: p.Name, Metric: m.Metric, Kind: engine.HoldInvalid, Detail: fmt.Sprintf("%s is %v (%s)", m.Metric, m.Value, m.Why)})
	}
	return out
}

// NoPods is the problem of a target no pod reports metrics for.
func NoPods(t Target) Problem {
	return Problem{Kind: engine.HoldMissing, Detail: fmt.Sprintf("no pod reports vLLM metrics for model %q in namespace %q", t.Model, t.Namespace)}
}

// SortProblems orders problems by pod, metric and detail.
func SortProblems(ps []Problem) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		return a.Detail < b.Detail
	})
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
