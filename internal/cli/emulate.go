package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/llm-d-incubation/wva/internal/emulate"
)

// emulateOptions are wva emulate's flags.
type emulateOptions struct {
	spec          string
	kubeconfig    string
	namespace     string
	selector      string
	timeScale     float64
	latencyClock  string
	vllmMetrics   string
	sdFile        string
	tick          time.Duration
	resync        time.Duration
	progressEvery time.Duration
	keepPods      bool
	logFormat     string
}

func newEmulateCommand() *cobra.Command {
	o := &emulateOptions{selector: "wva.llmd.ai/emulate=true", timeScale: 1, latencyClock: "wall", vllmMetrics: emulate.MetricsCurrent, tick: 100 * time.Millisecond,
		resync: 30 * time.Second, progressEvery: 10 * time.Second, logFormat: "text"}
	cmd := &cobra.Command{
		Use:   "emulate --spec FILE [--sd-file FILE]",
		Short: "Run an emulated vLLM fleet against a Kubernetes API server, in wall-clock time",
		Long: `Run an emulated fleet of vLLM servers for the Deployments of a cluster, in
wall-clock time: a way to try WVA (and its end-to-end tests) on a real API
server and a real Prometheus without GPUs.

For every Deployment that matches --selector (in --namespace, or in every
namespace) and is named in the spec, the emulator plays the Deployment
controller and the kubelet: it keeps spec.replicas emulated servers, creates
the Deployment's ReplicaSet (<deployment>-<pod-template-hash>) and a Pod for
each server (the template's labels, the ReplicaSet as owner), marks it
Running and Ready with podIP 127.0.0.1 once the server has loaded its model
(the spec's startupSeconds plus jitter), deletes pods on scale-down in the
ReplicaSet controller's order (not ready first, then the lowest
controller.kubernetes.io/pod-deletion-cost, then the most recently ready),
and keeps the Deployment's status (replicas, updatedReplicas,
readyReplicas, availableReplicas, observedGeneration) true. It must be the
only controller of those Deployments (no kube-controller-manager Deployment
controller for them).

Each ready server serves vLLM's /metrics on its own loopback port: every
metric family a vLLM server exports by default, with vLLM's names, types,
labels and buckets (--vllm-metrics current: vLLM 0.15 and later, with
vllm:inter_token_latency_seconds; legacy: vLLM 0.9 and 0.10, with
vllm:time_per_output_token_seconds and vllm:gpu_cache_usage_perc),
named in the pod's annotation wva.llmd.ai/emulated-metrics and in the
Prometheus file-SD file --sd-file (labels namespace, pod, deployment). The
gateway's series (llm_d_epp_flow_control_queue_size and
inference_objective_request_total, by model_name and namespace: WVA's
scale-from-zero and gateway-rate signals) have an endpoint of their own,
also in the SD file (label component=emulated-gateway). The
servers are the simulator's (wva simulate): continuous batching, paged KV
cache, chunked prefill, preemption; a gateway routes each model's requests
to its ready servers. The workload (rates over time, token lengths) comes
from the spec and is seeded: the same spec gives the same requests.

Time: the emulator runs --time-scale seconds of model time per wall second.
The spec's times (rate steps, startupSeconds) are in model seconds.
Counters count events, so a rate() over wall time reads --time-scale times
the model's rate. The exported latencies (the histograms' values and sums)
are divided by the time scale (--latency-clock wall, the default), so that
rates and latencies are both per wall second: the servers look like real
ones --time-scale times faster, and an autoscaler sizes them as it would
size the model's servers if its SLO targets are divided by the time scale
too. --latency-clock model exports the model's latencies unscaled: with a
time scale above 1 the load then looks --time-scale times heavier than
the latencies imply, and WVA over-provisions.

On SIGINT or SIGTERM it stops the servers, deletes its pods and
ReplicaSets, sets the
Deployments' status to no replicas and empties the SD file (--keep-pods
leaves pods and status as they are). Pods it left behind with the label
wva.llmd.ai/emulated=true are deleted when it starts. See docs/emulate.md.`,
		Example: `  # against the current kubeconfig, 10x faster than real time
  wva emulate --spec examples/emulate/fleet.yaml --sd-file /tmp/wva-sd.json --time-scale 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *emulateOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.spec, "spec", "", "the fleet's spec: models, workloads and the Deployments serving them (YAML or JSON; examples/emulate)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config)")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "manage Deployments of this namespace only (default: every namespace)")
	fs.StringVarP(&o.selector, "selector", "l", o.selector, "label selector of the Deployments to manage (\"\" for every Deployment named in the spec)")
	fs.Float64Var(&o.timeScale, "time-scale", o.timeScale, fmt.Sprintf("model seconds per wall second, in (0, %d]", emulate.MaxTimeScale))
	fs.StringVar(&o.vllmMetrics, "vllm-metrics", o.vllmMetrics, "the vLLM metric families the servers serve: current (vLLM ≥ 0.15) or legacy (vLLM 0.9 and 0.10); docs/collector.md lists them")
	fs.StringVar(&o.latencyClock, "latency-clock", o.latencyClock, "unit of the exported latencies: wall (model seconds / --time-scale: consistent with the rates) or model (model seconds, unscaled)")
	fs.StringVar(&o.sdFile, "sd-file", "", "Prometheus file-SD file to keep (JSON, rewritten atomically when the servers change; its folder must exist)")
	fs.DurationVar(&o.tick, "tick", o.tick, "wall time between two rounds (advance the servers, follow the Deployments)")
	fs.DurationVar(&o.resync, "resync", o.resync, "resync period of the Deployment and Pod informers")
	fs.DurationVar(&o.progressEvery, "progress-every", o.progressEvery, "wall time between two progress lines (0: none)")
	fs.BoolVar(&o.keepPods, "keep-pods", false, "on shutdown, leave the pods and the Deployments' status as they are")
	fs.StringVar(&o.logFormat, "log-format", o.logFormat, "log format on stderr: text or json")
}

// validate checks the flags and reads the spec.
func (o *emulateOptions) validate() (emulate.Spec, labels.Selector, error) {
	var errs []error
	if !(o.timeScale > 0 && o.timeScale <= emulate.MaxTimeScale) {
		errs = append(errs, fmt.Errorf("--time-scale: want a number in (0, %d], got %v", emulate.MaxTimeScale, o.timeScale))
	}
	if _, err := emulate.MetricSet(o.vllmMetrics); err != nil {
		errs = append(errs, fmt.Errorf("--vllm-metrics: %w", err))
	}
	if o.latencyClock != "model" && o.latencyClock != "wall" {
		errs = append(errs, fmt.Errorf("--latency-clock: want model or wall, got %q", o.latencyClock))
	}
	if o.tick <= 0 || o.resync <= 0 || o.progressEvery < 0 {
		errs = append(errs, fmt.Errorf("--tick and --resync must be > 0, --progress-every ≥ 0"))
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format: want text or json, got %q", o.logFormat))
	}
	sel, err := labels.Parse(o.selector)
	if err != nil {
		errs = append(errs, fmt.Errorf("--selector: %w", err))
	}
	var spec emulate.Spec
	if o.spec == "" {
		errs = append(errs, errors.New("--spec: required"))
	} else if data, err := readInput(o.spec, nil); err != nil {
		errs = append(errs, fmt.Errorf("--spec: %w", err))
	} else if spec, err = emulate.ParseSpec(data); err != nil {
		errs = append(errs, fmt.Errorf("--spec %s: %w", o.spec, err))
	}
	return spec, sel, errors.Join(errs...)
}

func (o *emulateOptions) run(cmd *cobra.Command) error {
	spec, sel, err := o.validate()
	if err != nil {
		return err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	fleet, err := emulate.NewFleet(spec, emulate.FleetOptions{TimeScale: o.timeScale, WallSecondLatencies: o.latencyClock == "wall",
		Metrics: o.vllmMetrics})
	if err != nil {
		return err
	}
	h := slog.Handler(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(cmd.ErrOrStderr(), nil)
	}
	log := logr.FromSlogHandler(h)
	progress := o.progressEvery
	if progress == 0 {
		progress = -1
	}
	em := emulate.New(kc, fleet, emulate.Options{Namespace: o.namespace, Selector: sel, Tick: o.tick, Resync: o.resync,
		SDFile: o.sdFile, ProgressEvery: progress, KeepPods: o.keepPods, Log: log, Dynamic: dyn})
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("emulator starting", "host", cfg.Host, "namespace", o.namespace, "selector", sel.String(), "timeScale", o.timeScale,
		"latencyClock", o.latencyClock, "deployments", len(fleet.Targets()), "sdFile", o.sdFile)
	if hint := timeScaleHint(o.timeScale, o.latencyClock); hint != "" {
		log.Info(hint)
	}
	return em.Run(ctx)
}

// timeScaleHint tells what a time scale above 1 asks of the autoscaler
// watching the fleet, or "" at real time.
func timeScaleHint(scale float64, clock string) string {
	switch {
	case scale == 1:
		return ""
	case clock == "wall":
		return fmt.Sprintf("time scale %g: the servers look %g times faster under %g times the load; "+
			"divide the autoscaler's SLO targets (TTFT, ITL) by %g to size them as the model's servers", scale, scale, scale, scale)
	default:
		return fmt.Sprintf("time scale %g with model-second latencies: the load looks %g times heavier than the latencies imply; "+
			"an SLO-driven autoscaler over-provisions (--latency-clock wall is consistent)", scale, scale)
	}
}
