//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// dumpOnFailure writes the state of the world to <artifacts>/dump.txt and
// the test log when the test failed: VariantAutoscalings (status),
// Deployments (replicas), HPAs (conditions), events, and the sections
// registered with OnFailure (Prometheus's targets and last answers).
func (h *Harness) dumpOnFailure() {
	if !h.t.Failed() || h.dumped {
		return
	}
	h.dumped = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	h.dumpVAs(ctx, &b)
	h.dumpWorkloads(ctx, &b)
	for _, f := range h.dumps {
		b.WriteString(f(ctx))
	}
	path := filepath.Join(h.Artifacts, "dump.txt")
	writeFile(h.t, path, b.String())
	s := b.String()
	if len(s) > 20000 {
		s = s[:20000] + "\n… (truncated; whole dump in " + path + ")"
	}
	h.t.Logf("failure dump (also %s):\n%s", path, s)
}

func (h *Harness) dumpVAs(ctx context.Context, b *strings.Builder) {
	vas := &wvav1.VariantAutoscalingList{}
	if err := h.Client.List(ctx, vas); err != nil {
		fmt.Fprintf(b, "listing VariantAutoscalings: %v\n", err)
		return
	}
	for _, va := range vas.Items {
		st, _ := yaml.Marshal(va.Status)
		fmt.Fprintf(b, "== VariantAutoscaling %s/%s status:\n%s", va.Namespace, va.Name, st)
	}
}

func (h *Harness) dumpWorkloads(ctx context.Context, b *strings.Builder) {
	deps := &appsv1.DeploymentList{}
	if err := h.Client.List(ctx, deps); err == nil {
		for _, d := range deps.Items {
			fmt.Fprintf(b, "== Deployment %s/%s spec.replicas=%d status=%+v\n", d.Namespace, d.Name, deref(d.Spec.Replicas), d.Status)
		}
	}
	hpas := &autoscalingv2.HorizontalPodAutoscalerList{}
	if err := h.Client.List(ctx, hpas); err == nil {
		for _, a := range hpas.Items {
			st, _ := yaml.Marshal(a.Status)
			fmt.Fprintf(b, "== HPA %s/%s status:\n%s", a.Namespace, a.Name, st)
		}
	}
	events := &corev1.EventList{}
	if err := h.Client.List(ctx, events); err == nil {
		b.WriteString("== events\n")
		for _, e := range events.Items {
			fmt.Fprintf(b, "%s %s %s/%s %s: %s (x%d)\n", e.LastTimestamp.Format(time.RFC3339), e.Type,
				e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
}

func deref(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}
