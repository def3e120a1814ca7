package controller

import (
	"fmt"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// The reasons of the Events the planner records on a VariantAutoscaling.
const (
	eventScaleUp           = "ScaleUp"
	eventScaleDown         = "ScaleDown"
	eventMetricsHeld       = "MetricsUnavailable"
	eventMetricsRecovered  = "MetricsAvailable"
	eventActionConfigure   = "Configure"
	maxEventNoteBytes      = 1024 // events.k8s.io/v1 refuses a longer note
	eventActionDecide      = "Decide"
	eventActionHold        = "Hold"
	announceVerbosityQuiet = 1 // the log level of decisions that did not change
)

// announcer tells operators what the planner decided, as HPA does with its
// SuccessfulRescale events: an Event on the VariantAutoscaling and a log
// line each time a variant's decision changes (a scale-up or -down asked
// for, a hold on unusable metrics, the end of a hold), and at verbosity 1
// a log line for every decision of every cycle. A decision repeated cycle
// after cycle while it is applied is announced once.
type announcer struct {
	Recorder events.EventRecorder // nil: log only
	Log      logr.Logger
	last     map[types.NamespacedName]announced
	// settings is the last server-settings disagreement announced per
	// variant.
	settings map[types.NamespacedName]string
}

// announced is what the last announcement of a variant said.
type announced struct {
	desired int
	reason  engine.Reason
	hold    engine.HoldCause
	scaling bool
}

// announce records the plan's decisions; vaOf finds a decision's
// VariantAutoscaling (nil: the decision is logged only).
func (a *announcer) announce(vaOf func(types.NamespacedName) *wvav1.VariantAutoscaling, plan *engine.Plan) {
	if a.last == nil {
		a.last = map[types.NamespacedName]announced{}
	}
	seen := make(map[types.NamespacedName]bool, len(plan.Variants))
	for _, d := range plan.Variants {
		k := types.NamespacedName{Namespace: d.Namespace, Name: d.Variant}
		seen[k] = true
		held := d.Reason == engine.ReasonHoldMetrics
		now := announced{desired: d.Desired, reason: d.Reason, hold: d.Hold, scaling: d.Desired != d.Current && !held}
		prev, had := a.last[k]
		a.last[k] = now
		kv := []any{"variantAutoscaling", k.String(), "model", d.Model, "accelerator", d.Accelerator, "current", d.Current,
			"desired", d.Desired, "reason", d.Reason, "explanation", d.Explanation}
		if held {
			kv = append(kv, "hold", d.Hold)
		}
		recovered := had && prev.reason == engine.ReasonHoldMetrics && !held
		if (had && prev == now) || (!now.scaling && !held && !recovered) {
			a.Log.V(announceVerbosityQuiet).Info("decision", kv...)
			continue
		}
		a.Log.Info("decision", kv...)
		a.event(vaOf(k), d, held, recovered)
	}
	for k := range a.last {
		if !seen[k] {
			delete(a.last, k)
		}
	}
}

// announceSettings records a Warning Event and a log line when a variant's
// VariantAutoscaling starts to disagree with its workload's server
// settings, or disagrees differently; once per change, not per cycle.
func (a *announcer) announceSettings(vs map[types.NamespacedName]*variant) {
	if a.settings == nil {
		a.settings = map[types.NamespacedName]string{}
	}
	for k, v := range vs {
		msg := ""
		if v.settings.reason == wvav1.ReasonSettingsDisagree {
			msg = v.settings.message
		}
		if prev := a.settings[k]; msg == prev {
			continue
		}
		a.settings[k] = msg
		if msg == "" {
			continue
		}
		a.Log.Info("server settings disagree", "variantAutoscaling", k.String(), "detail", msg)
		if a.Recorder != nil {
			a.Recorder.Eventf(v.va, nil, corev1.EventTypeWarning, wvav1.ReasonSettingsDisagree, eventActionConfigure, "%s", truncateNote(msg))
		}
	}
	for k := range a.settings {
		if vs[k] == nil {
			delete(a.settings, k)
		}
	}
}

// event records the decision's Event on its VariantAutoscaling.
func (a *announcer) event(va *wvav1.VariantAutoscaling, d engine.VariantDecision, held, wasHeld bool) {
	if a.Recorder == nil || va == nil {
		return
	}
	switch {
	case held:
		a.Recorder.Eventf(va, nil, corev1.EventTypeWarning, eventMetricsHeld, eventActionHold, "%s",
			truncateNote(fmt.Sprintf("holding %d replica(s) (%s): %s", d.Desired, d.Hold, d.Explanation)))
	case d.Desired > d.Current:
		a.Recorder.Eventf(va, nil, corev1.EventTypeNormal, eventScaleUp, eventActionDecide, "%s",
			truncateNote(fmt.Sprintf("%d → %d replica(s) (%s): %s", d.Current, d.Desired, d.Reason, d.Explanation)))
	case d.Desired < d.Current:
		a.Recorder.Eventf(va, nil, corev1.EventTypeNormal, eventScaleDown, eventActionDecide, "%s",
			truncateNote(fmt.Sprintf("%d → %d replica(s) (%s): %s", d.Current, d.Desired, d.Reason, d.Explanation)))
	case wasHeld:
		a.Recorder.Eventf(va, nil, corev1.EventTypeNormal, eventMetricsRecovered, eventActionDecide, "%s",
			truncateNote(fmt.Sprintf("metrics usable again; %d replica(s) (%s)", d.Desired, d.Reason)))
	}
}

// truncateNote shortens s to the longest note an Event accepts, on a
// character boundary, marking the cut with an ellipsis.
func truncateNote(s string) string { return truncateBytes(s, maxEventNoteBytes) }

// truncateBytes cuts s to at most n bytes on a character boundary, with an
// ellipsis where it cut (a byte cut can split a character: "→" and "≥"
// are three bytes, and the API server stores what it is sent).
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len("…"), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
