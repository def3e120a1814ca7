package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestEndToEndWithPrometheus runs the whole loop on real components: a
// real Prometheus scrapes two saturated vLLM-format pods and the
// controller's own /metrics (labelled with the controller's namespace, as a
// ServiceMonitor does); the manager on the real API server reads the pods
// through Prometheus, decides a scale-up, and publishes it; the query of
// config/samples/keda-scaledobject.yaml and the selector of
// config/samples/hpa.yaml, pointed at this variant, find the decision in
// Prometheus (through the exported_namespace rename), and the scale-up is an
// Event on the VariantAutoscaling.
func TestEndToEndWithPrometheus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const sys = "wva-e2e"
	controllerNamespace(t, sys)
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, nil)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	targets := map[string]map[string]string{strings.TrimPrefix(metricsAddr, "http://"): {"namespace": sys, "pod": "wva-controller-0"}}
	for i := 0; i < 2; i++ {
		pod := testenv.VLLMPod(t, model, 3, 0.95, 12)
		targets[strings.TrimPrefix(pod.URL, "http://")] = map[string]string{"namespace": f.ns, "pod": fmt.Sprintf("llama-h100-%d", i)}
	}
	// Prometheus scrapes the controller as the ServiceMonitor does: HTTPS,
	// the token of a service account bound to wva-metrics-reader.
	prom := testenv.PrometheusSecure(t, targets, map[string]string{metricsAddr: metricsReaderToken(t, sys)})

	o := DefaultOptions()
	o.Namespace, o.WatchNamespaces, o.LeaderElect, o.Version = sys, []string{f.ns}, false, "1.2.3-test"
	o.MetricsAddr, o.HealthAddr = metricsAddr, "0"
	o.Main.Prometheus.URL, o.Main.Prometheus.Window = prom, 10*time.Second
	o.Main.Interval = 2 * time.Second
	// The manager serves controller-runtime's registry; publish there.
	reg := prometheus.NewRegistry()
	o.metricsRegistry = reg
	crmetrics.Registry.MustRegister(reg)
	defer crmetrics.Registry.Unregister(reg)
	_, cancel, done := startManager(t, o)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	var va wvav1.VariantAutoscaling
	waitFor(t, 60*time.Second, "a scale-up decision in the status", func() bool {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "llama-h100"}, &va); err != nil {
			return false
		}
		m := findCondition(va.Status.Conditions, wvav1.ConditionMetricsAvailable)
		return m != nil && m.Status == metav1.ConditionTrue && va.Status.DesiredOptimizedAlloc.NumReplicas > 2
	})
	desired := float64(va.Status.DesiredOptimizedAlloc.NumReplicas)

	keda := samplePromQL(t, f.ns, "llama-h100")
	waitFor(t, 30*time.Second, "the KEDA sample's query to return the decision", func() bool {
		v, ok := promValue(t, prom, keda)
		return ok && v == desired
	})
	hpa := fmt.Sprintf(`inferno_desired_replicas{variant_name=%q,exported_namespace=%q,accelerator_type="H100"}`, "llama-h100", f.ns)
	if v, ok := promValue(t, prom, hpa); !ok || v != desired {
		t.Errorf("the HPA sample's selector finds %v (%v), want %v", v, ok, desired)
	}
	// Without the rename the series would not be found under its own
	// namespace label: it is the controller's.
	if v, ok := promValue(t, prom, fmt.Sprintf(`inferno_desired_replicas{namespace=%q}`, sys)); !ok || v != desired {
		t.Errorf("the scraped series carry namespace=%s: %v %v", sys, v, ok)
	}
	checkVisibility(t, prom, hpa, f.ns, desired)
}

// checkVisibility: the upstream name of the decision series, the build
// and the last successful cycle, as scraped, and the scale-up as an Event
// on the VariantAutoscaling.
func checkVisibility(t *testing.T, prom, hpa, ns string, desired float64) {
	t.Helper()
	ctx := context.Background()
	// The upstream name, the build and the last successful cycle, as
	// scraped.
	if v, ok := promValue(t, prom, strings.Replace(hpa, "inferno_", "wva_", 1)); !ok || v != desired {
		t.Errorf("wva_desired_replicas: %v %v, want %v", v, ok, desired)
	}
	if v, ok := promValue(t, prom, `wva_build_info{version="1.2.3-test"}`); !ok || v != 1 {
		t.Errorf("wva_build_info: %v %v", v, ok)
	}
	if v, ok := promValue(t, prom, `time() - wva_last_successful_cycle_timestamp_seconds`); !ok || v < -5 || v > 60 {
		t.Errorf("the last successful cycle was %v s ago (%v)", v, ok)
	}
	// The scale-up is an Event on the VariantAutoscaling.
	waitFor(t, 30*time.Second, "a ScaleUp Event on the VariantAutoscaling", func() bool {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "VariantAutoscaling" && e.Regarding.Name == "llama-h100" && e.Reason == eventScaleUp &&
				e.Type == corev1.EventTypeNormal && strings.HasPrefix(e.Note, "2 → ") {
				return true
			}
		}
		return false
	})
}

// samplePromQL returns the query of config/samples/keda-scaledobject.yaml,
// pointed at the given variant.
func samplePromQL(t *testing.T, ns, variant string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Root, "config", "samples", "keda-scaledobject.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var so struct {
		Metadata struct{ Namespace string } `json:"metadata"`
		Spec     struct {
			ScaleTargetRef struct{ Name string } `json:"scaleTargetRef"`
			Triggers       []struct {
				Metadata map[string]string `json:"metadata"`
			} `json:"triggers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &so); err != nil || len(so.Spec.Triggers) != 1 {
		t.Fatalf("keda sample: %v", err)
	}
	q := so.Spec.Triggers[0].Metadata["query"]
	q = strings.ReplaceAll(q, `"`+so.Spec.ScaleTargetRef.Name+`"`, strconv.Quote(variant))
	q = strings.ReplaceAll(q, `"`+so.Metadata.Namespace+`"`, strconv.Quote(ns))
	if !strings.Contains(q, "exported_namespace") {
		t.Fatalf("the KEDA sample does not select exported_namespace: %s", q)
	}
	return q
}

// promValue runs an instant query and returns its single value.
func promValue(t *testing.T, prom, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}
