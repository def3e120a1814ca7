package predictive

import (
	"encoding/json"
	"math"
	"testing"

	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// parameterSeeds are FuzzParameters' seeds: valid parameters, every bad
// one TestFactoriesRejectBadParameters rejects, and hostile JSON — NaN as
// a string and a bare word, ±Inf, 1e309, huge and negative numbers,
// garbage, deep nesting, nulls where objects go.
var parameterSeeds = []string{
	``, `null`, `{}`, ` { } `,
	`{"predictive": {"standardBudget": 0.4, "headroom": 1.5, "coefficients": {"beta0": 0.01, "beta1": 2e-5, "queue": 2}, "kvLimit": 0.9},
		"calibrate": true, "calibrator": {"forgetting": 0.99}, "fairness": {"share": 0.1},
		"criticalPriority": 5, "priorityScheduling": true, "charsPerToken": 3.5, "stepWeight": 0.5}`,
	`{"predictive": {"headrom": 2}}`, `{"budget": 1}`, `{"predictive": {"headroom": "high"}}`, `[1, 2]`, `{} {}`,
	`{"predictive": {"headroom": 4}}`, `{"predictive": {"standardBudget": -1}}`, `{"predictive": {"coefficients": {"beta1": -1}}}`,
	`{"predictive": {"kvLimit": 1.5}}`, `{"calibrate": true, "calibrator": {"forgetting": 0.5}}`, `{"calibrator": {"clipSigma": 20}}`,
	`{"fairness": {"share": 1.5}}`, `{"criticalPriority": -1}`, `{"charsPerToken": -4}`, `{"stepWeight": 2}`,
	`{"calibrate": true, "predictive": {"coefficients": {"beta1": 1e306}}, "calibrator": {"max": {"beta1": 1e307}}}`,
	`{"predictive": {"headroom": 9, "sheddableBudget": -2}, "stepWeight": -1}`,
	`{"predictive": {"headroom": "NaN"}}`, `{"predictive": {"headroom": NaN}}`, `{"predictive": {"kvLimit": Infinity}}`,
	`{"predictive": {"standardBudget": 1e309}}`, `{"predictive": {"standardBudget": -1e309}}`,
	`{"calibrate": true, "calibrator": {"noiseStd": 1e308, "initial": {"beta0": 1e6, "beta1": 1e6, "queue": 1e6},
		"max": {"beta0": 1e6, "beta1": 1e6, "queue": 1e6}, "priorStd": {"beta0": 1e6}}}`,
	`{"calibrate": true, "calibrator": {"noiseStd": 1e-300, "priorStd": {"beta0": 1e-300, "beta1": 5e-324, "queue": 1e-300}}}`,
	`{"calibrate": true, "predictive": {"coefficients": {"beta0": 5e-324}}, "calibrator": {"forgetting": 0.9, "clipSigma": 1}}`,
	`{"charsPerToken": 1e-300, "calibrate": true}`, `{"charsPerToken": 5e-324}`, `{"stepWeight": 5e-324, "calibrate": true}`,
	`{"criticalPriority": 9223372036854775807}`, `{"criticalPriority": 9223372036854775808}`, `{"criticalPriority": 1.5}`,
	`{"predictive": {"stepTime": 1e308, "kvLimit": 5e-324}, "calibrate": true}`,
	`{"predictive": {"coefficients": {"beta0": {"x": 1}}}}`, `{"predictive": [1]}`, `{"predictive": null, "calibrator": null}`,
	`{"fairness": null}`, `{"fairness": {}}`, `{"fairness": {"share": 1e-300}, "groupHeader": ""}`,
	`{"groupHeader": "\u0000\ud800"}`, `{"calibrate": "true"}`, `{"calibrate": 1}`, `"string"`, `42`, `true`, `{`, `}`, `{"a":`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"predictive": {"predictive": {"predictive": {}}}}`, "\xff\xfe{}", `{"calibrate": true, "calibrate": false}`,
}

// FuzzParameters: whatever the raw parameters, each factory returns an
// error or a plugin, never panics; and a plugin it returns takes a
// request through its decision, its dispatch and a streamed response —
// the calibrator's observation, when calibration is on — without
// panicking, its TTFT model finite and within its bounds throughout, and
// a prompt of 4 000 characters at least a token long.
func FuzzParameters(f *testing.F) {
	for _, s := range parameterSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name, factory := range map[string]fwkplugin.FactoryFunc{FilterType: FilterFactory, AdmitterType: AdmitterFactory} {
			p, err := factory("fuzz", json.RawMessage(raw), nil)
			switch {
			case err != nil && p != nil:
				t.Fatalf("%s: both a plugin and the error %v", name, err)
			case err != nil:
				continue
			case p == nil:
				t.Fatalf("%s: neither a plugin nor an error", name)
			}
			exercise(t, p)
		}
	})
}

// exercise sends one streamed request through p on a fake clock: its
// decision over two endpoints, its dispatch to the first, and a response
// whose first chunk comes 50 ms later and its last 20 tokens after.
func exercise(t *testing.T, p fwkplugin.Plugin) {
	t.Helper()
	c := newClock()
	var e *engine
	eps := []fwksched.Endpoint{endpoint("pod-a").waiting(3).cached(4, 16).obj(), endpoint("pod-b").kv(0.95).obj()}
	req := request("r").tokens(1000).stream().header(DefaultGroupHeader, "tenant").obj()
	switch p := p.(type) {
	case *Filter:
		e = p.engine
		e.now, e.start = c.now, c.now()
		p.Filter(ctx, fwksched.NewCycleState(), req, eps)
	case *Admitter:
		e = p.engine
		e.now, e.start = c.now, c.now()
		_ = p.AdmitRequest(ctx, req, eps)
	default:
		t.Fatalf("plugin of type %T", p)
	}
	checkModel(t, e)
	if n := e.request(req).InputTokens; n < 1 {
		t.Fatalf("a prompt of 4 000 characters is %d tokens at %v characters per token", n, e.params.CharsPerToken)
	}
	e.PreRequest(ctx, req, scheduled(eps[0]))
	c.advance(seconds(0.05))
	e.ResponseBody(ctx, req, chunk("r", false, 0), nil)
	c.advance(seconds(0.4))
	e.ResponseBody(ctx, req, chunk("r", true, 20), nil)
	checkModel(t, e)
}

// checkModel: the TTFT model in use is finite, ≥ 0 and at most
// admission.MaxCoefficient.
func checkModel(t *testing.T, e *engine) {
	t.Helper()
	co := e.Coefficients()
	for _, v := range []float64{co.Beta0, co.Beta1, co.Queue} {
		if !(v >= 0 && v <= admission.MaxCoefficient) || math.IsInf(v, 0) {
			t.Fatalf("TTFT model %+v (parameters %+v)", co, e.params)
		}
	}
}
