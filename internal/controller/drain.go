package controller

// Drain before scale-down (internal/drain has the rules): the controller
// lists the variant's pods, reads their drain marks from annotations (so a
// drain survives a restart or a new leader), takes the victims out of the
// gateway's rotation, puts back the ones no longer needed, and hands the
// actuator the count the drain allows now.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/drain"
)

const (
	// drainSinceAnnotation marks a pod WVA took out of rotation, with the
	// time (RFC 3339) its drain began.
	drainSinceAnnotation = "llmd.ai/draining-since"
	// drainSavedAnnotation holds what WVA changed on the pod to take it
	// out of rotation, as it was before (JSON: {"annotations": {key:
	// value or null}, "labels": {...}}), so that it is restored exactly.
	drainSavedAnnotation = "llmd.ai/drain-saved"
	// activePortsAnnotation is read by llm-d's router (v0.9 and later):
	// the target ports of the pod the endpoint picker may send to; a
	// value with no port (here "0", which no port matches) leaves none.
	activePortsAnnotation = "llm-d.ai/active-ports"
	// legacyActivePortsAnnotation is the same for the Gateway API
	// Inference Extension's endpoint picker (v1.4 and later).
	legacyActivePortsAnnotation = "inference.networking.k8s.io/active-ports"
	// noActivePorts is the annotations' value while a pod drains.
	noActivePorts = "0"
)

// saved is what a drain changed on a pod, as it was: nil for absent.
type saved struct {
	Annotations map[string]*string `json:"annotations,omitempty"`
	Labels      map[string]*string `json:"labels,omitempty"`
}

// unit is one replica for the drain planner: a pod, or a LeaderWorkerSet's
// group of pods.
type unit struct {
	drain.Pod
	pods []*corev1.Pod
}

// drainStep runs the drain planner for a variant the engine decided to
// scale to desired, marking pods as the step says. It returns the step
// (Replicas and Remove, in pod names, to apply) and whether it applies: a
// drain that is off, or that cannot run for this variant (its pods could
// not be listed), gives the decision unchanged, with the reason as err.
func (p *planner) drainStep(ctx context.Context, now time.Time, cfg config.Drain, v *variant, rep collector.Report,
	desired int, victims []string) (drain.Step, bool, error) {
	pol := drain.Policy{Timeout: cfg.Timeout, Ordered: !v.target.isDeployment()}
	if p.Reader == nil {
		return drain.Step{}, false, nil
	}
	// Pods known to carry no drain mark need no look unless a drain
	// begins; otherwise (a drain under way, or not known since the
	// controller started) the pods are read, also with draining off, so
	// that marks left by an earlier drain are put back.
	if (!pol.Enabled() || desired >= int(v.target.SpecReplicas)) && p.drains.none(v.key) {
		return drain.Step{}, false, nil
	}
	if err := drainRefusal(cfg, v.target); pol.Enabled() && err != nil {
		return drain.Step{}, false, err
	}
	units, err := p.drainUnits(ctx, v, rep)
	if err != nil {
		return drain.Step{}, false, fmt.Errorf("no drain: %w", err)
	}
	pods := make([]drain.Pod, len(units))
	byName := make(map[string]*unit, len(units))
	for i, u := range units {
		pods[i], byName[u.Name] = u.Pod, u
	}
	st := drain.Plan(now, pol, int(v.target.SpecReplicas), desired, victims, pods)
	drained, errOut := p.eachPod(byName, st.Drain, func(pod *corev1.Pod) error { return p.takeOut(ctx, pod, cfg, now) })
	restored, errBack := p.eachPod(byName, st.Restore, func(pod *corev1.Pod) error { return p.putBack(ctx, pod) })
	p.drains.set(v.key, len(st.Drain)+len(st.Waiting)+len(st.Remove) > 0 || errOut != nil || errBack != nil)
	if len(drained)+len(restored) > 0 {
		p.Log.Info("drain", "variant", v.key, "outOfRotation", drained, "backInRotation", restored, "replicas", st.Replicas, "desired", desired)
	}
	// The actuator marks the drained pods for deletion by pod name.
	var remove []string
	for _, name := range st.Remove {
		for _, pod := range byName[name].pods {
			remove = append(remove, pod.Name)
		}
	}
	st.Remove = remove
	if !pol.Enabled() {
		return drain.Step{}, false, errors.Join(errOut, errBack) // marks put back; the decision stands
	}
	return st, true, errors.Join(errOut, errBack)
}

