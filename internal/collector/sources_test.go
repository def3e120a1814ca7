package collector_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/collector/prometheus"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// sourceCase is one pod's condition, and what every source must make of
// it: whether the pod is Missing, and the kind and metric of each problem.
type sourceCase struct {
	pod           string
	kv, waiting   float64
	absent        bool // the queue gauge is not exported
	wantMissing   bool
	wantProblems  []string // "kind metric", sorted
	wantKVInRange bool
}

var sourceCases = []sourceCase{
	{pod: "healthy", kv: 0.4, waiting: 2, wantKVInRange: true},
	{pod: "negative-queue", kv: 0.4, waiting: -3, wantProblems: []string{"invalid waitingRequests"}, wantKVInRange: true},
	{pod: "kv-above-one", kv: 1.5, waiting: 0, wantProblems: []string{"invalid kvCacheUsage"}},
	{pod: "no-gauge", kv: 0.4, absent: true, wantMissing: true, wantProblems: []string{"missing"}},
}

// TestSourcesAgree runs one table against the file source and against a
// real Prometheus scraping vLLM-like pages: both report the same pods as
// Missing and the same kinds of problem for the same figures, so the
// controller's conditions do not depend on where metrics come from.
func TestSourcesAgree(t *testing.T) {
	target := collector.Target{Namespace: "llm", Model: "llama"}
	sources := map[string]func(t *testing.T) collector.Report{
		"file":       func(t *testing.T) collector.Report { return collectFile(t, target) },
		"prometheus": func(t *testing.T) collector.Report { return collectPrometheus(t, target) },
	}
	for name, collect := range sources {
		t.Run(name, func(t *testing.T) {
			rep := collect(t)
			byPod := map[string]collector.PodMetrics{}
			for _, p := range rep.Pods {
				byPod[p.Pod.Name] = p
			}
			for _, tc := range sourceCases {
				p, ok := byPod[tc.pod]
				if !ok {
					t.Errorf("%s: no record", tc.pod)
					continue
				}
				if p.Pod.Missing != tc.wantMissing {
					t.Errorf("%s: missing %v, want %v", tc.pod, p.Pod.Missing, tc.wantMissing)
				}
				if got := kinds(rep.Problems, tc.pod); got != strings.Join(tc.wantProblems, ",") {
					t.Errorf("%s: problems %q, want %q (%+v)", tc.pod, got, strings.Join(tc.wantProblems, ","), rep.Problems)
				}
				if tc.wantKVInRange && p.Pod.KVCacheUsage != tc.kv {
					t.Errorf("%s: kv %v, want %v", tc.pod, p.Pod.KVCacheUsage, tc.kv)
				}
			}
		})
	}
}

// kinds are a pod's problems that hold something, as "kind metric" (the
// metric only for invalid figures, which the sources name alike).
func kinds(ps []collector.Problem, pod string) string {
	var out []string
	for _, p := range ps {
		if p.Pod != pod || p.Kind == "" {
			continue
		}
		if p.Kind == engine.HoldInvalid {
			out = append(out, string(p.Kind)+" "+p.Metric)
		} else {
			out = append(out, string(p.Kind))
		}
	}
	return strings.Join(out, ",")
}

func collectFile(t *testing.T, target collector.Target) collector.Report {
	t.Helper()
	var pods []file.Pod
	for _, tc := range sourceCases {
		pods = append(pods, file.Pod{Pod: engine.Pod{Name: tc.pod, ArrivalRateRPS: 2, AvgInputTokens: 1000, AvgOutputTokens: 200,
			AvgTTFTMs: 50, AvgITLMs: 10, KVCacheUsage: tc.kv, WaitingRequests: tc.waiting, RunningRequests: 7, Missing: tc.absent}})
	}
	b, err := yaml.Marshal(file.Document{Targets: []file.TargetPods{{Namespace: target.Namespace, Model: target.Model, Pods: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "metrics.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := file.Source{Path: path}.Collect(context.Background(), time.Now(), target)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func collectPrometheus(t *testing.T, target collector.Target) collector.Report {
	t.Helper()
	scrape := map[string]map[string]string{}
	for _, tc := range sourceCases {
		var omit []string
		if tc.absent {
			omit = []string{"vllm:num_requests_waiting"}
		}
		srv := testenv.VLLMPodWithout(t, target.Model, 2, tc.kv, tc.waiting, omit...)
		scrape[strings.TrimPrefix(srv.URL, "http://")] = map[string]string{"namespace": target.Namespace, "pod": tc.pod}
	}
	src, err := prometheus.New(prometheus.Config{URL: testenv.Prometheus(t, scrape), Window: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		rep, err := src.Collect(context.Background(), time.Now(), target)
		if err != nil {
			t.Fatal(err)
		}
		if settled(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled report after 30 s: %+v", rep)
		}
	}
}

// settled: every pod reported and every present rate has two samples.
func settled(rep collector.Report) bool {
	if len(rep.Pods) != len(sourceCases) {
		return false
	}
	for _, p := range rep.Problems {
		if p.Kind == "" {
			return false // a pod still too new for a rate
		}
	}
	for _, p := range rep.Pods {
		if p.Pod.Name == "healthy" && p.Pod.ArrivalRateRPS < 1.5 {
			return false
		}
	}
	return true
}
