package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/metrics"
)

// staticSource answers every target with the same pods, renamed for it
// (the benchmark measures the controller, not Prometheus).
type staticSource struct{ pods int }

func (s staticSource) Collect(_ context.Context, now time.Time, t collector.Target) (collector.Report, error) {
	rep := collector.Report{Target: t, Time: now}
	for v := 0; v < 2; v++ {
		for i := 0; i < s.pods; i++ {
			rep.Pods = append(rep.Pods, collector.PodMetrics{Namespace: t.Namespace, Pod: engine.Pod{Name: fmt.Sprintf("%s-v%d-%d", t.Model, v, i),
				SampledAt: now, ArrivalRateRPS: 2, AvgInputTokens: 512, AvgOutputTokens: 128, AvgTTFTMs: 80, AvgITLMs: 12, KVCacheUsage: 0.5,
				WaitingRequests: 1, KVBlocks: 1000, BlockSize: 16, MaxBatchSize: 64, AgeSeconds: 600},
				Labels: map[string]string{"variant": fmt.Sprintf("%s-v%d", t.Model, v)}})
		}
	}
	return rep, nil
}

// BenchmarkCycle: one planner cycle over 50 models × 2 variants × 2 pods
// on the real API server (list, 100 Deployment reads, snapshot, engine,
// publish, cache), pods mapped by label. Status writes are not included
// (the reconciler runs per VA, on events).
func BenchmarkCycle(b *testing.B) {
	ctx := context.Background()
	const ns = "bench"
	benchOnce.Do(func() { benchErr = benchFleet(ctx, ns) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	p := benchPlanner(b, ns)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Clock.(*clocktesting.FakeClock).Step(time.Minute)
		if err := p.cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if d, ok := p.Cache.get(types.NamespacedName{Namespace: ns, Name: "m0-v0"}); !ok || !d.Decided {
		b.Fatalf("no decision: %+v", d)
	}
}

var (
	benchOnce sync.Once
	benchErr  error
)

// benchFleet creates 50 models × 2 variants with their Deployments.
func benchFleet(ctx context.Context, ns string) error {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	for m := 0; m < 50; m++ {
		for v := 0; v < 2; v++ {
			name := fmt.Sprintf("m%d-v%d", m, v)
			replicas := int32(2)
			d := benchDeployment(ns, name, replicas)
			if err := env.Client.Create(ctx, d); err != nil {
				return err
			}
			va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: wvav1.VariantAutoscalingSpec{ModelID: fmt.Sprintf("m%d", m), Accelerator: []string{"H100", "L40S"}[v]}}
			if err := env.Client.Create(ctx, va); err != nil {
				return err
			}
		}
	}
	return nil
}

func benchPlanner(b *testing.B, ns string) *planner {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	em, err := metrics.NewEmitter(reg)
	if err != nil {
		b.Fatal(err)
	}
	main := config.DefaultMain()
	main.PodVariantLabel = "variant"
	state := newConfigState(defaultConfigNames(), main)
	store := newConfigMapStore(env.Client, types.NamespacedName{Namespace: ctrlNS, Name: "bench-state"})
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ctrlNS}})
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	p := &planner{Client: env.Client, Reader: env.Client, Clock: clk, Config: state, Engine: engine.New(store), Store: store,
		Emitter: em, Cache: newDecisionCache(), Actuators: newActuators(env.Client), Log: logr.Discard(),
		Sources:     func(config.Main) (collector.Source, error) { return staticSource{pods: 2}, nil },
		ListOptions: []client.ListOption{client.InNamespace(ns)}}
	return p
}

func benchDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}}}}}
}
