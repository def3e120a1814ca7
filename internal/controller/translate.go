// The controller's translation layer, free of API calls: VariantAutoscalings
// and Deployments to the engine's variants (bounds, accelerator, profile,
// cost), target conflicts, and the engine's decisions to status
// (MetricsAvailable, TuningActive). Tested without an API server in
// translate_test.go.

package controller

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/snapshot"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// LabelAccelerator is the target label the WVA repository's controller reads the
// accelerator type from when the VariantAutoscaling does not say it.
const LabelAccelerator = "inference.optimization/acceleratorName"

// engineVariant translates a VariantAutoscaling and its Deployment; its
// pods are the report's that the variant label names, or else that its
// Deployment owns.
func engineVariant(v *variant, set settings, owners map[string]podInfo) snapshot.Variant {
	va, d := v.va, v.target
	acc := acceleratorOf(va, d)
	ev := engine.Variant{Name: va.Name, Accelerator: acc, CurrentReplicas: int(d.SpecReplicas), ReadyReplicas: int(d.ReadyReplicas)}
	if r := va.Spec.Role; r == "prefill" || r == "decode" {
		ev.Role = r
	}
	ev.MinReplicas, ev.MaxReplicas = replicaBounds(va)
	if l := va.Spec.ScaleUpLimit; l != nil {
		if l.Replicas != nil {
			ev.ScaleUpLimitReplicas = min(int(*l.Replicas), engine.MaxReplicaCount)
		}
		if f, err := strconv.ParseFloat(l.Factor, 64); err == nil && f >= 1 && f <= math.MaxFloat64 {
			ev.ScaleUpLimitFactor = min(f, engine.MaxReplicaCount) // beyond it, no limit either way
		}
	}
	prof := profileFor(va, acc)
	rs := variantSettings(va, d)
	v.settings = rs
	ev.AcceleratorsPerReplica, ev.MaxBatchSize, ev.MaxBatchTokens = rs.accelerators, rs.batch, rs.tokens
	if prof != nil {
		if pp, ok := profiledParams(prof); ok {
			ev.ServiceModel, ev.Params = tuner.ModelLinear, &pp
		}
	}
	ev.Cost = variantCost(va, acc, set.Accelerators, rs.accelerators)
	out := snapshot.Variant{Variant: ev, LastGood: -1}
	if a := va.Status.DesiredOptimizedAlloc; !a.LastRunTime.IsZero() {
		out.LastGood = int(a.NumReplicas)
	}
	label := set.Main.PodVariantLabel
	out.Group = func(pm collector.PodMetrics) string { return owners[pm.Pod.Name].group }
	out.Owns = func(pm collector.PodMetrics) (bool, snapshot.PodTimes) {
		if label != "" {
			return pm.Labels[label] == va.Name, snapshot.PodTimes{}
		}
		info, ok := owners[pm.Pod.Name]
		return ok && info.variant == va.Name, snapshot.PodTimes{Created: info.created, Ready: info.ready}
	}
	return out
}

// acceleratorOf resolves a variant's accelerator type: the spec's
// accelerator, else its upstream alias acceleratorType, else the target's
// label, the only profile entry, else "unknown".
func acceleratorOf(va *wvav1.VariantAutoscaling, d *workload) string {
	if va.Spec.Accelerator != "" {
		return va.Spec.Accelerator
	}
	if va.Spec.AcceleratorType != "" {
		return va.Spec.AcceleratorType
	}
	if d != nil {
		if a := d.Labels[LabelAccelerator]; a != "" {
			return a
		}
		if d.Template != nil && d.Template.Labels[LabelAccelerator] != "" {
			return d.Template.Labels[LabelAccelerator]
		}
	}
	if va.Spec.ModelProfile != nil && len(va.Spec.ModelProfile.Accelerators) == 1 {
		return va.Spec.ModelProfile.Accelerators[0].Acc
	}
	return "unknown"
}

