//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/queueing"
)

// The emulated servers of the load scenarios: examples/emulate's
// iteration model (ms) and request shape, played at loadTimeScale model
// seconds per wall second with --latency-clock wall, so that rates and
// latencies are both per wall second: WVA then sees servers
// loadTimeScale times faster under loadTimeScale times the load, learns
// parameters loadTimeScale times smaller and, with SLO targets divided
// by loadTimeScale, sizes the same replicas as for the model (docs/emulate.md).
const (
	loadTimeScale    = 10
	loadAlpha        = 7.0
	loadBeta         = 0.02
	loadGamma        = 0.00005
	loadInputTokens  = 1024
	loadOutputTokens = 256
	loadMaxBatch     = 256
	// loadTTFTMs and loadITLMs are the model's SLO (model ms).
	loadTTFTMs = 200.0
	loadITLMs  = 20.0
)

// loadStep is one step of a staircase: from atSeconds (model time) the
// model receives rps requests per model second.
type loadStep struct {
	AtSeconds float64
	RPS       float64
}

// wall is when the step starts after the emulator's start.
func (s loadStep) wall() time.Duration {
	return time.Duration(s.AtSeconds / loadTimeScale * float64(time.Second))
}

// expectedReplicas is what `wva model size` says for the emulated servers'
// true parameters at rps: the same queueing.NewAnalyzer and Sizing.Replicas
// the CLI calls (internal/cli/model_size.go), in model units.
func expectedReplicas(t testing.TB, rps float64) int {
	t.Helper()
	a, err := queueing.NewAnalyzer(queueing.Config{
		Model:        queueing.Iteration{Alpha: loadAlpha, Beta: loadBeta, Gamma: loadGamma},
		Workload:     queueing.Workload{InputTokens: loadInputTokens, OutputTokens: loadOutputTokens},
		MaxBatchSize: loadMaxBatch,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Size(queueing.Targets{TTFTMs: loadTTFTMs, ITLMs: loadITLMs})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Replicas(rps)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fleetDeployment is one Deployment of an emulated fleet spec.
type fleetDeployment struct {
	Name        string
	MaxReplicas int
}

// writeFleetSpec writes an emulator spec for one model under a staircase
// of steps, served by deployments in ns, and returns its path.
func writeFleetSpec(t testing.TB, dir, ns string, steps []loadStep, deployments ...fleetDeployment) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "seed: 1\ngateway: {router: least-loaded, timeoutSeconds: 120}\nmodels:\n")
	fmt.Fprintf(&b, "  - name: %s\n    workload:\n      arrival: poisson\n      rate:\n        pattern: staircase\n        steps:\n", smokeModel)
	for _, s := range steps {
		fmt.Fprintf(&b, "          - {atSeconds: %g, rps: %g}\n", s.AtSeconds, s.RPS)
	}
	fmt.Fprintf(&b, "      input: {dist: normal, mean: %d, sd: 128, min: 16, max: 2048}\n", loadInputTokens)
	fmt.Fprintf(&b, "      output: {dist: normal, mean: %d, sd: 32, min: 8, max: 512}\n    deployments:\n", loadOutputTokens)
	for _, d := range deployments {
		fmt.Fprintf(&b, "      - {name: %s, namespace: %s, params: {alpha: %g, beta: %g, gamma: %g}, maxBatchSize: %d, kvBlocks: 65536, blockSize: 16, maxReplicas: %d, startupSeconds: 20, startupJitterSeconds: 5}\n",
			d.Name, ns, loadAlpha, loadBeta, loadGamma, loadMaxBatch, d.MaxReplicas)
	}
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadWorld is the closed loop under load: Prometheus scraping the
// emulated fleet and the controller, WVA installed with a short
// optimisation interval and the queueing model on (SLO ÷ loadTimeScale),
// the emulator and the controller running.
type loadWorld struct {
	h        *Harness
	prom     *Prometheus
	interval time.Duration
	// start is when the emulator started: model time 0.
	start time.Time
}

// loadConfig are the main ConfigMap's keys of the load scenarios: every
// window and delay shortened to fit the wall-clock time of a test.
func loadConfig(promURL string, interval time.Duration, extra map[string]string) map[string]string {
	c := map[string]string{
		"PROMETHEUS_BASE_URL":          promURL,
		"GLOBAL_OPT_INTERVAL":          interval.String(),
		"PROMETHEUS_WINDOW":            "15s",
		"WVA_SCALE_DOWN_STABILIZATION": "15s",
		"WVA_TRANSIENT_DELAY":          "5s",
		"WVA_PROVISIONING_TIME":        "10s",
		"WVA_METRICS_MAX_AGE":          "30s",
		"WVA_GATEWAY_RATE_QUERY":       "none",
		"WVA_FORECAST":                 "false",
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// newLoadWorld starts the loop; vas are the VariantAutoscalings (their
// Deployments are made from their names, labelled for the emulator).
func newLoadWorld(t *testing.T, interval time.Duration, steps []loadStep, extra map[string]string, vas ...*wvaVA) *loadWorld {
	h := New(t)
	h.RequireEmulator(t)
	w := &loadWorld{h: h, interval: interval}
	h.Namespace("monitoring")
	metricsAddr := h.FreeAddr()
	_, tokenFile := h.ServiceAccountToken("monitoring", "prometheus", "wva-metrics-reader")
	w.prom = h.StartPrometheus(PrometheusConfig{FileSD: h.SDFile(), Controller: metricsAddr, TokenFile: tokenFile})
	h.InstallWVA(loadConfig(w.prom.URL, interval, extra))
	h.Apply(queueingConfig())
	h.Namespace(smokeNS)
	var deps []fleetDeployment
	for _, va := range vas {
		if va.GroupSize > 0 {
			h.installLWSCRD()
			h.Apply(LeaderWorkerSet(smokeNS, va.Name, va.Replicas, va.GroupSize, map[string]string{"wva.llmd.ai/emulate": "true"}))
			va.Spec.ScaleTargetRef = &wvav1.CrossVersionObjectReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: va.Name}
		} else {
			h.Apply(Deployment(smokeNS, va.Name, va.Replicas, map[string]string{"wva.llmd.ai/emulate": "true"}))
		}
		h.Apply(va.VariantAutoscaling)
		deps = append(deps, fleetDeployment{Name: va.Name, MaxReplicas: int(*va.Spec.MaxReplicas)})
	}
	spec := writeFleetSpec(t, h.Artifacts, smokeNS, steps, deps...)
	h.StartController(ControllerOptions{PrometheusURL: w.prom.URL, MetricsAddr: metricsAddr, Interval: interval})
	w.start = time.Now()
	h.StartEmulator(t, EmulatorOptions{Spec: spec, TimeScale: loadTimeScale, Args: []string{"--latency-clock", "wall"}})
	return w
}

// queueingConfig turns the queueing model on (hybrid mode) with the
// model's SLO in wall milliseconds.
func queueingConfig() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ControllerNamespace, Name: "wva-queueing-model-config"},
		Data: map[string]string{
			"default": "sloMultiplier: 3.0\ntuningEnabled: true\n",
			"llama": fmt.Sprintf("model_id: %s\nnamespace: %s\ntargetTTFT: %g\ntargetITL: %g\n",
				smokeModel, smokeNS, loadTTFTMs/loadTimeScale, loadITLMs/loadTimeScale),
		},
	}
}

