//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// lwsSteps: a step up (1 → 2 groups by `wva model size`) and back down,
// after 40 model seconds without requests while the first group starts
// (20–25 s). With requests from 0 s, about 170 waited at the gateway and
// reached the first pod at once; a cycle that read that burst's queue
// scaled to 3 groups and the tuner warmed up on it, and one run in three
// ended the step with 4 groups. The test is about the LeaderWorkerSet
// target, not a start-up burst.
var lwsSteps = []loadStep{{0, 0}, {40, 8}, {450, 24}, {900, 8}}

// lwsEnd is when the step down has been held long enough to settle.
const lwsEnd = 1350

// lwsName is the LeaderWorkerSet (and its VariantAutoscaling).
const lwsName = "llama-lws"

// TestLeaderWorkerSetTarget: a VariantAutoscaling whose scaleTargetRef is
// a LeaderWorkerSet (LeaderWorkerSet's CRD installed; `wva emulate` plays
// its controller: a group of 2 pods per replica, the leader serving vLLM's
// metrics, the highest group removed on a scale-down). With the direct
// actuator the controller scales the set through its /scale subresource:
// up within scaleUpBound of the step, counting each group once, and back
// down after the step down, draining the group it removes (both pods out
// of the endpoint picker's rotation before the set's count drops).
func TestLeaderWorkerSetTarget(t *testing.T) {
	va := VariantAutoscaling(smokeNS, lwsName, smokeModel, "H100", 1, 4, "30.0")
	va.Spec.Actuator = wvav1.ActuatorDirect
	w := newLoadWorld(t, staircaseInterval, lwsSteps, nil, &wvaVA{VariantAutoscaling: va, Replicas: 1, GroupSize: 2})
	h := w.h
	deletions := h.watchDeletions(t)
	replicas := func(ctx context.Context) (spec, ready int64, err error) {
		u := LeaderWorkerSet(smokeNS, lwsName, 0, 0, nil)
		if err := h.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return 0, 0, err
		}
		spec, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
		ready, _, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		return spec, ready, nil
	}

	step := lwsSteps[2]
	w.waitUntil(step.wall())
	want := int64(expectedReplicas(t, step.RPS))
	if want < 2 {
		t.Fatalf("`wva model size` says %d replica(s) at %g rps: the step must need a second group", want, step.RPS)
	}
	bound := scaleUpBound(w.interval)
	h.Eventually("the LeaderWorkerSet scales up", bound, func(ctx context.Context) (bool, string) {
		n, _, err := replicas(ctx)
		return err == nil && n >= 2, fmt.Sprintf("spec.replicas %d %v", n, err)
	})
	t.Logf("TIMING step at %s (%g model rps): the LeaderWorkerSet scaled up after %s (bound %s)", step.wall(), step.RPS,
		(time.Since(w.start) - step.wall()).Round(100*time.Millisecond), bound)
	h.Eventually("every group ready, 2 pods each", 30*time.Second, func(ctx context.Context) (bool, string) {
		n, ready, err := replicas(ctx)
		pods := h.lwsPods(ctx)
		return err == nil && ready == n && len(pods) == int(2*n), fmt.Sprintf("spec %d, ready %d, pods %v %v", n, ready, pods, err)
	})
	w.waitUntil(lwsSteps[3].wall())
	n, _, err := replicas(h.Ctx())
	if err != nil {
		t.Fatal(err)
	}
	if d := n - want; d < -1 || d > 1 {
		t.Errorf("%d groups at the end of the step, want %d ± 1 (`wva model size`)", n, want)
	}
	t.Logf("TIMING step 1: %d groups at its end, `wva model size` says %d", n, want)

	w.waitUntil(loadStep{AtSeconds: lwsEnd}.wall())
	h.Eventually("the LeaderWorkerSet scales back to one group", 30*time.Second, func(ctx context.Context) (bool, string) {
		n, _, err := replicas(ctx)
		pods := h.lwsPods(ctx)
		return err == nil && n == 1 && len(pods) == 2, fmt.Sprintf("spec.replicas %d, pods %v %v", n, pods, err)
	})
	if pods := h.lwsPods(h.Ctx()); pods[0] != lwsName+"-0" || pods[1] != lwsName+"-0-1" {
		t.Errorf("pods left %v, want group 0's", pods)
	}
	checkGroupsDrained(t, deletions())
}

// checkGroupsDrained: pods of the set were removed, each drained first.
func checkGroupsDrained(t *testing.T, deleted []deletedPod) {
	t.Helper()
	removed := 0
	for _, d := range deleted {
		if !strings.HasPrefix(d.Name, lwsName+"-") {
			continue
		}
		removed++
		t.Logf("pod %s removed (drained %v)", d.Name, d.Drained)
		if !d.Drained {
			t.Errorf("pod %s removed without a drain: the controller takes every pod of the group out of rotation first", d.Name)
		}
	}
	if removed == 0 {
		t.Error("no pod removed on the scale-down")
	}
}

// lwsPods lists the names of the LeaderWorkerSet's pods that are not
// terminating, sorted.
func (h *Harness) lwsPods(ctx context.Context) []string {
	var l corev1.PodList
	if err := h.Client.List(ctx, &l, client.InNamespace(smokeNS), client.MatchingLabels{"leaderworkerset.sigs.k8s.io/name": lwsName}); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}
