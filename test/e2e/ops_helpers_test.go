//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// opsInterval is the optimisation interval of the failure scenarios
// (outage, failover, bad configuration, secure endpoints): every bound
// they wait for is a multiple of it.
const opsInterval = 3 * time.Second

// Short leader election, so that a killed leader is replaced in seconds.
const (
	opsLeaseDuration = 4 * time.Second
	opsRenewDeadline = 3 * time.Second
	opsRetryPeriod   = time.Second
)

// opsWorld is the loop the failure scenarios break: Prometheus scraping
// the emulated fleet (examples/emulate, 10x time) and the controller, WVA
// installed with opsInterval, the emulated Deployment and its
// VariantAutoscaling (direct actuation unless told otherwise).
type opsWorld struct {
	t    *testing.T
	h    *Harness
	prom *Prometheus
	// metricsAddr is the address Prometheus scrapes: the first controller's.
	metricsAddr string
	// token is a wva-metrics-reader ServiceAccount token (Prometheus's).
	token string
	// config is the main ConfigMap's data as installed.
	config map[string]string
}

type opsOptions struct {
	// config adds keys to the main ConfigMap.
	config map[string]string
	// metricsOnly leaves the VA's actuator at metrics-only.
	metricsOnly bool
}

func newOpsWorld(t *testing.T, o opsOptions) *opsWorld {
	h := New(t)
	h.RequireEmulator(t)
	start := time.Now()
	w := &opsWorld{t: t, h: h, metricsAddr: h.FreeAddr()}
	h.Namespace("monitoring")
	var tokenFile string
	w.token, tokenFile = h.ServiceAccountToken("monitoring", "prometheus", "wva-metrics-reader")
	w.prom = h.StartPrometheus(PrometheusConfig{FileSD: h.SDFile(), Controller: w.metricsAddr, TokenFile: tokenFile})
	w.config = map[string]string{"PROMETHEUS_BASE_URL": w.prom.URL, "GLOBAL_OPT_INTERVAL": opsInterval.String()}
	maps.Copy(w.config, o.config)
	h.InstallWVA(w.config)
	h.Namespace(smokeNS)
	h.Apply(Deployment(smokeNS, smokeVA, 1, map[string]string{"wva.llmd.ai/emulate": "true"}))
	va := VariantAutoscaling(smokeNS, smokeVA, smokeModel, "H100", 1, 8, "30.0")
	if !o.metricsOnly {
		va.Spec.Actuator = wvav1.ActuatorDirect
	}
	h.Apply(va)
	h.StartEmulator(t, EmulatorOptions{Spec: filepath.Join(h.Root, "examples", "emulate", "fleet.yaml"), TimeScale: 10})
	t.Logf("ops world (without controller) up in %s", time.Since(start).Round(time.Millisecond))
	return w
}

// startController starts a controller with the short lease; the first
// one started with scraped=true gets the address Prometheus scrapes.
func (w *opsWorld) startController(name string, scraped bool, args ...string) *Controller {
	o := ControllerOptions{Name: name, PrometheusURL: w.prom.URL, Interval: opsInterval,
		Args: append([]string{"--lease-duration", opsLeaseDuration.String(), "--renew-deadline", opsRenewDeadline.String(),
			"--retry-period", opsRetryPeriod.String()}, args...)}
	if scraped {
		o.MetricsAddr = w.metricsAddr
	}
	return w.h.StartController(o)
}

// waitPlanning waits until the controller plans from the emulated
// server's metrics: a ready replica, MetricsAvailable=True (with a ready
// replica and no series it would be False) and a decision that is no hold.
func (w *opsWorld) waitPlanning(timeout time.Duration) time.Duration {
	return w.h.Eventually("a decision from the emulated server's metrics", timeout, func(ctx context.Context) (bool, string) {
		va, err := w.h.GetVA(ctx, smokeNS, smokeVA)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(va.Status.Conditions, wvav1.ConditionMetricsAvailable)
		d := va.Status.DesiredOptimizedAlloc
		return c != nil && c.Status == metav1.ConditionTrue && va.Status.CurrentAlloc.ReadyReplicas > 0 &&
			!d.LastRunTime.IsZero() && !strings.HasPrefix(d.Reason, "hold"), describeVA(va)
	})
}

// va reads the scenario's VariantAutoscaling, failing the test on error.
func (w *opsWorld) va(ctx context.Context) *wvav1.VariantAutoscaling {
	va, err := w.h.GetVA(ctx, smokeNS, smokeVA)
	if err != nil {
		w.t.Fatalf("VariantAutoscaling %s/%s: %v", smokeNS, smokeVA, err)
	}
	return va
}

// replicas is the Deployment's spec.replicas.
func (w *opsWorld) replicas(ctx context.Context) int32 {
	n, err := w.h.deploymentReplicas(ctx, smokeVA)
	if err != nil {
		w.t.Fatalf("Deployment %s/%s: %v", smokeNS, smokeVA, err)
	}
	return n
}

