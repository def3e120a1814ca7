package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
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
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
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
	// MetricsSecure serves /metrics and /tuner/params over HTTPS, each
	// request authenticated (TokenReview) and authorised (SubjectAccessReview,
	// get on the path as a non-resource URL) by the API server (default
	// true; false serves plain HTTP to anyone: an explicit opt-in).
	MetricsSecure bool
	// MetricsCertDir holds MetricsCertName and MetricsKeyName (defaults
	// tls.crt, tls.key), re-read when they change; empty: a self-signed
	// certificate made at start.
	MetricsCertDir, MetricsCertName, MetricsKeyName string
	// EnableHTTP2 lets the metrics server speak HTTP/2 (default off: the
	// HTTP/2 rapid-reset and stream-cancellation vulnerabilities).
	EnableHTTP2 bool
	// Registry receives the inferno_* and health metrics (default:
	// controller-runtime's, served on MetricsAddr).
	Registry prometheus.Registerer
}

// DefaultOptions are the defaults.
func DefaultOptions() Options {
	return Options{Namespace: "workload-variant-autoscaler-system", Names: DefaultConfigNames(), TunerState: "wva-tuner-state",
		Main: config.DefaultMain(), MetricsSource: "prometheus", LeaderElect: true, LeaseName: "wva.llmd.ai",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		MetricsAddr: ":8443", HealthAddr: ":8081", MetricsSecure: true}
}

// MaxLeaseDuration bounds --lease-duration: a leader that stops without
// releasing the lease is replaced only when it expires.
const MaxLeaseDuration = 10 * time.Minute

// Validate reports every invalid option, naming its flag, before
// anything is contacted.
func (o Options) Validate() error {
	var errs []error
	errs = append(errs, o.validateNames()...)
	errs = append(errs, o.validateSource()...)
	errs = append(errs, o.validateServing()...)
	if o.LeaderElect {
		if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, fmt.Errorf("leader election: want lease duration (%v) > renew deadline (%v) > retry period (%v) > 0",
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
		}
		if o.LeaseDuration > MaxLeaseDuration {
			errs = append(errs, fmt.Errorf("--lease-duration: want at most %s (a stopped leader is replaced only after it), got %v",
				config.FormatDuration(MaxLeaseDuration), o.LeaseDuration))
		}
	}
	return errors.Join(errs...)
}

// validateNames checks the namespaces and object names.
func (o Options) validateNames() []error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace: the controller's namespace is required"))
	} else if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace: %q is not a namespace name: %s", o.Namespace, strings.Join(msgs, "; ")))
	}
	for _, ns := range o.WatchNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if o.LeaderElect && o.LeaseName == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty"))
	}
	if o.LeaseNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.LeaseNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-election-namespace: %q is not a namespace name: %s", o.LeaseNamespace, strings.Join(msgs, "; ")))
		}
	}
	for _, n := range []struct{ flag, name string }{
		{"--config-map", o.Names.Main}, {"--accelerators-config-map", o.Names.Accelerators},
		{"--service-classes-config-map", o.Names.ServiceClasses}, {"--saturation-config-map", o.Names.Saturation},
		{"--queueing-model-config-map", o.Names.QueueingModel}, {"--tuner-config-map", o.Names.Tuner},
		{"--inventory-config-map", o.Names.Inventory}, {"--tuner-state-config-map", o.TunerState},
		{"--leader-election-id", o.LeaseName},
	} {
		if n.name == "" {
			if n.flag != "--leader-election-id" {
				errs = append(errs, fmt.Errorf("%s: a ConfigMap name is required", n.flag))
			}
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(n.name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not an object name: %s", n.flag, n.name, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// validateSource checks the metrics source and the loop's flags with the
// main ConfigMap's rules.
func (o Options) validateSource() []error {
	var errs []error
	if o.MetricsSource != "prometheus" && o.MetricsSource != "file" {
		errs = append(errs, fmt.Errorf("--metrics-source: want prometheus or file, got %q", o.MetricsSource))
	}
	if o.MetricsSource == "file" && o.MetricsFile == "" {
		errs = append(errs, errors.New("--metrics-file is required with --metrics-source=file"))
	}
	if d := o.Main.Interval; d < config.MinInterval || d > config.MaxInterval {
		errs = append(errs, fmt.Errorf("--interval: want a duration from %s to %s, got %v",
			config.FormatDuration(config.MinInterval), config.FormatDuration(config.MaxInterval), d))
	}
	p := o.Main.Prometheus
	if p.URL != "" {
		if _, err := config.ParseURL(p.URL); err != nil {
			errs = append(errs, fmt.Errorf("--prometheus-url: %w", err))
		}
	}
	if p.Timeout < 0 || p.Timeout > config.MaxPrometheusTimeout {
		errs = append(errs, fmt.Errorf("--prometheus-timeout: want a duration from 0 (the default, 10s) to %s, got %v",
			config.FormatDuration(config.MaxPrometheusTimeout), p.Timeout))
	}
	switch {
	case p.CertFile != "" && p.KeyFile == "":
		errs = append(errs, errors.New("--prometheus-key-file is required with --prometheus-cert-file"))
	case p.KeyFile != "" && p.CertFile == "":
		errs = append(errs, errors.New("--prometheus-cert-file is required with --prometheus-key-file"))
	}
	if p.TokenInClearText() {
		errs = append(errs, fmt.Errorf("--prometheus-token-file: the token would be sent in clear text to %s: "+
			"use an https:// --prometheus-url, or --prometheus-token-over-http to allow it", p.URL))
	}
	return errs
}

// validateServing checks the addresses and the metrics server's TLS.
func (o Options) validateServing() []error {
	var errs []error
	for _, a := range []struct{ flag, addr string }{{"--metrics-bind-address", o.MetricsAddr}, {"--health-probe-bind-address", o.HealthAddr}} {
		if err := checkBindAddress(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.flag, err))
		}
	}
	if on(o.MetricsAddr) && o.MetricsAddr == o.HealthAddr {
		errs = append(errs, fmt.Errorf("--metrics-bind-address and --health-probe-bind-address: both are %q; want two addresses", o.MetricsAddr))
	}
	if o.MetricsCertDir == "" {
		return errs
	}
	if !o.MetricsSecure {
		return append(errs, errors.New("--metrics-cert-dir: needs --metrics-secure (the default); with --metrics-secure=false nothing is served over TLS"))
	}
	for _, f := range []struct{ flag, name, def string }{{"--metrics-cert-name", o.MetricsCertName, "tls.crt"}, {"--metrics-key-name", o.MetricsKeyName, "tls.key"}} {
		name := f.name
		if name == "" {
			name = f.def
		}
		if _, err := os.Stat(filepath.Join(o.MetricsCertDir, name)); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-cert-dir: %s (%s) is not readable: %w", name, f.flag, err))
		}
	}
	return errs
}

