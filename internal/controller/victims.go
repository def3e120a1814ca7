package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

const (
	// podDeletionCostAnnotation is read by the ReplicaSet controller: on a
	// scale-down it deletes the pods with the lowest cost first
	// (https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/#pod-deletion-cost).
	podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
	// victimAnnotation marks the pods whose deletion cost WVA set, so that
	// it clears only its own marks.
	victimAnnotation = "llmd.ai/scale-down-victim"
	// victimDeletionCost is the cost WVA gives its victims.
	victimDeletionCost = "-100"
)

// victimMarker gives the pods the engine picked for a scale-down the
// lowest pod-deletion-cost, so that the ReplicaSet controller removes
// those (the least loaded, never a saturated one) rather than the newest,
// and clears the marks it set when the pods are no longer victims. It
// remembers its marks per VariantAutoscaling.
type victimMarker struct {
	c     client.Client
	mu    sync.Mutex
	marks map[types.NamespacedName]map[string]bool
}

func newVictimMarker(c client.Client) *victimMarker {
	return &victimMarker{c: c, marks: map[types.NamespacedName]map[string]bool{}}
}

// update marks the victims of a scale-down of the workload to s.Desired
// replicas; on a scale-up it clears the marks (no pod need go). When the
// count stays, the marks stay: the pods the last scale-down marked may
// still be on their way out. Only a Deployment's ReplicaSet honours
// pod-deletion-cost: a StatefulSet (and a LeaderWorkerSet, whose groups
// are a StatefulSet's) removes its highest ordinals whatever the marks, so
// no pod of another kind is marked.
func (m *victimMarker) update(ctx context.Context, va *wvav1.VariantAutoscaling, w *workload, s Scaling) error {
	if !w.isDeployment() {
		return m.mark(ctx, va, nil)
	}
	switch n := int(w.SpecReplicas - s.Desired); {
	case n > 0:
		return m.mark(ctx, va, s.Victims[:min(n, len(s.Victims))])
	case n < 0:
		return m.mark(ctx, va, nil)
	}
	return nil
}

// mark sets the victims' deletion cost and clears it on the pods marked
// before that are victims no more. A pod that is gone is skipped; the
// other failures are returned together, after every pod was tried.
func (m *victimMarker) mark(ctx context.Context, va *wvav1.VariantAutoscaling, victims []string) error {
	if m == nil || m.c == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: va.Namespace, Name: va.Name}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.marks[key]
	now := make(map[string]bool, len(victims))
	var errs []error
	for _, name := range victims {
		now[name] = true
		if old[name] {
			continue
		}
		if err := m.patch(ctx, va.Namespace, name, true); err != nil {
			errs = append(errs, err)
			delete(now, name)
		}
	}
	stale := make([]string, 0, len(old))
	for name := range old {
		if !now[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		if err := m.patch(ctx, va.Namespace, name, false); err != nil {
			errs = append(errs, err)
			now[name] = true // try again next cycle
		}
	}
	if len(now) == 0 {
		delete(m.marks, key)
	} else {
		m.marks[key] = now
	}
	if len(errs) > 0 {
		return fmt.Errorf("pod-deletion-cost: %w", errors.Join(errs...))
	}
	return nil
}

// patch sets (or removes) the deletion cost and WVA's mark with a merge
// patch, so that no other field or annotation of the pod is touched.
func (m *victimMarker) patch(ctx context.Context, ns, name string, victim bool) error {
	body := `{"metadata":{"annotations":{"` + podDeletionCostAnnotation + `":null,"` + victimAnnotation + `":null}}}`
	if victim {
		body = `{"metadata":{"annotations":{"` + podDeletionCostAnnotation + `":"` + victimDeletionCost + `","` + victimAnnotation + `":"true"}}}`
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = ns, name
	err := m.c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(body)))
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("pod %s: %s", name, strings.TrimSpace(err.Error()))
}
