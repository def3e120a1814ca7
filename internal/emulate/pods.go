package emulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/llm-d-incubation/wva/internal/sim"
)

const (
	// EmulatedLabel marks the pods the emulator creates (value "true").
	EmulatedLabel = "wva.llmd.ai/emulated"
	// MetricsAnnotation on an emulated pod gives its /metrics address.
	MetricsAnnotation = "wva.llmd.ai/emulated-metrics"
	// DeploymentAnnotation on an emulated pod is its Deployment's UID.
	DeploymentAnnotation = "wva.llmd.ai/emulated-deployment"
	// DeletionCostAnnotation is the ReplicaSet controller's
	// pod-deletion-cost (https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/#pod-deletion-cost).
	DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
)

// emuPod is a Pod object the emulator created for one server.
type emuPod struct {
	id         int
	target     Target
	namespace  string
	name       string
	deployment string
	// ready is the readiness last written to the pod's status.
	ready      bool
	started    metav1.Time
	containers []corev1.Container
	ep         *endpoint
	// group and workers: a LeaderWorkerSet's group index and the names of
	// its worker pods (this pod is the leader).
	group   int
	workers []string
}

// podName names a server's pod: its ReplicaSet's name, "emu" and the
// server's number (unique within the emulator's run).
func podName(replicaSet string, id int) string {
	return replicaSet + "-emu-" + strconv.Itoa(id)
}

// newPod builds the Pod of a server from its ReplicaSet's template: the
// template's labels (the Deployment's selector and pod-template-hash match
// them) plus EmulatedLabel, the Deployment's UID in DeploymentAnnotation,
// and the ReplicaSet as its controlling owner.
func newPod(d *appsv1.Deployment, rs *appsv1.ReplicaSet, id int) *corev1.Pod {
	tpl := rs.Spec.Template.DeepCopy()
	labels := map[string]string{}
	for k, v := range tpl.Labels {
		labels[k] = v
	}
	labels[EmulatedLabel] = "true"
	annotations := map[string]string{}
	for k, v := range tpl.Annotations {
		annotations[k] = v
	}
	annotations[DeploymentAnnotation] = string(d.UID)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podName(rs.Name, id), Namespace: d.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: tpl.Spec,
	}
}

// podStatus is the status the kubelet would report: Running on loopback,
// its containers running, Ready once the server has loaded its model.
func podStatus(ready bool, start metav1.Time, containers []corev1.Container) corev1.PodStatus {
	cond := func(t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		s := corev1.ConditionTrue
		if !ok {
			s = corev1.ConditionFalse
		}
		return corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: start}
	}
	reason := ""
	if !ready {
		reason = "ModelLoading"
	}
	cs := make([]corev1.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		cs = append(cs, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: ready, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}})
	}
	return corev1.PodStatus{
		ContainerStatuses: cs,
		Phase:             corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}}, HostIP: "127.0.0.1",
		StartTime: &start,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled, true, ""), cond(corev1.PodInitialized, true, ""),
			cond(corev1.ContainersReady, ready, reason), cond(corev1.PodReady, ready, reason),
		},
	}
}

// patchStatus writes a pod's status (a merge patch of the status
// subresource: no resourceVersion needed).
func (e *Emulator) patchPodStatus(ctx context.Context, p *emuPod, ready bool) error {
	b, err := json.Marshal(map[string]any{"status": podStatus(ready, p.started, p.containers)})
	if err != nil {
		return err
	}
	for _, name := range append([]string{p.name}, p.workers...) {
		_, err = e.kc.CoreV1().Pods(p.namespace).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
		if err != nil {
			return fmt.Errorf("pod %s/%s status: %w", p.namespace, name, err)
		}
	}
	p.ready = ready
	return nil
}

// deletePod deletes a server's pod at once (no kubelet waits for it) and
// stops its endpoint.
func (e *Emulator) deletePod(ctx context.Context, p *emuPod) error {
	if p.ep != nil {
		p.ep.close()
		p.ep = nil
	}
	for _, name := range append([]string{p.name}, p.workers...) {
		err := e.kc.CoreV1().Pods(p.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s/%s: %w", p.namespace, name, err)
		}
	}
	delete(e.pods, p.id)
	e.log.Info("pod deleted", "namespace", p.namespace, "pod", p.name)
	return nil
}

// podMarks reads what a controller marked on a target's pods: the
// pod-deletion-cost annotations (replica ID → cost; an unparsable or
// missing one counts as 0, as the ReplicaSet controller takes it), and
// which pods the endpoint picker leaves out of rotation (see
// outOfRotation). Each round reads the pod informer's cache; fresh (one
// list from the API server) is for a scale-down, whose victims are ranked
// by costs a controller may have set just before it lowered the count
// (the pod informer could still lag behind the Deployment's).
func (e *Emulator) podMarks(ctx context.Context, t Target, fresh bool) (costs map[int]int32, out map[int]bool, err error) {
	mine := e.podsOf(t)
	if len(mine) == 0 {
		return nil, nil, nil
	}
	byName, err := e.listPods(ctx, mine[0].namespace, fresh)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the pods of %s: %w", t.Name, err)
	}
	costs, out = map[int]int32{}, map[int]bool{}
	for _, p := range mine {
		obj, ok := byName[p.name]
		if !ok {
			continue
		}
		c, err := strconv.ParseInt(obj.Annotations[DeletionCostAnnotation], 10, 32)
		if err != nil {
			c = 0
		}
		costs[p.id] = int32(c)
		out[p.id] = outOfRotation(obj.Annotations)
	}
	return costs, out, nil
}