// drainMemory is, per variant, whether its pods may carry drain marks:
// false once a look found none left; absent (unknown) until the first
// look after the controller starts.
type drainMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]bool
}

// none says whether the variant is known to have no pod with a drain mark.
func (d *drainMemory) none(k types.NamespacedName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	marked, known := d.m[k]
	return known && !marked
}

func (d *drainMemory) set(k types.NamespacedName, marked bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[types.NamespacedName]bool{}
	}
	d.m[k] = marked
}

// retain forgets the variants not in keep.
func (d *drainMemory) retain(keep map[types.NamespacedName]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.m {
		if !keep[k] {
			delete(d.m, k)
		}
	}
}

// drainRefusal says why a variant cannot drain with the configured method:
// a label the workload's own selector uses is never removed (its
// controller would orphan the pod and start another).
func drainRefusal(cfg config.Drain, w *workload) error {
	if cfg.Method != config.DrainLabel {
		return nil
	}
	for _, r := range selectorRequirements(w) {
		if r == cfg.Label {
			return fmt.Errorf("no drain: WVA_DRAIN_METHOD removes label %s, which the %s's selector uses (the pod would be orphaned)", cfg.Label, strings.ToLower(w.Kind))
		}
	}
	return nil
}

// eachPod runs do on every pod of the named units; it returns the pods
// done and the failures joined.
func (p *planner) eachPod(byName map[string]*unit, names []string, do func(*corev1.Pod) error) ([]string, error) {
	var done []string
	var errs []error
	for _, name := range names {
		for _, pod := range byName[name].pods {
			if err := do(pod); err != nil {
				errs = append(errs, err)
				continue
			}
			done = append(done, pod.Name)
		}
	}
	return done, errors.Join(errs...)
}

// selectorRequirements are the label keys the workload's selector uses.
func selectorRequirements(w *workload) []string {
	if w.Selector == nil {
		return nil
	}
	reqs, _ := w.Selector.Requirements()
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.Key())
	}
	return out
}

