// Package kubetest tests wva emulate's emulator against a real
// kube-apiserver and etcd (internal/testenv), apart from the package's
// unit tests, which need no control plane.
package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/llm-d-incubation/wva/internal/emulate"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

var env *testenv.Env

// The third-party CRDs (bin/crds, make crds) bring LeaderWorkerSet's.
func TestMain(m *testing.M) { testenv.Main(m, &env, filepath.Join(testenv.Root(), "bin", "crds")) }

const testModel = "meta-llama/Llama-3.1-8B-Instruct"

// fixture is an emulator on the real API server with a fake clock,
// stepped by the test.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	kc    kubernetes.Interface
	ns    string
	clk   *clocktesting.FakeClock
	em    *emulate.Emulator
	sd    string
	deply string
}

var nsCount int

// newFixture: namespace, a Deployment "llama" with `replicas` replicas,
// and the emulator at time scale 10 over a spec of 8 requests/s whose
// servers load in 30 model seconds (3 s of the fake clock).
func newFixture(t *testing.T, replicas int32) *fixture {
	t.Helper()
	return newFixtureClock(t, replicas, false)
}

// newFixtureClock is newFixture on the real clock when real is set (the
// test then runs the emulator itself).
func newFixtureClock(t *testing.T, replicas int32, real bool) *fixture {
	t.Helper()
	nsCount++
	f := &fixture{t: t, ctx: context.Background(), kc: kubernetes.NewForConfigOrDie(env.Config), ns: fmt.Sprintf("emulate-%d", nsCount),
		clk: clocktesting.NewFakeClock(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)), sd: filepath.Join(t.TempDir(), "sd.json"), deply: "llama"}
	if _, err := f.kc.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: f.deply, Namespace: f.ns, Labels: map[string]string{"wva.llmd.ai/emulate": "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "llama"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "llama", "tier": "serving"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.11.0"}}}}},
	}
	if _, err := f.kc.AppsV1().Deployments(f.ns).Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec, err := emulate.ParseSpec([]byte(`
seed: 3
models:
  - name: ` + testModel + `
    workload: {rate: {pattern: constant, rps: 8}, input: {mean: 512}, output: {mean: 128}}
    deployments:
      - {name: llama, namespace: ` + f.ns + `, params: {alpha: 7, beta: 0.02, gamma: 0.00005}, kvBlocks: 4096, startupSeconds: 30, startupJitterSeconds: 0.001}
`))
	if err != nil {
		t.Fatal(err)
	}
	fo := emulate.FleetOptions{Clock: f.clk, TimeScale: 10}
	eo := emulate.Options{Namespace: f.ns, SDFile: f.sd, Clock: f.clk, Log: testr.New(t)}
	if real {
		fo.Clock, eo.Clock = nil, nil
	}
	fleet, err := emulate.NewFleet(spec, fo)
	if err != nil {
		t.Fatal(err)
	}
	eo.Selector, _ = labels.Parse("wva.llmd.ai/emulate=true")
	f.em = emulate.New(f.kc, fleet, eo)
	if real {
		return f
	}
	ctx, cancel := context.WithCancel(f.ctx)
	t.Cleanup(cancel)
	if err := f.em.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// until steps the emulator until cond holds (the informers catch up in
// real time), for at most 20 s.
func (f *fixture) until(what string, cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := f.em.Step(f.ctx); err != nil {
			f.t.Fatal(err)
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s; pods %v", what, f.podNames())
		}
	}
}