// profileFor is the variant's profile on acc: its modelProfile entry, else
// one made of the upstream aliases (variantProfile, acceleratorCount), else
// nil. An entry without accCount takes acceleratorCount (the CRD's CEL
// rules keep a field and its alias from disagreeing).
func profileFor(va *wvav1.VariantAutoscaling, acc string) *wvav1.AcceleratorProfile {
	var out wvav1.AcceleratorProfile
	switch e := modelProfileEntry(va, acc); {
	case e != nil:
		out = *e
	case va.Spec.VariantProfile != nil || va.Spec.AcceleratorCount != nil:
		out.Acc = acc
		if vp := va.Spec.VariantProfile; vp != nil {
			out.PerfParms, out.MaxBatchSize = vp.PerfParms, vp.MaxBatchSize
		}
	default:
		return nil
	}
	if n := va.Spec.AcceleratorCount; out.AccCount == 0 && n != nil {
		out.AccCount = *n
	}
	return &out
}

func modelProfileEntry(va *wvav1.VariantAutoscaling, acc string) *wvav1.AcceleratorProfile {
	if va.Spec.ModelProfile == nil {
		return nil
	}
	for i := range va.Spec.ModelProfile.Accelerators {
		if a := &va.Spec.ModelProfile.Accelerators[i]; a.Acc == acc {
			return a
		}
	}
	return nil
}

// profiledParams reads the linear-model parameters of the WVA CRD's
// modelProfile or variantProfile (decode α, β; prefill γ, δ; ms). The API
// server checked their syntax.
func profiledParams(a *wvav1.AcceleratorProfile) (tuner.Params, bool) {
	if a.PerfParms == nil {
		return tuner.Params{}, false
	}
	var v [4]float64
	for i, s := range []string{a.PerfParms.DecodeParms.Alpha, a.PerfParms.DecodeParms.Beta, a.PerfParms.PrefillParms.Gamma, a.PerfParms.PrefillParms.Delta} {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x > 0) {
			return tuner.Params{}, false
		}
		v[i] = x
	}
	return tuner.Params{Alpha: v[0], Beta: v[1], Gamma: v[2], Delta: v[3]}, true
}

// variantSettings are a variant's server settings: its VariantAutoscaling's,
// else its target's pod template's (d may be nil).
func variantSettings(va *wvav1.VariantAutoscaling, d *workload) resolvedSettings {
	var tpl *corev1.PodTemplateSpec
	if d != nil {
		tpl = d.Template
	}
	ss := readServerSettings(tpl)
	if d != nil && d.GroupSize > 1 && ss.accelerators > 0 {
		// A replica is a group of GroupSize pods, each with the template's
		// accelerators.
		ss.accelerators *= int(d.GroupSize)
		ss.from[settingAccs] += fmt.Sprintf(" × %d pods per group", d.GroupSize)
	}
	return resolveSettings(profileFor(va, acceleratorOf(va, d)), ss)
}

// variantCost: the spec's variantCost, else the accelerator's unit cost
// times the accelerators per replica (0: one), else the engine's default.
func variantCost(va *wvav1.VariantAutoscaling, acc string, accs map[string]config.Accelerator, perReplica int) float64 {
	if c, err := strconv.ParseFloat(va.Spec.VariantCost, 64); err == nil && c > 0 {
		return c
	}
	if a, ok := accs[acc]; ok && a.Cost > 0 {
		return a.Cost * float64(max(perReplica, 1))
	}
	return engine.DefaultVariantCost
}

// classRef is the model's SLO class reference: the first variant's that
// has one (variants of a model should agree).
func classRef(vs []*variant) *wvav1.ConfigMapKeyRef {
	for _, v := range vs {
		if v.va.Spec.SLOClassRef != nil {
			return v.va.Spec.SLOClassRef
		}
	}
	return nil
}

