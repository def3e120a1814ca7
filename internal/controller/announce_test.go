package controller

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// TestAnnounce: a sequence of cycles for one variant and the Events it
// gives: a scale-up is announced once however many cycles repeat it, a
// new target is announced again, a steady decision is not, a hold is a
// Warning (once), its end is announced, and a scale-down is too. A
// variant without its VariantAutoscaling is logged only.
func TestAnnounce(t *testing.T) {
	rec := events.NewFakeRecorder(64)
	a := &announcer{Recorder: rec, Log: logr.Discard()}
	va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "llama-h100"}}
	vas := func(k types.NamespacedName) *wvav1.VariantAutoscaling {
		if k == (types.NamespacedName{Namespace: "llm", Name: "llama-h100"}) {
			return va
		}
		return nil
	}
	dec := func(current, desired int, reason engine.Reason, hold engine.HoldCause) *engine.Plan {
		return &engine.Plan{Variants: []engine.VariantDecision{{Model: "llama", Namespace: "llm", Variant: "llama-h100", Accelerator: "H100",
			Current: current, Desired: desired, Reason: reason, Hold: hold, Explanation: "why"}}}
	}
	for i, step := range []struct {
		plan *engine.Plan
		want string // the Event, "" for none
	}{
		{dec(2, 4, engine.ReasonSaturationScaleUp, ""), "Normal ScaleUp 2 → 4 replica(s) (saturation-scale-up): why"},
		{dec(2, 4, engine.ReasonSaturationScaleUp, ""), ""},
		{dec(3, 4, engine.ReasonSaturationScaleUp, ""), ""},
		{dec(3, 5, engine.ReasonSaturationScaleUp, ""), "Normal ScaleUp 3 → 5 replica(s) (saturation-scale-up): why"},
		{dec(5, 5, engine.ReasonModelSteady, ""), ""},
		{dec(5, 5, engine.ReasonHoldMetrics, engine.HoldStale), "Warning MetricsUnavailable holding 5 replica(s) (stale): why"},
		{dec(5, 5, engine.ReasonHoldMetrics, engine.HoldStale), ""},
		{dec(5, 5, engine.ReasonModelSteady, ""), "Normal MetricsAvailable metrics usable again; 5 replica(s) (model-steady)"},
		{dec(5, 3, engine.ReasonModelScaleDown, ""), "Normal ScaleDown 5 → 3 replica(s) (model-scale-down): why"},
	} {
		a.announce(vas, step.plan)
		got := ""
		select {
		case got = <-rec.Events:
		default:
		}
		if got != step.want {
			t.Errorf("cycle %d: event %q, want %q", i, got, step.want)
		}
	}
	a.announce(func(types.NamespacedName) *wvav1.VariantAutoscaling { return nil }, dec(3, 6, engine.ReasonSaturationScaleUp, ""))
	select {
	case e := <-rec.Events:
		t.Errorf("an Event without its VariantAutoscaling: %q", e)
	default:
	}
	// A variant no longer planned is forgotten: planned again, its
	// decision is new.
	a.announce(vas, &engine.Plan{})
	if len(a.last) != 0 {
		t.Errorf("remembered %v", a.last)
	}
}

// TestTruncateNote: a note longer than an Event accepts is cut on a
// character boundary and ends with an ellipsis.
func TestTruncateNote(t *testing.T) {
	long := strings.Repeat("é", 600) // 1 200 bytes
	got := truncateNote(long)
	if len(got) > maxEventNoteBytes || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("len %d, suffix %q", len(got), got[len(got)-6:])
	}
	if truncateNote("short") != "short" {
		t.Error("a short note changed")
	}
}

// TestConditionMessageCutOnACharacter: a condition's message longer than
// 1 024 bytes is cut on a character boundary (a byte cut at 1 021 split
// "é", two bytes, and stored invalid UTF-8).
func TestConditionMessageCutOnACharacter(t *testing.T) {
	var conds []metav1.Condition
	long := strings.Repeat("é", 600) // 1 200 bytes
	setCondition(&conds, metav1.Now(), "OptimizationReady", true, "OptimizationSucceeded", long)
	got := conds[0].Message
	if len(got) > maxConditionMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("len %d, valid UTF-8 %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-4:])
	}
	setCondition(&conds, metav1.Now(), "OptimizationReady", true, "OptimizationSucceeded", "short")
	if conds[0].Message != "short" {
		t.Errorf("a short message became %q", conds[0].Message)
	}
}
