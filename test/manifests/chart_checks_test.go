package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// values builds a values map from YAML.
func values(t *testing.T, s string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestChartSchemaRejects: values.schema.json refuses bad values before
// anything renders, naming the value (Helm's own validation, run by
// chartutil.ToRenderValues as by `helm install`).
func TestChartSchemaRejects(t *testing.T) {
	ch := loadChart(t)
	for _, c := range []struct{ values, want string }{
		{"replicas: -1", "/replicas"},
		{"image: {pullPolicy: Sometimes}", "/image/pullPolicy"},
		{"serviceMonitor: {enabeld: true}", "enabeld"},
		{"serviceMonitor: {enabled: yes-please}", "/serviceMonitor/enabled"},
		{"config: {interval: soon}", "/config/interval"},
		{"prometheus: {url: prometheus:9090}", "/prometheus/url"},
		{"metrics: {port: 70000}", "/metrics/port"},
		{"keda: {fallback: {replicas: 0}}", "/keda/fallback/replicas"},
		{"variants: [{name: a, namespace: b}]", "maxReplicas"},
		{"watchNamespaces: [Team_A]", "/watchNamespaces/0"},
		{"configMaps: {inventory: {data: {H100: -1}}}", "/configMaps/inventory/data/H100"},
		{"logLevel: trace", "/logLevel"},
		{"podDisruptionBudget: {minAvailable: half}", "/podDisruptionBudget/minAvailable"},
	} {
		t.Run(c.values, func(t *testing.T) {
			r := release{name: "wva", namespace: "wva", values: values(t, c.values), caps: withKube(nil, "v1.36.0")}
			_, _, err := r.render(ch)
			if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a schema error about %s", err, c.want)
			}
		})
	}
}

