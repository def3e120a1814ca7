package controller

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestHelmChartValidates renders charts/wva as `helm install` would and
// has the real API server validate every object (server-side apply, dry
// run); the chart's CRD is the generated one. The RBAC objects are created
// for real and the API server says what the controller's service account
// may do (SubjectAccessReview): only what the values enable — no scaling
// without rbac.directActuation, no nodes without the limited optimizer,
// nothing outside the watched namespaces when watchNamespaces is set.
// test/manifests renders every documented value set against the real
// Prometheus operator and KEDA CRDs, which this suite does not install.
func TestHelmChartValidates(t *testing.T) {
	dir := filepath.Join(env.Root, "charts", "wva")
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := os.ReadFile(filepath.Join(env.Root, "config", "crd", "bases", "llmd.ai_variantautoscalings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The CRD is a template from files/ (test/manifests checks how it renders).
	if i := slices.IndexFunc(ch.Files, func(f *chart.File) bool { return f.Name == "files/llmd.ai_variantautoscalings.yaml" }); i < 0 ||
		!bytes.Equal(ch.Files[i].Data, gen) || len(ch.CRDObjects()) != 0 {
		t.Fatal("charts/wva/files/llmd.ai_variantautoscalings.yaml differs from config/crd/bases: run make generate")
	}
	for i, c := range []struct {
		name   string
		values map[string]any
		access func(ns string) []access
		check  func(t *testing.T, ns string, objs []*unstructured.Unstructured)
	}{
		{"defaults: metrics-only, every namespace", map[string]any{}, func(string) []access {
			return []access{
				allow("list", "", "pods", "", ""), allow("watch", "llmd.ai", "variantautoscalings", "", ""),
				allow("patch", "llmd.ai", "variantautoscalings", "status", "team-a"), allow("patch", "", "pods", "", "team-a"), allow("create", "events.k8s.io", "events", "", "team-a"),
				deny("update", "apps", "deployments", "scale", "team-a"), deny("patch", "apps", "deployments", "scale", ""),
				deny("update", "apps", "deployments", "", "team-a"), deny("list", "", "nodes", "", ""),
				deny("get", "apps", "statefulsets", "", "team-a"), deny("get", "leaderworkerset.x-k8s.io", "leaderworkersets", "scale", "team-a"),
			}
		}, checkDefaultChart},
		{"StatefulSet and LeaderWorkerSet targets, direct actuation", map[string]any{"rbac": map[string]any{"directActuation": true,
			"targetKinds": []any{"statefulsets", "leaderworkersets"}}}, func(string) []access {
			return []access{allow("watch", "apps", "statefulsets", "", "team-a"), allow("update", "apps", "statefulsets", "scale", "team-a"),
				allow("list", "leaderworkerset.x-k8s.io", "leaderworkersets", "", ""), allow("patch", "leaderworkerset.x-k8s.io", "leaderworkersets", "scale", "team-a"),
				deny("update", "apps", "statefulsets", "", "team-a"), deny("update", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "team-a")}
		}, nil},
		{"StatefulSet targets, metrics-only", map[string]any{"rbac": map[string]any{"targetKinds": []any{"statefulsets"}}}, func(string) []access {
			return []access{allow("get", "apps", "statefulsets", "scale", "team-a"), deny("update", "apps", "statefulsets", "scale", "team-a"),
				deny("get", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "team-a")}
		}, nil},
		{"direct actuation", map[string]any{"rbac": map[string]any{"directActuation": true}}, func(string) []access {
			return []access{allow("update", "apps", "deployments", "scale", "team-a"), allow("patch", "apps", "deployments", "scale", ""),
				deny("update", "apps", "deployments", "", "team-a"), deny("list", "", "nodes", "", "")}
		}, nil},
		{"watched namespaces, direct actuation, limited optimizer", map[string]any{
			"watchNamespaces": []any{"llm-d", "llm-d-staging"}, "rbac": map[string]any{"directActuation": true},
			"config": map[string]any{"scaleToZero": true, "extra": map[string]any{"WVA_MODE": "hybrid", "WVA_OPTIMIZER": "limited"}},
		}, func(string) []access {
			return []access{
				allow("list", "", "pods", "", "llm-d"), allow("patch", "", "pods", "", "llm-d-staging"),
				allow("watch", "llmd.ai", "variantautoscalings", "", "llm-d-staging"), allow("update", "apps", "deployments", "scale", "llm-d"),
				allow("list", "", "nodes", "", ""),
				deny("list", "", "pods", "", ""), deny("list", "", "pods", "", "default"), deny("watch", "llmd.ai", "variantautoscalings", "", ""),
				deny("list", "apps", "deployments", "", ""), deny("update", "apps", "deployments", "scale", "default"),
			}
		}, checkNamespacedChart},
		{"limited optimizer on a static inventory: no nodes", map[string]any{
			"config": map[string]any{"extra": map[string]any{"WVA_OPTIMIZER": "limited", "WVA_CAPACITY_SOURCE": "configmap"}}},
			func(string) []access { return []access{deny("list", "", "nodes", "", "")} }, nil},
		{"metrics readers, insecure metrics opt-in", map[string]any{
			"metrics": map[string]any{"secure": false, "port": 8080, "readers": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}},
				"debugReaders": []any{map[string]any{"kind": "ServiceAccount", "name": "oncall", "namespace": "monitoring"}}},
			"serviceMonitor": map[string]any{"enabled": true}},
			nil, checkReadersChart},
		{"ServiceMonitor, certificate", map[string]any{"metrics": map[string]any{"certSecret": "wva-metrics-cert"},
			"serviceMonitor": map[string]any{"enabled": true}}, nil,
			checkCertificateChart},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := fmt.Sprintf("wva-helm-%d", i)
			if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			objs := renderChart(t, ch, "wva", ns, c.values)
			ensureNamespaces(t, objs)
			kinds := applyRendered(t, objs)
			for _, want := range []string{"ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "ConfigMap", "Deployment", "Service"} {
				if kinds[want] == 0 {
					t.Errorf("chart renders no %s (kinds %v)", want, kinds)
				}
			}
			applyRBAC(t, objs)
			want := baseAccess(ns)
			if c.access != nil {
				want = append(want, c.access(ns)...)
			}
			checkAccess(t, ns, chartSA, want)
			if c.check != nil {
				c.check(t, ns, objs)
			}
		})
	}
}

