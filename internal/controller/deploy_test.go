package controller

import (
	"context"
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

// build renders a kustomization as `kubectl apply -k` would.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(env.Root, dir))
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
// config/default` is accepted by the real API server (server-side apply,
// dry run; the namespace is created for real first).
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
	for _, u := range objs {
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