// ownedBy says whether a pod the workload's selector matches is really
// the workload's: its controller, when it has one, is the Deployment's
// ReplicaSet (named after the Deployment and the pod's template hash), or
// the StatefulSet itself. Overlapping selectors of two workloads then do
// not mix their pods. A LeaderWorkerSet's pods carry its name's label
// (their selector); other kinds' pods are taken as their selector finds
// them.
func ownedBy(pod *corev1.Pod, w *workload) bool {
	ref := metav1.GetControllerOf(pod)
	switch {
	case ref == nil:
		return true
	case w.isDeployment():
		return ref.Kind == "ReplicaSet" && ref.Name == w.Name+"-"+pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	case w.Kind == "StatefulSet":
		return ref.Kind == "StatefulSet" && ref.Name == w.Name
	}
	return true
}

// targetConflicts finds VariantAutoscalings whose Deployment an older one
// (by creation time, then name) already targets, each with that owner's
// name. Two autoscalers on one Deployment would fight over it.
func targetConflicts(items []wvav1.VariantAutoscaling) map[types.NamespacedName]string {
	order := make([]*wvav1.VariantAutoscaling, 0, len(items))
	for i := range items {
		if items[i].DeletionTimestamp == nil {
			order = append(order, &items[i])
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	owner := map[types.NamespacedName]string{}
	out := map[types.NamespacedName]string{}
	for _, va := range order {
		target := types.NamespacedName{Namespace: va.Namespace, Name: va.TargetName()}
		if o, ok := owner[target]; ok {
			out[types.NamespacedName{Namespace: va.Namespace, Name: va.Name}] = o
			continue
		}
		owner[target] = va.Name
	}
	return out
}

// metricsStatus fills MetricsAvailable from the engine's verdict and the
// collector's problems for this variant's pods.
func metricsStatus(dec *decision, d engine.VariantDecision, collectErr error, rep collector.Report, v *variant) {
	if collectErr != nil {
		dec.MetricsOK, dec.MetricsReason, dec.MetricsMessage = false, wvav1.ReasonPrometheusError, collectErr.Error()
		return
	}
	if d.Reason != engine.ReasonHoldMetrics {
		dec.MetricsReason, dec.MetricsMessage = wvav1.ReasonMetricsFound, fmt.Sprintf("%d pods report metrics", len(v.pods))
		return
	}
	dec.MetricsOK = false
	// The engine's explanation names each pod and what is wrong with it;
	// the collector's problems for this variant's pods add which series.
	msg := d.Explanation
	mine := make(map[string]bool, len(v.pods))
	for _, name := range v.pods {
		mine[name] = true
	}
	var probs []collector.Problem
	for _, pr := range rep.Problems {
		if pr.Kind != "" && mine[pr.Pod] {
			probs = append(probs, pr)
		}
	}
	dec.MetricsReason = holdReason(d.Hold, probs)
	texts := make([]string, 0, min(len(probs), 4))
	for i, pr := range probs {
		if i == 3 {
			texts = append(texts, fmt.Sprintf("and %d more", len(probs)-3))
			break
		}
		texts = append(texts, pr.String())
	}
	if len(texts) > 0 {
		msg += "; " + strings.Join(texts, "; ")
	}
	switch {
	case len(v.pods) > 0:
	case apierrors.IsForbidden(v.listErr):
		dec.MetricsReason = wvav1.ReasonPodListForbidden
		msg = fmt.Sprintf("the controller may not list pods in namespace %s, so it cannot tell which pods are %s's: grant its service account "+
			"list on pods there, or set WVA_POD_VARIANT_LABEL (%v)", v.va.Namespace, v.va.Name, v.listErr)
	case v.listErr != nil:
		dec.MetricsReason = wvav1.ReasonPodListFailed
		msg = fmt.Sprintf("listing the pods of %s failed: %v", v.va.Name, v.listErr)
	default:
		msg = fmt.Sprintf("no vLLM metrics found for model %q of %s; ensure a ServiceMonitor or PodMonitor scrapes its pods", v.va.Spec.ModelID, v.va.Name)
	}
	dec.MetricsMessage = msg
}

// holdReason maps the worst of the engine's hold cause and the kinds of
// the collector's problems for the variant's own pods to a
// MetricsAvailable reason.
func holdReason(cause engine.HoldCause, probs []collector.Problem) string {
	for _, pr := range probs {
		cause = cause.Worse(pr.Kind)
	}
	switch cause {
	case engine.HoldImplausible:
		return wvav1.ReasonMetricsImplausible
	case engine.HoldInvalid:
		return wvav1.ReasonMetricsInvalid
	case engine.HoldStale:
		return wvav1.ReasonMetricsStale
	default:
		return wvav1.ReasonMetricsMissing
	}
}

func tuningStatus(dec *decision, d engine.VariantDecision, mode engine.Mode, enabled bool) {
	switch {
	case d.Queueing != nil && d.Queueing.ParamsSource == "profiled":
		dec.TuningReason, dec.TuningMessage = wvav1.ReasonProfiled, "using the profiled parameters of spec.modelProfile or spec.variantProfile"
	case mode == engine.ModeCapacityOnly:
		dec.TuningReason, dec.TuningMessage = wvav1.ReasonTuningDisabled, "the engine runs in capacity-only mode"
	case !enabled && d.Queueing == nil:
		dec.TuningReason, dec.TuningMessage = wvav1.ReasonTuningDisabled, "tuning is disabled or waiting for its period"
	default:
		dec.TuningActive, dec.TuningReason = true, wvav1.ReasonTuning
		dec.TuningMessage = "learning the parameters online"
		if d.Queueing != nil {
			if d.Queueing.Params != nil {
				q := d.Queueing.Params
				dec.TuningMessage = fmt.Sprintf("α=%.4g β=%.4g γ=%.4g ms", q.Alpha, q.Beta, q.Gamma)
			}
			if d.Queueing.Tuning != "" {
				dec.TuningMessage += "; " + d.Queueing.Tuning
			}
		}
	}
}

// actuatorName is the VA's actuator (metrics-only by default).
func actuatorName(va *wvav1.VariantAutoscaling) string {
	if va.Spec.Actuator == "" {
		return wvav1.ActuatorMetricsOnly
	}
	return va.Spec.Actuator
}

// replicaBounds are a VariantAutoscaling's minReplicas and maxReplicas as
// the engine takes them: clamped to engine.MaxReplicaCount (a larger
// maximum means none, as the engine's own cap does).
func replicaBounds(va *wvav1.VariantAutoscaling) (lo *int, hi int) {
	if va.Spec.MinReplicas != nil {
		n := min(int(*va.Spec.MinReplicas), engine.MaxReplicaCount)
		lo = &n
	}
	if va.Spec.MaxReplicas != nil {
		hi = min(int(*va.Spec.MaxReplicas), engine.MaxReplicaCount)
	}
	return lo, hi
}

// attainmentStatus describes the model's attainment feedback for
// AttainmentReachable; nothing while the feedback does not run (disabled,
// no traffic, no histograms).
func attainmentStatus(dec *decision, m *engine.ModelSummary) {
	if m == nil || m.AttainmentTarget <= 0 || m.ObservedRequests <= 0 {
		return
	}
	if m.AttainmentOutOfReach {
		dec.AttainmentMessage = m.FeedbackNote
		return
	}
	dec.AttainmentReachable = true
	dec.AttainmentMessage = fmt.Sprintf("target %g of requests within the SLO; %.4g over the last window (%.0f requests); capacity factor %.3g",
		m.AttainmentTarget, m.ObservedAttainment, m.ObservedRequests, m.CapacityFactor)
	if m.FeedbackNote != "" {
		dec.AttainmentMessage += "; " + strings.TrimPrefix(m.FeedbackNote, "attainment feedback: ")
	}
}
