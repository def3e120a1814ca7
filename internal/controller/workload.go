// The workload a VariantAutoscaling scales: any kind with a scale
// subresource, read and written through it as HPA does. Deployments are
// read typed (from the manager's cache, as before); other kinds as
// unstructured objects plus their /scale.

package controller

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// LeaderWorkerSet's API (sigs.k8s.io/lws): a replica is a group of
// spec.leaderWorkerTemplate.size pods, a leader and its workers, all
// labelled with the set's name.
const (
	lwsGroup      = "leaderworkerset.x-k8s.io"
	lwsKind       = "LeaderWorkerSet"
	lwsNameLabel  = "leaderworkerset.sigs.k8s.io/name"
	lwsGroupLabel = "leaderworkerset.sigs.k8s.io/group-index"
)

// workload is a VariantAutoscaling's target as the controller uses it.
type workload struct {
	Kind, APIVersion, Name, Namespace string
	Labels                            map[string]string
	// SpecReplicas (1 when unset, as the API defaults it), ReadyReplicas
	// and StatusReplicas are counted in replicas: pods, or LeaderWorkerSet
	// groups.
	SpecReplicas, ReadyReplicas, StatusReplicas int32
	// Selector selects the workload's pods (all of a LeaderWorkerSet's,
	// leaders and workers).
	Selector labels.Selector
	// Template is the pods' template (a LeaderWorkerSet's workers', which
	// its leaders share unless they have their own).
	Template *corev1.PodTemplateSpec
	// GroupSize is the pods per replica: a LeaderWorkerSet's size, else 1.
	GroupSize int32
	// deployment is the typed object when the workload is a Deployment;
	// obj the object otherwise (for the /scale subresource).
	deployment *appsv1.Deployment
	obj        *unstructured.Unstructured
}

// isDeployment says whether the workload is an apps Deployment, whose
// ReplicaSet controller honours pod-deletion-cost.
func (w *workload) isDeployment() bool { return w.deployment != nil }

// String names the workload in messages: "deployment llama".
func (w *workload) String() string { return fmt.Sprintf("%s %s", strings.ToLower(w.Kind), w.Name) }

// object is the workload for the client (its /scale subresource).
func (w *workload) object() client.Object {
	if w.deployment != nil {
		return w.deployment
	}
	return w.obj
}

// fromDeployment is a Deployment as a workload.
func fromDeployment(d *appsv1.Deployment) *workload {
	w := &workload{Kind: "Deployment", APIVersion: "apps/v1", Name: d.Name, Namespace: d.Namespace, Labels: d.Labels,
		SpecReplicas: 1, ReadyReplicas: d.Status.ReadyReplicas, StatusReplicas: d.Status.Replicas, Template: &d.Spec.Template,
		GroupSize: 1, deployment: d, Selector: labels.Nothing()}
	if d.Spec.Replicas != nil {
		w.SpecReplicas = *d.Spec.Replicas
	}
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() {
		w.Selector = sel
	}
	return w
}

// fromScalable is an object of another kind as a workload: its replicas
// and selector from its /scale, its ready replicas from
// status.readyReplicas, its pod template from spec.template or, for a
// LeaderWorkerSet, spec.leaderWorkerTemplate.workerTemplate.
func fromScalable(u *unstructured.Unstructured, scale *autoscalingv1.Scale) (*workload, error) {
	w := &workload{Kind: u.GetKind(), APIVersion: u.GetAPIVersion(), Name: u.GetName(), Namespace: u.GetNamespace(), Labels: u.GetLabels(),
		SpecReplicas: scale.Spec.Replicas, StatusReplicas: scale.Status.Replicas, GroupSize: 1, obj: u, Selector: labels.Nothing()}
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	w.ReadyReplicas = int32(min(max(ready, 0), int64(w.StatusReplicas), 1<<30)) //nolint:gosec // bounded above
	path := []string{"spec", "template"}
	if w.isLWS() {
		path = []string{"spec", "leaderWorkerTemplate", "workerTemplate"}
		if size, ok, _ := unstructured.NestedInt64(u.Object, "spec", "leaderWorkerTemplate", "size"); ok && size > 0 && size <= 1<<16 {
			w.GroupSize = int32(size)
		}
		w.Selector = labels.SelectorFromSet(labels.Set{lwsNameLabel: w.Name})
	} else if sel, err := labels.Parse(scale.Status.Selector); err == nil && !sel.Empty() {
		w.Selector = sel
	}
	if raw, ok, _ := unstructured.NestedMap(u.Object, path...); ok {
		var tpl corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tpl); err != nil {
			return nil, fmt.Errorf("%s %s: reading its pod template: %w", w.Kind, w.Name, err)
		}
		w.Template = &tpl
	}
	return w, nil
}

// isLWS says whether the workload is a LeaderWorkerSet.
func (w *workload) isLWS() bool {
	gv, err := schemaGroup(w.APIVersion)
	return err == nil && gv == lwsGroup && w.Kind == lwsKind
}

// getWorkload reads a VariantAutoscaling's target: a Deployment typed,
// another kind with its /scale. A kind without a scale subresource is an
// error that says so.
func getWorkload(ctx context.Context, c client.Client, va *wvav1.VariantAutoscaling) (*workload, error) {
	kind, apiVersion := va.TargetKind()
	key := types.NamespacedName{Namespace: va.Namespace, Name: va.TargetName()}
	if group, _ := schemaGroup(apiVersion); kind == "Deployment" && group == "apps" {
		var d appsv1.Deployment
		if err := c.Get(ctx, key, &d); err != nil {
			return nil, err
		}
		return fromDeployment(&d), nil
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := c.Get(ctx, key, u); err != nil {
		return nil, err
	}
	scale, err := getScale(ctx, c, u)
	if err != nil {
		return nil, fmt.Errorf("reading the scale subresource of %s %s (a target needs one): %w", kind, key.Name, err)
	}
	return fromScalable(u, scale)
}

// scaleGVK is the kind of the scale subresource.
var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// getScale reads an object's /scale. The client reads an unstructured
// object's subresources as unstructured objects only.
func getScale(ctx context.Context, c client.Client, obj client.Object) (*autoscalingv1.Scale, error) {
	scale := &autoscalingv1.Scale{}
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		return scale, c.SubResource("scale").Get(ctx, obj, scale)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scaleGVK)
	if err := c.SubResource("scale").Get(ctx, obj, u); err != nil {
		return nil, err
	}
	return scale, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, scale)
}

// updateScale writes an object's /scale (as unstructured for an
// unstructured object).
func updateScale(ctx context.Context, c client.Client, obj client.Object, scale *autoscalingv1.Scale) error {
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		return c.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(scale))
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(scale)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(scaleGVK)
	return c.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(u))
}

// schemaGroup is the API group of an apiVersion ("" for the core group).
func schemaGroup(apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return gv.Group, err
}
