package controller

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// The translation layer on its own: no API server, no cycle.

func TestEngineVariant(t *testing.T) {
	two, nine, four := int32(2), int32(9), int32(4)
	va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: "llama-h100", Namespace: "llm"},
		Spec: wvav1.VariantAutoscalingSpec{ModelID: "llama", Accelerator: "H100", MinReplicas: &two, MaxReplicas: &nine,
			ScaleUpLimit: &wvav1.ScaleUpLimit{Factor: "1.5", Replicas: &four},
			ModelProfile: &wvav1.ModelProfile{Accelerators: []wvav1.AcceleratorProfile{{Acc: "H100", AccCount: 2, MaxBatchSize: 128,
				PerfParms: &wvav1.PerfParms{DecodeParms: wvav1.DecodeParms{Alpha: "6.9", Beta: "0.03"}, PrefillParms: wvav1.PrefillParms{Gamma: "5", Delta: "0.001"}}}}}}}
	va.Status.DesiredOptimizedAlloc = wvav1.OptimizedAlloc{LastRunTime: metav1.Now(), NumReplicas: 5}
	three := int32(3)
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &three}, Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	set := settings{Accelerators: map[string]config.Accelerator{"H100": {Name: "H100", Cost: 40}}}
	owners := map[string]podInfo{"llama-h100-0": {variant: "llama-h100", created: time.Unix(40, 0), ready: time.Unix(100, 0)}, "other-0": {variant: "other"}}
	got := engineVariant(&variant{va: va, target: fromDeployment(d)}, set, owners)
	ev := got.Variant
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"current replicas", ev.CurrentReplicas, 3},
		{"ready replicas", ev.ReadyReplicas, 2},
		{"min replicas", *ev.MinReplicas, 2},
		{"max replicas", ev.MaxReplicas, 9},
		{"scale-up limit factor", ev.ScaleUpLimitFactor, 1.5},
		{"scale-up limit replicas", ev.ScaleUpLimitReplicas, 4},
		{"accelerators per replica", ev.AcceleratorsPerReplica, 2},
		{"max batch size", ev.MaxBatchSize, 128},
		{"cost (40 per accelerator × 2 per replica)", ev.Cost, 80.0},
		{"last good (the published count)", got.LastGood, 5},
	} {
		if f.got != f.want {
			t.Errorf("%s: %v, want %v", f.name, f.got, f.want)
		}
	}
	if ev.Params == nil || ev.Params.Alpha != 6.9 || ev.Params.Delta != 0.001 {
		t.Errorf("profiled parameters %+v", ev.Params)
	}
	mine, ready := got.Owns(collector.PodMetrics{Pod: engine.Pod{Name: "llama-h100-0"}})
	other, _ := got.Owns(collector.PodMetrics{Pod: engine.Pod{Name: "other-0"}})
	if !mine || other || !ready.Ready.Equal(time.Unix(100, 0)) || !ready.Created.Equal(time.Unix(40, 0)) {
		t.Errorf("owns: mine %v (ready %v), other %v", mine, ready, other)
	}
	// A factor that does not parse, or below 1, is ignored (the CRD's CEL
	// rejects it; an older API server may not).
	va.Spec.ScaleUpLimit.Factor = "0.5"
	if f := engineVariant(&variant{va: va, target: fromDeployment(d)}, set, owners).Variant.ScaleUpLimitFactor; f != 0 {
		t.Errorf("factor 0.5 read as %v", f)
	}
}

