package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// RBAC: rbac.go.

// reconciler writes a VariantAutoscaling's status from its target and the
// planner's last decision: target resolution, the current and desired
// allocation, actuation, and the conditions. It writes at most once per
// call, and only when the status changed. It runs on every replica (not
// only the leader) but only the leader's planner fills the cache.
type reconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
	Cache  *decisionCache
	Config *configState
}

// Reconcile implements reconcile.Reconciler.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var va wvav1.VariantAutoscaling
	if err := r.Client.Get(ctx, req.NamespacedName, &va); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if va.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := apiTime(r.Clock.Now())
	st := *va.Status.DeepCopy()
	st.ObservedGeneration = va.Generation

	dec, ok := r.Cache.get(req.NamespacedName)
	target, err := r.targetStatus(ctx, &va, &st, now, dec, ok)
	if err != nil {
		return ctrl.Result{}, err
	}
	if target != nil {
		rs := variantSettings(&va, target)
		setCondition(&st.Conditions, now, wvav1.ConditionServerSettings, rs.ok, rs.reason, rs.message)
	}
	optimizationStatus(&st, now, dec, ok)
	if ok && target != nil {
		signalStatus(&st, now, dec)
	}
	r.actuationStatus(&st, now, dec, ok, target)
	r.configStatus(&st, now)
	return r.writeStatus(ctx, &va, st)
}

// optimizationStatus sets OptimizationReady and, for a decided variant,
// the desired allocation from the planner's decision (ok: there is one).
func optimizationStatus(st *wvav1.VariantAutoscalingStatus, now metav1.Time, dec decision, ok bool) {
	switch {
	case !ok:
		if findCondition(st.Conditions, wvav1.ConditionOptimizationReady) == nil {
			setCondition(&st.Conditions, now, wvav1.ConditionOptimizationReady, false, wvav1.ReasonAwaitingCycle,
				"waiting for the first optimisation cycle")
		}
	case dec.Decided:
		if dec.OptimizationReason == "" {
			setCondition(&st.Conditions, now, wvav1.ConditionOptimizationReady, true, wvav1.ReasonOptimizationSucceeded, dec.Decision.Explanation)
		} else {
			setCondition(&st.Conditions, now, wvav1.ConditionOptimizationReady, false, dec.OptimizationReason, dec.OptimizationMessage)
		}
		st.DesiredOptimizedAlloc = wvav1.OptimizedAlloc{LastRunTime: apiTime(dec.Time), NumReplicas: replicas32(dec.Decision.Desired),
			Accelerator: dec.Decision.Accelerator, Reason: string(dec.Decision.Reason)}
	default:
		setCondition(&st.Conditions, now, wvav1.ConditionOptimizationReady, false, dec.OptimizationReason, dec.OptimizationMessage)
	}
}

// signalStatus sets MetricsAvailable, TuningActive and AttainmentReachable
// from the decision, each only when the decision says something of it.
func signalStatus(st *wvav1.VariantAutoscalingStatus, now metav1.Time, dec decision) {
	if dec.MetricsOK {
		setCondition(&st.Conditions, now, wvav1.ConditionMetricsAvailable, true, orDefault(dec.MetricsReason, wvav1.ReasonMetricsFound), dec.MetricsMessage)
	} else if dec.MetricsReason != "" {
		setCondition(&st.Conditions, now, wvav1.ConditionMetricsAvailable, false, dec.MetricsReason, dec.MetricsMessage)
	}
	if dec.TuningReason != "" {
		setCondition(&st.Conditions, now, wvav1.ConditionTuningActive, dec.TuningActive, dec.TuningReason, dec.TuningMessage)
	}
	if dec.AttainmentMessage != "" {
		reason := wvav1.ReasonAttainmentFeedback
		if !dec.AttainmentReachable {
			reason = wvav1.ReasonAttainmentOutOfReach
		}
		setCondition(&st.Conditions, now, wvav1.ConditionAttainmentReachable, dec.AttainmentReachable, reason, dec.AttainmentMessage)
	}
}

// configStatus sets ConfigValid from the configuration's problems.
func (r *reconciler) configStatus(st *wvav1.VariantAutoscalingStatus, now metav1.Time) {
	probs := r.Config.problems()
	if len(probs) == 0 {
		setCondition(&st.Conditions, now, wvav1.ConditionConfigValid, true, wvav1.ReasonConfigValid, "all configuration ConfigMaps are valid")
		return
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Error()
	}
	setCondition(&st.Conditions, now, wvav1.ConditionConfigValid, false, wvav1.ReasonConfigInvalid,
		"using the last good configuration: "+strings.Join(msgs, "; "))
}

// writeStatus writes st as va's status, only when it changed; a conflict
// asks for another reconcile a second later.
func (r *reconciler) writeStatus(ctx context.Context, va *wvav1.VariantAutoscaling, st wvav1.VariantAutoscalingStatus) (ctrl.Result, error) {
	if equality.Semantic.DeepEqual(st, va.Status) {
		return ctrl.Result{}, nil
	}
	va.Status = st
	if err := r.Client.Status().Update(ctx, va); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // someone else wrote; read again
		}
		return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
	}
	return ctrl.Result{}, nil
}

