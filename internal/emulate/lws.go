package emulate

// LeaderWorkerSets (sigs.k8s.io/lws): the emulator plays LeaderWorkerSet's
// controller, its StatefulSets and the kubelet for a spec entry that names
// a LeaderWorkerSet instead of a Deployment. A replica is a group of
// spec.leaderWorkerTemplate.size pods: a leader <lws>-<group> and workers
// <lws>-<group>-<index>, labelled as LeaderWorkerSet labels them. The
// group's server runs on the leader, which serves /metrics; the workers
// are Ready with it. A scale-down removes the highest groups, as the
// leader StatefulSet removes its highest ordinals; status.replicas,
// readyReplicas and hpaPodSelector follow the groups.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// LeaderWorkerSet's API and labels (leaderworkerset_types.go).
var lwsGVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

const (
	LWSNameLabel        = "leaderworkerset.sigs.k8s.io/name"
	LWSGroupIndexLabel  = "leaderworkerset.sigs.k8s.io/group-index"
	LWSWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	lwsSizeAnnotation   = "leaderworkerset.sigs.k8s.io/size"
	// maxGroupSize bounds the pods the emulator makes per group.
	maxGroupSize = 64
)

// lws is a LeaderWorkerSet bound to a spec entry.
type lws struct {
	namespace, name string
	uid             types.UID
	replicas, size  int32
	template        corev1.PodTemplateSpec
}

// bindLWS matches the LeaderWorkerSets to the spec's entries that no
// Deployment took (target index → set). Without Options.Dynamic, or
// without the CRD on the API server, there are none.
func (e *Emulator) bindLWS(ctx context.Context, deployments map[int]bool) (map[int]*lws, error) {
	if e.opts.Dynamic == nil {
		return nil, nil
	}
	list, err := e.opts.Dynamic.Resource(lwsGVR).Namespace(e.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.opts.Selector.String()})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil // no LeaderWorkerSet CRD
	}
	if err != nil {
		return nil, fmt.Errorf("listing LeaderWorkerSets: %w", err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		return items[i].GetNamespace()+"/"+items[i].GetName() < items[j].GetNamespace()+"/"+items[j].GetName()
	})
	out := map[int]*lws{}
	for i := range items {
		u := &items[i]
		key := u.GetNamespace() + "/" + u.GetName()
		t, ok := e.fleet.Lookup(u.GetNamespace(), u.GetName())
		switch {
		case !ok:
			e.warnOnce(key, "LeaderWorkerSet not in the spec: not emulated", "leaderWorkerSet", key)
			continue
		case deployments[t.Index] || out[t.Index] != nil:
			e.warnOnce(key, "LeaderWorkerSet matches a spec entry already bound: not emulated", "leaderWorkerSet", key)
			continue
		case u.GetDeletionTimestamp() != nil:
			continue
		}
		l, err := parseLWS(u)
		if err != nil {
			e.warnOnce(key+err.Error(), "LeaderWorkerSet not emulated", "leaderWorkerSet", key, "error", err.Error())
			continue
		}
		out[t.Index] = l
	}
	return out, nil
}

// parseLWS reads what the emulator needs of a LeaderWorkerSet.
func parseLWS(u *unstructured.Unstructured) (*lws, error) {
	l := &lws{namespace: u.GetNamespace(), name: u.GetName(), uid: u.GetUID(), replicas: 1, size: 1}
	if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
		l.replicas = int32(min(max(n, 0), DefaultMaxReplicas*1024))
	}
	if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "leaderWorkerTemplate", "size"); ok {
		if n < 1 || n > maxGroupSize {
			return nil, fmt.Errorf("spec.leaderWorkerTemplate.size %d: the emulator makes groups of 1 to %d pods", n, maxGroupSize)
		}
		l.size = int32(n)
	}
	raw, ok, _ := unstructured.NestedMap(u.Object, "spec", "leaderWorkerTemplate", "workerTemplate")
	if !ok {
		return nil, errors.New("no spec.leaderWorkerTemplate.workerTemplate")
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &l.template); err != nil {
		return nil, fmt.Errorf("spec.leaderWorkerTemplate.workerTemplate: %w", err)
	}
	return l, nil
}

// stepLWS runs one round for a LeaderWorkerSet target: the servers follow
// spec.replicas (the highest groups go first), the pods follow the
// servers, the status follows the pods.
func (e *Emulator) stepLWS(ctx context.Context, l *lws, t Target) error {
	_, out, err := e.podMarks(ctx, t, false)
	if err != nil {
		return err
	}
	e.fleet.SetRotation(out)
	// A StatefulSet ignores pod-deletion-cost: rank by group instead, so
	// that the highest group is the one removed.
	costs := map[int]int32{}
	for _, p := range e.podsOf(t) {
		costs[p.id] = -int32(p.group) //nolint:gosec // a group index is small
	}
	reps := e.fleet.Scale(t.Index, int(l.replicas), costs)
	if err := e.syncLWSPods(ctx, l, t, reps); err != nil {
		return err
	}
	return e.writeLWSStatus(ctx, l, reps)
}