// wvaVA is a VariantAutoscaling with the initial replicas of its Deployment
// or, with a GroupSize, of its LeaderWorkerSet (groups of GroupSize pods).
type wvaVA struct {
	*wvav1.VariantAutoscaling
	Replicas  int32
	GroupSize int32
}

// replicaSample is one observation of a Deployment.
type replicaSample struct {
	At            time.Duration // after the emulator's start
	Spec, Ready   int32
	SpecByVariant map[string]int32
}

// replicaRecorder polls the Deployments' spec.replicas every 250 ms.
type replicaRecorder struct {
	mu      sync.Mutex
	samples []replicaSample
}

// record starts polling the named Deployments until the test ends.
func (w *loadWorld) record(names ...string) *replicaRecorder {
	r := &replicaRecorder{}
	ctx := w.h.Ctx()
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			s := replicaSample{At: time.Since(w.start), SpecByVariant: map[string]int32{}}
			for _, n := range names {
				d := &appsv1.Deployment{}
				if err := w.h.Client.Get(ctx, client.ObjectKey{Namespace: smokeNS, Name: n}, d); err == nil {
					s.SpecByVariant[n] = deref(d.Spec.Replicas)
					s.Spec += deref(d.Spec.Replicas)
					s.Ready += d.Status.ReadyReplicas
				}
			}
			r.mu.Lock()
			r.samples = append(r.samples, s)
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

// between returns the samples taken in [from, to).
func (r *replicaRecorder) between(from, to time.Duration) []replicaSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []replicaSample
	for _, s := range r.samples {
		if s.At >= from && s.At < to {
			out = append(out, s)
		}
	}
	return out
}