// TestUpstreamAliases: a VariantAutoscaling written with the upstream llm-d
// autoscaler's names (acceleratorType, acceleratorCount, variantProfile)
// translates to the same engine variant, cost included, as one written
// with this project's fields; an alias gives way to its field.
func TestUpstreamAliases(t *testing.T) {
	params := &wvav1.PerfParms{DecodeParms: wvav1.DecodeParms{Alpha: "15.2", Beta: "0.28"}, PrefillParms: wvav1.PrefillParms{Gamma: "3.8", Delta: "0.07"}}
	two := int32(2)
	fields := wvav1.VariantAutoscalingSpec{ModelID: "llama", Accelerator: "H100",
		ModelProfile: &wvav1.ModelProfile{Accelerators: []wvav1.AcceleratorProfile{{Acc: "H100", AccCount: 2, MaxBatchSize: 256, PerfParms: params}}}}
	aliases := wvav1.VariantAutoscalingSpec{ModelID: "llama", AcceleratorType: "H100", AcceleratorCount: &two,
		VariantProfile: &wvav1.VariantProfile{MaxBatchSize: 256, PerfParms: params}}
	// The target's label names another type: the spec (field or alias) wins.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelAccelerator: "A100"}}, Spec: appsv1.DeploymentSpec{Replicas: &two}}
	set := settings{Accelerators: map[string]config.Accelerator{"H100": {Name: "H100", Cost: 40}, "A100": {Name: "A100", Cost: 20}}}
	translate := func(spec wvav1.VariantAutoscalingSpec) engine.Variant {
		va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: "llama-h100", Namespace: "llm"}, Spec: spec}
		return engineVariant(&variant{va: va, target: fromDeployment(d)}, set, nil).Variant
	}
	want := translate(fields)
	if want.Accelerator != "H100" || want.AcceleratorsPerReplica != 2 || want.Cost != 80 || want.MaxBatchSize != 256 || want.Params == nil {
		t.Fatalf("with the fields: %+v", want)
	}
	if got := translate(aliases); !reflect.DeepEqual(got, want) {
		t.Errorf("with the aliases: %+v\nwith the fields: %+v", got, want)
	}
	// Each alias alone, beside the fields.
	for name, mutate := range map[string]func(*wvav1.VariantAutoscalingSpec){
		"acceleratorType": func(s *wvav1.VariantAutoscalingSpec) { s.Accelerator, s.AcceleratorType = "", "H100" },
		"acceleratorCount": func(s *wvav1.VariantAutoscalingSpec) {
			s.ModelProfile.Accelerators[0].AccCount, s.AcceleratorCount = 0, &two
		},
		"variantProfile": func(s *wvav1.VariantAutoscalingSpec) {
			s.ModelProfile, s.AcceleratorCount, s.VariantProfile = nil, &two, &wvav1.VariantProfile{MaxBatchSize: 256, PerfParms: params}
		},
	} {
		spec := *fields.DeepCopy()
		mutate(&spec)
		if got := translate(spec); !reflect.DeepEqual(got, want) {
			t.Errorf("%s alone: %+v, want %+v", name, got, want)
		}
	}
	// A field and its alias both set: the field is read.
	both := *fields.DeepCopy()
	both.AcceleratorType, both.VariantProfile = "A100", &wvav1.VariantProfile{MaxBatchSize: 8}
	if got := translate(both); !reflect.DeepEqual(got, want) {
		t.Errorf("field and alias: %+v, want the field's %+v", got, want)
	}
}

func TestTargetConflicts(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }
	items := []wvav1.VariantAutoscaling{
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "n", CreationTimestamp: at(10)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", CreationTimestamp: at(20)},
			Spec: wvav1.VariantAutoscalingSpec{ScaleTargetRef: &wvav1.CrossVersionObjectReference{Name: "b"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", CreationTimestamp: at(20)},
			Spec: wvav1.VariantAutoscalingSpec{ScaleTargetRef: &wvav1.CrossVersionObjectReference{Name: "b"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "m", CreationTimestamp: at(30)}}, // another namespace
		{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "n", CreationTimestamp: at(5), DeletionTimestamp: &metav1.Time{}},
			Spec: wvav1.VariantAutoscalingSpec{ScaleTargetRef: &wvav1.CrossVersionObjectReference{Name: "b"}}}, // being deleted
	}
	got := targetConflicts(items)
	want := map[types.NamespacedName]string{{Namespace: "n", Name: "a"}: "b", {Namespace: "n", Name: "c"}: "b"}
	if len(got) != len(want) || got[types.NamespacedName{Namespace: "n", Name: "a"}] != "b" || got[types.NamespacedName{Namespace: "n", Name: "c"}] != "b" {
		t.Errorf("conflicts %v, want %v", got, want)
	}
}

