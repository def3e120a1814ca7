package emulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// The ReplicaSet between a Deployment and its pods, as the Deployment
// controller makes it: named <deployment>-<pod-template-hash>, selecting
// and labelling its pods with pod-template-hash, owned by the Deployment.
// Consumers that check a pod's owner (WVA's controller does) find the
// chain they expect.

// templateHash is the pod template's hash, in the Deployment
// controller's alphabet (k8s.io/kubernetes/pkg/controller.ComputeHash:
// FNV-32a, safe-encoded; here over the template's JSON).
func templateHash(d *appsv1.Deployment) string {
	b, err := json.Marshal(d.Spec.Template)
	if err != nil {
		panic("emulate: marshalling a pod template: " + err.Error())
	}
	h := fnv.New32a()
	_, _ = h.Write(b)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// newReplicaSet builds the Deployment's current ReplicaSet, whose
// template hashes to hash.
func newReplicaSet(d *appsv1.Deployment, hash string) *appsv1.ReplicaSet {
	tpl := d.Spec.Template.DeepCopy()
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: tpl.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicasOf(d.Spec.Replicas)), Selector: sel, Template: *tpl},
	}
}

// replicaSet returns the Deployment's current ReplicaSet, creating it when
// missing. It runs every round: the object is built only when the
// ReplicaSet is not yet known.
func (e *Emulator) replicaSet(ctx context.Context, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	hash := templateHash(d)
	name := d.Name + "-" + hash
	if rs, ok := e.rsets[d.Namespace+"/"+name]; ok {
		return rs, nil
	}
	rs, err := e.kc.AppsV1().ReplicaSets(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		rs, err = e.kc.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newReplicaSet(d, hash), metav1.CreateOptions{})
		if err == nil {
			e.log.Info("replicaset created", "namespace", d.Namespace, "replicaSet", rs.Name, "deployment", d.Name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("replicaset %s/%s: %w", d.Namespace, name, err)
	}
	e.rsets[rs.Namespace+"/"+rs.Name] = rs
	return rs, nil
}

// syncReplicaSet writes the ReplicaSet's replicas and status when they
// differ from the servers'.
func (e *Emulator) syncReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, want, n, ready int32) error {
	rsets := e.kc.AppsV1().ReplicaSets(rs.Namespace)
	if replicasOf(rs.Spec.Replicas) != want {
		b := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, want)
		upd, err := rsets.Patch(ctx, rs.Name, types.MergePatchType, b, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		*rs = *upd
	}
	st := rs.Status
	if st.Replicas == n && st.ReadyReplicas == ready && st.AvailableReplicas == ready && st.FullyLabeledReplicas == n && st.ObservedGeneration == rs.Generation {
		return nil
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": ready,
		"availableReplicas": ready, "observedGeneration": rs.Generation}})
	if err != nil {
		return err
	}
	upd, err := rsets.Patch(ctx, rs.Name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("replicaset %s/%s status: %w", rs.Namespace, rs.Name, err)
	}
	*rs = *upd
	return nil
}

// deleteReplicaSets deletes the ReplicaSets the emulator made.
func (e *Emulator) deleteReplicaSets(ctx context.Context) error {
	var errs []error
	for key, rs := range e.rsets {
		err := e.kc.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting replicaset %s: %w", key, err))
		}
		delete(e.rsets, key)
	}
	return errors.Join(errs...)
}
