package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	crconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/llm-d-incubation/wva/internal/controller"
)

type controllerOptions struct {
	controller.Options
	kubeconfig string
	watch      string
	logLevel   string
	logFormat  string
	// env maps flag names to the environment variables they fall back to;
	// fromEnv the flags applyEnv set.
	env     map[string]string
	fromEnv map[string]string
}

func newControllerCommand() *cobra.Command {
	o := &controllerOptions{Options: controller.DefaultOptions(), logLevel: "info", logFormat: "json", env: map[string]string{}, fromEnv: map[string]string{}}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Kubernetes controller (VariantAutoscaling, llmd.ai/v1alpha1)",
		Long: `Run WVA as a Kubernetes controller. Every optimisation interval the leader
reads each VariantAutoscaling and its Deployment, collects the vLLM metrics
of its pods from Prometheus, runs the decision engine, and publishes the
desired replicas as inferno_desired_replicas and wva_desired_replicas (for
HPA or KEDA) or, for variants with spec.actuator: direct, scales the
Deployment itself. Each changed decision is an Event on its
VariantAutoscaling (ScaleUp, ScaleDown, MetricsUnavailable,
MetricsAvailable) and a log line ("decision"; every decision with --log-level debug). A fast
loop scales a model at zero replicas to one as soon as requests wait for it.

Configuration comes from these flags (each falls back to the non-empty environment
variable in brackets) and from ConfigMaps in --namespace, re-read when they
change; keys of the main ConfigMap override the flags. An invalid ConfigMap
keeps the last good configuration and raises a Warning event. See
docs/configuration.md and docs/operations.md.

Served: /metrics (the decision series and the controller's health),
/tuner/params?namespace=&model=&variant= and
/debug/snapshot?namespace=&model= (the snapshot the leader last planned
from, for wva plan -f: docs/plan.md) on --metrics-bind-address, over
HTTPS to clients the API server authenticates (a bearer token) and
authorises (get on the path; ClusterRole wva-metrics-reader);
--metrics-secure=false serves them over plain HTTP to anyone instead.
/healthz and /readyz on --health-probe-bind-address (plain HTTP).`,
		Example: `  # in a cluster (the Deployment in config/manager does this)
  wva controller --namespace workload-variant-autoscaler-system

  # from a workstation, against the current kubeconfig context
  wva controller --kubeconfig ~/.kube/config --leader-elect=false \
      --prometheus-url https://prometheus.example:9090 --prometheus-ca-file ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	str := func(p *string, name, env, usage string) {
		fs.StringVar(p, name, *p, usage+envNote(env))
		o.env[name] = env
	}
	str(&o.kubeconfig, "kubeconfig", "KUBECONFIG", "kubeconfig file (default: in-cluster, then ~/.kube/config)")
	str(&o.Namespace, "namespace", "POD_NAMESPACE", "the controller's namespace: its ConfigMaps, tuner state and lease")
	str(&o.watch, "watch-namespaces", "WATCH_NAMESPACES", "comma-separated namespaces of VariantAutoscalings and Deployments (default: all)")
	str(&o.Names.Main, "config-map", "WVA_CONFIG_MAP", "main ConfigMap (Prometheus, interval, scale to zero, engine)")
	str(&o.Names.Accelerators, "accelerators-config-map", "WVA_ACCELERATORS_CONFIG_MAP", "accelerator unit costs ConfigMap")
	str(&o.Names.ServiceClasses, "service-classes-config-map", "WVA_SERVICE_CLASSES_CONFIG_MAP", "service classes ConfigMap")
	str(&o.Names.Saturation, "saturation-config-map", "WVA_SATURATION_CONFIG_MAP", "saturation thresholds ConfigMap")
	str(&o.Names.QueueingModel, "queueing-model-config-map", "WVA_QUEUEING_MODEL_CONFIG_MAP", "queueing-model ConfigMap (its default entry enables hybrid mode)")
	str(&o.Names.Tuner, "tuner-config-map", "WVA_TUNER_CONFIG_MAP", "tuner ConfigMap")
	str(&o.Names.Inventory, "inventory-config-map", "WVA_INVENTORY_CONFIG_MAP", "static accelerator inventory ConfigMap (limited mode, WVA_CAPACITY_SOURCE=configmap)")
	str(&o.TunerState, "tuner-state-config-map", "WVA_TUNER_STATE_CONFIG_MAP", "ConfigMap the learned parameters persist in")
	str(&o.Main.Prometheus.URL, "prometheus-url", "PROMETHEUS_BASE_URL", "Prometheus server URL")
	str(&o.Main.Prometheus.CAFile, "prometheus-ca-file", "PROMETHEUS_CA_CERT_PATH", "CA bundle to verify Prometheus")
	str(&o.Main.Prometheus.CertFile, "prometheus-cert-file", "PROMETHEUS_CLIENT_CERT_PATH", "client certificate for Prometheus")
	str(&o.Main.Prometheus.KeyFile, "prometheus-key-file", "PROMETHEUS_CLIENT_KEY_PATH", "client key for Prometheus")
	str(&o.Main.Prometheus.BearerTokenFile, "prometheus-token-file", "PROMETHEUS_BEARER_TOKEN_FILE", "bearer token file for Prometheus, re-read at every query")
	boolean := func(p *bool, name, env, usage string) {
		fs.BoolVar(p, name, *p, usage+envNote(env))
		o.env[name] = env
	}
	duration := func(p *time.Duration, name, env, usage string) {
		fs.DurationVar(p, name, *p, usage+envNote(env))
		o.env[name] = env
	}
	boolean(&o.Main.Prometheus.InsecureSkipVerify, "prometheus-insecure-skip-verify", "PROMETHEUS_TLS_INSECURE_SKIP_VERIFY", "do not verify Prometheus's certificate (explicit opt-in)")
	boolean(&o.Main.Prometheus.BearerTokenOverHTTP, "prometheus-token-over-http", "PROMETHEUS_BEARER_TOKEN_OVER_HTTP",
		"send the bearer token to an http:// --prometheus-url in clear text (explicit opt-in; without it a token with an http:// URL is refused)")
	duration(&o.Main.Prometheus.Timeout, "prometheus-timeout", "PROMETHEUS_TIMEOUT", "timeout of one Prometheus query, up to 5m (0: the default, 10s)")
	duration(&o.Main.Interval, "interval", "GLOBAL_OPT_INTERVAL", "optimisation interval, from 1s to 1h")
	str(&o.MetricsSource, "metrics-source", "WVA_METRICS_SOURCE", `where pod metrics come from: "prometheus" or "file" (--metrics-file; for demos and tests)`)
	str(&o.MetricsFile, "metrics-file", "WVA_METRICS_FILE", "pod metrics file for --metrics-source=file (format: internal/collector/file)")
	boolean(&o.LeaderElect, "leader-elect", "LEADER_ELECT", "elect a leader; only the leader plans and writes")
	str(&o.LeaseName, "leader-election-id", "LEADER_ELECTION_ID", "name of the leader Lease")
	str(&o.LeaseNamespace, "leader-election-namespace", "LEADER_ELECTION_NAMESPACE", "namespace of the Lease (default: --namespace)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", o.LeaseDuration, "leader lease duration")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", o.RenewDeadline, "leader renew deadline")
	fs.DurationVar(&o.RetryPeriod, "retry-period", o.RetryPeriod, "leader election retry period")
	str(&o.MetricsAddr, "metrics-bind-address", "METRICS_BIND_ADDRESS", "host:port of /metrics and /tuner/params (0 disables)")
	boolean(&o.MetricsSecure, "metrics-secure", "METRICS_SECURE",
		"serve /metrics and /tuner/params over HTTPS to clients the API server authenticates and authorises; false: plain HTTP, no authentication (explicit opt-in)")
	str(&o.MetricsCertDir, "metrics-cert-dir", "METRICS_CERT_DIR", "folder of the metrics server's certificate and key, re-read when they change (default: a self-signed certificate)")
	str(&o.MetricsCertName, "metrics-cert-name", "METRICS_CERT_NAME", "certificate file in --metrics-cert-dir (default tls.crt)")
	str(&o.MetricsKeyName, "metrics-key-name", "METRICS_KEY_NAME", "key file in --metrics-cert-dir (default tls.key)")
	boolean(&o.EnableHTTP2, "metrics-enable-http2", "METRICS_ENABLE_HTTP2", "let the metrics server speak HTTP/2 (off: HTTP/2 rapid-reset and stream-cancellation vulnerabilities)")
	str(&o.ReplayDir, "replay-dir", "WVA_REPLAY_DIR", "existing folder to write each cycle's snapshot to, as /debug/snapshot serves it (default: none)")
	fs.IntVar(&o.ReplayKeep, "replay-keep", o.ReplayKeep, "snapshots kept in --replay-dir, the newest (1 to 1000)"+envNote("WVA_REPLAY_KEEP"))
	o.env["replay-keep"] = "WVA_REPLAY_KEEP"
	str(&o.HealthAddr, "health-probe-bind-address", "HEALTH_PROBE_BIND_ADDRESS", "host:port of /healthz and /readyz (0 disables)")
	str(&o.logLevel, "log-level", "WVA_LOG_LEVEL", `log level: "info" or "debug"`)
	str(&o.logFormat, "log-format", "WVA_LOG_FORMAT", `log format: "json" or "text"`)
	return cmd
}

func envNote(env string) string { return " [$" + env + "]" }

// applyEnv sets each flag not given on the command line from its
// environment variable, when that is set.
func (o *controllerOptions) applyEnv(fs *pflag.FlagSet) error {
	for name, env := range o.env {
		v, ok := os.LookupEnv(env)
		if !ok || v == "" || fs.Changed(name) { // an empty variable counts as unset
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("$%s (for --%s): %w", env, name, err)
		}
		o.fromEnv[name] = env
	}
	return nil
}

// namingEnv adds the environment variable to each line of err that is
// about a flag set from one: "--interval ($GLOBAL_OPT_INTERVAL): …".
func (o *controllerOptions) namingEnv(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		for name, env := range o.fromEnv {
			flag := "--" + name
			if rest, ok := strings.CutPrefix(l, flag); ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ")) {
				lines[i] = flag + " ($" + env + ")" + rest
				break
			}
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

func (o *controllerOptions) run(cmd *cobra.Command) error {
	if err := o.applyEnv(cmd.Flags()); err != nil {
		return err
	}
	o.WatchNamespaces = nil
	for _, ns := range strings.Split(o.watch, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.WatchNamespaces = append(o.WatchNamespaces, ns)
		}
	}
	h, logErr := o.logHandler(cmd)
	if err := errors.Join(o.Validate(), logErr); err != nil {
		return o.namingEnv(err)
	}
	log := logr.FromSlogHandler(h)
	ctrl.SetLogger(log)
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Version = Version
	return controller.Run(ctx, cfg, o.Options, log)
}

// logHandler builds the log handler of --log-level and --log-format.
func (o *controllerOptions) logHandler(cmd *cobra.Command) (slog.Handler, error) {
	var errs []error
	var level slog.Level
	switch o.logLevel {
	case "info":
		level = slog.LevelInfo
	case "debug":
		level = slog.LevelDebug
	default:
		errs = append(errs, fmt.Errorf("--log-level: want info or debug, got %q", o.logLevel))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "json":
		return slog.NewJSONHandler(cmd.ErrOrStderr(), opts), errors.Join(errs...)
	case "text":
		return slog.NewTextHandler(cmd.ErrOrStderr(), opts), errors.Join(errs...)
	default:
		errs = append(errs, fmt.Errorf("--log-format: want json or text, got %q", o.logFormat))
	}
	return nil, errors.Join(errs...)
}

// restConfig is the cluster a subcommand talks to: the kubeconfig file
// when one is given, else controller-runtime's rules ($KUBECONFIG, in
// cluster, ~/.kube/config).
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := crconfig.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster: no kubeconfig and not in a pod (use --kubeconfig): %w", err)
	}
	return cfg, nil
}