// syncLWSPods makes the groups' pods match the servers.
func (e *Emulator) syncLWSPods(ctx context.Context, l *lws, t Target, reps []sim.LiveReplica) error {
	live := map[int]bool{}
	for _, r := range reps {
		if !r.Terminating {
			live[r.ID] = true
		}
	}
	used := map[int]bool{}
	for _, p := range e.podsOf(t) {
		if !live[p.id] {
			if err := e.deletePod(ctx, p); err != nil {
				return err
			}
			continue
		}
		used[p.group] = true
	}
	for _, r := range reps {
		if r.Terminating {
			continue
		}
		if err := e.syncGroup(ctx, l, t, r, used); err != nil {
			return err
		}
	}
	return nil
}

// syncGroup creates a server's group (the lowest free group index) if
// missing and brings its pods' status and the leader's endpoint up to date.
func (e *Emulator) syncGroup(ctx context.Context, l *lws, t Target, r sim.LiveReplica, used map[int]bool) error {
	p, ok := e.pods[r.ID]
	if !ok {
		g := 0
		for used[g] {
			g++
		}
		used[g] = true
		if err := e.ensureServiceAccount(ctx, l.namespace, l.template.Spec.ServiceAccountName); err != nil {
			return err
		}
		p = &emuPod{id: r.ID, target: t, namespace: l.namespace, name: l.name + "-" + strconv.Itoa(g), deployment: l.name, group: g,
			started: metav1.NewTime(e.opts.Clock.Now()), containers: l.template.Spec.Containers}
		for w := int32(0); w < l.size; w++ {
			pod := newGroupPod(l, g, int(w))
			if _, err := e.kc.CoreV1().Pods(l.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				if apierrors.IsAlreadyExists(err) {
					err = errors.Join(err, e.kc.CoreV1().Pods(l.namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
				}
				_ = e.deletePod(ctx, p) // the group's pods made so far
				return fmt.Errorf("creating pod %s/%s: %w", l.namespace, pod.Name, err)
			}
			if w > 0 {
				p.workers = append(p.workers, pod.Name)
			}
		}
		e.pods[r.ID] = p
		e.log.Info("group created", "namespace", l.namespace, "leaderWorkerSet", l.name, "group", g, "pods", l.size)
		if err := e.patchPodStatus(ctx, p, false); err != nil {
			return err
		}
	}
	return e.syncServer(ctx, p, t, r)
}

// newGroupPod is pod w of group g (w 0 the leader) from the workers'
// template, labelled as LeaderWorkerSet's pod webhook labels it.
func newGroupPod(l *lws, g, w int) *corev1.Pod {
	tpl := l.template.DeepCopy()
	labels := map[string]string{}
	for k, v := range tpl.Labels {
		labels[k] = v
	}
	labels[LWSNameLabel] = l.name
	labels[LWSGroupIndexLabel] = strconv.Itoa(g)
	labels[LWSWorkerIndexLabel] = strconv.Itoa(w)
	labels[EmulatedLabel] = "true"
	annotations := map[string]string{}
	for k, v := range tpl.Annotations {
		annotations[k] = v
	}
	annotations[DeploymentAnnotation] = string(l.uid)
	annotations[lwsSizeAnnotation] = strconv.Itoa(int(l.size))
	name := l.name + "-" + strconv.Itoa(g)
	if w > 0 {
		name += "-" + strconv.Itoa(w)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.namespace, Labels: labels, Annotations: annotations}, Spec: tpl.Spec}
}

// writeLWSStatus writes the set's status: groups not terminating, ready
// groups, and the leaders' selector (as LeaderWorkerSet's controller
// sets hpaPodSelector).
func (e *Emulator) writeLWSStatus(ctx context.Context, l *lws, reps []sim.LiveReplica) error {
	var n, ready int64
	for _, r := range reps {
		if r.Terminating {
			continue
		}
		n++
		if r.Ready {
			ready++
		}
	}
	key := l.namespace + "/" + l.name
	if last, ok := e.lwsStatus[key]; ok && last == [2]int64{n, ready} {
		return nil
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"replicas": n, "readyReplicas": ready,
		"hpaPodSelector": LWSNameLabel + "=" + l.name + "," + LWSWorkerIndexLabel + "=0"}})
	if err != nil {
		return err
	}
	_, err = e.opts.Dynamic.Resource(lwsGVR).Namespace(l.namespace).Patch(ctx, l.name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("leaderworkerset %s/%s status: %w", l.namespace, l.name, err)
	}
	e.lwsStatus[key] = [2]int64{n, ready}
	return nil
}