// TestChartRefusesConflicts: values the schema cannot relate fail the
// install with a message saying what to do.
func TestChartRefusesConflicts(t *testing.T) {
	ch := loadChart(t)
	for _, c := range []struct{ values, want string }{
		{"prometheus: {url: 'http://prometheus:9090', tokenFile: /var/run/token}", "would send the token in clear text"},
		{"prometheus: {url: 'http://prometheus:9090', token: {secret: t}}", "would send the token in clear text"},
		{"prometheus: {ca: {configMap: a, secret: b}}", "set configMap or secret, not both"},
		{"prometheus: {ca: {configMap: a}, caFile: /ca.crt}", "prometheus.ca and prometheus.caFile"},
		{"prometheus: {url: 'https://p:9090', token: {secret: t, serviceAccountToken: {enabled: true}}}", "set one of token.secret"},
		{"keda: {enabled: true}\nhpa: {enabled: true}", "choose one"},
		{"hpa: {enabled: true}\nvariants: [{name: v, namespace: team-a, minReplicas: 0, maxReplicas: 2}]", "an HPA needs minReplicas of at least 1"},
		{"keda: {enabled: true}\nwatchNamespaces: [a]\nvariants: [{name: v, namespace: b, maxReplicas: 2}]", "b/v is in a namespace the controller does not watch"},
		{"keda: {enabled: true}\nvariants: [{name: v, namespace: b, minReplicas: 3, maxReplicas: 2}]", "minReplicas 3 above maxReplicas 2"},
		{"serviceAccount: {create: false}", "serviceAccount.create=false needs serviceAccount.name"},
		{"metrics: {secure: false, certSecret: c}", "metrics.certSecret needs metrics.secure"},
	} {
		t.Run(c.values, func(t *testing.T) {
			r := release{name: "wva", namespace: "wva", values: values(t, c.values), caps: withKube(nil, "v1.36.0")}
			if _, _, err := r.render(ch); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
	// The opt-in lets the token travel over http.
	r := release{name: "wva", namespace: "wva", caps: withKube(nil, "v1.36.0"),
		values: values(t, "prometheus: {url: 'http://prometheus:9090', tokenFile: /var/run/token, tokenOverHTTP: true}")}
	if _, _, err := r.render(ch); err != nil {
		t.Errorf("with tokenOverHTTP: %v", err)
	}
}

// TestChartMonitoringCapabilities: `auto` renders the ServiceMonitor and
// the PrometheusRule only where the cluster serves their CRDs (an install
// elsewhere would fail on them); true and false decide outright. The HPA's
// tolerance is written only from Kubernetes 1.33, where the field exists.
func TestChartMonitoringCapabilities(t *testing.T) {
	ch := loadChart(t)
	server := serverCapabilities(t)
	plain := withKube(nil, "v1.32.0")
	for _, c := range []struct {
		name   string
		caps   *chartutil.Capabilities
		values string
		want   map[string]int
	}{
		{"auto, no Prometheus operator", plain, "", map[string]int{"ServiceMonitor": 0, "PrometheusRule": 0}},
		{"auto, with the operator", server, "", map[string]int{"ServiceMonitor": 1, "PrometheusRule": 1}},
		{"forced on", plain, "{serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}", map[string]int{"ServiceMonitor": 1, "PrometheusRule": 1}},
		{"forced off", server, "{serviceMonitor: {enabled: false}, prometheusRule: {enabled: false}}", map[string]int{"ServiceMonitor": 0, "PrometheusRule": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, _ := release{name: "wva", namespace: "wva", values: values(t, c.values), caps: c.caps}.mustRender(t, ch)
			for kind, n := range c.want {
				if got := kinds(objs)[kind]; got != n {
					t.Errorf("%d %s, want %d", got, kind, n)
				}
			}
		})
	}
	hpa := "{hpa: {enabled: true}, variants: [{name: v, namespace: team-a, maxReplicas: 4}]}"
	for kube, want := range map[string]bool{"v1.32.0": false, "v1.33.0": true, "v1.36.3": true} {
		objs, _ := release{name: "wva", namespace: "wva", values: values(t, hpa), caps: withKube(nil, kube)}.mustRender(t, ch)
		_, has, _ := unstructured.NestedString(one(t, objs, "HorizontalPodAutoscaler", "v").u.Object, "spec", "behavior", "scaleUp", "tolerance")
		if has != want {
			t.Errorf("Kubernetes %s: tolerance written %v, want %v", kube, has, want)
		}
	}
}

// key names an object uniquely in a cluster.
func key(o object) string {
	return fmt.Sprintf("%s %s/%s", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName())
}

// TestChartReleasesDoNotCollide: two releases in one namespace share no
// object, cluster-wide ones included: the release wva is created for real,
// then the release wva-canary (every optional object on) is created beside
// it (dry run), which the API server refuses on any name already taken.
func TestChartReleasesDoNotCollide(t *testing.T) {
	ch := loadChart(t)
	caps := serverCapabilities(t)
	const ns = "wva-chart-two"
	// The CRD is the cluster's, installed by one release (and by the
	// suite here): the others set crds.install=false (docs/install.md).
	all := `{grafanaDashboard: {enabled: true}, podDisruptionBudget: {enabled: true}, metrics: {readers: [{kind: ServiceAccount, name: p, namespace: monitoring}]},
	  rbac: {directActuation: true, nodeInventory: true}, crds: {install: false}}`
	first, _ := release{name: "wva", namespace: ns, values: values(t, all), caps: caps}.mustRender(t, ch)
	second, _ := release{name: "wva-canary", namespace: ns, values: values(t, all), caps: caps}.mustRender(t, ch)
	names := map[string]bool{}
	for _, o := range first {
		names[key(o)] = true
	}
	for _, o := range second {
		if names[key(o)] {
			t.Errorf("both releases render %s", key(o))
		}
	}
	ctx := context.Background()
	for _, o := range first {
		ensureNamespace(t, o.u.GetNamespace())
		u := o.u.DeepCopy()
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatalf("creating %s: %v", key(o), err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), u); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", key(o), err)
			}
		})
	}
	for _, o := range second {
		if _, err := dryRun(t, o.u); err != nil {
			t.Errorf("%s beside the release wva: %v", key(o), err)
		}
	}
	checkCanaryNames(t, second)
}

