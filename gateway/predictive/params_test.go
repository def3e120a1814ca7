package predictive

import (
	"encoding/json"
	"strings"
	"testing"

	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"

	"github.com/llm-d-incubation/wva/internal/admission"
)

func TestFactoriesParseParameters(t *testing.T) {
	for name, factory := range map[string]fwkplugin.FactoryFunc{FilterType: FilterFactory, AdmitterType: AdmitterFactory} {
		t.Run(name, func(t *testing.T) {
			for _, raw := range []string{"", "null", "{}", " { } "} {
				if _, err := factory("p", json.RawMessage(raw), nil); err != nil {
					t.Errorf("parameters %q: %v", raw, err)
				}
			}
			p, err := factory("named", json.RawMessage(`{"predictive": {"standardBudget": 0.4, "headroom": 1.5,
				"coefficients": {"beta0": 0.01, "beta1": 2e-5, "queue": 2}, "kvLimit": 0.9},
				"calibrate": true, "calibrator": {"forgetting": 0.99}, "fairness": {"share": 0.1},
				"criticalPriority": 5, "priorityScheduling": true, "charsPerToken": 3.5, "stepWeight": 0.5}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.TypedName(); got.Type != name || got.Name != "named" {
				t.Errorf("TypedName = %v", got)
			}
		})
	}
}

func TestParseParametersValues(t *testing.T) {
	p, err := ParseParameters(json.RawMessage(`{"predictive": {"sheddableBudget": 0.25, "coefficients": {"beta0": 0.01}},
		"calibrate": true, "criticalPriority": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(p, newClock().now)
	if err != nil {
		t.Fatal(err)
	}
	if sh, st := e.pred.Limit(admission.Sheddable), e.pred.Limit(admission.Standard); sh != 0.25 || st != admission.DefaultStandardBudget {
		t.Errorf("limits: sheddable %v, standard %v", sh, st)
	}
	want := admission.Coefficients{Beta0: 0.01, Beta1: admission.DefaultCoefficients.Beta1, Queue: 1}
	if got := e.Coefficients(); got != want {
		t.Errorf("coefficients = %+v, want %+v (the calibrator starts from the policy's)", got, want)
	}
	if e.params.CriticalPriority != 3 || e.params.CharsPerToken != DefaultCharsPerToken || e.cal == nil {
		t.Errorf("params = %+v, calibrator %v", e.params, e.cal)
	}
}

func TestFactoriesRejectBadParameters(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []string // every one in the error
	}{
		{"unknown key", `{"predictive": {"headrom": 2}}`, []string{`unknown field "headrom"`}},
		{"unknown top-level key", `{"budget": 1}`, []string{`unknown field "budget"`}},
		{"wrong type", `{"predictive": {"headroom": "high"}}`, []string{"decoding parameters", "Headroom"}},
		{"not an object", `[1, 2]`, []string{"decoding parameters"}},
		{"trailing data", `{} {}`, []string{"trailing data"}},
		{"headroom out of range", `{"predictive": {"headroom": 4}}`, []string{"predictive.headroom: must be in [0.5, 3]"}},
		{"negative budget", `{"predictive": {"standardBudget": -1}}`, []string{"predictive.standardBudget"}},
		{"negative coefficient", `{"predictive": {"coefficients": {"beta1": -1}}}`, []string{"predictive.coefficients.beta1"}},
		{"kv limit above 1", `{"predictive": {"kvLimit": 1.5}}`, []string{"predictive.kvLimit"}},
		{"forgetting", `{"calibrate": true, "calibrator": {"forgetting": 0.5}}`, []string{"calibrator.forgetting"}},
		{"calibrator checked even when off", `{"calibrator": {"clipSigma": 20}}`, []string{"calibrator.clipSigma"}},
		{"fairness share", `{"fairness": {"share": 1.5}}`, []string{"fairness.share"}},
		{"critical priority", `{"criticalPriority": -1}`, []string{"criticalPriority: must be ≥ 0"}},
		{"chars per token", `{"charsPerToken": -4}`, []string{"charsPerToken"}},
		{"step weight", `{"stepWeight": 2}`, []string{"stepWeight: must be in (0, 1]"}},
		{"huge coefficient, calibrated", `{"calibrate": true, "predictive": {"coefficients": {"beta1": 1e306}}, "calibrator": {"max": {"beta1": 1e307}}}`,
			[]string{"predictive.coefficients.beta1: must be at most 1e+06", "calibrator.max.beta1"}},
		{"every problem at once", `{"predictive": {"headroom": 9, "sheddableBudget": -2}, "stepWeight": -1}`,
			[]string{"predictive.headroom", "predictive.sheddableBudget", "stepWeight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FilterFactory("p", json.RawMessage(tt.raw), nil)
			if err == nil {
				t.Fatalf("parameters %s accepted", tt.raw)
			}
			if !strings.HasPrefix(err.Error(), "predictive: ") && !strings.HasPrefix(err.Error(), "admission: ") {
				t.Errorf("error %q does not name its package", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if _, err := AdmitterFactory("p", json.RawMessage(tt.raw), nil); err == nil {
				t.Errorf("admitter accepted %s", tt.raw)
			}
		})
	}
}
