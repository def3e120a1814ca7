// Package file is a metrics source that reads pod metrics from a YAML or
// JSON file, re-read at every collection: for tests, demos and replaying
// a recorded fleet without Prometheus. Register name "file", setting
// "path".
//
// The file:
//
//	targets:
//	- namespace: llm-d
//	  model: meta-llama/Llama-3.1-8B-Instruct
//	  pods:
//	  - name: llama-8b-h100-7d9f-abcde
//	    labels: {variant: llama-8b-h100}
//	    arrivalRate: 2.5        # the engine.Pod fields, as in `wva plan`
//	    kvCacheUsage: 0.42
//	    waitingRequests: 0
//	demand:                      # scale-from-zero signal per target
//	- {namespace: llm-d, model: meta-llama/Llama-3.1-8B-Instruct, value: 3}
package file

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/llm-d-incubation/wva/internal/boundedio"
	"github.com/llm-d-incubation/wva/internal/strictyaml"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// Document is the file's content.
type Document struct {
	Targets []TargetPods `json:"targets"`
	Demand  []Demand     `json:"demand,omitempty"`
}

// TargetPods are one target's pods.
type TargetPods struct {
	Namespace string `json:"namespace"`
	Model     string `json:"model"`
	Pods      []Pod  `json:"pods"`
}

// Pod is an engine.Pod with labels.
type Pod struct {
	engine.Pod `json:",inline"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// Demand is one target's waiting requests.
type Demand struct {
	Namespace string  `json:"namespace"`
	Model     string  `json:"model"`
	Value     float64 `json:"value"`
}

// MaxFileBytes bounds the file (re-read at every collection): a fleet of
// 10 000 pods is about 5 MiB.
const MaxFileBytes = 64 << 20

// Source reads a file.
type Source struct{ Path string }

var (
	_ collector.Source       = Source{}
	_ collector.DemandSource = Source{}
)

func (s Source) read() (Document, error) {
	var d Document
	b, err := boundedio.ReadFile(s.Path, MaxFileBytes)
	if err != nil {
		return d, fmt.Errorf("file source: %w", err)
	}
	if err := strictyaml.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("file source: %s: %w", s.Path, err)
	}
	return d, nil
}

// Collect implements collector.Source. A pod whose figures break the
// engine's validity rule gets a problem for each, as from the Prometheus
// source; the engine holds its variant.
func (s Source) Collect(_ context.Context, now time.Time, t collector.Target) (collector.Report, error) {
	rep := collector.Report{Target: t, Time: now}
	d, err := s.read()
	if err != nil {
		return rep, err
	}
	for _, tp := range d.Targets {
		if tp.Namespace != t.Namespace || tp.Model != t.Model {
			continue
		}
		for _, p := range tp.Pods {
			pod := p.Pod
			if pod.SampledAt.IsZero() {
				pod.SampledAt = now
			}
			if pod.Missing {
				rep.Problems = append(rep.Problems, collector.Problem{Pod: pod.Name, Kind: engine.HoldMissing, Detail: "missing (the file marks it so)"})
			}
			rep.Problems = append(rep.Problems, collector.InvalidPod(&pod)...)
			rep.Pods = append(rep.Pods, collector.PodMetrics{Namespace: t.Namespace, Pod: pod, Labels: p.Labels})
		}
	}
	sort.Slice(rep.Pods, func(i, j int) bool { return rep.Pods[i].Pod.Name < rep.Pods[j].Pod.Name })
	collector.SortProblems(rep.Problems)
	if len(rep.Pods) == 0 {
		rep.Problems = append(rep.Problems, collector.NoPods(t))
	}
	return rep, nil
}

// Demand implements collector.DemandSource; the query is ignored.
func (s Source) Demand(_ context.Context, _ time.Time, _ string) (map[collector.Target]float64, error) {
	d, err := s.read()
	if err != nil {
		return nil, err
	}
	out := map[collector.Target]float64{}
	for _, x := range d.Demand {
		out[collector.Target{Namespace: x.Namespace, Model: x.Model}] += x.Value
	}
	return out, nil
}

func init() {
	collector.Register("file", func(set map[string]string) (collector.Source, error) {
		if set["path"] == "" {
			return nil, errors.New("file source: the path setting is required")
		}
		return Source{Path: set["path"]}, nil
	})
}
