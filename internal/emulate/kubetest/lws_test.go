package kubetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/llm-d-incubation/wva/internal/emulate"
	"github.com/llm-d-incubation/wva/internal/sim"
)

var lwsGVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// newLWS creates a LeaderWorkerSet of groups of size pods.
func newLWS(t *testing.T, dyn dynamic.Interface, ns, name string, replicas, size int64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"wva.llmd.ai/emulate": "true"}},
		"spec": map[string]any{"replicas": replicas, "leaderWorkerTemplate": map[string]any{"size": size,
			"workerTemplate": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0"}}}}}},
	}}
	if _, err := dyn.Resource(lwsGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lwsFixture is an emulator for one LeaderWorkerSet on the real API
// server with a fake clock.
type lwsFixture struct {
	t     *testing.T
	ctx   context.Context
	kc    kubernetes.Interface
	dyn   dynamic.Interface
	ns    string
	clk   *clocktesting.FakeClock
	fleet *emulate.Fleet
	em    *emulate.Emulator
}

// newLWSFixture: a LeaderWorkerSet llama-lws of 2 groups of 2 pods and
// the emulator at time scale 10 (servers load in 3 s of the fake clock).
func newLWSFixture(t *testing.T) *lwsFixture {
	t.Helper()
	f := &lwsFixture{t: t, ctx: context.Background(), kc: kubernetes.NewForConfigOrDie(env.Config), dyn: dynamic.NewForConfigOrDie(env.Config),
		clk: clocktesting.NewFakeClock(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))}
	nsCount++
	f.ns = fmt.Sprintf("emulate-%d", nsCount)
	if _, err := f.kc.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newLWS(t, f.dyn, f.ns, "llama-lws", 2, 2)
	spec, err := emulate.ParseSpec([]byte(`
seed: 3
models:
  - name: ` + testModel + `
    workload: {rate: {pattern: constant, rps: 8}, input: {mean: 512}, output: {mean: 128}}
    deployments:
      - {name: llama-lws, namespace: ` + f.ns + `, params: {alpha: 7, beta: 0.02, gamma: 0.00005}, kvBlocks: 4096, startupSeconds: 30, startupJitterSeconds: 0.001}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.fleet, err = emulate.NewFleet(spec, emulate.FleetOptions{Clock: f.clk, TimeScale: 10}); err != nil {
		t.Fatal(err)
	}
	sel, _ := labels.Parse("wva.llmd.ai/emulate=true")
	f.em = emulate.New(f.kc, f.fleet, emulate.Options{Namespace: f.ns, Selector: sel, Clock: f.clk, Log: testr.New(t), Dynamic: f.dyn})
	ctx, cancel := context.WithCancel(f.ctx)
	t.Cleanup(cancel)
	if err := f.em.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *lwsFixture) pods() []corev1.Pod {
	f.t.Helper()
	l, err := f.kc.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: emulate.LWSNameLabel + "=llama-lws"})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// status is the set's status: replicas, ready replicas, hpaPodSelector.
func (f *lwsFixture) status() (n, ready int64, sel string) {
	f.t.Helper()
	u, err := f.dyn.Resource(lwsGVR).Namespace(f.ns).Get(f.ctx, "llama-lws", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
	ready, _, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	sel, _, _ = unstructured.NestedString(u.Object, "status", "hpaPodSelector")
	return n, ready, sel
}

// until steps the emulator until cond holds, for at most 20 s.
func (f *lwsFixture) until(what string, cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := f.em.Step(f.ctx); err != nil {
			f.t.Fatal(err)
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s; %d pods", what, len(f.pods()))
		}
	}
}

// patch merge-patches a pod or, with pod empty, the set.
func (f *lwsFixture) patch(pod, body string) {
	f.t.Helper()
	var err error
	if pod != "" {
		_, err = f.kc.CoreV1().Pods(f.ns).Patch(f.ctx, pod, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	} else {
		_, err = f.dyn.Resource(lwsGVR).Namespace(f.ns).Patch(f.ctx, "llama-lws", types.MergePatchType, []byte(body), metav1.PatchOptions{})
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// groupLabels are the pods of 2 groups of 2: group and worker index.
var groupLabels = map[string][2]string{"llama-lws-0": {"0", "0"}, "llama-lws-0-1": {"0", "1"}, "llama-lws-1": {"1", "0"}, "llama-lws-1-1": {"1", "1"}}

// checkGroups: each pod is named and labelled as LeaderWorkerSet makes it,
// with the template's labels; when ready, every pod is Ready and only the
// leaders serve /metrics.
func checkGroups(t *testing.T, pods []corev1.Pod, ready bool) {
	t.Helper()
	for _, p := range pods {
		w, ok := groupLabels[p.Name]
		if !ok || p.Labels[emulate.LWSGroupIndexLabel] != w[0] || p.Labels[emulate.LWSWorkerIndexLabel] != w[1] || p.Labels["app"] != "llama-lws" {
			t.Errorf("pod %s: labels %v", p.Name, p.Labels)
		}
		if !ready {
			continue
		}
		if serves := p.Annotations[emulate.MetricsAnnotation] != ""; serves != (w[1] == "0") {
			t.Errorf("pod %s: metrics annotation %q (only leaders serve /metrics)", p.Name, p.Annotations[emulate.MetricsAnnotation])
		}
		if !podIsReady(p) {
			t.Errorf("pod %s not ready with its group", p.Name)
		}
	}
}

// TestEmulatorPlaysLeaderWorkerSet: a spec entry that names a
// LeaderWorkerSet gets a group of pods per replica (the leader serving
// /metrics, labelled with the set's name, group and worker index), the
// set's status follows the groups, the endpoint picker's active-ports
// annotation on the leader takes the group out of rotation, and a
// scale-down removes the highest group.
func TestEmulatorPlaysLeaderWorkerSet(t *testing.T) {
	f := newLWSFixture(t)
	f.until("2 groups of 2 pods", func() bool { n, _, _ := f.status(); return len(f.pods()) == 4 && n == 2 })
	checkGroups(t, f.pods(), false)
	f.clk.Step(3100 * time.Millisecond)
	f.until("2 ready groups", func() bool { _, r, _ := f.status(); return r == 2 })
	checkGroups(t, f.pods(), true)
	if _, _, s := f.status(); s != "leaderworkerset.sigs.k8s.io/name=llama-lws,leaderworkerset.sigs.k8s.io/worker-index=0" {
		t.Errorf("hpaPodSelector %q", s)
	}

	f.patch("llama-lws-1", fmt.Sprintf(`{"metadata":{"annotations":{%q:"0"}}}`, emulate.ActivePortsAnnotation))
	f.clk.Step(time.Second)
	f.until("group 1 out of rotation", func() bool {
		return slices.ContainsFunc(f.fleet.Replicas(0), func(r sim.LiveReplica) bool { return r.OutOfRotation })
	})

	// Scale to 1: the highest group goes.
	f.patch("", `{"spec":{"replicas":1}}`)
	f.until("1 group", func() bool { n, _, _ := f.status(); return len(f.pods()) == 2 && n == 1 })
	for _, p := range f.pods() {
		if !strings.HasPrefix(p.Name, "llama-lws-0") {
			t.Errorf("pod %s left: the scale-down removes the highest group", p.Name)
		}
	}
	if err := f.em.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if ps := f.pods(); len(ps) != 0 {
		t.Errorf("%d pods left after shutdown", len(ps))
	}
}

func podIsReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