// firstAbove is when spec.replicas of variant first exceeded n at or
// after from (false if never).
func (r *replicaRecorder) firstAbove(variant string, n int32, from time.Duration) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.samples {
		if s.At >= from && s.SpecByVariant[variant] > n {
			return s.At, true
		}
	}
	return 0, false
}

// changes lists every change of the variants' spec.replicas ("12.3s
// a=2 b=1"), for a failure's message.
func (r *replicaRecorder) changes(names ...string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	var last string
	for _, s := range r.samples {
		var cur strings.Builder
		for _, n := range names {
			fmt.Fprintf(&cur, " %s=%d", n, s.SpecByVariant[n])
		}
		if cur.String() != last {
			last = cur.String()
			fmt.Fprintf(&b, "%s%s;", s.At.Round(100*time.Millisecond), last)
		}
	}
	return b.String()
}

// waitUntil sleeps until d after the emulator's start.
func (w *loadWorld) waitUntil(d time.Duration) {
	select {
	case <-w.h.Ctx().Done():
	case <-time.After(time.Until(w.start.Add(d))):
	}
}

// deploymentReplicas reads spec.replicas of the Deployment.
func (h *Harness) deploymentReplicas(ctx context.Context, name string) (int32, error) {
	d := &appsv1.Deployment{}
	err := h.Client.Get(ctx, client.ObjectKey{Namespace: smokeNS, Name: name}, d)
	return deref(d.Spec.Replicas), err
}

// deletedPod is a pod as it was when deleted, and the pods left then.
type deletedPod struct {
	Name, Cost string
	// Drained: the controller had taken the pod out of rotation
	// (llmd.ai/draining-since and the endpoint picker's active-ports "0").
	Drained   bool
	Survivors map[string]string // name → pod-deletion-cost ("" when none)
}

const deletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// watchDeletions records every pod deleted in ns with its last
// pod-deletion-cost and those of the pods still there, until the test
// ends.
func (h *Harness) watchDeletions(t *testing.T) func() []deletedPod {
	ctx := h.Ctx()
	wi, err := h.Clientset.CoreV1().Pods(smokeNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out []deletedPod
	live := map[string]string{}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			switch ev.Type {
			case watch.Deleted:
				delete(live, p.Name)
				surv := map[string]string{}
				for n, c := range live {
					surv[n] = c
				}
				drained := p.Annotations["llmd.ai/draining-since"] != "" && p.Annotations["llm-d.ai/active-ports"] == "0"
				out = append(out, deletedPod{Name: p.Name, Cost: p.Annotations[deletionCostAnnotation], Drained: drained, Survivors: surv})
			case watch.Added, watch.Modified:
				live[p.Name] = p.Annotations[deletionCostAnnotation]
			}
			mu.Unlock()
		}
	}()
	return func() []deletedPod {
		mu.Lock()
		defer mu.Unlock()
		return append([]deletedPod(nil), out...)
	}
}

// costBelow says whether cost a ranks before b for deletion (lower first;
// no annotation counts as 0).
func costBelow(a, b string) bool { return parseCost(a) <= parseCost(b) }

func parseCost(s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return 0
	}
	return v
}
