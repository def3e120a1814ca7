package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector"
	promsource "github.com/llm-d-incubation/wva/internal/collector/prometheus"
	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/metrics"

	// The file source registers itself.
	_ "github.com/llm-d-incubation/wva/internal/collector/file"
)

// controller is WVA's controller assembled: everything a manager runs.
type controller struct {
	Planner       *planner
	ScaleFromZero *scaleFromZero
	Reconciler    *reconciler
	ConfigWatch   *configReconciler
	Store         *configMapStore
	Config        *configState
}

// targetIndex indexes VariantAutoscalings by their Deployment's name.
const targetIndex = "wva.targetName"

// setup builds the controller's parts and registers them with mgr. clk is
// the clock of the planner and the reconciler (a fake one in tests).
func setup(ctx context.Context, mgr manager.Manager, o Options, clk clock.Clock, log logr.Logger) (*controller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	reg := o.metricsRegistry
	if reg == nil {
		reg = crmetrics.Registry
	}
	emitter, err := metrics.NewEmitter(reg)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	emitter.SetBuildInfo(o.Version)
	events := make(chan event.GenericEvent, 4096)
	c := newController(mgr, o, emitter, events, clk, log)
	if err := c.registerReconciler(ctx, mgr, events); err != nil {
		return nil, err
	}
	if err := c.registerConfigWatch(mgr, o); err != nil {
		return nil, err
	}
	if err := c.addRunnables(mgr); err != nil {
		return nil, err
	}
	return c, nil
}

// newController builds the controller's parts around one configuration
// state, one tuner store and one decision cache. The planner's
// notifications go to events; a configuration change wakes the planner.
func newController(mgr manager.Manager, o Options, emitter *metrics.Emitter, events chan<- event.GenericEvent, clk clock.Clock,
	log logr.Logger) *controller {
	state := newConfigState(o.Names, o.Main)
	store := newConfigMapStore(mgr.GetClient(), types.NamespacedName{Namespace: o.Namespace, Name: o.TunerState})
	c := &controller{Store: store, Config: state}
	eng := engine.New(store)
	// The fleet capacity model's curves are computed by one background
	// worker, used when the configuration asks for it (WVA_CAPACITY_MODEL).
	eng.SetCapacityModel(engine.NewCapacityModel(1))
	c.Planner = &planner{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: clk, Config: state, Engine: eng,
		Store: store, Emitter: emitter, Cache: newDecisionCache(), Actuators: newActuators(mgr.GetClient()),
		Sources: o.sources, Notify: notifier(events), Log: log.WithName("planner"), Wake: make(chan struct{}, 1),
		Surge: make(chan struct{}, 1), Announcer: &announcer{Recorder: mgr.GetEventRecorder("wva"), Log: log.WithName("decisions")},
		Replays: newReplayStore(o.ReplayDir, o.ReplayKeep, log.WithName("replay"))}
	c.ScaleFromZero = &scaleFromZero{Planner: c.Planner, Clock: clk, Log: log.WithName("scale-from-zero")}
	c.Reconciler = &reconciler{Client: mgr.GetClient(), Clock: clk, Cache: c.Planner.Cache, Config: state}
	c.ConfigWatch = &configReconciler{Client: mgr.GetClient(), Namespace: o.Namespace, Names: o.Names, State: state,
		Recorder: mgr.GetEventRecorder("wva"), Changed: func() {
			select {
			case c.Planner.Wake <- struct{}{}:
			default:
			}
		}}
	return c
}

// notifier asks for a reconcile of the variant through events, without
// waiting: when the queue is full the next cycle reconciles it.
func notifier(events chan<- event.GenericEvent) func(types.NamespacedName) {
	return func(k types.NamespacedName) {
		select {
		case events <- event.GenericEvent{Object: &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
		default: // the queue is full: the next cycle reconciles it
		}
	}
}

// registerReconciler registers the status reconciler: it runs for a
// VariantAutoscaling's changes, its Deployment's (found through
// targetIndex) and the planner's notifications on events.
func (c *controller) registerReconciler(ctx context.Context, mgr manager.Manager, events <-chan event.GenericEvent) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &wvav1.VariantAutoscaling{}, targetIndex, func(obj client.Object) []string {
		return []string{obj.(*wvav1.VariantAutoscaling).TargetName()}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("variantautoscaling").For(&wvav1.VariantAutoscaling{}).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(targeting(mgr.GetClient()))).
		WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).
		Complete(c.Reconciler)
}

// targeting maps a Deployment to the VariantAutoscalings that target it
// (none when they cannot be listed).
func targeting(cl client.Client) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		var list wvav1.VariantAutoscalingList
		if err := cl.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{targetIndex: obj.GetName()}); err != nil {
			return nil
		}
		out := make([]ctrl.Request, len(list.Items))
		for i, va := range list.Items {
			out[i] = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: va.Namespace, Name: va.Name}}
		}
		return out
	}
}

// registerConfigWatch registers the ConfigMap reconciler for the
// configuration ConfigMaps in the controller's namespace.
func (c *controller) registerConfigWatch(mgr manager.Manager, o Options) error {
	isConfig := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetNamespace() == o.Namespace && o.Names.has(obj.GetName())
	})
	return ctrl.NewControllerManagedBy(mgr).Named("wva-config").For(&corev1.ConfigMap{}, builder.WithPredicates(isConfig)).
		Complete(c.ConfigWatch)
}

// addRunnables adds the planner loop, which at leader start reads the
// configuration and then plans, the scale-from-zero loop and the health
// checks.
func (c *controller) addRunnables(mgr manager.Manager) error {
	start := c.Planner.run
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.ConfigWatch.loadAll(ctx)
		select { // the first cycle runs now: the load's wake-up is moot
		case <-c.Planner.Wake:
		default:
		}
		return start(ctx)
	})); err != nil {
		return err
	}
	if err := mgr.Add(c.ScaleFromZero); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("ping", healthz.Ping)
}

// sources builds the metrics source for the main configuration.
func (o Options) sources(m config.Main) (collector.Source, error) {
	if o.MetricsSource == "file" {
		return collector.New("file", map[string]string{"path": o.MetricsFile})
	}
	p := m.Prometheus
	if p.URL == "" {
		return nil, errors.New("no Prometheus URL: set PROMETHEUS_BASE_URL in the main ConfigMap or --prometheus-url")
	}
	cfg := promsource.Config{URL: p.URL, Window: p.Window, Timeout: p.Timeout, BearerTokenFile: p.BearerTokenFile,
		BearerTokenOverHTTP: p.BearerTokenOverHTTP, CAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile, InsecureSkipVerify: p.InsecureSkipVerify,
		NamespaceLabel: p.NamespaceLabel, PodLabel: p.PodLabel, Schema: p.MetricsSchema}
	if m.PodVariantLabel != "" {
		cfg.KeepLabels = []string{m.PodVariantLabel}
	}
	return promsource.New(cfg)
}