// on says whether a bind address serves ("" and "0" disable).
func on(addr string) bool { return addr != "" && addr != "0" }

// checkBindAddress wants host:port (the host may be empty, an IP or a
// name; the port from 0 to 65535, 0 for any free port), or "0" or "" to
// disable.
func checkBindAddress(addr string) error {
	if !on(addr) {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port such as :8443 or 127.0.0.1:8443 (0 disables), got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port from 0 to 65535, got %q in %q", port, addr)
	}
	if host != "" && net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0 {
		return fmt.Errorf("want an IP address or a host name before the port, got %q in %q", host, addr)
	}
	return nil
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
		BearerTokenOverHTTP: p.BearerTokenOverHTTP, CAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile, InsecureSkipVerify: p.InsecureSkipVerify,
		NamespaceLabel: p.NamespaceLabel, PodLabel: p.PodLabel}
	if m.PodVariantLabel != "" {
		cfg.KeepLabels = []string{m.PodVariantLabel}
	}
	return promsource.New(cfg)
}

// Run builds the manager and the controller and runs them until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger) error {
	mgr, _, err := Build(ctx, cfg, o, clock.RealClock{}, log)
	if err != nil {
		return err
	}
	log.Info("starting", "namespace", o.Namespace, "watch", o.WatchNamespaces, "leaderElection", o.LeaderElect,
		"metrics", o.MetricsAddr, "metricsSecure", o.MetricsSecure, "health", o.HealthAddr)
	if !o.MetricsSecure && on(o.MetricsAddr) {
		log.Info("WARNING: /metrics and /tuner/params are served over plain HTTP without authentication (--metrics-secure=false)")
	}
	return mgr.Start(ctx)
}

// Build makes the manager (serving /metrics and /tuner/params) and the
// controller in it, ready to start.
func Build(ctx context.Context, cfg *rest.Config, o Options, clk clock.Clock, log logr.Logger) (manager.Manager, *Controller, error) {
	tunerAPI := &swapHandler{}
	mgr, err := NewManager(cfg, o, map[string]http.Handler{"/tuner/params": tunerAPI})
	if err != nil {
		return nil, nil, err
	}
	c, err := Setup(ctx, mgr, o, clk, log)
	if err != nil {
		return nil, nil, err
	}
	tunerAPI.set(TunerHandler(c.Store))
	return mgr, c, nil
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

// metricsServer configures /metrics and the extra handlers: HTTPS with
// authentication and authorisation by the API server unless
// MetricsSecure is off. The filter wraps every extra handler too.
func (o Options) metricsServer(extra map[string]http.Handler) metricsserver.Options {
	ms := metricsserver.Options{BindAddress: o.MetricsAddr, ExtraHandlers: extra}
	if !o.MetricsSecure {
		return ms
	}
	ms.SecureServing = true
	ms.FilterProvider = filters.WithAuthenticationAndAuthorization
	ms.CertDir, ms.CertName, ms.KeyName = o.MetricsCertDir, o.MetricsCertName, o.MetricsKeyName
	ms.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		if !o.EnableHTTP2 {
			c.NextProtos = []string{"http/1.1"}
		}
	}}
	return ms
}

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
		Metrics:                       o.metricsServer(extra),
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