// targetStatus reads the VA's target (nil when it does not exist) and
// sets TargetResolved and the current allocation.
func (r *reconciler) targetStatus(ctx context.Context, va *wvav1.VariantAutoscaling, st *wvav1.VariantAutoscalingStatus, now metav1.Time,
	dec decision, ok bool) (*workload, error) {
	d, err := getWorkload(ctx, r.Client, va)
	kind, apiVersion := va.TargetKind()
	switch {
	case err == nil && ok && dec.conflict():
		setCondition(&st.Conditions, now, wvav1.ConditionTargetResolved, false, wvav1.ReasonTargetConflict, dec.OptimizationMessage)
	case err == nil:
		setCondition(&st.Conditions, now, wvav1.ConditionTargetResolved, true, wvav1.ReasonTargetFound, fmt.Sprintf("%s found", d))
	case apierrors.IsNotFound(err):
		setCondition(&st.Conditions, now, wvav1.ConditionTargetResolved, false, wvav1.ReasonTargetNotFound,
			fmt.Sprintf("%s %s/%s does not exist; actuation is paused", strings.ToLower(kind), va.Namespace, va.TargetName()))
		st.CurrentAlloc = wvav1.Allocation{Accelerator: acceleratorOf(va, nil)}
		return nil, nil
	case meta.IsNoMatchError(err):
		setCondition(&st.Conditions, now, wvav1.ConditionTargetResolved, false, wvav1.ReasonTargetNotFound,
			fmt.Sprintf("the API server serves no kind %s in %s (is its CRD installed?); actuation is paused", kind, apiVersion))
		st.CurrentAlloc = wvav1.Allocation{Accelerator: acceleratorOf(va, nil)}
		return nil, nil
	default:
		return nil, fmt.Errorf("reading %s %s: %w", strings.ToLower(kind), va.TargetName(), err)
	}
	st.CurrentAlloc = wvav1.Allocation{Accelerator: acceleratorOf(va, d), NumReplicas: d.SpecReplicas, ReadyReplicas: d.ReadyReplicas}
	return d, nil
}

// actuationStatus sets the actuation and ActuationComplete, comparing the
// target as it is now with the desired allocation; without a target, a
// decision or a desired allocation, and in a target conflict, it leaves
// them as they are.
func (r *reconciler) actuationStatus(st *wvav1.VariantAutoscalingStatus, now metav1.Time, dec decision, ok bool, target *workload) {
	if !ok || target == nil || dec.conflict() || !dec.Decided && st.DesiredOptimizedAlloc.LastRunTime.IsZero() {
		return
	}
	desired := st.DesiredOptimizedAlloc.NumReplicas
	st.Actuation.Actuator = dec.Actuator
	if !dec.ActuatedAt.IsZero() {
		t := apiTime(dec.ActuatedAt)
		st.Actuation.LastUpdateTime = &t
	}
	if dec.ActuationErr != "" {
		st.Actuation.Applied = false
		setCondition(&st.Conditions, now, wvav1.ConditionActuationComplete, false, wvav1.ReasonActuationFailed, dec.ActuationErr)
		return
	}
	// The target as it is now, not as the planner saw it.
	a := observe(target, desired)
	st.Actuation.Applied = a.Complete
	switch {
	case a.Complete && dec.Actuator == wvav1.ActuatorDirect:
		setCondition(&st.Conditions, now, wvav1.ConditionActuationComplete, true, wvav1.ReasonApplied,
			fmt.Sprintf("deployment runs the desired %d replicas", desired))
	case a.Complete:
		setCondition(&st.Conditions, now, wvav1.ConditionActuationComplete, true, wvav1.ReasonPublished,
			fmt.Sprintf("deployment runs the desired %d replicas (applied by HPA/KEDA from inferno_desired_replicas)", desired))
	default:
		setCondition(&st.Conditions, now, wvav1.ConditionActuationComplete, false, wvav1.ReasonScaling, a.Message)
	}
}

// apiTime is t as the API server stores it (whole seconds): a status
// built from it compares equal to the stored one when nothing changed, so
// no write is sent.
func apiTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// maxConditionMessageBytes bounds a condition's message (the API allows
// 32 768 bytes; a decision's explanation is cut here to stay readable in
// kubectl describe).
const maxConditionMessageBytes = 1024

// setCondition sets a condition; its transition time changes only when
// its status does (with the injected clock, unlike meta.SetStatusCondition).
// A long message is cut on a character boundary.
func setCondition(conds *[]metav1.Condition, now metav1.Time, typ string, status bool, reason, msg string) {
	reason = orDefault(reason, "Unknown") // the API rejects an empty reason
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	msg = truncateBytes(msg, maxConditionMessageBytes)
	if c := findCondition(*conds, typ); c != nil {
		if c.Status != s {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return
	}
	*conds = append(*conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: now})
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
