package config

import (
	"reflect"
	"testing"
)

// deploy/configmap-queueing-model.yaml of the WVA repository (the WVA
// queueing-model guide §2).
const seedQueueingModelConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: wva-queueing-model-config
  namespace: workload-variant-autoscaler-system
data:
  # ── Global defaults (required) ─────────────────────────────────────────────
  default: |
    # sloMultiplier (k) controls the target server utilisation.
    # Constraint: must be > 1.0. Default: 3.0
    sloMultiplier: 3.0
    # tuningEnabled must always be true.
    tuningEnabled: true
  # Example: explicit SLOs for a production Llama model
  llama-prod: |
    model_id: "meta-llama/Meta-Llama-3.1-8B-Instruct"
    namespace: "llm-d-prod"
    targetTTFT: 500.0 # ms — time-to-first-token budget
    targetITL: 50.0 # ms — per-token decode budget
    sloMultiplier: 3.0
  # Example: inferred SLOs with a more aggressive utilisation target
  mistral-staging: |
    model_id: "mistralai/Mistral-7B-Instruct-v0.2"
    namespace: "llm-d-staging"
    sloMultiplier: 4.0 # rho=0.75; SLO derived from k and learned parameters
`

func TestParseQueueingModel(t *testing.T) {
	q, err := ParseQueueingModel(configMapData(t, seedQueueingModelConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	llama := QueueingModelEntry{ModelID: "meta-llama/Meta-Llama-3.1-8B-Instruct", Namespace: "llm-d-prod",
		SLOMultiplier: 3.0, TargetTTFTMs: 500, TargetITLMs: 50}
	mistral := QueueingModelEntry{ModelID: "mistralai/Mistral-7B-Instruct-v0.2", Namespace: "llm-d-staging", SLOMultiplier: 4.0}
	want := QueueingModel{Present: true, SLOMultiplier: 3, TuningEnabled: true, Models: []QueueingModelEntry{llama, mistral}}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("got  %+v\nwant %+v", q, want)
	}
	if got := q.For("mistralai/Mistral-7B-Instruct-v0.2", "llm-d-staging"); got == nil || *got != mistral {
		t.Errorf("For(mistral, llm-d-staging) = %+v", got)
	}
	if got := q.For("mistralai/Mistral-7B-Instruct-v0.2", "llm-d-prod"); got != nil {
		t.Errorf("For(mistral, llm-d-prod) = %+v, want nil: the entry names another namespace", got)
	}
	q, err = ParseQueueingModel(map[string]string{"m": "model_id: m\nattainment: 0.95"})
	if err != nil || len(q.Models) != 1 || q.Models[0].Attainment != 0.95 {
		t.Errorf("attainment 0.95: got %+v, %v", q, err)
	}
	q, err = ParseQueueingModel(map[string]string{"m": "model_id: m\nsurgeRatio: 2.5"})
	if err != nil || len(q.Models) != 1 || q.Models[0].SurgeRatio != 2.5 {
		t.Errorf("surgeRatio 2.5: got %+v, %v", q, err)
	}
}

func TestParseQueueingModelDefaults(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want QueueingModel
	}{
		{"nil", nil, QueueingModel{SLOMultiplier: 3, TuningEnabled: true}},
		{"empty default", map[string]string{"default": "{}"}, QueueingModel{Present: true, SLOMultiplier: 3, TuningEnabled: true}},
		{"default with comments only", map[string]string{"default": "# nothing\n"}, QueueingModel{Present: true, SLOMultiplier: 3, TuningEnabled: true}},
		{"tuning off, k 2", map[string]string{"default": "sloMultiplier: 2\ntuningEnabled: false"},
			QueueingModel{Present: true, SLOMultiplier: 2, TuningEnabled: false}},
		{"entries without default are not Present", map[string]string{"m": "model_id: m\nsloMultiplier: 5"},
			QueueingModel{SLOMultiplier: 3, TuningEnabled: true, Models: []QueueingModelEntry{{ModelID: "m", SLOMultiplier: 5}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQueueingModel(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestQueueingModelForPrecedence(t *testing.T) {
	q, err := ParseQueueingModel(map[string]string{
		"any":  "model_id: m\nsloMultiplier: 2",
		"prod": "model_id: m\nnamespace: prod\nsloMultiplier: 5",
	})
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]float64{"prod": 5, "dev": 2, "": 2} {
		if got := q.For("m", ns); got == nil || got.SLOMultiplier != want {
			t.Errorf("For(m, %q) = %+v, want sloMultiplier %v", ns, got, want)
		}
	}
	if got := q.For("other", "prod"); got != nil {
		t.Errorf("For(other, prod) = %+v, want nil", got)
	}
}

func TestParseQueueingModelInvalid(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want []problem
	}{
		{"default k 1", map[string]string{"default": "sloMultiplier: 1.0"},
			[]problem{p("default", "sloMultiplier: want a number > 1, got 1")}},
		{"entry k 0", map[string]string{"m": "model_id: m\nsloMultiplier: 0"},
			[]problem{p("m", "sloMultiplier: want a number > 1, got 0")}},
		{"only TTFT", map[string]string{"m": "model_id: m\ntargetTTFT: 500"},
			[]problem{p("m", "targetTTFT and targetITL must both be set, or both omitted", "targetTTFT 500 and targetITL 0")}},
		{"only ITL", map[string]string{"m": "model_id: m\ntargetITL: 50"},
			[]problem{p("m", "targetTTFT and targetITL must both be set, or both omitted")}},
		{"attainment 1", map[string]string{"m": "model_id: m\nattainment: 1"},
			[]problem{p("m", "attainment: want a number in (0, 1), got 1")}},
		{"attainment 0", map[string]string{"m": "model_id: m\nattainment: 0"},
			[]problem{p("m", "attainment: want a number in (0, 1), got 0")}},
		{"surge ratio 0.5", map[string]string{"m": "model_id: m\nsurgeRatio: 0.5"},
			[]problem{p("m", "surgeRatio: want a number in [1, 100] (1: no surge), got 0.5")}},
		{"surge ratio 101", map[string]string{"m": "model_id: m\nsurgeRatio: 101"},
			[]problem{p("m", "surgeRatio: want a number in [1, 100] (1: no surge), got 101")}},
		{"surge ratio NaN", map[string]string{"m": "model_id: m\nsurgeRatio: .nan"},
			[]problem{p("m", "want finite numbers, got NaN")}},
		{"negative target", map[string]string{"m": "model_id: m\ntargetTTFT: -1\ntargetITL: 50"},
			[]problem{p("m", "targetTTFT: want a number ≥ 0, got -1")}},
		{"no model_id", map[string]string{"m": "namespace: prod"},
			[]problem{p("m", "model_id: required")}},
		{"tuningEnabled per model", map[string]string{"m": "model_id: m\ntuningEnabled: true"},
			[]problem{p("m", `unknown field "tuningEnabled"`)}},
		{"tuningEnabled not a bool", map[string]string{"default": "tuningEnabled: sometimes"},
			[]problem{p("default", "tuningEnabled: want true or false, got string")}},
		{"duplicate", map[string]string{"a": "model_id: m", "b": "model_id: m"},
			[]problem{p("b", `model_id "m" in namespace "" is already configured by key "a"`)}},
		{"not a mapping", map[string]string{"default": "- 3.0"},
			[]problem{p("default", "want an object, got array")}},
		{"every problem", map[string]string{
			"default": "sloMultiplier: 0.5", "a": "model_id: a\ntargetITL: 20", "b": "targetTTFT: x"},
			[]problem{p("default", "sloMultiplier"), p("a", "both be set"), p("b", "targetTTFT: want a number, got string")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQueueingModel(tt.data)
			expectProblems(t, err, QueueingModelName, tt.want...)
		})
	}
}
