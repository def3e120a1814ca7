//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// ControllerNamespace is config/default's namespace: the controller's
// ConfigMaps, tuner state and Lease.
const ControllerNamespace = "workload-variant-autoscaler-system"

// InstallWVA applies `kustomize build config/default` (the CRD, RBAC,
// namespace, Service and ConfigMaps) except the controller's Deployment:
// the harness runs the controller as a process instead. config overrides
// keys of the main ConfigMap (variantautoscaling-config), for example
// PROMETHEUS_BASE_URL and GLOBAL_OPT_INTERVAL.
func (h *Harness) InstallWVA(config map[string]string) {
	h.t.Helper()
	objs := h.kustomize("config/default")
	// Namespaces first, like kubectl apply does.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(applyRank(a), applyRank(b))
	})
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			continue
		}
		if u.GetKind() == "ConfigMap" && u.GetName() == "variantautoscaling-config" {
			for k, v := range config {
				if err := unstructured.SetNestedField(u.Object, v, "data", k); err != nil {
					h.t.Fatal(err)
				}
			}
		}
		h.Apply(u)
	}
}

// applyRank orders namespaces before what lives in them.
func applyRank(u *unstructured.Unstructured) int {
	if u.GetKind() == "Namespace" {
		return 0
	}
	return 1
}

// kustomize renders the kustomization dir (relative to the repository).
func (h *Harness) kustomize(dir string) []*unstructured.Unstructured {
	h.t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(h.Root, dir))
	if err != nil {
		h.t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		h.t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			h.t.Fatalf("%s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// Apply server-side applies obj (typed or unstructured) as the harness.
func (h *Harness) Apply(obj client.Object) {
	h.t.Helper()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		m, err := toUnstructured(obj, h.Client)
		if err != nil {
			h.t.Fatal(err)
		}
		u = m
	}
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	// A kind whose CRD was just established may not be in the client's
	// REST mapping yet (discovery lags the CRD's Established condition,
	// more so on a loaded machine): retry that error for a while.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := h.Client.Patch(h.Ctx(), u, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership) //nolint:staticcheck // unstructured apply
		if err == nil {
			return
		}
		if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			h.t.Fatalf("applying %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Create creates obj, failing the test on any error but AlreadyExists.
func (h *Harness) Create(obj client.Object) {
	h.t.Helper()
	if err := h.Client.Create(h.Ctx(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}

// Namespace creates the namespace name.
func (h *Harness) Namespace(name string) {
	h.t.Helper()
	h.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// Deployment is a model server Deployment with replicas and the label
// app=name (what `wva emulate` manages when selected by label).
func Deployment(ns, name string, replicas int32, labels map[string]string) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	podLabels := map[string]string{"app": name}
	for k, v := range labels {
		podLabels[k] = v
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: podLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:emulated"}}},
			},
		},
	}
}

// VariantAutoscaling is a VA for the Deployment of the same name.
func VariantAutoscaling(ns, name, model, accelerator string, lo, hi int32, cost string) *wvav1.VariantAutoscaling {
	return &wvav1.VariantAutoscaling{
		TypeMeta:   metav1.TypeMeta{APIVersion: "llmd.ai/v1alpha1", Kind: "VariantAutoscaling"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: wvav1.VariantAutoscalingSpec{
			ScaleTargetRef: &wvav1.CrossVersionObjectReference{Kind: "Deployment", Name: name},
			ModelID:        model, Accelerator: accelerator,
			MinReplicas: ptr.To(lo), MaxReplicas: ptr.To(hi), VariantCost: cost,
		},
	}
}

// ServiceAccountToken creates the ServiceAccount ns/name, binds it to the
// ClusterRole role (none when empty), requests a token for it (an hour)
// and writes it to <artifacts>/<name>.token, returning the token and the
// file.
func (h *Harness) ServiceAccountToken(ns, name, role string) (token, file string) {
	h.t.Helper()
	ctx := h.Ctx()
	h.Create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	if role != "" {
		h.Create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}})
	}
	tr, err := h.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	file = filepath.Join(h.Artifacts, name+".token")
	writeFile(h.t, file, tr.Status.Token)
	h.Note("token of ServiceAccount %s/%s (ClusterRole %q): %s", ns, name, role, file)
	return tr.Status.Token, file
}

// GetVA reads the VariantAutoscaling ns/name.
func (h *Harness) GetVA(ctx context.Context, ns, name string) (*wvav1.VariantAutoscaling, error) {
	va := &wvav1.VariantAutoscaling{}
	return va, h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, va)
}

// SetDeploymentReady writes the Deployment's status as its controller
// would with ready of its replicas up (no Deployment controller runs
// here: `wva emulate` plays it, or a scenario does by hand).
func (h *Harness) SetDeploymentReady(ns, name string, ready int32) {
	h.t.Helper()
	d := &appsv1.Deployment{}
	if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		h.t.Fatal(err)
	}
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas, d.Status.UpdatedReplicas = ptr.Deref(d.Spec.Replicas, 1), ptr.Deref(d.Spec.Replicas, 1)
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = ready, ready
	d.Status.UnavailableReplicas = d.Status.Replicas - ready
	if err := h.Client.Status().Update(h.Ctx(), d); err != nil {
		h.t.Fatalf("status of Deployment %s/%s: %v", ns, name, err)
	}
}

// LeaderWorkerSet is a LeaderWorkerSet of replicas groups of size pods,
// each pod labelled app=name and with labels.
func LeaderWorkerSet(ns, name string, replicas, size int32, labels map[string]string) *unstructured.Unstructured {
	podLabels := map[string]any{"app": name}
	for k, v := range labels {
		podLabels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"namespace": ns, "name": name, "labels": podLabels},
		"spec": map[string]any{"replicas": int64(replicas), "leaderWorkerTemplate": map[string]any{"size": int64(size),
			"workerTemplate": map[string]any{"metadata": map[string]any{"labels": podLabels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "vllm", "image": "vllm/vllm-openai:emulated"}}}}}},
	}}
}

// installLWSCRD applies LeaderWorkerSet's CRD (bin/crds, pinned by
// hack/crds: `make crds`) and waits until it is established.
func (h *Harness) installLWSCRD() {
	h.t.Helper()
	f := filepath.Join(h.Root, "bin", "crds", "leaderworkerset.x-k8s.io_leaderworkersets.yaml")
	if _, err := os.Stat(f); err != nil {
		h.t.Fatalf("LeaderWorkerSet's CRD: %v (`make crds` downloads it)", err)
	}
	h.installCRDs("LeaderWorkerSet", []string{f})
}
