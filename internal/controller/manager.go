package controller

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// newScheme returns a scheme with the built-in types and WVA's.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := wvav1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Run builds the manager and the controller and runs them until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger) error {
	mgr, err := buildManager(ctx, cfg, o, clock.RealClock{}, log)
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

// buildManager makes the manager (serving /metrics, /tuner/params and
// /debug/snapshot) and the controller in it, ready to start.
func buildManager(ctx context.Context, cfg *rest.Config, o Options, clk clock.Clock, log logr.Logger) (manager.Manager, error) {
	tunerAPI, replayAPI := &swapHandler{}, &swapHandler{}
	mgr, err := newManager(cfg, o, map[string]http.Handler{"/tuner/params": tunerAPI, "/debug/snapshot": replayAPI})
	if err != nil {
		return nil, err
	}
	c, err := setup(ctx, mgr, o, clk, log)
	if err != nil {
		return nil, err
	}
	tunerAPI.set(tunerHandler(c.Store))
	replayAPI.set(c.Planner.Replays)
	return mgr, nil
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

// newManager builds a manager for o on the cluster of cfg; extra are
// further handlers of the metrics server.
func newManager(cfg *rest.Config, o Options, extra map[string]http.Handler) (manager.Manager, error) {
	scheme, err := newScheme()
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
