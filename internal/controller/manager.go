package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
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

// Options configure the manager. Zero values take the defaults of
// DefaultOptions; Validate says what is wrong.
type Options struct {
	// Namespace is the controller's own: its ConfigMaps, tuner state and
	// leader lease live there.
	Namespace string
	// WatchNamespaces restricts VariantAutoscalings and Deployments to
	// these namespaces (empty: all).
	WatchNamespaces []string
	Names           ConfigNames
	// TunerState is the ConfigMap the learned parameters persist in.
	TunerState string
	// Main holds the flags' values for the main configuration (Prometheus,
	// interval); keys in the main ConfigMap override them.
	Main config.Main
	// MetricsSource is "prometheus" (default) or "file" (MetricsFile).
	MetricsSource, MetricsFile string

	LeaderElect                               bool
	LeaseName, LeaseNamespace                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	MetricsAddr, HealthAddr string
	// Registry receives the inferno_* and health metrics (default:
	// controller-runtime's, served on MetricsAddr).
	Registry prometheus.Registerer
}

// DefaultOptions are the defaults.
func DefaultOptions() Options {
	return Options{Namespace: "workload-variant-autoscaler-system", Names: DefaultConfigNames(), TunerState: "wva-tuner-state",
		Main: config.DefaultMain(), MetricsSource: "prometheus", LeaderElect: true, LeaseName: "wva.llmd.ai",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		MetricsAddr: ":8080", HealthAddr: ":8081"}
}

// Validate reports every invalid option.
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace: the controller's namespace is required"))
	}
	if o.MetricsSource != "prometheus" && o.MetricsSource != "file" {
		errs = append(errs, fmt.Errorf("--metrics-source: want prometheus or file, got %q", o.MetricsSource))
	}
	if o.MetricsSource == "file" && o.MetricsFile == "" {
		errs = append(errs, errors.New("--metrics-file is required with --metrics-source=file"))
	}
	if o.Main.Interval < time.Second {
		errs = append(errs, fmt.Errorf("--interval: want at least 1s, got %v", o.Main.Interval))
	}
	if o.LeaderElect {
		if o.LeaseName == "" {
			errs = append(errs, errors.New("--leader-election-id must not be empty"))
		}
		if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, fmt.Errorf("leader election: want lease duration (%v) > renew deadline (%v) > retry period (%v) > 0",
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
		}
	}
	for _, n := range append(o.Names.all(), o.TunerState) {
		if n == "" {
			errs = append(errs, errors.New("ConfigMap names must not be empty"))
			break
		}
	}
	return errors.Join(errs...)
}

// Scheme returns a scheme with the built-in types and WVA's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := wvav1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Controller is WVA's controller assembled: everything a manager runs.
type Controller struct {
	Planner       *Planner
	ScaleFromZero *ScaleFromZero
	Reconciler    *Reconciler
	ConfigWatch   *ConfigReconciler
	Store         *ConfigMapStore
	Config        *ConfigState
}

// targetIndex indexes VariantAutoscalings by their Deployment's name.
const targetIndex = "wva.targetName"