// chartSA is the controller's service account in the chart.
const chartSA = "wva-controller"

// checkDefaultChart: the defaults bind neither direct actuation nor node
// listing, and serve metrics securely.
func checkDefaultChart(t *testing.T, ns string, objs []*unstructured.Unstructured) {
	if b := strings.Join(bindings(objs, ns, chartSA), ", "); strings.Contains(b, "direct-actuation") || strings.Contains(b, "node-reader") {
		t.Errorf("metrics-only, unlimited binds direct actuation or node listing: %v", b)
	}
	d := rendered(t, objs, "Deployment", "wva-controller")
	for _, arg := range []string{"--metrics-secure=true", "--metrics-bind-address=:8443"} {
		if !strings.Contains(d, arg) {
			t.Errorf("the manager lacks %s", arg)
		}
	}
}

// checkNamespacedChart: with watchNamespaces, RoleBindings per namespace
// and no cluster-wide binding of the namespaced roles.
func checkNamespacedChart(t *testing.T, ns string, objs []*unstructured.Unstructured) {
	b := bindings(objs, ns, chartSA)
	for _, want := range []string{"RoleBinding llm-d/wva-workloads-rolebinding -> wva-workloads-role",
		"RoleBinding llm-d-staging/wva-workloads-rolebinding -> wva-workloads-role",
		"RoleBinding llm-d/wva-direct-actuation-rolebinding -> wva-direct-actuation-role",
		"RoleBinding llm-d-staging/wva-direct-actuation-rolebinding -> wva-direct-actuation-role",
		"ClusterRoleBinding /wva-node-reader-rolebinding -> wva-node-reader-role"} {
		if !hasPrefixIn(b, want) {
			t.Errorf("no %s in %v", want, b)
		}
	}
	for _, s := range b {
		if strings.HasPrefix(s, "ClusterRoleBinding") && (strings.HasSuffix(s, "wva-workloads-role") || strings.HasSuffix(s, "wva-direct-actuation-role")) {
			t.Errorf("cluster-wide %s with watchNamespaces", s)
		}
	}
	if d := rendered(t, objs, "Deployment", "wva-controller"); !strings.Contains(d, "--watch-namespaces=llm-d,llm-d-staging") {
		t.Error("watchNamespaces not passed to the manager")
	}
}

// checkReadersChart: metrics.readers may read /metrics and /tuner/params
// but not /debug/snapshot, metrics.debugReaders all three, others none; the
// insecure opt-in reaches the manager and the ServiceMonitor.
func checkReadersChart(t *testing.T, _ string, objs []*unstructured.Unstructured) {
	checkAccess(t, "monitoring", "prometheus-k8s", []access{{verb: "get", path: "/metrics", allowed: true},
		{verb: "get", path: "/tuner/params", allowed: true}, {verb: "get", path: "/debug/snapshot"}, deny("list", "", "pods", "", "")})
	checkAccess(t, "monitoring", "oncall", []access{{verb: "get", path: "/debug/snapshot", allowed: true},
		{verb: "get", path: "/metrics", allowed: true}, deny("list", "", "pods", "", "")})
	checkAccess(t, "monitoring", "other", []access{{verb: "get", path: "/metrics"}})
	d := rendered(t, objs, "Deployment", "wva-controller")
	if !strings.Contains(d, "--metrics-secure=false") || !strings.Contains(d, "containerPort: 8080") {
		t.Error("metrics.secure=false and port 8080 not passed to the manager")
	}
	if m := rendered(t, objs, "ServiceMonitor", "wva-controller"); !strings.Contains(m, "scheme: http\n") || strings.Contains(m, "bearerTokenFile") {
		t.Errorf("insecure ServiceMonitor:\n%s", m)
	}
}

