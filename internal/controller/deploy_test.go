package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// build renders a kustomization of the repository as `kubectl apply -k`
// would.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	return buildAbs(t, filepath.Join(env.Root, dir))
}

// buildAbs renders the kustomization in dir.
func buildAbs(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// TestKustomizeDefaultValidates: every object of `kubectl apply -k
// config/default` and of config/overlays/namespaced is accepted by the
// real API server (server-side apply, dry run; the namespace is created
// for real first).
func TestKustomizeDefaultValidates(t *testing.T) {
	ctx := context.Background()
	objs := build(t, "config/default")
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		if u.GetKind() == "Namespace" {
			if err := env.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
				t.Fatalf("namespace: %v", err)
			}
		}
	}
	for _, want := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
		"RoleBinding", "Deployment", "Service", "ConfigMap"} {
		if kinds[want] == 0 {
			t.Errorf("config/default has no %s (kinds: %v)", want, kinds)
		}
	}
	// The namespaced overlay is valid too (its watched namespace created).
	namespaced := build(t, "config/overlays/namespaced")
	ensureNamespaces(t, namespaced)
	for _, u := range append(objs, namespaced...) {
		if err := env.Client.Patch(ctx, u, client.Apply, client.DryRunAll, client.FieldOwner("test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "Deployment" {
			checkHardened(t, u)
		}
	}
	// The samples build too, and their VariantAutoscalings are valid.
	for _, u := range build(t, "config/samples") {
		u.SetNamespace("default")
		if err := env.Client.Patch(ctx, u, client.Apply, client.DryRunAll, client.FieldOwner("test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			t.Errorf("sample %s rejected: %v", u.GetName(), err)
		}
	}
}

// checkHardened: the manager runs as non-root, read-only, no privileges.
func checkHardened(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	ps := d.Spec.Template.Spec
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Error("manager pod does not set runAsNonRoot")
	}
	for _, c := range ps.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: want a read-only root filesystem and no privilege escalation", c.Name)
		}
	}
}

// TestKustomizeRBAC: what the controller's service account may do with
// config/default (metrics-only, every namespace), with the components for
// direct actuation and the node inventory, with
// config/overlays/direct-actuation and with config/overlays/namespaced
// (only the watched namespace), asked of the real API server with the RBAC
// objects created for real. test/manifests validates every overlay against
// the Prometheus operator's and KEDA's CRDs.
func TestKustomizeRBAC(t *testing.T) {
	const sa, built = "wva-controller", "workload-variant-autoscaler-system"
	// An overlay as a user would write it (kustomize wants relative paths).
	components := t.TempDir()
	rel := func(p ...string) string {
		r, err := filepath.Rel(components, filepath.Join(append([]string{env.Root, "config"}, p...)...))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kust := "resources:\n- " + rel("default") + "\ncomponents:\n- " + rel("components", "direct-actuation") + "\n- " + rel("components", "node-inventory") + "\n"
	if err := os.WriteFile(filepath.Join(components, "kustomization.yaml"), []byte(kust), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		dir    string
		access []access
		args   string
	}{
		{"config/default", []access{
			allow("list", "", "pods", "", ""), allow("watch", "apps", "deployments", "", ""), allow("patch", "llmd.ai", "variantautoscalings", "status", "team-a"),
			deny("update", "apps", "deployments", "scale", "team-a"), deny("list", "", "nodes", "", ""),
		}, ""},
		{components, []access{allow("update", "apps", "deployments", "scale", "team-a"), allow("list", "", "nodes", "", "")}, ""},
		{"config/overlays/direct-actuation", []access{allow("update", "apps", "deployments", "scale", "team-a"), deny("list", "", "nodes", "", "")}, ""},
		{"config/overlays/namespaced", []access{
			allow("list", "", "pods", "", "llm-d"), allow("watch", "llmd.ai", "variantautoscalings", "", "llm-d"),
			deny("list", "", "pods", "", ""), deny("list", "", "pods", "", "default"), deny("watch", "apps", "deployments", "", ""),
			deny("update", "apps", "deployments", "scale", "llm-d"), deny("list", "", "nodes", "", ""),
		}, "--watch-namespaces=llm-d"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			dir := c.dir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(env.Root, dir)
			}
			// Each case in a namespace of its own, so that the bindings of
			// one do not answer for the next.
			ns := fmt.Sprintf("wva-kustomize-%d", i)
			var objs []*unstructured.Unstructured
			for _, u := range buildAbs(t, dir) {
				if u.GetKind() == "Namespace" || u.GetKind() == "CustomResourceDefinition" {
					continue
				}
				if u.GetNamespace() == built {
					u.SetNamespace(ns)
				}
				subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
				for _, s := range subjects {
					if m, _ := s.(map[string]any); m["namespace"] == built {
						m["namespace"] = ns
					}
				}
				if len(subjects) > 0 {
					_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
				}
				objs = append(objs, u)
			}
			ensureNamespaces(t, objs)
			applyRBAC(t, objs)
			checkAccess(t, ns, sa, append(baseAccess(ns), c.access...))
			if c.args != "" {
				if d := rendered(t, objs, "Deployment", "wva-controller"); !strings.Contains(d, c.args) {
					t.Errorf("the manager lacks %s", c.args)
				}
			}
		})
	}
}
