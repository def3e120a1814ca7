package manifests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// manifestDirs hold the objects an operator applies.
var manifestDirs = []string{"config/samples", "config/prometheus"}

// notObjects are the YAML files of manifestDirs that are not Kubernetes
// objects, and what checks them instead. Any other document without
// apiVersion and kind fails TestSamplesLoad.
var notObjects = map[string]string{
	"kustomization.yaml":             "kustomize (internal/controller's deploy test builds config/samples)",
	"prometheus-adapter-values.yaml": "Helm values of prometheus-adapter (TestAdapterValues)",
}

// object is one document of a manifest file.
type object struct {
	file string // relative to the repository root
	doc  int    // 0-based document index
	u    *unstructured.Unstructured
}

func (o object) String() string {
	return fmt.Sprintf("%s#%d %s %s/%s", o.file, o.doc, o.u.GetKind(), o.u.GetNamespace(), o.u.GetName())
}

// readDocs splits a multi-document YAML file into its non-empty documents.
func readDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// loadObjects returns every object of manifestDirs, in file order.
func loadObjects(t *testing.T) []object {
	t.Helper()
	root := testenv.Root()
	var objs []object
	for _, dir := range manifestDirs {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(files)
		for _, f := range files {
			rel, _ := filepath.Rel(root, f)
			if _, ok := notObjects[filepath.Base(f)]; ok {
				continue
			}
			for i, d := range readDocs(t, f) {
				// Strict: a duplicate key is an error. UnmarshalJSON
				// keeps integers int64, as the API machinery does.
				j, err := yaml.YAMLToJSONStrict(d)
				if err != nil {
					t.Fatalf("%s#%d: %v", rel, i, err)
				}
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(j); err != nil {
					t.Fatalf("%s#%d: %v", rel, i, err)
				}
				if u.GetAPIVersion() == "" || u.GetKind() == "" {
					t.Fatalf("%s#%d has no apiVersion or kind: list it in notObjects with what checks it", rel, i)
				}
				objs = append(objs, object{file: rel, doc: i, u: u})
			}
		}
	}
	return objs
}

// ensureNamespace creates a namespace for real (a dry-run create in a
// missing namespace is refused).
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	if ns == "" {
		return
	}
	err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// dryRun creates a copy of u with dryRun=All and fieldValidation=Strict
// and returns the object as the API server would have stored it.
func dryRun(t *testing.T, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	ensureNamespace(t, u.GetNamespace())
	c := u.DeepCopy()
	err := env.Client.Create(context.Background(), c, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
	if apierrors.IsAlreadyExists(err) && u.GetNamespace() == "" {
		// A cluster-wide object the suite installed (the CRD): an upgrade
		// applies it over the installed one.
		c = u.DeepCopy()
		err = env.Client.Patch(context.Background(), c, client.Apply, client.DryRunAll, client.FieldOwner("helm"), client.ForceOwnership) //nolint:staticcheck // unstructured apply
	}
	return c, err
}

// dropped lists the paths of want that got lacks or changed: fields the
// API server silently removed (a disabled feature gate, a pruned field) or
// normalised to something else.
func dropped(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, dropped(v, gv, path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var out []string
		for i := range w {
			out = append(out, dropped(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) && fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: %v became %v", path, want, got)}
		}
		return nil
	}
}

// TestSamplesLoad: the files parse strictly (no duplicate keys) and hold
// the kinds the documentation promises.
func TestSamplesLoad(t *testing.T) {
	kinds := map[string]int{}
	for _, o := range loadObjects(t) {
		kinds[o.u.GetKind()]++
	}
	for _, k := range []string{"VariantAutoscaling", "HorizontalPodAutoscaler", "ScaledObject", "ServiceMonitor", "ConfigMap"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the samples (kinds: %v)", k, kinds)
		}
	}
}

// TestSamplesAccepted: every object of config/samples and config/prometheus
// passes a server-side dry run with strict field validation (an unknown or
// duplicate field is an error, not a warning) against the real schemas, and
// the API server keeps every field as written: none is pruned or dropped by
// a disabled feature gate (the HPA's tolerance is, before Kubernetes 1.35,
// unless HPAConfigurableTolerance is on).
func TestSamplesAccepted(t *testing.T) {
	objs := loadObjects(t)
	for _, o := range objs {
		t.Run(o.file+"#"+fmt.Sprint(o.doc), func(t *testing.T) {
			got, err := dryRun(t, o.u)
			if err != nil {
				t.Fatalf("%s rejected: %v", o, err)
			}
			for _, part := range []string{"spec", "data"} {
				if d := dropped(o.u.Object[part], got.Object[part], part); len(d) > 0 {
					t.Errorf("%s: the API server did not keep %v", o, d)
				}
			}
		})
	}
	// The samples are consistent with each other.
	if p := checkSamples(objs, loadAdapterValues(t)); len(p) > 0 {
		t.Errorf("the samples have problems:\n  %s", strings.Join(p, "\n  "))
	}
}

// sampleOf returns a copy of the first sample of the kind.
func sampleOf(t *testing.T, objs []object, kind string) object {
	t.Helper()
	i := slices.IndexFunc(objs, func(o object) bool { return o.u.GetKind() == kind })
	if i < 0 {
		t.Fatalf("no %s sample", kind)
	}
	o := objs[i]
	o.u = o.u.DeepCopy()
	return o
}

func set(t *testing.T, u *unstructured.Unstructured, v any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
		t.Fatal(err)
	}
}

