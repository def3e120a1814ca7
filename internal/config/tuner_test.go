package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// A tuner ConfigMap as docs/configuration.md writes it.
const seedTunerConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: tuner-config
  namespace: workload-variant-autoscaler-system
data:
  tuning-enabled: "true"
  tuning-period: "30s"
  tuning-budget: "2000"
  max-nis-threshold: "7.378"
  percent-change: "0.01"
  error-level: "0.05"
  state-constraints: |
    {
      "alpha": {"min": 0.1, "max": 100.0},
      "beta": {"min": 0.01, "max": 10.0},
      "gamma": {"min": 0.1, "max": 100.0},
      "delta": {"min": 0.001, "max": 1.0}
    }
`

func TestParseTuner(t *testing.T) {
	got, err := ParseTuner(configMapData(t, seedTunerConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	want := Tuner{Enabled: true, Period: 30 * time.Second, Budget: 2000, Config: tuner.Config{
		MaxNIS: 7.378, PercentChange: 0.01, ErrorLevel: 0.05,
		Bounds: map[string][2]float64{
			"alpha": {0.1, 100}, "beta": {0.01, 10}, "gamma": {0.1, 100}, "delta": {0.001, 1},
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if err := got.Config.Validate(); err != nil {
		t.Errorf("parsed config does not validate: %v", err)
	}
}

func TestParseTunerDefaultsAndStrategy(t *testing.T) {
	got, err := ParseTuner(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Tuner{Enabled: true}) {
		t.Errorf("ParseTuner(nil) = %+v, want enabled with zero (default) settings", got)
	}
	got, err = ParseTuner(map[string]string{"strategy": "seed", "tuning-enabled": "false", "tuning-period": "0s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Tuner{Config: tuner.Config{Strategy: tuner.StrategySeed}}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseTunerInvalid(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want []problem
	}{
		{"enabled", map[string]string{"tuning-enabled": "on"}, []problem{p("tuning-enabled", `want true or false, got "on"`)}},
		{"period", map[string]string{"tuning-period": "-30s"}, []problem{p("tuning-period", "at least 0s")}},
		{"budget 0", map[string]string{"tuning-budget": "0"}, []problem{p("tuning-budget", `want a whole number of tuner steps a cycle from 1 to 1000000, got "0"`)}},
		{"budget beyond the bound", map[string]string{"tuning-budget": "1000001"}, []problem{p("tuning-budget", `got "1000001"`)}},
		{"budget a fraction", map[string]string{"tuning-budget": "2.5"}, []problem{p("tuning-budget", `got "2.5"`)}},
		{"NIS", map[string]string{"max-nis-threshold": "0"}, []problem{p("max-nis-threshold", "want a number > 0, got 0")}},
		{"percent change above 1", map[string]string{"percent-change": "5"},
			[]problem{p("percent-change", "want a number in (0, 1], got 5")}},
		{"error level 1", map[string]string{"error-level": "1"}, []problem{p("error-level", "want a number in (0, 1), got 1")}},
		{"error level text", map[string]string{"error-level": "5%"}, []problem{p("error-level", `got "5%"`)}},
		{"strategy", map[string]string{"strategy": "fast"}, []problem{p("strategy", "robust, seed", `"fast"`)}},
		{"unknown key", map[string]string{"tuning-periode": "30s"},
			[]problem{p("tuning-periode", "unknown key; did you mean tuning-period?")}},
		{"bounds min above max", map[string]string{"state-constraints": `{"alpha": {"min": 10, "max": 1}}`},
			[]problem{p("state-constraints", "alpha: max: want a number > 10, got 1")}},
		{"bounds min 0", map[string]string{"state-constraints": `{"beta": {"min": 0, "max": 1}}`},
			[]problem{p("state-constraints", "beta: min: want a number > 0, got 0")}},
		{"bounds without max", map[string]string{"state-constraints": `{"gamma": {"min": 1}}`},
			[]problem{p("state-constraints", "gamma: want both min and max")}},
		{"bounds of an unknown parameter", map[string]string{"state-constraints": `{"epsilon": {"min": 1, "max": 2}}`},
			[]problem{p("state-constraints", "epsilon: unknown parameter; want alpha, beta, gamma or delta")}},
		{"bounds field typo", map[string]string{"state-constraints": `{"alpha": {"minimum": 1, "max": 2}}`},
			[]problem{p("state-constraints", `unknown field "minimum"`)}},
		{"every bound problem", map[string]string{"state-constraints": `{"alpha": {"min": 2, "max": 1}, "delta": {"max": 1}}`},
			[]problem{p("state-constraints", "alpha: max", "delta: want both")}},
		{"every problem", map[string]string{"percent-change": "0", "error-level": "2", "tuning-period": "x"},
			[]problem{p("percent-change", "got 0"), p("error-level", "got 2"), p("tuning-period", `got "x"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTuner(tt.data)
			expectProblems(t, err, TunerName, tt.want...)
		})
	}
}

func TestTunerKeyOf(t *testing.T) {
	for msg, want := range map[string]string{
		"percent change must be a positive finite number, got -1": "percent-change",
		"error level must be a positive finite number, got 0":     "error-level",
		"max NIS must be a positive finite number, got 0":         "max-nis-threshold",
		`strategy must be "robust" or "seed", got "x"`:            "strategy",
		"bounds of alpha must satisfy 0 < min < max < ∞":          "state-constraints",
		"window, max rejections and max iterations must be ≥ 1":   "state-constraints",
	} {
		if got := tunerKeyOf(msg); got != want {
			t.Errorf("tunerKeyOf(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestIterationStateConstraints(t *testing.T) {
	tu, err := ParseTuner(map[string]string{
		"state-constraints":           `{"alpha": {"min": 0.1, "max": 100}}`,
		"iteration-state-constraints": `{"alpha": {"min": 1, "max": 20}, "gamma": {"min": 1e-6, "max": 1e-2}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := tu.Config.IterationBounds["gamma"]; got != [2]float64{1e-6, 1e-2} {
		t.Errorf("iteration gamma bounds %v", got)
	}
	if got := tu.Config.Bounds["alpha"]; got != [2]float64{0.1, 100} {
		t.Errorf("linear alpha bounds %v", got)
	}
	if _, err := ParseTuner(map[string]string{"iteration-state-constraints": `{"alpha": {"min": 5, "max": 1}}`}); err == nil ||
		!strings.Contains(err.Error(), "iteration-state-constraints") {
		t.Errorf("inverted bounds: %v", err)
	}
}
