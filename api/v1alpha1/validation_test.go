package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientKey "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func create(t *testing.T, name, doc string) error {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("%s: bad YAML in the test: %v", name, err)
	}
	u.SetName(name)
	u.SetNamespace("default")
	return env.Client.Create(context.Background(), u)
}

const head = "apiVersion: llmd.ai/v1alpha1\nkind: VariantAutoscaling\nspec:\n"

// TestSamplesAccepted applies every sample VariantAutoscaling, Appendix C
// Example 1 among them, and checks the defaults the API server fills.
func TestSamplesAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.Root, "config", "samples", "variantautoscaling*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("samples: %v %v", files, err)
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := create(t, fmt.Sprintf("sample-%d", i), string(b)); err != nil {
			t.Errorf("%s rejected: %v", filepath.Base(f), err)
		}
	}
	var va wvav1.VariantAutoscaling
	if err := env.Client.Get(context.Background(), keyOf("sample-"+fmt.Sprint(indexOf(files, "variantautoscaling-profiled.yaml"))), &va); err != nil {
		t.Fatal(err)
	}
	if va.Spec.MinReplicas == nil || *va.Spec.MinReplicas != 1 {
		t.Errorf("minReplicas default: got %v, want 1", va.Spec.MinReplicas)
	}
	if va.Spec.Actuator != wvav1.ActuatorMetricsOnly {
		t.Errorf("actuator default: got %q", va.Spec.Actuator)
	}
	if got := va.Spec.ModelProfile.Accelerators[1].PerfParms.DecodeParms.Alpha; got != "3.5" {
		t.Errorf("H100 alpha: got %q", got)
	}
	if va.TargetName() != va.Name {
		t.Errorf("target of a VA without scaleTargetRef: got %q", va.TargetName())
	}
}

func TestValidation(t *testing.T) {
	cases := []struct {
		name, spec string
		want       string // substring of the error; "" means accepted
	}{
		{"minimal", "  modelID: m\n", ""},
		{"scale-to-zero", "  modelID: m\n  minReplicas: 0\n  maxReplicas: 3\n", ""},
		{"equal-bounds", "  modelID: m\n  minReplicas: 2\n  maxReplicas: 2\n", ""},
		{"no-model", "  minReplicas: 1\n", "spec.modelID: Required value"},
		{"empty-model", "  modelID: \"\"\n", "spec.modelID"},
		{"blank-model", "  modelID: \"   \"\n", "modelID must not be blank"},
		{"min-above-max", "  modelID: m\n  minReplicas: 5\n  maxReplicas: 2\n", "minReplicas must not exceed maxReplicas"},
		{"negative-min", "  modelID: m\n  minReplicas: -1\n", "spec.minReplicas: Invalid value: -1"},
		{"zero-max", "  modelID: m\n  maxReplicas: 0\n", "spec.maxReplicas"},
		{"cost-word", "  modelID: m\n  variantCost: cheap\n", "spec.variantCost: Invalid value"},
		{"cost-negative", "  modelID: m\n  variantCost: \"-3\"\n", "spec.variantCost"},
		{"cost-ok", "  modelID: m\n  variantCost: \"12.5\"\n", ""},
		{"bad-actuator", "  modelID: m\n  actuator: sometimes\n", "spec.actuator: Unsupported value"},
		{"bad-kind", "  modelID: m\n  scaleTargetRef: {kind: StatefulSet, name: x}\n", "spec.scaleTargetRef.kind: Unsupported value"},
		{"no-target-name", "  modelID: m\n  scaleTargetRef: {kind: Deployment}\n", "spec.scaleTargetRef.name: Required value"},
		{"bad-alpha", "  modelID: m\n  modelProfile:\n    accelerators:\n    - acc: H100\n      perfParms: {decodeParms: {alpha: fast, beta: \"1\"}, prefillParms: {gamma: \"1\", delta: \"1\"}}\n", "alpha: Invalid value"},
		{"dup-acc", "  modelID: m\n  modelProfile:\n    accelerators:\n    - acc: H100\n    - acc: H100\n", "Duplicate value"},
		{"acc-not-in-profile", "  modelID: m\n  accelerator: A100\n  modelProfile:\n    accelerators:\n    - acc: H100\n", "accelerator must be one of modelProfile.accelerators"},
		{"acc-in-profile", "  modelID: m\n  accelerator: H100\n  modelProfile:\n    accelerators:\n    - acc: H100\n", ""},
		{"zero-acc-count", "  modelID: m\n  modelProfile:\n    accelerators:\n    - acc: H100\n      accCount: 0\n", "accCount: Invalid value: 0"},
		{"slo-ref-no-key", "  modelID: m\n  sloClassRef: {name: service-classes-config}\n", "spec.sloClassRef.key: Required value"},
		{"bad-role", "  modelID: m\n  role: encode\n", "spec.role: Unsupported value"},
		{"scale-up-limit", "  modelID: m\n  scaleUpLimit: {factor: \"1.5\", replicas: 2}\n", ""},
		{"scale-up-factor-below-1", "  modelID: m\n  scaleUpLimit: {factor: \"0.5\"}\n", "factor must be at least 1"},
		{"scale-up-factor-word", "  modelID: m\n  scaleUpLimit: {factor: double}\n", "spec.scaleUpLimit.factor"},
		{"scale-up-zero-replicas", "  modelID: m\n  scaleUpLimit: {replicas: 0}\n", "spec.scaleUpLimit.replicas"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := create(t, "v-"+c.name, head+c.spec)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func keyOf(name string) clientKey.NamespacedName {
	return clientKey.NamespacedName{Namespace: "default", Name: name}
}

func indexOf(files []string, base string) int {
	for i, f := range files {
		if filepath.Base(f) == base {
			return i
		}
	}
	return -1
}
