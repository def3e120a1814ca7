package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/metrics"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

var env *testenv.Env

const ctrlNS = "wva-system"

// The suite serves the CRDs of bin/crds too (make crds): LeaderWorkerSet,
// a scalable target (workload_test.go).
func TestMain(m *testing.M) { testenv.Main(m, &env, filepath.Join(testenv.Root(), "bin", "crds")) }

// fixture is a controller assembled around the real API server, with a
// fake clock and a metrics file, driven synchronously.
type fixture struct {
	t        *testing.T
	ns       string
	clock    *clocktesting.FakeClock
	planner  *planner
	rec      *reconciler
	cfg      *configReconciler
	reg      *prometheus.Registry
	metrics  string
	notified []types.NamespacedName
}

var nsCount int

func newFixture(t *testing.T) *fixture {
	t.Helper()
	nsCount++
	ns := fmt.Sprintf("t%d-%s", nsCount, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.TrimRight(ns, "-")
	ctx := context.Background()
	for _, n := range []string{ns, ctrlNS} {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, ns: ns, clock: clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)),
		reg: prometheus.NewRegistry(), metrics: filepath.Join(t.TempDir(), "metrics.yaml")}
	f.writeMetrics(file.Document{})
	em, err := metrics.NewEmitter(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	names := defaultConfigNames()
	state := newConfigState(names, config.DefaultMain())
	store := newConfigMapStore(env.Client, types.NamespacedName{Namespace: ctrlNS, Name: "state-" + ns})
	f.planner = &planner{Client: env.Client, Reader: env.Client, Clock: f.clock, Config: state, Engine: engine.New(store), Store: store,
		Emitter: em, Cache: newDecisionCache(), Actuators: newActuators(env.Client), Log: logr.Discard(),
		Sources: func(config.Main) (collector.Source, error) { return file.Source{Path: f.metrics}, nil },
		Notify:  func(k types.NamespacedName) { f.notified = append(f.notified, k) }, Wake: make(chan struct{}, 1), Surge: make(chan struct{}, 1),
		ListOptions: []client.ListOption{client.InNamespace(ns)}}
	f.rec = &reconciler{Client: env.Client, Clock: f.clock, Cache: f.planner.Cache, Config: state}
	f.cfg = &configReconciler{Client: env.Client, Namespace: ctrlNS, Names: names, State: state}
	return f
}

func (f *fixture) writeMetrics(d file.Document) {
	b, err := yaml.Marshal(d)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.metrics, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// deployment creates a Deployment with replicas (all ready) and its pods.
func (f *fixture) deployment(name string, replicas int32) *appsv1.Deployment {
	f.t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}}}}}
	if err := env.Client.Create(ctx, d); err != nil {
		f.t.Fatal(err)
	}
	f.setReady(d, replicas)
	for i := int32(0); i < replicas; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: f.ns, Labels: labels},
			Spec: d.Spec.Template.Spec}
		if err := env.Client.Create(ctx, pod); err != nil {
			f.t.Fatal(err)
		}
	}
	return d
}

// setReady plays the Deployment controller (not running in envtest).
func (f *fixture) setReady(d *appsv1.Deployment, ready int32) {
	f.t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		f.t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = *d.Spec.Replicas, ready, ready
	if err := env.Client.Status().Update(ctx, d); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) va(name, model string, mutate func(*wvav1.VariantAutoscaling)) *wvav1.VariantAutoscaling {
	f.t.Helper()
	va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: wvav1.VariantAutoscalingSpec{ModelID: model, Accelerator: "H100", VariantCost: "30"}}
	if mutate != nil {
		mutate(va)
	}
	if err := env.Client.Create(context.Background(), va); err != nil {
		f.t.Fatal(err)
	}
	return va
}

func (f *fixture) cycle() {
	f.t.Helper()
	if err := f.planner.cycle(context.Background()); err != nil {
		f.t.Fatalf("cycle: %v", err)
	}
}

// reconcile reconciles one VariantAutoscaling and returns it as stored.
func (f *fixture) reconcile(name string) *wvav1.VariantAutoscaling {
	f.t.Helper()
	k := types.NamespacedName{Namespace: f.ns, Name: name}
	if _, err := f.rec.Reconcile(context.Background(), ctrl.Request{NamespacedName: k}); err != nil {
		f.t.Fatalf("reconcile %s: %v", k, err)
	}
	var va wvav1.VariantAutoscaling
	if err := env.Client.Get(context.Background(), k, &va); err != nil {
		f.t.Fatal(err)
	}
	return &va
}

func cond(t *testing.T, va *wvav1.VariantAutoscaling, typ string) metav1.Condition {
	t.Helper()
	c := findCondition(va.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("%s: no condition %s in %+v", va.Name, typ, va.Status.Conditions)
	}
	return *c
}

func wantCond(t *testing.T, va *wvav1.VariantAutoscaling, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := cond(t, va, typ)
	if c.Status != status || c.Reason != reason {
		t.Fatalf("%s: condition %s = %s/%s (%s), want %s/%s", va.Name, typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

// gauge reads a series from the fixture's registry (-1 when absent).
func (f *fixture) gauge(name, variant string) float64 {
	f.t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, metrics.LabelVariant) == variant && label(m, metrics.LabelNamespace) == f.ns {
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// pods returns metrics for a deployment's pods.
func pods(name string, n int, kv, waiting float64) []file.Pod {
	out := make([]file.Pod, n)
	for i := range out {
		out[i] = file.Pod{Pod: engine.Pod{Name: fmt.Sprintf("%s-%d", name, i), ArrivalRateRPS: 2, AvgInputTokens: 512, AvgOutputTokens: 128,
			AvgTTFTMs: 80, AvgITLMs: 12, KVCacheUsage: kv, WaitingRequests: waiting, KVBlocks: 1000, BlockSize: 16, MaxBatchSize: 64, AgeSeconds: 600}}
	}
	return out
}

func recorderFor(t *testing.T) events.EventRecorder {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	t.Cleanup(func() { close(stop); b.Shutdown() })
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	return b.NewRecorder(s, "wva")
}

func sleep() { time.Sleep(100 * time.Millisecond) }
