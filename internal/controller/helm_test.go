package controller

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
// run); the chart's CRD is the generated one.
func TestHelmChartValidates(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(env.Root, "charts", "wva")
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := os.ReadFile(filepath.Join(env.Root, "config", "crd", "bases", "llmd.ai_variantautoscalings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds := ch.CRDObjects()
	if len(crds) != 1 || !bytes.Equal(crds[0].File.Data, gen) {
		t.Fatal("charts/wva/crds differs from config/crd/bases: run make generate")
	}
	const ns = "wva-helm"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, values := range []map[string]any{
		{},
		{"watchNamespaces": []any{"llm-d", "llm-d-staging"}, "config": map[string]any{"scaleToZero": true, "extra": map[string]any{"WVA_MODE": "hybrid"}}},
	} {
		vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "wva", Namespace: ns, IsInstall: true}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		out, err := engine.Render(ch, vals)
		if err != nil {
			t.Fatalf("render %v: %v", values, err)
		}
		kinds := applyRendered(t, out, values)
		for _, want := range []string{"ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "ConfigMap", "Deployment", "Service"} {
			if kinds[want] == 0 {
				t.Errorf("chart renders no %s (kinds %v)", want, kinds)
			}
		}
	}
}

// applyRendered dry-run applies every rendered manifest and counts kinds.
func applyRendered(t *testing.T, out map[string]string, values map[string]any) map[string]int {
	t.Helper()
	ctx := context.Background()
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	kinds := map[string]int{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(out[n], "\n---") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v\n%s", n, err, doc)
			}
			if len(u.Object) == 0 {
				continue
			}
			kinds[u.GetKind()]++
			if err := env.Client.Patch(ctx, u, client.Apply, client.DryRunAll, client.FieldOwner("helm-test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
				t.Errorf("%s: %s %s rejected: %v", n, u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "Deployment" {
				checkHardened(t, u)
				if w, ok := values["watchNamespaces"]; ok && !strings.Contains(doc, "--watch-namespaces=llm-d,llm-d-staging") {
					t.Errorf("watchNamespaces %v not passed to the manager", w)
				}
			}
		}
	}
	return kinds
}