// drainUnits lists the variant's pods that are not terminating, as the
// drain planner's replicas, with their load from this cycle's metrics.
func (p *planner) drainUnits(ctx context.Context, v *variant, rep collector.Report) ([]*unit, error) {
	sel := v.target.Selector
	if sel == nil || sel.Empty() {
		return nil, fmt.Errorf("%s has no pod selector", v.target)
	}
	list := corev1.PodList{Items: v.podList}
	if v.podList == nil {
		if err := p.Reader.List(ctx, &list, client.InNamespace(v.va.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing the pods of %s: %w", v.target, err)
		}
	}
	load := map[string]float64{}
	for _, pm := range rep.Pods {
		if !pm.Pod.Missing {
			load[pm.Pod.Name] = pm.Pod.RunningRequests + pm.Pod.WaitingRequests
		}
	}
	byName := map[string]*unit{}
	var out []*unit
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil || !ownedBy(pod, v.target) {
			continue
		}
		name, rank, err := unitOf(pod, v.target)
		if err != nil {
			return nil, err
		}
		u := byName[name]
		if u == nil {
			u = &unit{Pod: drain.Pod{Name: name, Ready: true, Rank: rank, InFlight: -1}}
			byName[name] = u
			out = append(out, u)
		}
		u.add(pod, load)
	}
	slices.SortFunc(out, func(a, b *unit) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// add folds a pod into its replica: ready when all its pods are, draining
// since the earliest mark, its load the sum of the pods that report.
func (u *unit) add(pod *corev1.Pod, load map[string]float64) {
	u.pods = append(u.pods, pod)
	u.Ready = u.Ready && podReady(pod)
	if s, ok := pod.Annotations[drainSinceAnnotation]; ok {
		since, err := time.Parse(time.RFC3339, s)
		if err != nil {
			since = time.Time{} // unreadable: the drain counts as long under way
		}
		if !u.Draining || since.Before(u.Since) {
			u.Since = since
		}
		u.Draining = true
	}
	if n, ok := load[pod.Name]; ok {
		u.InFlight = max(u.InFlight, 0) + n
	}
}

// unitOf names the replica a pod belongs to and its rank: the pod itself
// for a Deployment; for a StatefulSet the pod, ranked by its ordinal; for
// a LeaderWorkerSet its group, ranked by the group index.
func unitOf(pod *corev1.Pod, w *workload) (string, int, error) {
	switch {
	case w.isDeployment():
		return pod.Name, 0, nil
	case w.isLWS():
		g := pod.Labels[lwsGroupLabel]
		n, err := strconv.Atoi(g)
		if err != nil || n < 0 {
			return "", 0, fmt.Errorf("pod %s has no group index (label %s=%q)", pod.Name, lwsGroupLabel, g)
		}
		return w.Name + "-" + g, n, nil
	}
	i := strings.LastIndexByte(pod.Name, '-')
	n, err := strconv.Atoi(pod.Name[i+1:])
	if i < 0 || err != nil || n < 0 {
		return "", 0, fmt.Errorf("pod %s has no ordinal", pod.Name)
	}
	return pod.Name, n, nil
}

// podReady says whether the pod's Ready condition is true.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// takeOut takes a pod out of the gateway's rotation with a merge patch,
// saving what it changes.
func (p *planner) takeOut(ctx context.Context, pod *corev1.Pod, cfg config.Drain, now time.Time) error {
	var sv saved
	meta := map[string]any{}
	ann := map[string]any{drainSinceAnnotation: now.UTC().Format(time.RFC3339)}
	switch cfg.Method {
	case config.DrainLabel:
		sv.Labels = map[string]*string{cfg.Label: lookup(pod.Labels, cfg.Label)}
		meta["labels"] = map[string]any{cfg.Label: nil}
	default:
		sv.Annotations = map[string]*string{}
		for _, k := range []string{activePortsAnnotation, legacyActivePortsAnnotation} {
			sv.Annotations[k] = lookup(pod.Annotations, k)
			ann[k] = noActivePorts
		}
	}
	b, err := json.Marshal(sv)
	if err != nil {
		return err
	}
	ann[drainSavedAnnotation] = string(b)
	meta["annotations"] = ann
	return p.patchPod(ctx, pod, meta)
}

// putBack restores what takeOut changed and removes the drain marks. Only
// the keys a drain manages are restored: the active-ports annotations, and
// labels the pod no longer has.
func (p *planner) putBack(ctx context.Context, pod *corev1.Pod) error {
	var sv saved
	if s, ok := pod.Annotations[drainSavedAnnotation]; ok {
		if err := json.Unmarshal([]byte(s), &sv); err != nil {
			p.Log.Info("drain: unreadable saved state; clearing the drain marks only", "pod", pod.Name, "error", err.Error())
			sv = saved{}
		}
	}
	ann := map[string]any{drainSinceAnnotation: nil, drainSavedAnnotation: nil}
	for _, k := range []string{activePortsAnnotation, legacyActivePortsAnnotation} {
		if v, ok := sv.Annotations[k]; ok {
			ann[k] = v
		}
	}
	labels := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(sv.Labels)) {
		if _, has := pod.Labels[k]; !has && sv.Labels[k] != nil {
			labels[k] = *sv.Labels[k]
		}
	}
	meta := map[string]any{"annotations": ann}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	return p.patchPod(ctx, pod, meta)
}

// patchPod merge-patches a pod's metadata; a pod that is gone is no error.
func (p *planner) patchPod(ctx context.Context, pod *corev1.Pod, meta map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	target := &corev1.Pod{}
	target.Namespace, target.Name = pod.Namespace, pod.Name
	if err := p.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s: %s", pod.Name, strings.TrimSpace(err.Error()))
	}
	return nil
}

// lookup is m[k], nil when absent.
func lookup(m map[string]string, k string) *string {
	if v, ok := m[k]; ok {
		return &v
	}
	return nil
}