func (f *fixture) pods() []corev1.Pod {
	f.t.Helper()
	l, err := f.kc.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=llama"})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

func (f *fixture) podNames() []string {
	var out []string
	for _, p := range f.pods() {
		out = append(out, p.Name)
	}
	return out
}

func (f *fixture) deployment() *appsv1.Deployment {
	f.t.Helper()
	d, err := f.kc.AppsV1().Deployments(f.ns).Get(f.ctx, f.deply, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) scaleTo(n int32) {
	f.t.Helper()
	b := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := f.kc.AppsV1().Deployments(f.ns).Patch(f.ctx, f.deply, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// readyPods counts the pods with Ready true.
func readyPods(ps []corev1.Pod) int {
	n := 0
	for _, p := range ps {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// statusIs: the Deployment's status says n replicas, ready of them ready,
// for its current generation.
func (f *fixture) statusIs(n, ready int32) bool {
	d := f.deployment()
	s := d.Status
	return s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == ready && s.AvailableReplicas == ready && s.ObservedGeneration == d.Generation
}

// checkPod: owned by the Deployment's ReplicaSet as WVA's controller
// expects (<deployment>-<pod-template-hash>, itself owned by the
// Deployment), with the template's labels, Running on loopback.
func checkPod(t *testing.T, kc kubernetes.Interface, p *corev1.Pod, d *appsv1.Deployment) {
	t.Helper()
	ref := metav1.GetControllerOf(p)
	hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if ref == nil || ref.Kind != "ReplicaSet" || hash == "" || ref.Name != d.Name+"-"+hash {
		t.Fatalf("pod %s owners %+v, labels %v", p.Name, p.OwnerReferences, p.Labels)
	}
	rs, err := kc.AppsV1().ReplicaSets(d.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := metav1.GetControllerOf(rs); rs.UID != ref.UID || o == nil || o.UID != d.UID || o.Kind != "Deployment" {
		t.Errorf("replicaset %s owners %+v", rs.Name, rs.OwnerReferences)
	}
	if p.Labels["app"] != "llama" || p.Labels["tier"] != "serving" || p.Labels[emulate.EmulatedLabel] != "true" {
		t.Errorf("pod %s labels %v", p.Name, p.Labels)
	}
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "127.0.0.1" {
		t.Errorf("pod %s status %s %q", p.Name, p.Status.Phase, p.Status.PodIP)
	}
}

// TestEmulatorFollowsTheDeployment: replicas 2, then 3, then 1: the pods
// follow with the right owner, labels and status, become ready after the
// start-up time, serve vLLM's /metrics, and the scale-down removes the
// pods with the lowest pod-deletion-cost; the Deployment's status and the
// SD file stay true; on shutdown the pods go.
func TestEmulatorFollowsTheDeployment(t *testing.T) {
	f := newFixture(t, 2)
	f.until("2 pods, not ready", func() bool { return len(f.pods()) == 2 && f.statusIs(2, 0) })
	d := f.deployment()
	for _, p := range f.pods() {
		checkPod(t, f.kc, &p, d)
	}
	if n := readyPods(f.pods()); n != 0 {
		t.Fatalf("%d pods ready before the start-up time", n)
	}
	f.clk.Step(3100 * time.Millisecond) // 31 model seconds
	f.until("2 ready pods", func() bool { return readyPods(f.pods()) == 2 && f.statusIs(2, 2) })
	checkSD(t, f, 2, true)

	f.scaleTo(3)
	f.until("3 pods", func() bool { return len(f.pods()) == 3 && f.statusIs(3, 2) })
	f.clk.Step(3100 * time.Millisecond)
	f.until("3 ready pods", func() bool { return readyPods(f.pods()) == 3 && f.statusIs(3, 3) })
	f.clk.Step(30 * time.Second) // 300 model seconds of load
	if err := f.em.Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.pods() {
		checkMetrics(t, p.Annotations[emulate.MetricsAnnotation])
	}

	checkReplicaSet(t, f, 3, 3)
	keep := scaleDownByCost(t, f)
	f.until("1 pod", func() bool { return len(f.pods()) == 1 && f.statusIs(1, 1) })
	if got := f.pods()[0].Name; got != keep {
		t.Errorf("kept %s, want %s (the highest pod-deletion-cost)", got, keep)
	}
	checkSD(t, f, 1, true)

	checkShutdown(t, f)
}

// checkShutdown: the emulator stops, its pods and ReplicaSet go, the
// Deployment's status says nothing runs, the SD file is empty.
func checkShutdown(t *testing.T, f *fixture) {
	t.Helper()
	if err := f.em.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if ps := f.pods(); len(ps) != 0 {
		t.Errorf("pods left after shutdown: %v", f.podNames())
	}
	if !f.statusIs(0, 0) {
		t.Errorf("status after shutdown: %+v", f.deployment().Status)
	}
	if rs, err := f.kc.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{}); err != nil || len(rs.Items) != 0 {
		t.Errorf("replicasets after shutdown: %v %v", rs, err)
	}
	checkSD(t, f, 0, false)
}

// scaleDownByCost marks the three pods with costs 5, 100 and -3 (the
// middle one by name the most costly), scales to 1 and returns the pod to
// keep.
func scaleDownByCost(t *testing.T, f *fixture) string {
	t.Helper()
	ps := f.pods()
	for i, c := range []string{"5", "100", "-3"} {
		b := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, emulate.DeletionCostAnnotation, c)
		if _, err := f.kc.CoreV1().Pods(f.ns).Patch(f.ctx, ps[i].Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.scaleTo(1)
	return ps[1].Name
}

// checkSD: the SD file lists n pods, each with the namespace and pod
// labels of a pod that exists, and the gateway while the emulator runs.
func checkSD(t *testing.T, f *fixture, n int, running bool) {
	t.Helper()
	b, err := os.ReadFile(f.sd)
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(b, &groups); err != nil {
		t.Fatalf("SD file: %v\n%s", err, b)
	}
	pods := map[string]string{}
	for _, p := range f.pods() {
		pods[p.Name] = p.Annotations[emulate.MetricsAnnotation]
	}
	gateways := 0
	for _, g := range groups {
		if g.Labels["component"] == "emulated-gateway" {
			gateways++
			continue
		}
		n--
		if g.Labels["namespace"] != f.ns || len(g.Targets) != 1 || pods[g.Labels["pod"]] != g.Targets[0] {
			t.Errorf("SD group %+v does not match the pods %v", g, pods)
		}
	}
	if n != 0 || gateways != want(running) {
		t.Errorf("SD file: %d pods too many or few, %d gateways:\n%s", -n, gateways, b)
	}
}

// want is 1 for true, 0 for false.
func want(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkMetrics scrapes a server: the page parses and has the series the
// collector reads, with requests served.
func checkMetrics(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:request_prompt_tokens",
		"vllm:request_generation_tokens", "vllm:cache_config_info"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s: no %s", addr, name)
		}
	}
	done := 0.0
	if f := fams["vllm:request_success_total"]; f != nil {
		for _, m := range f.Metric { // one series per finish reason
			done += m.Counter.GetValue()
		}
	}
	if done < 100 {
		t.Errorf("%s: request_success_total %v after 300 model seconds at 8/s", addr, done)
	}
}

// TestLeftoversDeleted: at start, the emulated pods an earlier run left
// for a managed Deployment are deleted; emulated pods of other owners are
// not.
func TestLeftoversDeleted(t *testing.T) {
	f := newFixtureClock(t, 0, true)
	d := f.deployment()
	mk := func(name string, owned bool) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{emulate.EmulatedLabel: "true"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if owned {
			p.Annotations = map[string]string{emulate.DeploymentAnnotation: string(d.UID)}
		}
		if _, err := f.kc.CoreV1().Pods(f.ns).Create(f.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("llama-emu-1", true)
	mk("someone-elses", false)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	if err := f.em.Start(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := f.kc.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	if len(names) != 1 || names[0] != "someone-elses" {
		t.Errorf("pods after start: %v, want [someone-elses]", names)
	}
	if err := f.em.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// checkReplicaSet: the Deployment's one ReplicaSet says n replicas, ready
// of them ready.
func checkReplicaSet(t *testing.T, f *fixture, n, ready int32) {
	t.Helper()
	l, err := f.kc.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("%d replicasets", len(l.Items))
	}
	rs := l.Items[0]
	if ptr.Deref(rs.Spec.Replicas, -1) != n || rs.Status.Replicas != n || rs.Status.ReadyReplicas != ready || rs.Status.AvailableReplicas != ready {
		t.Errorf("replicaset %s: spec %v, status %+v", rs.Name, ptr.Deref(rs.Spec.Replicas, -1), rs.Status)
	}
}