// listPods returns the emulated pods of a namespace by name, from the
// informer's cache or, fresh, from the API server.
func (e *Emulator) listPods(ctx context.Context, ns string, fresh bool) (map[string]*corev1.Pod, error) {
	var pods []*corev1.Pod
	if !fresh && e.podLister != nil {
		var err error
		// The pod informer watches the emulated pods only.
		if pods, err = e.podLister.Pods(ns).List(labels.Everything()); err != nil {
			return nil, err
		}
	} else {
		list, err := e.kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: EmulatedLabel + "=true"})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
	}
	return byName, nil
}

// Active-ports annotations, as llm-d's router (v0.9 and later) and the
// Gateway API Inference Extension's endpoint picker (v1.4 and later) read
// them: a pod that has one serves only on the ports it lists.
const (
	ActivePortsAnnotation       = "llm-d.ai/active-ports"
	LegacyActivePortsAnnotation = "inference.networking.k8s.io/active-ports"
)

// outOfRotation applies the endpoint picker's rule to an emulated pod
// (which serves on one port): with an active-ports annotation (llm-d's
// key first, else the older one) that lists no port > 0, the picker sends
// it nothing.
func outOfRotation(a map[string]string) bool {
	v, ok := a[ActivePortsAnnotation]
	if !ok {
		v, ok = a[LegacyActivePortsAnnotation]
	}
	if !ok {
		return false
	}
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			return false
		}
	}
	return true
}

// syncPods makes the target's pods match its servers: a pod per server
// not terminating, Ready when the server is, serving /metrics from then;
// the others deleted.
func (e *Emulator) syncPods(ctx context.Context, d *appsv1.Deployment, t Target, reps []sim.LiveReplica) error {
	want := map[int]sim.LiveReplica{}
	for _, r := range reps {
		if !r.Terminating {
			want[r.ID] = r
		}
	}
	for _, p := range e.podsOf(t) {
		if _, ok := want[p.id]; !ok {
			if err := e.deletePod(ctx, p); err != nil {
				return err
			}
		}
	}
	if d == nil {
		return nil
	}
	rs, err := e.replicaSet(ctx, d)
	if err != nil {
		return err
	}
	for _, r := range reps {
		if r.Terminating {
			continue
		}
		if err := e.syncPod(ctx, d, rs, t, r); err != nil {
			return err
		}
	}
	return nil
}

// syncPod creates a server's pod if missing and brings its status and
// endpoint up to date.
func (e *Emulator) syncPod(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, t Target, r sim.LiveReplica) error {
	p, ok := e.pods[r.ID]
	if !ok {
		pod := newPod(d, rs, r.ID)
		if err := e.ensureServiceAccount(ctx, d.Namespace, pod.Spec.ServiceAccountName); err != nil {
			return err
		}
		if _, err := e.kc.CoreV1().Pods(d.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Not ours (an earlier run's, say): it goes, ours comes next round.
				err = errors.Join(err, e.kc.CoreV1().Pods(d.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
			}
			return fmt.Errorf("creating pod %s/%s: %w", d.Namespace, pod.Name, err)
		}
		p = &emuPod{id: r.ID, target: t, namespace: d.Namespace, name: pod.Name, deployment: d.Name,
			started: metav1.NewTime(e.opts.Clock.Now()), containers: pod.Spec.Containers}
		e.pods[r.ID] = p
		e.log.Info("pod created", "namespace", d.Namespace, "pod", pod.Name, "deployment", d.Name)
		if err := e.patchPodStatus(ctx, p, false); err != nil {
			return err
		}
	}
	return e.syncServer(ctx, p, t, r)
}

// syncServer starts the server's /metrics endpoint once it is ready and
// writes its pods' readiness when it changed.
func (e *Emulator) syncServer(ctx context.Context, p *emuPod, t Target, r sim.LiveReplica) error {
	if r.Ready && p.ep == nil {
		ep, err := serve("pod "+p.name, metricsHandler(e.fleet, t.Model, r.ID))
		if err != nil {
			return err
		}
		p.ep = ep
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{MetricsAnnotation: ep.addr}}})
		if _, err := e.kc.CoreV1().Pods(p.namespace).Patch(ctx, p.name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("annotating pod %s/%s: %w", p.namespace, p.name, err)
		}
	}
	if r.Ready != p.ready {
		if err := e.patchPodStatus(ctx, p, r.Ready); err != nil {
			return err
		}
		if r.Ready {
			e.log.Info("pod ready", "namespace", p.namespace, "pod", p.name, "metrics", p.ep.addr)
		}
	}
	return nil
}

// ensureServiceAccount creates the pods' ServiceAccount when it is
// missing, as kube-controller-manager's service-account controller does
// for "default" in every namespace: the API server refuses a pod whose
// account does not exist, and a bare control plane runs no such
// controller.
func (e *Emulator) ensureServiceAccount(ctx context.Context, namespace, name string) error {
	if name == "" {
		name = "default"
	}
	key := namespace + "/" + name
	if e.accounts[key] {
		return nil
	}
	_, err := e.kc.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		_, err = e.kc.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
		if err == nil {
			e.log.Info("service account created (no service-account controller created it)", "namespace", namespace, "serviceAccount", name)
		}
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("service account %s: %w", key, err)
	}
	e.accounts[key] = true
	return nil
}