// checkCanaryNames: the second release's names carry its full name, and its
// controller is told its own ConfigMaps and Lease.
func checkCanaryNames(t *testing.T, objs []object) {
	t.Helper()
	for _, o := range objs {
		if !strings.HasPrefix(o.u.GetName(), "wva-canary-") {
			t.Errorf("%s: not named after the release", key(o))
		}
	}
	args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--leader-election-id=wva-canary.llmd.ai", "--config-map=wva-canary-variantautoscaling-config",
		"--saturation-config-map=wva-canary-saturation-scaling-config", "--tuner-state-config-map=wva-canary-tuner-state"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

// TestChartMetadata does what `helm lint` checks of Chart.yaml and the
// schema (helm's pkg/lint would add a module to go.sum for little more):
// valid metadata named as its folder, the fields good charts carry, a
// kubeVersion the test server satisfies and 1.29 does not, a draft-07
// schema, appVersion as the VERSION file, no checksum/config annotation.
func TestChartMetadata(t *testing.T) {
	ch := loadChart(t)
	m := ch.Metadata
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	if m.Name != filepath.Base(chartDir()) {
		t.Errorf("chart %s in folder %s", m.Name, filepath.Base(chartDir()))
	}
	if m.Icon == "" || m.Home == "" || len(m.Sources) == 0 || len(m.Maintainers) == 0 || len(m.Keywords) == 0 || m.KubeVersion == "" {
		t.Errorf("Chart.yaml lacks icon, home, sources, maintainers, keywords or kubeVersion: %+v", m)
	}
	if _, err := os.Stat(filepath.Join(chartDir(), "icon.svg")); err != nil || !strings.HasSuffix(m.Icon, "/charts/wva/icon.svg") {
		t.Errorf("icon %s: want the raw URL of charts/wva/icon.svg (%v)", m.Icon, err)
	}
	server := serverCapabilities(t).KubeVersion.String()
	if !chartutil.IsCompatibleRange(m.KubeVersion, server) || chartutil.IsCompatibleRange(m.KubeVersion, "v1.29.9") {
		t.Errorf("kubeVersion %s: want the test server's %s in and 1.29 out", m.KubeVersion, server)
	}
	if v := strings.TrimSpace(string(readRepoFile(t, "VERSION"))); m.AppVersion != v {
		t.Errorf("appVersion %s, VERSION %s", m.AppVersion, v)
	}
	checkChartFiles(t, ch)
}

// checkChartFiles: a draft-07 schema, and no template sets checksum/config
// (the controller reloads its ConfigMaps).
func checkChartFiles(t *testing.T, ch *chart.Chart) {
	t.Helper()
	var schema struct {
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(ch.Schema, &schema); err != nil || schema.Schema != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("values.schema.json: $schema %q (%v), want draft-07", schema.Schema, err)
	}
	if slices.ContainsFunc(ch.Templates, func(f *chart.File) bool { return strings.Contains(string(f.Data), "checksum/config:") }) {
		t.Error("a template sets checksum/config: the controller reloads its ConfigMaps")
	}
}

// TestChartInstallsCRD: the chart renders the generated CRD as a template
// (so helm upgrade upgrades it, as KEDA's chart does), kept on uninstall,
// with the chart's labels; crds.install=false leaves it out; nothing is in
// Helm's crds/ (installed once, never upgraded).
func TestChartInstallsCRD(t *testing.T) {
	ch := loadChart(t)
	if len(ch.CRDObjects()) != 0 {
		t.Error("the chart has a crds/ folder: Helm would never upgrade it")
	}
	var want map[string]any
	if err := yaml.Unmarshal(readRepoFile(t, "config/crd/bases/llmd.ai_variantautoscalings.yaml"), &want); err != nil {
		t.Fatal(err)
	}
	r := release{name: "wva", namespace: "wva-crd", values: map[string]any{}, caps: serverCapabilities(t)}
	objs, _ := r.mustRender(t, ch)
	crd := one(t, objs, "CustomResourceDefinition", "variantautoscalings.llmd.ai")
	if got, _ := json.Marshal(crd.u.Object["spec"]); !reflect.DeepEqual(jsonValue(t, got), want["spec"]) {
		t.Fatal("the chart's CRD differs from config/crd/bases: run make generate")
	}
	if a := crd.u.GetAnnotations(); a["helm.sh/resource-policy"] != "keep" || a["controller-gen.kubebuilder.io/version"] == "" {
		t.Errorf("annotations %v: want helm.sh/resource-policy: keep beside controller-gen's", a)
	}
	if l := crd.u.GetLabels(); l["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("labels %v: want the chart's", l)
	}
	// Applied over the installed copy (the suite's own) without a change.
	u := crd.u.DeepCopy()
	if err := env.Client.Patch(context.Background(), u, client.Apply, client.DryRunAll, client.FieldOwner("helm"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
		t.Error(err)
	}
	r.values = map[string]any{"crds": map[string]any{"install": false}}
	if objs, _ := r.mustRender(t, ch); slices.ContainsFunc(objs, func(o object) bool { return o.u.GetKind() == "CustomResourceDefinition" }) {
		t.Error("crds.install=false still renders the CRD")
	}
	r.values = map[string]any{"crds": map[string]any{"keep": false}}
	objs, _ = r.mustRender(t, ch)
	if a := one(t, objs, "CustomResourceDefinition", "").u.GetAnnotations(); a["helm.sh/resource-policy"] != "" {
		t.Errorf("crds.keep=false still keeps it: %v", a)
	}
}

// jsonValue decodes JSON as sigs.k8s.io/yaml decodes YAML (numbers as
// float64), for comparisons.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
