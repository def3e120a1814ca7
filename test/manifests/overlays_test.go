package manifests

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// buildOverlay renders a kustomization of the repository as `kubectl apply
// -k` does.
func buildOverlay(t *testing.T, dir string) []object {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(testenv.Root(), dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseRendered(dir, string(out))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// appliedDryRun fails unless the API server takes the object by a
// server-side apply (it may exist: the CRD), dry run, with strict field
// validation, keeping every field.
func appliedDryRun(t *testing.T, o object) {
	t.Helper()
	ensureNamespace(t, o.u.GetNamespace())
	got := o.u.DeepCopy()
	err := env.Client.Patch(context.Background(), got, client.Apply, client.DryRunAll, client.FieldOwner("overlay-test"), //nolint:staticcheck // unstructured apply
		client.ForceOwnership, client.FieldValidation(metav1.FieldValidationStrict))
	if err != nil {
		t.Errorf("%s rejected: %v", o, err)
		return
	}
	for _, part := range []string{"spec", "data", "rules", "subjects"} {
		want, ok := o.u.Object[part]
		if !ok {
			continue
		}
		if d := dropped(want, got.Object[part], part); len(d) > 0 {
			t.Errorf("%s: the API server did not keep %v", o, d)
		}
	}
}

// overlayChecks: what each overlay of config/overlays is for
// (TestOverlays fails on an overlay without an entry).
var overlayChecks = map[string]func(t *testing.T, objs []object){
	"namespaced":            checkNamespacedOverlay,
	"direct-actuation":      checkDirectActuationOverlay,
	"kube-prometheus-stack": checkKubePrometheusStackOverlay,
	"keda":                  checkKEDAOverlay,
	"hpa":                   checkHPAOverlay,
}

// TestOverlays builds every overlay of config/overlays and has the API
// server, with the real Prometheus operator and KEDA CRDs, validate every
// object (server-side apply, dry run, strict field validation, nothing
// dropped), then checks what the overlay is for.
func TestOverlays(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(testenv.Root(), "config", "overlays", "*", "kustomization.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no overlays (%v)", err)
	}
	for _, k := range dirs {
		name := filepath.Base(filepath.Dir(k))
		t.Run(name, func(t *testing.T) {
			objs := buildOverlay(t, filepath.Join("config", "overlays", name))
			for _, o := range objs {
				appliedDryRun(t, o)
			}
			if kinds(objs)["Deployment"] != 1 {
				t.Errorf("kinds %v: want WVA's Deployment", kinds(objs))
			}
			check, ok := overlayChecks[name]
			if !ok {
				t.Fatalf("no overlayChecks entry for config/overlays/%s: say what it is for", name)
			}
			check(t, objs)
		})
	}
}

// bindings lists "Kind namespace/name -> role" of the controller's
// bindings in an overlay.
func overlayBindings(objs []object) []string {
	return bindingsOf(objs, "wva-controller", "workload-variant-autoscaler-system")
}

func checkNamespacedOverlay(t *testing.T, objs []object) {
	b := overlayBindings(objs)
	if !slices.Contains(b, "RoleBinding llm-d/wva-workloads-rolebinding -> wva-workloads-role") ||
		slices.Contains(b, "ClusterRoleBinding /wva-workloads-rolebinding -> wva-workloads-role") {
		t.Errorf("bindings %v: want the workloads role in llm-d only", b)
	}
}

func checkDirectActuationOverlay(t *testing.T, objs []object) {
	if b := overlayBindings(objs); !slices.Contains(b, "ClusterRoleBinding /wva-direct-actuation-rolebinding -> wva-direct-actuation-role") {
		t.Errorf("bindings %v: no direct actuation", b)
	}
}

// checkKubePrometheusStackOverlay: the same choices as the chart's
// ci/kube-prometheus-stack-values.yaml.
func checkKubePrometheusStackOverlay(t *testing.T, objs []object) {
	sm := one(t, objs, "ServiceMonitor", "wva-controller")
	ep, _, _ := unstructured.NestedSlice(sm.u.Object, "spec", "endpoints")
	if sm.u.GetLabels()["release"] != "kube-prometheus-stack" || len(ep) != 1 || ep[0].(map[string]any)["honorLabels"] != false {
		t.Errorf("ServiceMonitor labels %v, endpoints %v", sm.u.GetLabels(), ep)
	}
	rule := one(t, objs, "PrometheusRule", "wva-alerts")
	if rule.u.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v", rule.u.GetLabels())
	}
	checkRules(t, rule)
	if d := one(t, objs, "ConfigMap", "wva-grafana-dashboard"); d.u.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels %v", d.u.GetLabels())
	}
	want := "ClusterRoleBinding /wva-metrics-reader-rolebinding -> wva-metrics-reader"
	if b := bindingsOf(objs, "kube-prometheus-stack-prometheus", "monitoring"); !slices.Contains(b, want) {
		t.Errorf("Prometheus's bindings %v, want %s", b, want)
	}
	main := one(t, objs, "ConfigMap", "variantautoscaling-config")
	if u, _, _ := unstructured.NestedString(main.u.Object, "data", "PROMETHEUS_BASE_URL"); !strings.Contains(u, "kube-prometheus-stack-prometheus.monitoring") {
		t.Errorf("PROMETHEUS_BASE_URL %s", u)
	}
}

