package controller

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/llm-d-incubation/wva/internal/config"
)

// Options configure the manager. Zero values take the defaults of
// DefaultOptions; Validate says what is wrong.
type Options struct {
	// Namespace is the controller's own: its ConfigMaps, tuner state and
	// leader lease live there.
	Namespace string
	// Version is the release the binary was built as (wva_build_info).
	Version string
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
	// ReplayDir, when set, receives each cycle's snapshot file (what
	// /debug/snapshot serves), of which the ReplayKeep newest stay
	// (default 10, at most maxReplayKeep).
	ReplayDir  string
	ReplayKeep int
	// metricsRegistry receives the inferno_* and health metrics (default:
	// controller-runtime's, served on MetricsAddr).
	metricsRegistry prometheus.Registerer
}

// DefaultOptions are the defaults.
func DefaultOptions() Options {
	return Options{Namespace: "workload-variant-autoscaler-system", Names: defaultConfigNames(), TunerState: "wva-tuner-state",
		Main: config.DefaultMain(), MetricsSource: "prometheus", LeaderElect: true, LeaseName: "wva.llmd.ai",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		MetricsAddr: ":8443", HealthAddr: ":8081", MetricsSecure: true, ReplayKeep: 10}
}

// maxReplayKeep bounds --replay-keep: each file may be as large as the
// cycle's snapshot (up to snapshot.MaxFileBytes).
const maxReplayKeep = 1000

// maxLeaseDuration bounds --lease-duration: a leader that stops without
// releasing the lease is replaced only when it expires.
const maxLeaseDuration = 10 * time.Minute

// Validate reports every invalid option, naming its flag, before
// anything is contacted.
func (o Options) Validate() error {
	var errs []error
	errs = append(errs, o.validateNames()...)
	errs = append(errs, o.validateSource()...)
	errs = append(errs, o.validateServing()...)
	errs = append(errs, o.validateReplay()...)
	if o.LeaderElect {
		if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, fmt.Errorf("leader election: want lease duration (%v) > renew deadline (%v) > retry period (%v) > 0",
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
		}
		if o.LeaseDuration > maxLeaseDuration {
			errs = append(errs, fmt.Errorf("--lease-duration: want at most %s (a stopped leader is replaced only after it), got %v",
				config.FormatDuration(maxLeaseDuration), o.LeaseDuration))
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
	return append(errs, validatePrometheus(o.Main.Prometheus)...)
}

// validatePrometheus checks the --prometheus-* flags: the URL, the
// timeout, the client certificate's pair of files and the token's
// transport.
func validatePrometheus(p config.Prometheus) []error {
	var errs []error
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

// validateReplay checks --replay-dir (an existing folder) and
// --replay-keep.
func (o Options) validateReplay() []error {
	if o.ReplayDir == "" {
		return nil
	}
	var errs []error
	if st, err := os.Stat(o.ReplayDir); err != nil || !st.IsDir() {
		errs = append(errs, fmt.Errorf("--replay-dir: want an existing folder, got %q", o.ReplayDir))
	}
	if o.ReplayKeep < 1 || o.ReplayKeep > maxReplayKeep {
		errs = append(errs, fmt.Errorf("--replay-keep: want from 1 to %d files, got %d", maxReplayKeep, o.ReplayKeep))
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
