package config

import (
	"errors"
	"reflect"
	"testing"

	"github.com/llm-d-incubation/wva/internal/engine"
)

// The accelerator costs ConfigMap as the WVA configuration guide writes it.
const seedAcceleratorsConfigMap = `
data:
  L40S: |
    {
      "name": "L40S",
      "count": 1,
      "cost": 1.5,
      "memory": 48
    }
  H100: |
    {
      "name": "H100", 
      "count": 1,
      "cost": 3.0,
      "memory": 80
    }
`

func TestParseAccelerators(t *testing.T) {
	got, err := ParseAccelerators(configMapData(t, seedAcceleratorsConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Accelerator{
		"L40S": {Name: "L40S", Count: 1, Cost: 1.5, MemoryGB: 48},
		"H100": {Name: "H100", Count: 1, Cost: 3.0, MemoryGB: 80},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	got, err = ParseAccelerators(map[string]string{"A100": "cost: 2.2"})
	if err != nil {
		t.Fatal(err)
	}
	if a := got["A100"]; a != (Accelerator{Name: "A100", Count: 1, Cost: 2.2}) {
		t.Errorf("YAML without name and count = %+v, want name A100, count 1, cost 2.2", a)
	}
}

func TestParseAcceleratorsInvalid(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
	}{
		{"name differs from key", `{"name": "H200", "cost": 3}`, []string{`name: want "H100" (the key), got "H200"`}},
		{"no cost", `{"name": "H100"}`, []string{"cost: required"}},
		{"zero cost", `{"cost": 0}`, []string{"cost: want a number > 0, got 0"}},
		{"negative cost", `{"cost": -3}`, []string{"cost: want a number > 0, got -3"}},
		{"infinite cost", "cost: .inf", []string{"want finite numbers", "+Inf"}},
		{"zero count", `{"cost": 3, "count": 0}`, []string{"count: want a whole number ≥ 1, got 0"}},
		{"fractional count", `{"cost": 3, "count": 1.5}`, []string{"count: want a whole number, got number 1.5"}},
		{"negative memory", `{"cost": 3, "memory": -80}`, []string{"memory: want a number ≥ 0, got -80"}},
		{"cost as string", `{"cost": "3"}`, []string{"cost: want a number, got string"}},
		{"typo", `{"costs": 3}`, []string{`unknown field "costs"`, "want JSON or YAML such as"}},
		{"broken JSON", `{"cost": 3`, []string{"yaml:", "want JSON or YAML such as"}},
		{"empty", ``, []string{"empty value"}},
		{"duplicate field", "cost: 1\ncost: 2", []string{`key "cost" already set`, "want JSON or YAML such as"}},
		{"not an object", `[3.0]`, []string{"want an object, got array", "want JSON or YAML such as"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAccelerators(map[string]string{"H100": tt.value})
			expectProblems(t, err, AcceleratorsName, problem{"H100", tt.want})
			if got != nil {
				t.Errorf("on error got %v, want nil", got)
			}
		})
	}
}

// The service-classes ConfigMap as the WVA configuration guide writes it.
const seedServiceClassesConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: service-classes-config
  namespace: workload-variant-autoscaler-system
data:
  premium: |
    {
      "name": "premium",
      "priority": 1,
      "ttft_ms": 500,
      "itl_ms": 50,
      "tps": 100
    }
  standard: |
    {
      "name": "standard",
      "priority": 2,
      "ttft_ms": 1000,
      "itl_ms": 100,
      "tps": 50
    }
  best-effort: |
    {
      "name": "best-effort",
      "priority": 3,
      "ttft_ms": 2000,
      "itl_ms": 200,
      "tps": 25
    }
`

func TestFieldErrorsDoNotRepeatTheExample(t *testing.T) {
	_, err := ParseAccelerators(map[string]string{"H100": `{"cost": 3, "count": 1.5}`})
	want := "accelerator-unit-costs/H100: count: want a whole number, got number 1.5"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestParseServiceClasses(t *testing.T) {
	got, err := ParseServiceClasses(configMapData(t, seedServiceClassesConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]engine.ServiceClass{
		"premium":     {Priority: 1, TTFTMs: 500, ITLMs: 50, TPS: 100},
		"standard":    {Priority: 2, TTFTMs: 1000, ITLMs: 100, TPS: 50},
		"best-effort": {Priority: 3, TTFTMs: 2000, ITLMs: 200, TPS: 25},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	got, err = ParseServiceClasses(map[string]string{"batch": "itl_ms: 300"})
	if err != nil {
		t.Fatal(err)
	}
	if c := got["batch"]; c != (engine.ServiceClass{Priority: 1, ITLMs: 300}) {
		t.Errorf("class without priority = %+v, want priority 1 and itl 300", c)
	}
	got, err = ParseServiceClasses(map[string]string{"gold": `{"ttft_ms": 500, "itl_ms": 50, "attainment": 0.999}`})
	if err != nil {
		t.Fatal(err)
	}
	if c := got["gold"]; c != (engine.ServiceClass{Priority: 1, TTFTMs: 500, ITLMs: 50, Attainment: 0.999}) {
		t.Errorf("class with an attainment = %+v", c)
	}
}

func TestParseServiceClassesInvalid(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
	}{
		{"name differs from key", `{"name": "gold", "priority": 1, "ttft_ms": 500}`, []string{`name: want "premium"`, `got "gold"`}},
		{"priority 0", `{"priority": 0, "ttft_ms": 500}`, []string{"priority: want a whole number ≥ 1", "got 0"}},
		{"negative target", `{"ttft_ms": -5, "itl_ms": 50}`, []string{"ttft_ms: want a number ≥ 0, got -5"}},
		{"no target", `{"priority": 2}`, []string{"no target", "ttft_ms, itl_ms and tps"}},
		{"all targets zero", `{"ttft_ms": 0, "itl_ms": 0, "tps": 0}`, []string{"no target"}},
		{"camel-case field", `{"ttftMs": 500}`, []string{`unknown field "ttftMs"`}},
		{"attainment 1.5", `{"ttft_ms": 500, "attainment": 1.5}`, []string{"attainment: want a number in (0, 1), got 1.5"}},
		{"NaN", "ttft_ms: .nan", []string{"want finite numbers", "NaN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseServiceClasses(map[string]string{"premium": tt.value})
			expectProblems(t, err, ServiceClassesName, problem{"premium", tt.want})
		})
	}
}

func TestParseServiceClassesReportsEveryProblem(t *testing.T) {
	_, err := ParseServiceClasses(map[string]string{
		"a": `{"priority": 0, "ttft_ms": -1}`,
		"b": `{"tps": 10}`,
		"c": `{"tps": "ten"}`,
	})
	expectProblems(t, err, ServiceClassesName,
		p("a", "priority"), p("a", "ttft_ms"), p("c", "tps: want a number, got string"))
	var e *Error
	if errors.As(err, &e) && len(e.Problems) != 3 {
		t.Errorf("got %d problems, want 3:\n%v", len(e.Problems), err)
	}
}

func TestParseInventory(t *testing.T) {
	got, err := ParseInventory(map[string]string{"H100": " 16 ", "L40S": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"H100": 16, "L40S": 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	_, err = ParseInventory(map[string]string{"H100": "-1", "A100": "eight", "L4": "2.5", "B200": "9223372036854775807"})
	expectProblems(t, err, InventoryName,
		p("H100", `want a whole number of accelerators from 0 to 1073741824, got "-1"`), p("A100", `got "eight"`), p("L4", `got "2.5"`),
		p("B200", `want a whole number of accelerators from 0 to 1073741824, got "9223372036854775807"`))
}
