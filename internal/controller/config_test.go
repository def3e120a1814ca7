package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/config"
)

func TestConfigReloadAndRejection(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deployment("llama-h100", 1)
	f.va("llama-h100", model, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "variantautoscaling-config", Namespace: ctrlNS},
		Data: map[string]string{"GLOBAL_OPT_INTERVAL": "30s", "WVA_SCALE_TO_ZERO": "true"}}
	_ = env.Client.Delete(ctx, cm)
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, cm) }()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cm)}
	if _, err := f.cfg.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.State.settings().Main; s.Interval.Seconds() != 30 || !s.ScaleToZero {
		t.Fatalf("reloaded main config: interval %v scaleToZero %v", s.Interval, s.ScaleToZero)
	}
	wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionConfigValid, metav1.ConditionTrue, wvav1.ReasonConfigValid)

	cm.Data = map[string]string{"GLOBAL_OPT_INTERVAL": "soon", "WVA_SCALE_TO_ZERO": "false"}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.cfg.Recorder = recorderFor(t)
	if _, err := f.cfg.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.State.settings().Main; s.Interval.Seconds() != 30 || !s.ScaleToZero {
		t.Fatalf("an invalid ConfigMap replaced the good one: interval %v scaleToZero %v", s.Interval, s.ScaleToZero)
	}
	c := wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionConfigValid, metav1.ConditionFalse, wvav1.ReasonConfigInvalid)
	if !strings.Contains(c.Message, "GLOBAL_OPT_INTERVAL") || !strings.Contains(c.Message, "soon") {
		t.Errorf("condition does not name the key and value: %q", c.Message)
	}
	waitEvent(t, cm, "InvalidConfiguration", "GLOBAL_OPT_INTERVAL")

	cm.Data = map[string]string{"GLOBAL_OPT_INTERVAL": "45s"}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cfg.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if s := f.cfg.State.settings().Main; s.Interval.Seconds() != 45 || s.ScaleToZero {
		t.Fatalf("fixed config: interval %v scaleToZero %v", s.Interval, s.ScaleToZero)
	}
	wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionConfigValid, metav1.ConditionTrue, wvav1.ReasonConfigValid)
}

// waitEvent waits for a warning event on obj with the reason and a note
// that mentions substr.
func waitEvent(t *testing.T, obj client.Object, reason, substr string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(obj.GetNamespace())); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Name == obj.GetName() && e.Reason == reason && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, substr) {
				return
			}
		}
		sleep()
	}
	t.Fatalf("no %s event mentioning %q on %s", reason, substr, obj.GetName())
}

// TestUnknownServiceClass: a VA naming a class that does not exist is
// planned without it (the cycle does not fail) and its status says why.
func TestUnknownServiceClass(t *testing.T) {
	f := newFixture(t)
	if err := f.planner.Config.apply(defaultConfigNames().ServiceClasses, map[string]string{"premium": `{"priority": 1, "ttft_ms": 500, "itl_ms": 50}`}, true); err != nil {
		t.Fatal(err)
	}
	f.deployment("llama-h100", 1)
	f.deployment("mistral-h100", 1)
	f.va("llama-h100", model, func(va *wvav1.VariantAutoscaling) {
		va.Spec.SLOClassRef = &wvav1.ConfigMapKeyRef{Name: "service-classes-config", Key: "platinum"}
	})
	f.va("mistral-h100", "mistral", func(va *wvav1.VariantAutoscaling) {
		va.Spec.SLOClassRef = &wvav1.ConfigMapKeyRef{Name: "service-classes-config", Key: "premium"}
	})
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: pods("llama-h100", 1, 0.3, 0)},
		{Namespace: f.ns, Model: "mistral", Pods: pods("mistral-h100", 1, 0.3, 0)}}})
	f.cycle()
	c := wantCond(t, f.reconcile("llama-h100"), wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	if !strings.Contains(c.Message, `service class "platinum" is not in ConfigMap service-classes-config`) {
		t.Errorf("message: %q", c.Message)
	}
	c = wantCond(t, f.reconcile("mistral-h100"), wvav1.ConditionOptimizationReady, metav1.ConditionTrue, wvav1.ReasonOptimizationSucceeded)
	if strings.Contains(c.Message, "class") {
		t.Errorf("the known class was reported: %q", c.Message)
	}
}

func TestConfigStateVersion(t *testing.T) {
	s := newConfigState(defaultConfigNames(), config.DefaultMain())
	data := map[string]string{"GLOBAL_OPT_INTERVAL": "30s"}
	if err := s.apply(config.MainName, data, true); err != nil {
		t.Fatal(err)
	}
	v := s.version()
	if err := s.apply(config.MainName, data, true); err != nil || s.version() != v {
		t.Errorf("a resync with the same data changed the version: %d → %d (%v)", v, s.version(), err)
	}
	if err := s.apply(config.MainName, map[string]string{"GLOBAL_OPT_INTERVAL": "45s"}, true); err != nil || s.version() != v+1 {
		t.Errorf("a real change: version %d → %d (%v)", v, s.version(), err)
	}
}