// condition waits until the VA's condition typ has status and a reason
// accepted by reasonOK, and returns how long it took.
func (w *opsWorld) condition(typ string, status metav1.ConditionStatus, reasonOK func(string) bool, timeout time.Duration) time.Duration {
	return w.h.Eventually(fmt.Sprintf("%s=%s", typ, status), timeout, func(ctx context.Context) (bool, string) {
		va, err := w.h.GetVA(ctx, smokeNS, smokeVA)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(va.Status.Conditions, typ)
		if c == nil {
			return false, "no condition " + typ + "; " + describeVA(va)
		}
		return c.Status == status && reasonOK(c.Reason), fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
}

// setMinReplicas patches the VA's minReplicas (a change of demand the
// controller must follow).
func (w *opsWorld) setMinReplicas(ctx context.Context, n int32) {
	va := w.va(ctx)
	patch := client.MergeFrom(va.DeepCopy())
	va.Spec.MinReplicas = ptr.To(n)
	if err := w.h.Client.Patch(ctx, va, patch); err != nil {
		w.t.Fatalf("minReplicas of %s/%s: %v", smokeNS, smokeVA, err)
	}
}

// waitScaled waits until the decision and the Deployment are n.
func (w *opsWorld) waitScaled(what string, n int32, timeout time.Duration) time.Duration {
	return w.h.Eventually(what, timeout, func(ctx context.Context) (bool, string) {
		va := w.va(ctx)
		r := w.replicas(ctx)
		return va.Status.DesiredOptimizedAlloc.NumReplicas == n && r == n,
			fmt.Sprintf("want %d; Deployment replicas %d; %s", n, r, describeVA(va))
	})
}

// describeVA is the VA's decision and conditions in one line.
func describeVA(va *wvav1.VariantAutoscaling) string {
	var b strings.Builder
	d := va.Status.DesiredOptimizedAlloc
	fmt.Fprintf(&b, "desired %d (%s, at %s); conditions:", d.NumReplicas, d.Reason, d.LastRunTime.Format(time.RFC3339))
	for _, c := range va.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s %s (%.120s);", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// scrape gets path from a controller's secure endpoint with token and
// returns the status code and body.
func (w *opsWorld) scrape(ctx context.Context, c *Controller, path, token string) (int, string) {
	code, body, err := httpGet(ctx, "https://"+c.MetricsAddr+path, token)
	if err != nil {
		return 0, err.Error()
	}
	return code, body
}

// publishesDecisions says whether the controller's /metrics has an
// inferno_desired_replicas sample for the scenario's variant, and its value.
func (w *opsWorld) publishesDecisions(ctx context.Context, c *Controller) (bool, float64, string) {
	code, body := w.scrape(ctx, c, "/metrics", w.token)
	if code != http.StatusOK {
		return false, 0, fmt.Sprintf("/metrics: %d %.200s", code, body)
	}
	v, ok := sampleValue(body, "inferno_desired_replicas", `variant_name="`+smokeVA+`"`)
	return ok, v, fmt.Sprintf("inferno_desired_replicas for %s: present %v, %v", smokeVA, ok, v)
}

// sampleLine is the first sample line of metric whose labels contain
// labelPart in a Prometheus text exposition ("" when none).
func sampleLine(body, metric, labelPart string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, metric+"{") && strings.Contains(line, labelPart) {
			return line
		}
	}
	return ""
}

// sampleValue finds the first sample of metric whose labels contain
// labelPart in a Prometheus text exposition.
func sampleValue(body, metric, labelPart string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, labelPart) {
			continue
		}
		fields := strings.Fields(line[strings.LastIndex(line, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

// configMap reads a ConfigMap of the controller's namespace.
func (w *opsWorld) configMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	return cm, w.h.Client.Get(ctx, client.ObjectKey{Namespace: ControllerNamespace, Name: name}, cm)
}

// setConfig replaces the data of a ConfigMap of the controller's
// namespace, creating it when absent.
func (w *opsWorld) setConfig(ctx context.Context, name string, data map[string]string) {
	cm, err := w.configMap(ctx, name)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ControllerNamespace, Name: name}, Data: data}
		if err := w.h.Client.Create(ctx, cm); err != nil {
			w.t.Fatalf("ConfigMap %s: %v", name, err)
		}
		return
	}
	if err != nil {
		w.t.Fatalf("ConfigMap %s: %v", name, err)
	}
	cm.Data = data
	if err := w.h.Client.Update(ctx, cm); err != nil {
		w.t.Fatalf("ConfigMap %s: %v", name, err)
	}
}

// hasEvent says whether an event of reason and type is on the object
// (kind/name) in the namespace, and lists what is there.
func (w *opsWorld) hasEvent(ctx context.Context, ns, kind, name, typ, reason string) (bool, string) {
	evs := &corev1.EventList{}
	if err := w.h.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s %s: %.150s", e.Type, e.Reason, e.Message))
		if e.Type == typ && e.Reason == reason {
			return true, e.Message
		}
	}
	return false, fmt.Sprintf("events on %s %s/%s: %v", kind, ns, name, seen)
}

// holdFor checks, every half second for d, that the decision and the
// Deployment stay at want, failing at the first change.
func (w *opsWorld) holdFor(what string, d time.Duration, desired, replicas int32) {
	w.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		ctx := w.h.Ctx()
		va := w.va(ctx)
		if got := va.Status.DesiredOptimizedAlloc.NumReplicas; got != desired {
			w.t.Fatalf("%s: the decision moved from %d to %d; %s", what, desired, got, describeVA(va))
		}
		if got := w.replicas(ctx); got != replicas {
			w.t.Fatalf("%s: the Deployment moved from %d to %d replicas; %s", what, replicas, got, describeVA(va))
		}
		time.Sleep(500 * time.Millisecond)
	}
	w.t.Logf("%s: decision %d and Deployment %d replicas held for %s", what, desired, replicas, d)
}

// vaCondition is the VA's condition typ, failing the test when it has none.
func vaCondition(t *testing.T, va *wvav1.VariantAutoscaling, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(va.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("no condition %s: %s", typ, describeVA(va))
	}
	return *c
}
