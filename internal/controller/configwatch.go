package controller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/config"
)

// configReconciler re-reads a configuration ConfigMap when it changes (hot
// reload). An invalid one keeps the last good configuration; the problem
// goes to a Warning event on the ConfigMap and to the ConfigValid condition
// of every VariantAutoscaling.
type configReconciler struct {
	Client    client.Client
	Namespace string
	Names     ConfigNames
	State     *configState
	Recorder  events.EventRecorder
	// Changed is called after every accepted or rejected change (the
	// planner runs a cycle; VariantAutoscalings are reconciled).
	Changed func()
}

// Reconcile implements reconcile.Reconciler.
func (r *configReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != r.Namespace || !r.Names.has(req.Name) {
		return ctrl.Result{}, nil
	}
	var cm corev1.ConfigMap
	err := r.Client.Get(ctx, req.NamespacedName, &cm)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx)
	before, version := len(r.State.problems()), r.State.version()
	if err := r.State.apply(req.Name, cm.Data, exists); err != nil {
		log.Info("invalid configuration; keeping the last good one", "configmap", req.Name, "problems", err.Error())
		if r.Recorder != nil && exists {
			r.Recorder.Eventf(&cm, nil, corev1.EventTypeWarning, "InvalidConfiguration", "Validate", "%s", problemText(err))
		}
	} else {
		log.Info("configuration loaded", "configmap", req.Name, "exists", exists)
		if r.Recorder != nil && exists && before > len(r.State.problems()) {
			r.Recorder.Eventf(&cm, nil, corev1.EventTypeNormal, "ConfigurationLoaded", "Validate", "configuration accepted")
		}
	}
	// Only a real change wakes the planner (not the informer's resyncs).
	if r.Changed != nil && (r.State.version() != version || len(r.State.problems()) != before) {
		r.Changed()
	}
	return ctrl.Result{}, nil
}

// loadAll reads every configuration ConfigMap once (at start, before the
// first cycle). Invalid ones are reported and leave the defaults.
func (r *configReconciler) loadAll(ctx context.Context) {
	for _, name := range r.Names.all() {
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: r.Namespace, Name: name}})
	}
}

func problemText(err error) string {
	var cerr *config.Error
	if errors.As(err, &cerr) {
		return cerr.Error()
	}
	return err.Error()
}
