package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
)

// serverPod is a vLLM container asking for gpus GPUs with a batch of seqs.
func serverPod(seqs string, gpus int64) corev1.PodSpec {
	c := container("vllm", []string{"vllm", "serve", model}, []string{"--max-num-seqs", seqs}, map[string]int64{"nvidia.com/gpu": gpus})
	c.Image = "vllm/vllm-openai"
	return corev1.PodSpec{Containers: []corev1.Container{c}}
}

// statefulSet creates a StatefulSet of replicas (all ready) and its pods.
func (f *fixture) statefulSet(name string, replicas int32) {
	f.t.Helper()
	ctx := context.Background()
	lbl := map[string]string{"app": name}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: serverPod("64", 1)}}}
	if err := env.Client.Create(ctx, s); err != nil {
		f.t.Fatal(err)
	}
	s.Status.Replicas, s.Status.ReadyReplicas, s.Status.AvailableReplicas = replicas, replicas, replicas
	if err := env.Client.Status().Update(ctx, s); err != nil {
		f.t.Fatal(err)
	}
	f.pods(name, replicas, lbl, s.Spec.Template.Spec)
}

// leaderWorkerSet creates a LeaderWorkerSet of replicas groups of size
// pods (all ready; its CRD is LeaderWorkerSet's own, from bin/crds) and the
// pods of its groups, named as its controller names them.
func (f *fixture) leaderWorkerSet(name string, replicas, size int32) *unstructured.Unstructured {
	f.t.Helper()
	ctx := context.Background()
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{Spec: serverPod("32", 8)})
	if err != nil {
		f.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": name, "namespace": f.ns},
		"spec":     map[string]any{"replicas": int64(replicas), "leaderWorkerTemplate": map[string]any{"size": int64(size), "workerTemplate": spec}}}}
	if err := env.Client.Create(ctx, u); err != nil {
		f.t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, map[string]any{"replicas": int64(replicas), "readyReplicas": int64(replicas),
		"hpaPodSelector": lwsNameLabel + "=" + name + ",leaderworkerset.sigs.k8s.io/worker-index=0"}, "status")
	if err := env.Client.Status().Update(ctx, u); err != nil {
		f.t.Fatal(err)
	}
	for g := range replicas {
		for w := range size {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", name, g, w), Namespace: f.ns,
				Labels: map[string]string{lwsNameLabel: name, "leaderworkerset.sigs.k8s.io/group-index": fmt.Sprint(g),
					"leaderworkerset.sigs.k8s.io/worker-index": fmt.Sprint(w)}}, Spec: serverPod("32", 8)}
			if err := env.Client.Create(ctx, pod); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	return u
}

// pods creates n pods name-0 … of a workload.
func (f *fixture) pods(name string, n int32, lbl map[string]string, spec corev1.PodSpec) {
	f.t.Helper()
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: f.ns, Labels: lbl}, Spec: spec}
		if err := env.Client.Create(context.Background(), pod); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestScalableTargets: on the real API server, a VariantAutoscaling scales a
// StatefulSet and a LeaderWorkerSet (its own CRD, with its scale
// subresource) through /scale as it does a Deployment: the target
// resolves, its pods are found by their selector (a LeaderWorkerSet's
// leaders and workers), the server settings come from its pod template
// (a LeaderWorkerSet's worker template), saturated pods scale it up
// (direct actuation), and a kind without a CRD is TargetNotFound with a
// message that says so.
func TestScalableTargets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.statefulSet("llama-sts", 2)
	lws := f.leaderWorkerSet("llama-lws", 1, 2)
	direct := func(kind, apiVersion string) func(*wvav1.VariantAutoscaling) {
		return func(va *wvav1.VariantAutoscaling) {
			va.Spec.Actuator = wvav1.ActuatorDirect
			va.Spec.ScaleTargetRef = &wvav1.CrossVersionObjectReference{Kind: kind, APIVersion: apiVersion, Name: va.Name}
		}
	}
	f.va("llama-sts", model, direct("StatefulSet", "apps/v1"))
	f.va("llama-lws", "llama-70b", direct("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1")) // another model: each grows on its own
	f.va("llama-rollout", model, direct("Rollout", "argoproj.io/v1alpha1"))
	group := pods("llama-lws", 2, 0.99, 40)
	group[0].Name, group[1].Name = "llama-lws-0-0", "llama-lws-0-1"
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-sts", 2, 0.99, 40)},
		{Namespace: f.ns, Model: "llama-70b", Pods: group}}})
	f.cycle()

	var sts appsv1.StatefulSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "llama-sts"}, &sts); err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas <= 2 {
		t.Errorf("the StatefulSet has %d replicas: saturated, it should have been scaled up", *sts.Spec.Replicas)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(lws), lws); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(lws.Object, "spec", "replicas"); n <= 1 {
		t.Errorf("the LeaderWorkerSet has %d groups: saturated, it should have been scaled up", n)
	}
	va := f.reconcile("llama-sts")
	c := wantCond(t, va, wvav1.ConditionTargetResolved, metav1.ConditionTrue, wvav1.ReasonTargetFound)
	if c.Message != "statefulset llama-sts found" || va.Status.CurrentAlloc.NumReplicas != *sts.Spec.Replicas {
		t.Errorf("TargetResolved %q, currentAlloc %+v", c.Message, va.Status.CurrentAlloc)
	}
	wantCond(t, va, wvav1.ConditionMetricsAvailable, metav1.ConditionTrue, wvav1.ReasonMetricsFound)
	c = wantCond(t, f.reconcile("llama-lws"), wvav1.ConditionServerSettings, metav1.ConditionTrue, wvav1.ReasonSettingsFromWorkload)
	if !strings.Contains(c.Message, "maxBatchSize 32") || !strings.Contains(c.Message, "acceleratorsPerReplica 16 from container vllm's accelerator resources × 2 pods per group") {
		t.Errorf("the LeaderWorkerSet's settings: %q", c.Message)
	}
	c = wantCond(t, f.reconcile("llama-lws"), wvav1.ConditionMetricsAvailable, metav1.ConditionTrue, wvav1.ReasonMetricsFound)
	if !strings.HasPrefix(c.Message, "2 pods") {
		t.Errorf("the LeaderWorkerSet's leader and worker report metrics: %q", c.Message)
	}
	c = wantCond(t, f.reconcile("llama-rollout"), wvav1.ConditionTargetResolved, metav1.ConditionFalse, wvav1.ReasonTargetNotFound)
	if !strings.Contains(c.Message, "no kind Rollout in argoproj.io/v1alpha1") {
		t.Errorf("a kind the API server does not serve: %q", c.Message)
	}
}
