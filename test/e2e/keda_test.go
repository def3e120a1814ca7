//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// KEDA runs in this namespace (its cluster object namespace: the
// metrics server's Service and the operator's events live here).
const KEDANamespace = "keda"

// kedaAssets is the folder of KEDA's binaries and CRDs (make keda:
// bin/k8s), or $WVA_K8S_ASSETS.
func (h *Harness) kedaAssets() string {
	if d := os.Getenv("WVA_K8S_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(h.Root, "bin", "k8s")
}

// HasKEDA says whether KEDA's operator, metrics server and CRDs are built
// (make keda).
func (h *Harness) HasKEDA() bool {
	for _, p := range []string{"keda-operator", "keda-adapter", filepath.Join("keda-crds", "keda.sh_scaledobjects.yaml")} {
		if _, err := os.Stat(filepath.Join(h.kedaAssets(), p)); err != nil {
			return false
		}
	}
	return true
}

// KEDA is a running KEDA: its operator (ScaledObject controller, scalers,
// the gRPC metrics service) and its metrics server (the
// external.metrics.k8s.io API the HPA reads).
type KEDA struct {
	Operator, Adapter *Process
}

// StartKEDA installs KEDA's CRDs and runs its operator and metrics server
// out of cluster as the harness's admin, watching every namespace. The
// two talk gRPC with mutual TLS on loopback: the harness makes their CA
// and one certificate for both (ca.crt, tls.crt, tls.key in
// <artifacts>/keda/certs, what KEDA's cert rotation would put in its
// Secret; rotation and the patching of webhooks and APIServices are off).
// The metrics server is registered as the APIService
// v1beta1.external.metrics.k8s.io through a Service keda/keda-metrics-apiserver
// of type ExternalName to localhost (as StartAdapter does), so it must not
// run beside prometheus-adapter. Waits (90 s at most) until the operator
// is ready and the APIService Available.
func (h *Harness) StartKEDA() *KEDA {
	h.t.Helper()
	if !h.HasKEDA() {
		h.t.Fatalf("KEDA not found in %s: run `make keda`", h.kedaAssets())
	}
	h.installKEDACRDs()
	h.Namespace(KEDANamespace)
	dir := filepath.Join(h.Artifacts, "keda")
	certs := filepath.Join(dir, "certs")
	ca := newTestCA(h.t, "e2e-keda-ca")
	ca.writeCA(h.t, filepath.Join(certs, "ca.crt"))
	ca.issue(h.t, &x509.Certificate{Subject: pkix.Name{CommonName: "keda"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key"))
	env := []string{"WATCH_NAMESPACE=", "KEDA_CLUSTER_OBJECT_NAMESPACE=" + KEDANamespace, "POD_NAMESPACE=" + KEDANamespace,
		"KUBECONFIG=" + h.Kubeconfig}
	grpcAddr, probeAddr := h.FreeAddr(), h.FreeAddr()
	k := &KEDA{}
	k.Operator = h.StartProcess("keda-operator", filepath.Join(h.kedaAssets(), "keda-operator"), append(env, "POD_NAME=keda-operator"),
		"--leader-elect=false", "--metrics-bind-address", h.FreeAddr(), "--health-probe-bind-address", probeAddr,
		"--metrics-service-bind-address", grpcAddr, "--cert-dir", certs, "--ca-dir", certs,
		"--enable-cert-rotation=false", "--enable-webhook-patching=false", "--enable-apiservice-patching=false",
		"--zap-log-level", "info")
	h.Eventually("keda-operator ready", 90*time.Second, func(ctx context.Context) (bool, string) {
		if exited, err := k.Operator.Exited(); exited {
			h.t.Fatalf("keda-operator exited: %v (log: %s)", err, k.Operator.Log)
		}
		code, _, err := httpGet(ctx, "http://"+probeAddr+"/readyz", "")
		return err == nil && code == http.StatusOK, fmt.Sprintf("GET /readyz: %d %v", code, err)
	})
	port := h.FreePort()
	k.Adapter = h.StartProcess("keda-adapter", filepath.Join(h.kedaAssets(), "keda-adapter"), append(env, "POD_NAME=keda-adapter"),
		"--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--cert-dir", certs,
		"--tls-cert-file", filepath.Join(certs, "tls.crt"), "--tls-private-key-file", filepath.Join(certs, "tls.key"),
		"--lister-kubeconfig", h.Kubeconfig, "--authentication-kubeconfig", h.Kubeconfig, "--authorization-kubeconfig", h.Kubeconfig,
		"--metrics-service-address", grpcAddr, "--port", strconv.Itoa(h.FreePort()), "--zap-log-level", "info")
	h.Note("KEDA: operator log %s, metrics server log %s; kubectl get scaledobjects -A; kubectl get --raw /apis/external.metrics.k8s.io/v1beta1",
		k.Operator.Log, k.Adapter.Log)
	h.registerExternalMetrics(KEDANamespace, "keda-metrics-apiserver", port, k.Adapter)
	return k
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// installKEDACRDs applies every CRD of KEDA's release (its operator
// watches them all) and waits until they are established.
func (h *Harness) installKEDACRDs() {
	h.t.Helper()
	files, err := filepath.Glob(filepath.Join(h.kedaAssets(), "keda-crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		h.t.Fatalf("no KEDA CRDs in %s: %v", filepath.Join(h.kedaAssets(), "keda-crds"), err)
	}
	h.installCRDs("KEDA", files)
}

// installCRDs applies the CRDs of the files and waits until they are
// established.
func (h *Harness) installCRDs(what string, files []string) {
	h.t.Helper()
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			h.t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			h.t.Fatalf("%s: %v", f, err)
		}
		h.Apply(u)
		names = append(names, u.GetName())
	}
	h.Eventually(fmt.Sprintf("%d %s CRDs established", len(names), what), 30*time.Second, func(ctx context.Context) (bool, string) {
		for _, n := range names {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(crdGVK)
			if err := h.Client.Get(ctx, client.ObjectKey{Name: n}, u); err != nil {
				return false, err.Error()
			}
			if s, _ := conditionOf(u, "Established"); s != "True" {
				return false, n + " not established"
			}
		}
		return true, ""
	})
}

// conditionOf reads status.conditions[type=typ] of an unstructured object:
// its status and "reason: message".
func conditionOf(u *unstructured.Unstructured, typ string) (status, detail string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return "", "no " + typ + " condition"
}

var scaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// kedaSample is config/samples/keda-scaledobject.yaml with its prometheus
// trigger's serverAddress pointed at promURL: nothing else changes.
func (h *Harness) kedaSample(promURL string) *unstructured.Unstructured {
	h.t.Helper()
	so := h.sample("keda-scaledobject.yaml")
	triggers, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	if len(triggers) != 1 {
		h.t.Fatalf("keda-scaledobject.yaml: want one trigger, got %d", len(triggers))
	}
	tr, _ := triggers[0].(map[string]any)
	md, _ := tr["metadata"].(map[string]any)
	if tr["type"] != "prometheus" || md == nil || !strings.HasPrefix(fmt.Sprint(md["serverAddress"]), "http") {
		h.t.Fatalf("keda-scaledobject.yaml: want a prometheus trigger with a serverAddress, got %v", tr)
	}
	md["serverAddress"] = promURL
	if err := unstructured.SetNestedSlice(so.Object, triggers, "spec", "triggers"); err != nil {
		h.t.Fatal(err)
	}
	return so
}

// scaledObject reads a ScaledObject.
func (h *Harness) scaledObject(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scaledObjectGVK)
	return u, h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}
