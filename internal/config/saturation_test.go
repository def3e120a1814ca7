package config

import (
	"reflect"
	"testing"

	"github.com/llm-d-incubation/wva/internal/engine"
)

const saturationConfigMap = `
data:
  default: |
    kvCacheThreshold: 0.80
    queueLengthThreshold: 5
    kvSpareTrigger: 0.1
    queueSpareTrigger: 3
    minNonSaturatedReplicasForScaleDown: 2
  llama-prod: |
    model_id: meta-llama/Llama-3.1-8B
    namespace: prod
    kvCacheThreshold: 0.9
    kvSpareTrigger: 0
  llama-any: |
    model_id: meta-llama/Llama-3.1-8B
    queueLengthThreshold: 8
`

func TestParseSaturation(t *testing.T) {
	s, err := ParseSaturation(configMapData(t, saturationConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	wantDefault := engine.SaturationConfig{
		KVCacheThreshold: 0.80, QueueLengthThreshold: 5, KVSpareTrigger: 0.1, QueueSpareTrigger: 3,
		MinNonSaturatedReplicasForScaleDown: 2,
	}
	if s.Default != wantDefault {
		t.Errorf("Default = %+v, want %+v", s.Default, wantDefault)
	}
	if len(s.Overrides) != 2 {
		t.Fatalf("got %d overrides, want 2", len(s.Overrides))
	}
	prod := engine.SaturationConfig{KVCacheThreshold: 0.9, KVSpareTrigger: ExplicitZero}
	anyNS := engine.SaturationConfig{QueueLengthThreshold: 8}
	for _, tt := range []struct {
		name, model, namespace string
		want                   *engine.SaturationConfig
	}{
		{"exact namespace wins", "meta-llama/Llama-3.1-8B", "prod", &prod},
		{"entry without namespace matches the rest", "meta-llama/Llama-3.1-8B", "staging", &anyNS},
		{"empty namespace matches the entry without one", "meta-llama/Llama-3.1-8B", "", &anyNS},
		{"other model", "mistralai/Mistral-7B", "prod", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.For(tt.model, tt.namespace); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("For(%q, %q) = %+v, want %+v", tt.model, tt.namespace, got, tt.want)
			}
		})
	}
}

// TestParseSaturationScaleUpThreshold: kvScaleUpThreshold reaches the
// engine's configuration, by default and per model.
func TestParseSaturationScaleUpThreshold(t *testing.T) {
	s, err := ParseSaturation(map[string]string{"default": "kvScaleUpThreshold: 0.9", "m": "model_id: m\nkvScaleUpThreshold: 0.95"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Default != (engine.SaturationConfig{KVScaleUpThreshold: 0.9}) {
		t.Errorf("Default = %+v", s.Default)
	}
	if got := s.For("m", "any"); got == nil || *got != (engine.SaturationConfig{KVScaleUpThreshold: 0.95}) {
		t.Errorf("For = %+v", got)
	}
}

func TestParseSaturationWithoutDefault(t *testing.T) {
	s, err := ParseSaturation(map[string]string{"m": "model_id: m\nqueueSpareTrigger: 1"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Default != (engine.SaturationConfig{}) {
		t.Errorf("Default = %+v, want zero (the engine's defaults)", s.Default)
	}
	if got := s.For("m", "any"); got == nil || *got != (engine.SaturationConfig{QueueSpareTrigger: 1}) {
		t.Errorf("For = %+v", got)
	}
	if s, err = ParseSaturation(nil); err != nil || s.Default != (engine.SaturationConfig{}) || s.Overrides != nil {
		t.Errorf("ParseSaturation(nil) = %+v, %v; want zero, nil", s, err)
	}
}

func TestParseSaturationInvalid(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want []problem
	}{
		{"kv threshold above 1", map[string]string{"default": "kvCacheThreshold: 1.2"},
			[]problem{p("default", "kvCacheThreshold: want a number in (0, 1], got 1.2")}},
		{"kv threshold 0", map[string]string{"default": "kvCacheThreshold: 0"},
			[]problem{p("default", "kvCacheThreshold: want a number in (0, 1], got 0")}},
		{"queue threshold 0", map[string]string{"default": "queueLengthThreshold: 0"},
			[]problem{p("default", "queueLengthThreshold: want a number > 0, got 0")}},
		{"kv spare 1", map[string]string{"default": "kvSpareTrigger: 1"},
			[]problem{p("default", "kvSpareTrigger: want a number in [0, 1), got 1")}},
		{"negative queue spare", map[string]string{"default": "queueSpareTrigger: -1"},
			[]problem{p("default", "queueSpareTrigger: want a number ≥ 0, got -1")}},
		{"min non-saturated 0", map[string]string{"default": "minNonSaturatedReplicasForScaleDown: 0"},
			[]problem{p("default", "minNonSaturatedReplicasForScaleDown: want a whole number ≥ 1, got 0")}},
		{"spare above the default threshold", map[string]string{"default": "kvSpareTrigger: 0.85"},
			[]problem{p("default", "kvSpareTrigger 0.85 must be below kvCacheThreshold 0.8 (inherited)")}},
		{"override threshold below the default spare", map[string]string{
			"default": "kvSpareTrigger: 0.3", "m": "model_id: m\nkvCacheThreshold: 0.25"},
			[]problem{p("m", "kvSpareTrigger 0.3 (inherited) must be below kvCacheThreshold 0.25")}},
		{"scale-up threshold above 1", map[string]string{"default": "kvScaleUpThreshold: 1.1"},
			[]problem{p("default", "kvScaleUpThreshold: want a number in (0, 1], got 1.1")}},
		{"scale-up threshold 0", map[string]string{"default": "kvScaleUpThreshold: 0"},
			[]problem{p("default", "kvScaleUpThreshold: want a number in (0, 1], got 0")}},
		{"override without model_id", map[string]string{"m": "kvCacheThreshold: 0.9"},
			[]problem{p("m", "model_id: required")}},
		{"model fields in default", map[string]string{"default": "model_id: m"},
			[]problem{p("default", `unknown field "model_id"`)}},
		{"typo in override", map[string]string{"m": "model_id: m\nkvCacheTreshold: 0.9"},
			[]problem{p("m", `unknown field "kvCacheTreshold"`)}},
		{"duplicate model and namespace", map[string]string{
			"a": "model_id: m\nnamespace: prod\nqueueLengthThreshold: 4",
			"b": "model_id: m\nnamespace: prod\nqueueLengthThreshold: 6"},
			[]problem{p("b", `model_id "m" in namespace "prod" is already configured by key "a"`)}},
		{"every problem", map[string]string{
			"default": "kvCacheThreshold: 2\nqueueLengthThreshold: -1",
			"m":       "namespace: x"},
			[]problem{p("default", "kvCacheThreshold"), p("default", "queueLengthThreshold"), p("m", "model_id")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSaturation(tt.data)
			expectProblems(t, err, SaturationName, tt.want...)
		})
	}
}
