package emulate

import (
	"os"
	"strings"
	"testing"
)

// TestSpecErrors: bad specs are refused with the field named.
func TestSpecErrors(t *testing.T) {
	for name, c := range map[string]struct{ spec, want string }{
		"unknown field": {`models: [{name: m, bogus: 1}]`, `unknown field "bogus"`},
		"no deployments": {`models: [{name: m, workload: {rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {mean: 10}}}]`,
			"models[0].deployments: must list at least one Deployment"},
		"bad params": {`models: [{name: m, workload: {rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {mean: 10}},
  deployments: [{name: d, params: {alpha: -1, beta: 0.01, gamma: 0}}]}]`, "models[0].deployments[0].params"},
		"duplicate": {`models: [{name: m, workload: {rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {mean: 10}},
  deployments: [{name: d, params: {alpha: 1, beta: 0.01}}, {name: d, params: {alpha: 1, beta: 0.01}}]}]`, `Deployment "/d" already listed`},
		"trace": {`models: [{name: m, workload: {trace: x.csv}, deployments: [{name: d, params: {alpha: 1, beta: 0.01}}]}]`,
			"models[0].workload.trace: not supported"},
		// It used to be accepted and to panic on the first arrival.
		"empirical file": {`models: [{name: m, workload: {rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {dist: empirical, file: counts.txt}},
  deployments: [{name: d, params: {alpha: 1, beta: 0.01, gamma: 0.0001}}]}]`, "models[0].workload.output.file: not supported by the emulator"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSpec([]byte(c.spec))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestExampleSpec: the shipped example parses, its Deployment bound to
// its namespace.
func TestExampleSpec(t *testing.T) {
	data, err := os.ReadFile("../../examples/emulate/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseSpec(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFleet(spec, FleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup("llm-d", "llama-8b-h100"); !ok {
		t.Error("llm-d/llama-8b-h100 not a target")
	}
	if _, ok := f.Lookup("other", "llama-8b-h100"); ok {
		t.Error("the namespace of the entry is not enforced")
	}
}

// TestOutOfRotation: the endpoint picker's active-ports rule on a pod.
func TestOutOfRotation(t *testing.T) {
	for _, c := range []struct {
		a   map[string]string
		out bool
	}{
		{nil, false},
		{map[string]string{ActivePortsAnnotation: "8000"}, false},
		{map[string]string{ActivePortsAnnotation: "0"}, true},
		{map[string]string{ActivePortsAnnotation: ""}, true},
		{map[string]string{ActivePortsAnnotation: "x, 0"}, true},
		{map[string]string{ActivePortsAnnotation: "0, 8001"}, false},
		{map[string]string{LegacyActivePortsAnnotation: "0"}, true},
		{map[string]string{ActivePortsAnnotation: "8000", LegacyActivePortsAnnotation: "0"}, false},
	} {
		if got := outOfRotation(c.a); got != c.out {
			t.Errorf("%v: out of rotation %v, want %v", c.a, got, c.out)
		}
	}
}