// checkSampleCopy: an overlay's copy of a sample is byte for byte the
// sample (cp config/samples/<sample> to refresh it).
func checkSampleCopy(t *testing.T, overlayFile, sample string) {
	t.Helper()
	if !bytes.Equal(readRepoFile(t, overlayFile), readRepoFile(t, "config/samples/"+sample)) {
		t.Errorf("%s differs from config/samples/%s: cp config/samples/%s %s", overlayFile, sample, sample, overlayFile)
	}
}

// checkKEDAOverlay: the kube-prometheus-stack overlay with the sample
// ScaledObject, which passes the samples' checks.
func checkKEDAOverlay(t *testing.T, objs []object) {
	checkKubePrometheusStackOverlay(t, objs)
	checkSampleCopy(t, "config/overlays/keda/scaledobject.yaml", "keda-scaledobject.yaml")
	if p := checkScaledObject(one(t, objs, "ScaledObject", "llama-8b-h100"), selectsVariant); len(p) > 0 {
		t.Errorf("the ScaledObject has problems:\n  %s", strings.Join(p, "\n  "))
	}
}

// checkHPAOverlay: the kube-prometheus-stack overlay with the sample HPA,
// which passes the samples' checks with the adapter's values.
func checkHPAOverlay(t *testing.T, objs []object) {
	checkKubePrometheusStackOverlay(t, objs)
	checkSampleCopy(t, "config/overlays/hpa/hpa.yaml", "hpa.yaml")
	if p := checkHPA(one(t, objs, "HorizontalPodAutoscaler", "llama-8b-h100"), selectsVariant, loadAdapterValues(t)); len(p) > 0 {
		t.Errorf("the HPA has problems:\n  %s", strings.Join(p, "\n  "))
	}
}

// TestOverlayMatchesChart: the kube-prometheus-stack overlay and the chart
// with ci/kube-prometheus-stack-values.yaml make the same choices, object
// for object where both have it: the same ServiceMonitor endpoint, rules
// and dashboard.
func TestOverlayMatchesChart(t *testing.T) {
	overlay := buildOverlay(t, "config/overlays/kube-prometheus-stack")
	v := valueSets(t)
	i := slices.IndexFunc(v, func(s valueSet) bool { return s.name == "kube-prometheus-stack" })
	chartObjs, _ := release{name: "wva", namespace: "workload-variant-autoscaler-system", values: v[i].values, caps: serverCapabilities(t)}.mustRender(t, loadChart(t))
	for _, c := range []struct {
		kind, name string
		path       []string
	}{
		{"PrometheusRule", "wva-alerts", []string{"spec"}}, {"ConfigMap", "wva-grafana-dashboard", []string{"data"}},
		{"ServiceMonitor", "wva-controller", []string{"spec", "endpoints"}},
	} {
		o, _, _ := unstructured.NestedFieldCopy(one(t, overlay, c.kind, c.name).u.Object, c.path...)
		h, _, _ := unstructured.NestedFieldCopy(one(t, chartObjs, c.kind, c.name).u.Object, c.path...)
		if a, b := mustYAML(t, o), mustYAML(t, h); !bytes.Equal(a, b) {
			t.Errorf("%s %s: the overlay's %v differs from the chart's:\n%s\n%s", c.kind, c.name, c.path, a, b)
		}
	}
}

// mustYAML is v as YAML, numbers normalised.
func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(normalise(t, v))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