// Setup builds the controller's parts and registers them with mgr. clk is
// the clock of the planner and the reconciler (a fake one in tests).
func Setup(ctx context.Context, mgr manager.Manager, o Options, clk clock.Clock, log logr.Logger) (*Controller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	reg := o.Registry
	if reg == nil {
		reg = crmetrics.Registry
	}
	emitter, err := metrics.NewEmitter(reg)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	state := NewConfigState(o.Names, o.Main)
	store := NewConfigMapStore(mgr.GetClient(), types.NamespacedName{Namespace: o.Namespace, Name: o.TunerState})
	events := make(chan event.GenericEvent, 4096)
	notify := func(k types.NamespacedName) {
		select {
		case events <- event.GenericEvent{Object: &wvav1.VariantAutoscaling{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
		default: // the queue is full: the next cycle reconciles it
		}
	}
	c := &Controller{Store: store, Config: state}
	c.Planner = &Planner{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: clk, Config: state, Engine: engine.New(store),
		Store: store, Emitter: emitter, Cache: NewDecisionCache(), Actuators: NewActuators(mgr.GetClient()),
		Sources: o.sources, Notify: notify, Log: log.WithName("planner"), Wake: make(chan struct{}, 1),
		Surge: make(chan struct{}, 1)}
	c.ScaleFromZero = &ScaleFromZero{Planner: c.Planner, Clock: clk, Log: log.WithName("scale-from-zero")}
	c.Reconciler = &Reconciler{Client: mgr.GetClient(), Clock: clk, Cache: c.Planner.Cache, Config: state}
	c.ConfigWatch = &ConfigReconciler{Client: mgr.GetClient(), Namespace: o.Namespace, Names: o.Names, State: state,
		Recorder: mgr.GetEventRecorder("wva"), Changed: func() {
			select {
			case c.Planner.Wake <- struct{}{}:
			default:
			}
		}}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &wvav1.VariantAutoscaling{}, targetIndex, func(obj client.Object) []string {
		return []string{obj.(*wvav1.VariantAutoscaling).TargetName()}
	}); err != nil {
		return nil, err
	}
	byTarget := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []ctrl.Request {
		var list wvav1.VariantAutoscalingList
		if err := mgr.GetClient().List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{targetIndex: obj.GetName()}); err != nil {
			return nil
		}
		out := make([]ctrl.Request, len(list.Items))
		for i, va := range list.Items {
			out[i] = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: va.Namespace, Name: va.Name}}
		}
		return out
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("variantautoscaling").For(&wvav1.VariantAutoscaling{}).
		Watches(&appsv1.Deployment{}, byTarget).
		WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).
		Complete(c.Reconciler); err != nil {
		return nil, err
	}
	isConfig := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetNamespace() == o.Namespace && o.Names.Has(obj.GetName())
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("wva-config").For(&corev1.ConfigMap{}, builder.WithPredicates(isConfig)).
		Complete(c.ConfigWatch); err != nil {
		return nil, err
	}
	// At leader start: read the configuration, then plan.
	start := c.Planner.Start
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.ConfigWatch.LoadAll(ctx)
		select { // the first cycle runs now: the load's wake-up is moot
		case <-c.Planner.Wake:
		default:
		}
		return start(ctx)
	})); err != nil {
		return nil, err
	}
	if err := mgr.Add(c.ScaleFromZero); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return c, nil
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
		CAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile, InsecureSkipVerify: p.InsecureSkipVerify,
		NamespaceLabel: p.NamespaceLabel, PodLabel: p.PodLabel}
	if m.PodVariantLabel != "" {
		cfg.KeepLabels = []string{m.PodVariantLabel}
	}
	return promsource.New(cfg)
}

// Run builds the manager and the controller and runs them until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger) error {
	tunerAPI := &swapHandler{}
	mgr, err := NewManager(cfg, o, map[string]http.Handler{"/tuner/params": tunerAPI})
	if err != nil {
		return err
	}
	c, err := Setup(ctx, mgr, o, clock.RealClock{}, log)
	if err != nil {
		return err
	}
	tunerAPI.set(TunerHandler(c.Store))
	log.Info("starting", "namespace", o.Namespace, "watch", o.WatchNamespaces, "leaderElection", o.LeaderElect,
		"metrics", o.MetricsAddr, "health", o.HealthAddr)
	return mgr.Start(ctx)
}

// swapHandler serves a handler set after the server was built.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.Error(w, "starting", http.StatusServiceUnavailable)
}

var skipNameValidation = true

// NewManager builds a manager for o on the cluster of cfg; extra are
// further handlers of the metrics server.
func NewManager(cfg *rest.Config, o Options, extra map[string]http.Handler) (manager.Manager, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	co := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}},
	}}
	if len(o.WatchNamespaces) > 0 {
		co.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			co.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	leaseNS := o.LeaseNamespace
	if leaseNS == "" {
		leaseNS = o.Namespace
	}
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: co,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr, ExtraHandlers: extra},
		HealthProbeBindAddress:        o.HealthAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaseName,
		LeaderElectionNamespace:       leaseNS,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		LeaderElectionReleaseOnCancel: true,
		// One manager per process in production; tests start several in turn.
		Controller: crconfig.Controller{SkipNameValidation: &skipNameValidation},
	})
}