// checkCertificateChart: the ServiceMonitor scrapes over HTTPS with the
// service account's token; metrics.certSecret is mounted and passed.
func checkCertificateChart(t *testing.T, _ string, objs []*unstructured.Unstructured) {
	m := rendered(t, objs, "ServiceMonitor", "wva-controller")
	for _, want := range []string{"scheme: https", "bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "insecureSkipVerify: true", "port: metrics"} {
		if !strings.Contains(m, want) {
			t.Errorf("ServiceMonitor lacks %q:\n%s", want, m)
		}
	}
	d := rendered(t, objs, "Deployment", "wva-controller")
	for _, want := range []string{"--metrics-cert-dir=/etc/wva/metrics-cert", "secretName: wva-metrics-cert", "mountPath: /etc/wva/metrics-cert"} {
		if !strings.Contains(d, want) {
			t.Errorf("Deployment lacks %q", want)
		}
	}
}

// TestHelmRefusesTokenOverHTTP: a Prometheus token with an http:// URL
// fails the install unless prometheus.tokenOverHTTP opts in.
func TestHelmRefusesTokenOverHTTP(t *testing.T) {
	ch, err := loader.Load(filepath.Join(env.Root, "charts", "wva"))
	if err != nil {
		t.Fatal(err)
	}
	render := func(values map[string]any) error {
		vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "wva", Namespace: "wva", IsInstall: true}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		_, err = engine.Render(ch, vals)
		return err
	}
	token := map[string]any{"url": "http://prometheus:9090", "tokenFile": "/var/run/token"}
	if err := render(map[string]any{"prometheus": token}); err == nil ||
		!strings.Contains(err.Error(), "prometheus.tokenFile with prometheus.url http://prometheus:9090 would send the token in clear text") {
		t.Errorf("token over http: %v", err)
	}
	token["tokenOverHTTP"] = true
	if err := render(map[string]any{"prometheus": token}); err != nil {
		t.Errorf("with the opt-in: %v", err)
	}
}

// TestHelmTwoReleasesRBAC: two releases in one namespace are bound each to
// its own roles. The release wva-canary, watching team-b with direct
// actuation, may list pods and scale Deployments there and nowhere else;
// the release wva keeps its cluster-wide, metrics-only access, and gains
// nothing from the other's bindings.
func TestHelmTwoReleasesRBAC(t *testing.T) {
	ch, err := loader.Load(filepath.Join(env.Root, "charts", "wva"))
	if err != nil {
		t.Fatal(err)
	}
	const ns = "wva-helm-two"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	objs := renderChart(t, ch, "wva", ns, map[string]any{})
	objs = append(objs, renderChart(t, ch, "wva-canary", ns, map[string]any{
		"watchNamespaces": []any{"team-b"}, "rbac": map[string]any{"directActuation": true}})...)
	applyRBAC(t, objs)
	checkAccess(t, ns, "wva-controller", append(baseAccess(ns), allow("list", "", "pods", "", ""),
		deny("update", "apps", "deployments", "scale", "team-b")))
	checkAccess(t, ns, "wva-canary-controller", append(baseAccess(ns), allow("list", "", "pods", "", "team-b"),
		allow("update", "apps", "deployments", "scale", "team-b"), deny("list", "", "pods", "", ""), deny("list", "", "pods", "", "team-a"),
		deny("update", "apps", "deployments", "scale", "team-a")))
}

// renderChart renders the chart as `helm install name -n ns` would, with
// values, for a cluster without the Prometheus operator (so `auto` renders
// no ServiceMonitor).
func renderChart(t *testing.T, ch *chart.Chart, name, ns string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: name, Namespace: ns, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("render %v: %v", values, err)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") { // NOTES.txt, _helpers.tpl
			continue
		}
		for _, doc := range strings.Split(out[n], "\n---") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v\n%s", n, err, doc)
			}
			if len(u.Object) > 0 {
				objs = append(objs, u)
			}
		}
	}
	return objs
}

// thirdParty are the kinds whose CRDs this suite does not install;
// test/manifests validates them against the real ones.
var thirdParty = map[string]bool{"ServiceMonitor": true, "PrometheusRule": true, "ScaledObject": true}

// applyRendered dry-run applies every rendered object (but the third-party
// kinds) and counts kinds.
func applyRendered(t *testing.T, objs []*unstructured.Unstructured) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		if thirdParty[u.GetKind()] {
			continue
		}
		if err := env.Client.Patch(context.Background(), u.DeepCopy(), client.Apply, client.DryRunAll, client.FieldOwner("helm-test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "Deployment" {
			checkHardened(t, u)
		}
	}
	return kinds
}

// rendered returns the object of kind and name as YAML.
func rendered(t *testing.T, objs []*unstructured.Unstructured, kind, name string) string {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			b, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return ""
}
