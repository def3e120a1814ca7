package manifests

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/llm-d-incubation/wva/internal/config"
)

// configMapKind is one of the controller's ConfigMaps: the values key that
// configures it, its documented name, the flag that gives the controller
// its name and the parser of internal/config that reads it (nil: the
// controller's own tuner state).
type configMapKind struct {
	key, doc, flag string
	parse          func(map[string]string) error
}

func parsesWith[T any](f func(map[string]string) (T, error)) func(map[string]string) error {
	return func(d map[string]string) error { _, err := f(d); return err }
}

var configMapKinds = []configMapKind{
	{"main", "variantautoscaling-config", "config-map", parsesWith(config.ParseMain)},
	{"accelerators", "accelerator-unit-costs", "accelerators-config-map", parsesWith(config.ParseAccelerators)},
	{"serviceClasses", "service-classes-config", "service-classes-config-map", parsesWith(config.ParseServiceClasses)},
	{"saturation", "wva-saturation-scaling-config", "saturation-config-map", parsesWith(config.ParseSaturation)},
	{"queueingModel", "wva-queueing-model-config", "queueing-model-config-map", parsesWith(config.ParseQueueingModel)},
	{"tuner", "tuner-config", "tuner-config-map", parsesWith(config.ParseTuner)},
	{"inventory", "wva-accelerator-inventory", "inventory-config-map", parsesWith(config.ParseInventory)},
	{"tunerState", "wva-tuner-state", "tuner-state-config-map", nil},
}

// fullname is the release's full name, as wva.fullname computes it.
func (r release) fullname() string {
	if s, _, _ := unstructured.NestedString(r.values, "fullnameOverride"); s != "" {
		return s
	}
	if strings.Contains(r.name, "wva") {
		return r.name
	}
	return r.name + "-wva"
}

// configMapName is the name the release gives a ConfigMap: its value, else
// the documented one for the release wva, else prefixed with the full name.
func (r release) configMapName(k configMapKind) string {
	path := []string{"configMaps", k.key, "name"}
	if k.key == "main" {
		path = []string{"config", "name"}
	}
	if s, _, _ := unstructured.NestedString(r.values, path...); s != "" {
		return s
	}
	if r.fullname() == "wva" {
		return k.doc
	}
	return r.fullname() + "-" + strings.TrimPrefix(k.doc, "wva-")
}

// deployment decodes the release's Deployment.
func deployment(t *testing.T, objs []object) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(one(t, objs, "Deployment", "").u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// checkRelease: what every release must be, whatever its values.
func checkRelease(t *testing.T, r release, objs []object) {
	t.Helper()
	k := kinds(objs)
	for _, want := range []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "Deployment", "Service"} {
		if k[want] == 0 {
			t.Errorf("no %s rendered (kinds %v)", want, k)
		}
	}
	for _, o := range objs {
		if l := o.u.GetLabels(); l["app.kubernetes.io/instance"] != r.name || l["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s: labels %v lack the release's instance and managed-by", o, l)
		}
	}
	d := deployment(t, objs)
	checkPodHardened(t, d)
	checkNames(t, r, objs, d)
}

// checkPodHardened: non-root, read-only root filesystem, no privilege
// escalation, and no checksum/config annotation (the controller reloads its
// ConfigMaps; a restart would reset its scale-down window).
func checkPodHardened(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
		t.Error("the pod does not set runAsNonRoot")
	}
	for _, c := range ps.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: want a read-only root filesystem and no privilege escalation", c.Name)
		}
	}
	for a := range d.Spec.Template.Annotations {
		if strings.HasPrefix(a, "checksum/") {
			t.Errorf("pod annotation %s: a ConfigMap change would restart the controller", a)
		}
	}
}

// checkNames: the controller is told the name of every ConfigMap and its
// Lease; each ConfigMap the chart renders has that name and is valid
// configuration for internal/config.
func checkNames(t *testing.T, r release, objs []object, d *appsv1.Deployment) {
	t.Helper()
	args := d.Spec.Template.Spec.Containers[0].Args
	if want := "--leader-election-id=" + r.fullname() + ".llmd.ai"; !slices.Contains(args, want) {
		t.Errorf("args %v lack %s", args, want)
	}
	for _, k := range configMapKinds {
		name := r.configMapName(k)
		if want := fmt.Sprintf("--%s=%s", k.flag, name); !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
		i := slices.IndexFunc(objs, func(o object) bool { return o.u.GetKind() == "ConfigMap" && o.u.GetName() == name })
		if i < 0 || k.parse == nil {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(objs[i].u.Object, "data")
		if err := k.parse(data); err != nil {
			t.Errorf("ConfigMap %s is not valid configuration: %v", name, err)
		}
	}
}

// configMapData returns the data of the rendered ConfigMap of a kind.
func configMapData(t *testing.T, r release, objs []object, key string) map[string]string {
	t.Helper()
	for _, k := range configMapKinds {
		if k.key == key {
			data, _, _ := unstructured.NestedStringMap(one(t, objs, "ConfigMap", r.configMapName(k)).u.Object, "data")
			return data
		}
	}
	t.Fatalf("no ConfigMap kind %s", key)
	return nil
}

// bindingsOf lists "Kind namespace/name -> role" of the bindings to the
// release's service account.
func bindingsOf(objs []object, sa, ns string) []string {
	var out []string
	for _, o := range objs {
		if o.u.GetKind() != "ClusterRoleBinding" && o.u.GetKind() != "RoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.u.Object, "subjects")
		for _, s := range subjects {
			if m, _ := s.(map[string]any); m["kind"] == "ServiceAccount" && m["name"] == sa && m["namespace"] == ns {
				role, _, _ := unstructured.NestedString(o.u.Object, "roleRef", "name")
				out = append(out, fmt.Sprintf("%s %s/%s -> %s", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName(), role))
			}
		}
	}
	return out
}
