//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// adapterBinary is bin/k8s/prometheus-adapter (make adapter), or the one
// in $WVA_K8S_ASSETS.
func (h *Harness) adapterBinary() string {
	dir := filepath.Join(h.Root, "bin", "k8s")
	if d := os.Getenv("WVA_K8S_ASSETS"); d != "" {
		dir = d
	}
	return filepath.Join(dir, "prometheus-adapter")
}

// HasAdapter says whether prometheus-adapter is built.
func (h *Harness) HasAdapter() bool {
	_, err := os.Stat(h.adapterBinary())
	return err == nil
}

// adapterRules is the adapter's rule file made from the external rules of
// config/samples/prometheus-adapter-values.yaml (the chart's
// rules.external becomes the file's externalRules), so the suite checks
// the sample users install.
func (h *Harness) adapterRules() string {
	h.t.Helper()
	raw, err := os.ReadFile(filepath.Join(h.Root, "config", "samples", "prometheus-adapter-values.yaml"))
	if err != nil {
		h.t.Fatal(err)
	}
	var values struct {
		Rules struct {
			External []any `json:"external"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		h.t.Fatal(err)
	}
	out, err := yaml.Marshal(map[string]any{"externalRules": values.Rules.External})
	if err != nil {
		h.t.Fatal(err)
	}
	return string(out)
}

// AdapterNamespace holds the adapter's Service (type ExternalName,
// pointing at localhost: no kube-proxy runs here).
const AdapterNamespace = "monitoring"

var apiServiceGVK = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

// StartAdapter runs prometheus-adapter against promURL with the sample's
// external rules, registers it as the aggregated APIService
// v1beta1.external.metrics.k8s.io (through a Service of type
// ExternalName to localhost: registerExternalMetrics), and waits until
// the APIService is Available.
func (h *Harness) StartAdapter(promURL string) *Process {
	h.t.Helper()
	if !h.HasAdapter() {
		h.t.Fatalf("%s not found: run `make adapter`", h.adapterBinary())
	}
	dir := filepath.Join(h.Artifacts, "adapter")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		h.t.Fatal(err)
	}
	writeFile(h.t, filepath.Join(dir, "rules.yaml"), h.adapterRules())
	port := h.FreePort()
	p := h.StartProcess("prometheus-adapter", h.adapterBinary(), nil,
		"--lister-kubeconfig", h.Kubeconfig, "--authentication-kubeconfig", h.Kubeconfig, "--authorization-kubeconfig", h.Kubeconfig,
		"--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--cert-dir", filepath.Join(dir, "certs"),
		"--prometheus-url", promURL+"/", "--metrics-relist-interval", "2s", "--config", filepath.Join(dir, "rules.yaml"), "--v=2")
	h.Note("prometheus-adapter: log %s; rules %s; kubectl get --raw /apis/external.metrics.k8s.io/v1beta1/namespaces/llm-d/inferno_desired_replicas",
		p.Log, filepath.Join(dir, "rules.yaml"))
	h.registerExternalMetrics(AdapterNamespace, "prometheus-adapter", port, p)
	return p
}

// registerExternalMetrics registers the server of p, listening on
// loopback port, as the APIService v1beta1.external.metrics.k8s.io through
// a Service ns/name of type ExternalName to localhost (kube-apiserver
// proxies to it without kube-proxy or endpoints), and waits (90 s at most)
// until the APIService is Available. A cluster has one such APIService:
// prometheus-adapter and KEDA's metrics server never run together.
func (h *Harness) registerExternalMetrics(ns, name string, port int, p *Process) {
	h.t.Helper()
	h.Namespace(ns)
	h.Apply(&corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(port)}}},
	})
	api := &unstructured.Unstructured{}
	api.SetGroupVersionKind(apiServiceGVK)
	api.SetName("v1beta1.external.metrics.k8s.io")
	api.Object["spec"] = map[string]any{
		"group": "external.metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": true,
		"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		"service": map[string]any{"namespace": ns, "name": name, "port": int64(port)},
	}
	h.Apply(api)
	h.Eventually(fmt.Sprintf("APIService v1beta1.external.metrics.k8s.io (%s) Available", p.Name), 90*time.Second, func(ctx context.Context) (bool, string) {
		if exited, err := p.Exited(); exited {
			h.t.Fatalf("%s exited: %v (log: %s)", p.Name, err, p.Log)
		}
		return apiServiceAvailable(ctx, h.Client, api.GetName())
	})
}

// apiServiceAvailable reads the APIService's Available condition.
func apiServiceAvailable(ctx context.Context, c client.Client, name string) (bool, string) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiServiceGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return false, err.Error()
	}
	s, detail := conditionOf(u, "Available")
	return s == "True", "Available=" + s + " " + detail
}
