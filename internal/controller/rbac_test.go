package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// access is one request a subject may or may not make: a resource
// (group, resource, subresource, namespace; "" namespace means every
// namespace) or a non-resource path.
type access struct {
	verb, group, resource, sub, ns, path string
	allowed                              bool
}

func (a access) String() string {
	if a.path != "" {
		return a.verb + " " + a.path
	}
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.sub != "" {
		r += "/" + a.sub
	}
	where := "in every namespace"
	if a.ns != "" {
		where = "in " + a.ns
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

func allow(verb, group, resource, sub, ns string) access {
	return access{verb: verb, group: group, resource: resource, sub: sub, ns: ns, allowed: true}
}

func deny(verb, group, resource, sub, ns string) access {
	return access{verb: verb, group: group, resource: resource, sub: sub, ns: ns}
}

// isRBAC says whether an object is one of the RBAC kinds (or a service
// account) that applyRBAC creates for real.
func isRBAC(u *unstructured.Unstructured) bool {
	switch u.GetKind() {
	case "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "ServiceAccount":
		return true
	}
	return false
}

// applyRBAC creates the RBAC objects among objs for real (server-side
// apply), creating the namespaces they need, and deletes them with the
// test.
func applyRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	ensureNamespaces(t, objs)
	for _, u := range objs {
		if !isRBAC(u) {
			continue
		}
		u = u.DeepCopy()
		if err := env.Client.Patch(ctx, u, client.Apply, client.FieldOwner("rbac-test"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			t.Fatalf("%s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), u); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		})
	}
}

// ensureNamespaces creates the namespaces the objects are in.
func ensureNamespaces(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" {
			err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
}

// checkAccess asks the real API server (SubjectAccessReview) whether the
// service account ns/name may make each request. The allowed ones are
// polled first (RBAC reaches the authoriser through its informers), then
// the denied ones are checked.
func checkAccess(t *testing.T, ns, name string, want []access) {
	t.Helper()
	user := "system:serviceaccount:" + ns + ":" + name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	ask := func(a access) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups}}
		if a.path != "" {
			sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.path, Verb: a.verb}
		} else {
			sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource,
				Subresource: a.sub, Namespace: a.ns}
		}
		if err := env.Client.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	for _, a := range want {
		if !a.allowed {
			continue
		}
		deadline := time.Now().Add(15 * time.Second)
		for !ask(a) {
			if time.Now().After(deadline) {
				t.Errorf("%s may not %s", user, a)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, a := range want {
		if !a.allowed && ask(a) {
			t.Errorf("%s may %s", user, a)
		}
	}
}

// bindings lists "Kind namespace/name -> roleRef" of the bindings among
// objs granting a role to the service account ns/name.
func bindings(objs []*unstructured.Unstructured, ns, name string) []string {
	var out []string
	for _, u := range objs {
		if u.GetKind() != "ClusterRoleBinding" && u.GetKind() != "RoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			if m["kind"] == "ServiceAccount" && m["name"] == name && m["namespace"] == ns {
				role, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
				out = append(out, fmt.Sprintf("%s %s/%s -> %s", u.GetKind(), u.GetNamespace(), u.GetName(), role))
			}
		}
	}
	return out
}

// The manager's service account's expected access, whatever the values:
// its own ConfigMaps and lease, the reviews of the secure metrics server;
// nothing on ConfigMaps or Secrets elsewhere.
func baseAccess(ns string) []access {
	return []access{
		allow("create", "authentication.k8s.io", "tokenreviews", "", ""),
		allow("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
		allow("update", "", "configmaps", "", ns),
		allow("update", "coordination.k8s.io", "leases", "", ns),
		deny("get", "", "configmaps", "", "default"),
		deny("list", "", "secrets", "", ""),
		deny("get", "", "secrets", "", ns),
		{verb: "get", path: "/metrics"},
	}
}

func hasPrefixIn(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
