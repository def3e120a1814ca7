package emulate

// The Deployment's status and the SD file's targets, as the emulator
// keeps them.

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// syncStatus writes the Deployment's status when it differs: replicas and
// updatedReplicas count the servers not terminating, readyReplicas and
// availableReplicas the ready ones.
func (e *Emulator) syncStatus(ctx context.Context, d *appsv1.Deployment, reps []sim.LiveReplica) error {
	var n, ready int32
	for _, r := range reps {
		if r.Terminating {
			continue
		}
		n++
		if r.Ready {
			ready++
		}
	}
	rs, err := e.replicaSet(ctx, d)
	if err != nil {
		return err
	}
	if err := e.syncReplicaSet(ctx, rs, replicasOf(d.Spec.Replicas), n, ready); err != nil {
		return err
	}
	return e.writeStatus(ctx, d, n, ready)
}

func (e *Emulator) writeStatus(ctx context.Context, d *appsv1.Deployment, n, ready int32) error {
	st := d.Status
	if st.Replicas == n && st.UpdatedReplicas == n && st.ReadyReplicas == ready && st.AvailableReplicas == ready &&
		st.UnavailableReplicas == n-ready && st.ObservedGeneration == d.Generation {
		return nil
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"replicas": n, "updatedReplicas": n, "readyReplicas": ready,
		"availableReplicas": ready, "unavailableReplicas": n - ready, "observedGeneration": d.Generation}})
	if err != nil {
		return err
	}
	_, err = e.kc.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deployment %s/%s status: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// GatewayAddr is the address of the gateway's /metrics ("" before Start).
func (e *Emulator) GatewayAddr() string {
	if e.gateway == nil {
		return ""
	}
	return e.gateway.addr
}

// sdTargets are the gateway and the pods whose servers serve /metrics.
func (e *Emulator) sdTargets() []sdTarget {
	var ts []sdTarget
	if e.gateway != nil {
		ts = append(ts, sdTarget{Addr: e.gateway.addr})
	}
	for _, p := range e.pods {
		if p.ep != nil {
			ts = append(ts, sdTarget{Addr: p.ep.addr, Namespace: p.namespace, Pod: p.name, Deployment: p.deployment})
		}
	}
	return ts
}