// setIn sets a field of the first element of the list at path.
func setIn(t *testing.T, u *unstructured.Unstructured, path []string, field string, v any) {
	t.Helper()
	l, ok, err := unstructured.NestedSlice(u.Object, path...)
	if err != nil || !ok || len(l) == 0 {
		t.Fatalf("%v: no list (%v)", path, err)
	}
	l[0].(map[string]any)[field] = v
	if err := unstructured.SetNestedSlice(u.Object, l, path...); err != nil {
		t.Fatal(err)
	}
}

// TestValidationIsReal: the dry run rejects broken copies of the samples,
// so TestSamplesAccepted's pass means something: the CRDs' schemas are
// installed and enforced, and strict field validation catches typos.
func TestValidationIsReal(t *testing.T) {
	objs := loadObjects(t)
	triggers := []string{"spec", "triggers"}
	cases := []struct {
		name, kind string
		mutate     func(t *testing.T, u *unstructured.Unstructured)
		want       string // in the error
	}{
		{"ScaledObject: a misspelt field", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, map[string]any{"failureThreshold": int64(3), "replicas": int64(1)}, "spec", "fallbak")
		}, `unknown field "spec.fallbak"`},
		{"ScaledObject: an unknown fallback behavior", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, "holdCurrent", "spec", "fallback", "behavior")
		}, "spec.fallback.behavior: Unsupported value"},
		{"ScaledObject: a negative failureThreshold", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, int64(-1), "spec", "fallback", "failureThreshold")
		}, "spec.fallback.failureThreshold"},
		{"ScaledObject: no trigger", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, []any{}, triggers...)
		}, "spec.triggers"},
		{"ScaledObject: a polling interval of 0", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, int64(0), "spec", "pollingInterval")
		}, "spec.pollingInterval"},
		{"ScaledObject: a misspelt HPA behavior field", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, int64(60), "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilisationWindowSeconds")
		}, "stabilisationWindowSeconds"},
		{"ScaledObject: a trigger field misplaced under spec", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, "AverageValue", "spec", "metricType")
		}, `unknown field "spec.metricType"`},
		{"HorizontalPodAutoscaler: a policy of 0 pods", "HorizontalPodAutoscaler", func(t *testing.T, u *unstructured.Unstructured) {
			setIn(t, u, []string{"spec", "behavior", "scaleDown", "policies"}, "value", int64(0))
		}, "spec.behavior.scaleDown.policies[0].value"},
		{"HorizontalPodAutoscaler: a negative tolerance", "HorizontalPodAutoscaler", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, "-0.1", "spec", "behavior", "scaleUp", "tolerance")
		}, "spec.behavior.scaleUp.tolerance"},
		{"HorizontalPodAutoscaler: a misspelt behavior field", "HorizontalPodAutoscaler", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, int64(60), "spec", "behavior", "scaleDown", "stabilisationWindowSeconds")
		}, `unknown field "spec.behavior.scaleDown.stabilisationWindowSeconds"`},
		{"ServiceMonitor: an unknown scheme", "ServiceMonitor", func(t *testing.T, u *unstructured.Unstructured) {
			setIn(t, u, []string{"spec", "endpoints"}, "scheme", "ftp")
		}, "Unsupported value"},
		{"VariantAutoscaling: a misspelt field", "VariantAutoscaling", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, int64(8), "spec", "maxReplica")
		}, `unknown field "spec.maxReplica"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := sampleOf(t, objs, c.kind)
			if _, err := dryRun(t, o.u); err != nil {
				t.Fatalf("the unchanged sample is rejected: %v", err)
			}
			c.mutate(t, o.u)
			_, err := dryRun(t, o.u)
			if err == nil {
				t.Fatalf("accepted: %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("rejected, but not for %q: %v", c.want, err)
			}
		})
	}
}

// TestSchemaCannotCatch: the mistakes the schemas accept, which is why
// checkSamples exists. The old sample's metricType under the trigger's
// metadata is a valid string in a map[string]string, as is an ignored
// ignoreNullValues, a missing fallback or a misspelt metricType (KEDA's
// CRD has no enum for it; its admission webhook, not run here, has). The
// API server takes each; checkSamples reports each.
func TestSchemaCannotCatch(t *testing.T) {
	objs := loadObjects(t)
	adapter := loadAdapterValues(t)
	cases := []struct {
		name   string
		kind   string
		mutate func(t *testing.T, u *unstructured.Unstructured)
		want   string // in checkSamples' report
	}{
		{"metricType in the trigger's metadata (the old sample)", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			trig := firstTrigger(t, u)
			delete(trig, "metricType")
			trig["metadata"].(map[string]any)["metricType"] = "AverageValue"
			setTrigger(t, u, trig)
		}, "metricType in the trigger's metadata"},
		{"metricType misspelt", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			trig := firstTrigger(t, u)
			trig["metricType"] = "Averagevalue"
			setTrigger(t, u, trig)
		}, "metricType"},
		{"empty results read as 0", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			trig := firstTrigger(t, u)
			delete(trig["metadata"].(map[string]any), "ignoreNullValues")
			setTrigger(t, u, trig)
		}, "ignoreNullValues"},
		{"no fallback", "ScaledObject", func(_ *testing.T, u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "fallback")
		}, "no fallback"},
		{"fallback to 0 replicas", "ScaledObject", func(t *testing.T, u *unstructured.Unstructured) {
			set(t, u, int64(0), "spec", "fallback", "replicas")
		}, "fallback.replicas"},
		{"no HPA behavior from KEDA", "ScaledObject", func(_ *testing.T, u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "advanced")
		}, "behavior"},
		{"an HPA without behavior", "HorizontalPodAutoscaler", func(_ *testing.T, u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "behavior")
		}, "behavior"},
		{"an HPA reading a metric the adapter does not serve", "HorizontalPodAutoscaler", func(t *testing.T, u *unstructured.Unstructured) {
			l, _, _ := unstructured.NestedSlice(u.Object, "spec", "metrics")
			l[0].(map[string]any)["external"].(map[string]any)["metric"].(map[string]any)["name"] = "inferno_desired_ratio"
			set(t, u, l, "spec", "metrics")
		}, "does not serve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := sampleOf(t, objs, c.kind)
			c.mutate(t, o.u)
			if _, err := dryRun(t, o.u); err != nil {
				t.Errorf("the API server rejects it after all (checkSamples is not the only guard): %v", err)
			}
			p := checkSamples([]object{o}, adapter)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("checkSamples does not report %q: %v", c.want, p)
			}
		})
	}
}

func firstTrigger(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	l, ok, err := unstructured.NestedSlice(u.Object, "spec", "triggers")
	if err != nil || !ok || len(l) == 0 {
		t.Fatalf("no trigger: %v", err)
	}
	return l[0].(map[string]any)
}

func setTrigger(t *testing.T, u *unstructured.Unstructured, trig map[string]any) {
	t.Helper()
	l, _, _ := unstructured.NestedSlice(u.Object, "spec", "triggers")
	l[0] = trig
	set(t, u, l, "spec", "triggers")
}
