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
	"sigs.k8s.io/controller-runtime/pkg/client"
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
		{"statefulset", "  modelID: m\n  scaleTargetRef: {kind: StatefulSet, name: x}\n", ""},
		{"leaderworkerset", "  modelID: m\n  scaleTargetRef: {kind: LeaderWorkerSet, apiVersion: leaderworkerset.x-k8s.io/v1, name: x}\n", ""},
		{"bad-kind", "  modelID: m\n  scaleTargetRef: {kind: statefulset, name: x}\n", "spec.scaleTargetRef.kind: Invalid value"},
		{"bad-api-version", "  modelID: m\n  scaleTargetRef: {kind: StatefulSet, apiVersion: apps, name: x}\n", "spec.scaleTargetRef.apiVersion: Invalid value"},
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
	cases = append(cases, aliasCases...)
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

// aliasCases: the upstream llm-d autoscaler's names are aliases, each
// accepted alone or equal to its field, and rejected when they differ.
var aliasCases = []struct {
	name, spec string
	want       string
}{
	{"type-alone", "  modelID: m\n  acceleratorType: H100\n", ""},
	{"type-same", "  modelID: m\n  accelerator: H100\n  acceleratorType: H100\n", ""},
	{"type-differs", "  modelID: m\n  accelerator: H100\n  acceleratorType: A100\n", "acceleratorType is another name for accelerator: set one, or both to the same value"},
	{"type-empty", "  modelID: m\n  acceleratorType: \"\"\n", "spec.acceleratorType"},
	{"type-not-in-profile", "  modelID: m\n  acceleratorType: A100\n  modelProfile:\n    accelerators:\n    - acc: H100\n",
		"accelerator must be one of modelProfile.accelerators"},
	{"count-alone", "  modelID: m\n  acceleratorType: H100\n  acceleratorCount: 4\n", ""},
	{"count-zero", "  modelID: m\n  acceleratorCount: 0\n", "spec.acceleratorCount: Invalid value: 0"},
	{"count-same", "  modelID: m\n  acceleratorType: H100\n  acceleratorCount: 2\n  modelProfile:\n    accelerators:\n    - {acc: H100, accCount: 2}\n    - {acc: A100, accCount: 1}\n", ""},
	{"count-differs", "  modelID: m\n  accelerator: H100\n  acceleratorCount: 2\n  modelProfile:\n    accelerators:\n    - {acc: H100, accCount: 1}\n",
		"acceleratorCount must equal accCount of the variant's accelerator in modelProfile"},
	// accCount has no default (an omitted one is read from acceleratorCount,
	// else the pod template): an entry without it agrees with any count.
	{"count-entry-without-count", "  modelID: m\n  acceleratorCount: 2\n  modelProfile:\n    accelerators:\n    - {acc: H100}\n", ""},
	{"profile-alone", "  modelID: m\n  variantProfile: {maxBatchSize: 64, perfParms: {decodeParms: {alpha: \"1\", beta: \"2\"}, prefillParms: {gamma: \"3\", delta: \"4\"}}}\n", ""},
	{"profile-zero-batch", "  modelID: m\n  variantProfile: {maxBatchSize: 0}\n", "spec.variantProfile.maxBatchSize"},
	{"profile-bad-alpha", "  modelID: m\n  variantProfile: {perfParms: {decodeParms: {alpha: fast, beta: \"2\"}, prefillParms: {gamma: \"3\", delta: \"4\"}}}\n", "alpha: Invalid value"},
	{"profile-same", "  modelID: m\n  accelerator: H100\n  variantProfile: {maxBatchSize: 64, perfParms: {decodeParms: {alpha: \"1\", beta: \"2\"}, prefillParms: {gamma: \"3\", delta: \"4\"}}}\n" +
		"  modelProfile:\n    accelerators:\n    - {acc: H100, maxBatchSize: 64, perfParms: {decodeParms: {alpha: \"1\", beta: \"2\"}, prefillParms: {gamma: \"3\", delta: \"4\"}}}\n", ""},
	{"profile-batch-differs", "  modelID: m\n  accelerator: H100\n  variantProfile: {maxBatchSize: 64}\n  modelProfile:\n    accelerators:\n    - {acc: H100, maxBatchSize: 128}\n",
		"variantProfile must equal the variant's accelerator entry of modelProfile"},
	{"profile-params-differ", "  modelID: m\n  acceleratorType: H100\n  variantProfile: {perfParms: {decodeParms: {alpha: \"1\", beta: \"2\"}, prefillParms: {gamma: \"3\", delta: \"4\"}}}\n" +
		"  modelProfile:\n    accelerators:\n    - {acc: H100, perfParms: {decodeParms: {alpha: \"9\", beta: \"2\"}, prefillParms: {gamma: \"3\", delta: \"4\"}}}\n",
		"variantProfile must equal"},
	{"profile-other-entry", "  modelID: m\n  accelerator: H100\n  variantProfile: {maxBatchSize: 64}\n  modelProfile:\n    accelerators:\n    - {acc: H100, maxBatchSize: 64}\n    - {acc: A100, maxBatchSize: 8}\n", ""},
	{"variant-id", "  modelID: m\n  variantID: m-H100-1\n", ""},
}

// TestUpstreamManifests applies VariantAutoscalings written the upstream
// llm-d autoscaler's ways (testdata/upstream-*.yaml), with strict field
// validation as kubectl applies them: no field is unknown, and each alias
// is kept as written.
func TestUpstreamManifests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "upstream-*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("testdata: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace("default")
		if err := env.Client.Create(context.Background(), u, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s rejected: %v", filepath.Base(f), err)
			continue
		}
		var va wvav1.VariantAutoscaling
		if err := env.Client.Get(context.Background(), keyOf(u.GetName()), &va); err != nil {
			t.Fatal(err)
		}
		if va.Spec.AcceleratorCount == nil || va.Spec.VariantProfile == nil || va.Spec.VariantProfile.MaxBatchSize != 256 ||
			va.Spec.VariantProfile.PerfParms == nil || va.Spec.Accelerator+va.Spec.AcceleratorType == "" {
			t.Errorf("%s: the aliases were not kept: %+v", filepath.Base(f), va.Spec)
		}
	}
}
