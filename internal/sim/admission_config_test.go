package sim

import (
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestScorerWeightsString: the string form sets the scorers it names (the
// others weigh 0), in long or short names; the object form keeps working
// and stays strict; a bad string is an error of gateway.weights.
func TestScorerWeightsString(t *testing.T) {
	for in, want := range map[string]scenario.ScorerWeights{
		"prefix-affinity:4,queue-depth:3":         {Prefix: 4, Queue: 3},
		"pa:3, qd:2, kv:2":                        {Prefix: 3, Queue: 2, KV: 2},
		"kv-utilisation:1,batch:0.5":              {KV: 1, Batch: 0.5},
		"kv-utilization:2,prefix-affinity:1.5e-1": {KV: 2, Prefix: 0.15},
	} {
		got, err := scenario.ParseScorerWeights(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := scenario.ParseScorerWeights(got.String()); err != nil || back != want {
			t.Errorf("%q written as %q reads back as %+v, %v", in, got.String(), back, err)
		}
	}
}

// TestScorerWeightsErrors: the string form's mistakes, each named.
func TestScorerWeightsErrors(t *testing.T) {
	for in, want := range map[string]string{
		"prefix:4":           `unknown scorer "prefix"`,
		"pa=4":               "is not scorer:weight",
		"pa:four":            `weight "four" is not a number`,
		"pa:1,pa:2":          "name the same scorer",
		"qd:1,queue-depth:1": "name the same scorer",
	} {
		if _, err := scenario.ParseScorerWeights(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// TestScorerWeightsInScenario: a scenario's weights in either form.
func TestScorerWeightsInScenario(t *testing.T) {
	parse := func(gateway string) (scenario.Scenario, error) {
		return scenario.ParseScenario([]byte(simtest.ValidScenario + "gateway: " + gateway + "\n"))
	}
	sc, err := parse(`{weights: "prefix-affinity:4,queue-depth:3"}`)
	if err != nil || *sc.Gateway.Weights != (scenario.ScorerWeights{Prefix: 4, Queue: 3}) {
		t.Errorf("string form: %+v, %v", sc.Gateway.Weights, err)
	}
	sc, err = parse(`{weights: {kv: 1, prefix: 2}}`)
	if err != nil || *sc.Gateway.Weights != (scenario.ScorerWeights{KV: 1, Prefix: 2}) {
		t.Errorf("object form: %+v, %v", sc.Gateway.Weights, err)
	}
	if _, err := parse(`{weights: {kv: 1, prefx: 2}}`); err == nil || !strings.Contains(err.Error(), `unknown field "prefx"`) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := parse(`{weights: "pa:4,zz:1"}`); err == nil || !strings.Contains(err.Error(), `gateway.weights: unknown scorer "zz"`) {
		t.Errorf("bad string: %v", err)
	}
	if _, err := parse(`{weights: "pa:-1"}`); err == nil || !strings.Contains(err.Error(), "gateway.weights.prefix: must be a finite number ≥ 0") {
		t.Errorf("negative weight: %v", err)
	}
}

// TestAdmissionValidation: every admission setting, the classes'
// criticality, the new prefix groups, the scheduling policy and the
// matrix are checked with their field paths.
func TestAdmissionValidation(t *testing.T) {
	adm := func(f func(a *scenario.Admission)) func(s *scenario.Scenario) {
		return func(s *scenario.Scenario) {
			a := &scenario.Admission{Policy: scenario.PolicyPredictive}
			f(a)
			s.Gateway.Admission = a
		}
	}
	for _, tc := range []struct {
		name string
		edit func(s *scenario.Scenario)
		want string
	}{
		{"policy", adm(func(a *scenario.Admission) { a.Policy = "lottery" }), `gateway.admission.policy: must be always, token-bucket, slo-gated or predictive, got "lottery"`},
		{"budget", adm(func(a *scenario.Admission) { a.BudgetsMs.Sheddable = -1 }), "gateway.admission.budgetsMs.sheddable: must be a finite number ≥ 0"},
		{"headroom", adm(func(a *scenario.Admission) { a.Headroom = 4 }), "gateway.admission.headroom: must be in [0.5, 3]"},
		{"kv limit", adm(func(a *scenario.Admission) { a.KVLimit = 1.5 }), "gateway.admission.kvLimit: must be a KV-cache utilisation"},
		{"coefficients", adm(func(a *scenario.Admission) { a.Coefficients.Beta1Ms = -0.1 }), "gateway.admission.coefficients.beta1Ms"},
		{"forgetting", adm(func(a *scenario.Admission) { a.Forgetting = 0.5 }), "gateway.admission.forgetting: must be in [0.9, 1]"},
		{"calibrate", adm(func(a *scenario.Admission) { a.Policy, a.Calibrate = scenario.PolicyAlways, true }), "gateway.admission.calibrate: needs policy predictive"},
		{"bucket missing", adm(func(a *scenario.Admission) { a.Policy = scenario.PolicyTokenBucket }), "gateway.admission.tokenBucket: must be set for policy token-bucket"},
		{"bucket rate", adm(func(a *scenario.Admission) {
			a.Policy, a.TokenBucket = scenario.PolicyTokenBucket, &scenario.TokenBucket{Rate: 0}
		}), "gateway.admission.tokenBucket.rate"},
		{"bucket elsewhere", adm(func(a *scenario.Admission) { a.TokenBucket = &scenario.TokenBucket{Rate: 1} }), `gateway.admission.tokenBucket: is set, but the policy is "predictive"`},
		{"gate fleet", adm(func(a *scenario.Admission) {
			a.Policy, a.SLOGated = scenario.PolicySLOGated, &scenario.SLOGated{Fleet: "mean"}
		}), `gateway.admission.sloGated.fleet: must be min or max, got "mean"`},
		{"gate threshold", adm(func(a *scenario.Admission) {
			a.Policy, a.SLOGated = scenario.PolicySLOGated, &scenario.SLOGated{SheddableThreshold: -2}
		}), "gateway.admission.sloGated.sheddableThreshold"},
		{"floor", adm(func(a *scenario.Admission) { a.Fairness = &scenario.Fairness{Share: 1} }), "gateway.admission.fairness.share: must be in (0, 1)"},
		{"criticality", func(s *scenario.Scenario) {
			s.Models[0].Workload.Classes = []scenario.Class{{Name: "a", Share: 1, SLO: scenario.SLO{TTFTMs: 1, ITLMs: 1}, Criticality: "vip"}}
		}, `models[0].workload.classes[0].criticality: must be critical, standard or sheddable, got "vip"`},
		{"new group without groups", func(s *scenario.Scenario) {
			s.Models[0].Workload.NewPrefixGroups = []scenario.NewPrefixGroup{{AtSeconds: 1, Share: 0.1}}
		}, "models[0].workload.newPrefixGroups: needs prefixGroups > 0"},
		{"new group share", func(s *scenario.Scenario) {
			s.Models[0].Workload.PrefixGroups, s.Models[0].Workload.PrefixTokens = 2, 16
			s.Models[0].Workload.NewPrefixGroups = []scenario.NewPrefixGroup{{AtSeconds: 1, Share: 1.5}}
		}, "models[0].workload.newPrefixGroups[0].share: must be in (0, 1)"},
		{"scheduling", func(s *scenario.Scenario) { s.Models[0].Variants[0].SchedulingPolicy = "lifo" },
			`models[0].variants[0].schedulingPolicy: must be fcfs or priority-fcfs, got "lifo"`},
		{"matrix configs", func(s *scenario.Scenario) { s.Matrix = &scenario.Matrix{} }, "matrix.configs: must list at least one configuration"},
		{"matrix names", func(s *scenario.Scenario) {
			s.Matrix = &scenario.Matrix{Configs: []scenario.MatrixConfig{{Name: "a"}, {Name: "a"}}}
		}, `matrix.configs[1].name: duplicates "a"`},
		{"matrix gateway", func(s *scenario.Scenario) {
			s.Matrix = &scenario.Matrix{Configs: []scenario.MatrixConfig{{Name: "a", Gateway: scenario.Gateway{Admission: &scenario.Admission{Policy: "x"}}}}}
		}, `matrix.configs[0].gateway.admission.policy: must be always`},
		{"matrix rate", func(s *scenario.Scenario) {
			s.Matrix = &scenario.Matrix{Configs: []scenario.MatrixConfig{{Name: "a"}}, Rates: []scenario.MatrixRate{{Name: "r", Rate: scenario.Rate{Pattern: "constant", RPS: 1e9}}}}
		}, "matrix.rates[0]: models[0].workload.rate: a peak of 1e+09"},
		{"matrix autoscalers", func(s *scenario.Scenario) {
			s.Matrix = &scenario.Matrix{Configs: []scenario.MatrixConfig{{Name: "a"}}, Autoscalers: []string{"magic"}}
		}, `matrix.autoscalers: unknown autoscaler "magic"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.ParseScenario([]byte(simtest.ValidScenario))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&sc)
			if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