func TestMetricsStatus(t *testing.T) {
	va := &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "n"}, Spec: wvav1.VariantAutoscalingSpec{ModelID: "m"}}
	rep := collector.Report{Problems: []collector.Problem{
		{Pod: "v-0", Metric: "kvCacheUsage", Kind: engine.HoldInvalid, Detail: "kvCacheUsage is NaN (NaN)"},
		{Pod: "w-0", Metric: "waitingRequests", Kind: engine.HoldInvalid, Detail: "another variant's pod"},
		{Pod: "v-1", Kind: "", Detail: "no request rate yet"},
	}}
	held := engine.VariantDecision{Reason: engine.ReasonHoldMetrics, Hold: engine.HoldMissing, Explanation: "held"}
	for _, tc := range []struct {
		name    string
		d       engine.VariantDecision
		err     error
		v       variant
		ok      bool
		reason  string
		message string
	}{
		{"planned", engine.VariantDecision{Reason: engine.ReasonModelSteady}, nil, variant{va: va, pods: []string{"v-0", "v-1"}}, true, wvav1.ReasonMetricsFound, "2 pods report metrics"},
		{"source down", held, errors.New("connection refused"), variant{va: va}, false, wvav1.ReasonPrometheusError, "connection refused"},
		{"own invalid pod", held, nil, variant{va: va, pods: []string{"v-0", "v-1"}}, false, wvav1.ReasonMetricsInvalid, "held; v-0: kvCacheUsage is NaN (NaN)"},
		{"no pods", held, nil, variant{va: va}, false, wvav1.ReasonMetricsMissing, "ensure a ServiceMonitor or PodMonitor"},
		{"pods not listable", held, nil, variant{va: va, listErr: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)}, false,
			wvav1.ReasonPodListForbidden, "may not list pods in namespace n"},
	} {
		dec := decision{MetricsOK: true}
		metricsStatus(&dec, tc.d, tc.err, rep, &tc.v)
		if dec.MetricsOK != tc.ok || dec.MetricsReason != tc.reason || !strings.Contains(dec.MetricsMessage, tc.message) {
			t.Errorf("%s: %v %s %q, want %v %s %q", tc.name, dec.MetricsOK, dec.MetricsReason, dec.MetricsMessage, tc.ok, tc.reason, tc.message)
		}
		if strings.Contains(dec.MetricsMessage, "another variant's pod") || strings.Contains(dec.MetricsMessage, "no request rate yet") {
			t.Errorf("%s: the message has problems that are not this variant's or hold nothing: %q", tc.name, dec.MetricsMessage)
		}
	}
}

// TestAttainmentStatus: AttainmentReachable follows the model's attainment
// feedback — absent while it does not run, True with what it observed,
// False with the plan's note when the target may be out of reach.
func TestAttainmentStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	out := &engine.ModelSummary{AttainmentTarget: 0.99, ObservedAttainment: 0.95, ObservedRequests: 400, CapacityFactor: 0.5,
		AttainmentOutOfReach: true, FeedbackNote: "attainment target 0.99 may be out of reach: 0.95 of requests within the SLO"}
	for _, tc := range []struct {
		name    string
		m       *engine.ModelSummary
		set     bool
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"no model summary", nil, false, "", "", ""},
		{"feedback off", &engine.ModelSummary{}, false, "", "", ""},
		{"no histograms yet", &engine.ModelSummary{AttainmentTarget: 0.99, CapacityFactor: 1}, false, "", "", ""},
		{"within reach", &engine.ModelSummary{AttainmentTarget: 0.99, ObservedAttainment: 0.995, ObservedRequests: 300, CapacityFactor: 1.05,
			FeedbackNote: "attainment feedback: demand at 30 % of the ready capacity (says nothing of where it ends)"},
			true, metav1.ConditionTrue, wvav1.ReasonAttainmentFeedback, "target 0.99 of requests within the SLO; 0.995 over the last window (300 requests); capacity factor 1.05; demand at 30 %"},
		{"out of reach", out, true, metav1.ConditionFalse, wvav1.ReasonAttainmentOutOfReach, "may be out of reach"},
	} {
		dec := decision{}
		attainmentStatus(&dec, tc.m)
		var st wvav1.VariantAutoscalingStatus
		signalStatus(&st, now, dec)
		c := findCondition(st.Conditions, wvav1.ConditionAttainmentReachable)
		if (c != nil) != tc.set {
			t.Fatalf("%s: condition %+v, want set %v", tc.name, c, tc.set)
		}
		if c != nil && (c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message)) {
			t.Errorf("%s: %s %s %q, want %s %s %q", tc.name, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
		}
	}
}
