package sim_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestCancelStopsRun: a cancelled context stops a run within
// sim.CancelCheckEvents events of the cancellation (a few milliseconds of
// work, even where a simulated minute takes far longer), and the run says
// it was interrupted; a comparison stops too and keeps no partial run
// (experiment's TestCancelStopsExperiments: over seeds and a sweep).
func TestCancelStopsRun(t *testing.T) {
	sc := simtest.Heavy(t)
	t.Run("run", func(t *testing.T) {
		s := sim.New(sc, sim.NewStatic(1))
		handled, atCancel := 0, -1
		sim.SetCheck(s, func(*sim.Sim, float64) { handled++ })
		res := s.Run(simtest.Countdown(3, func() { atCancel = handled }), nil)
		if !res.Interrupted || res.Arrived == 0 || atCancel < 0 {
			t.Fatalf("interrupted %v after %d requests (cancelled at event %d)", res.Interrupted, res.Arrived, atCancel)
		}
		if after := handled - atCancel; after > sim.CancelCheckEvents {
			t.Errorf("%d events simulated after the cancellation, want at most %d", after, sim.CancelCheckEvents)
		}
		if res.DurationSecs >= sc.DurationSeconds {
			t.Errorf("simulated %v s of %v", res.DurationSecs, sc.DurationSeconds)
		}
	})
	t.Run("compare", func(t *testing.T) {
		rs, err := sim.Compare(simtest.Countdown(3, nil), sc, []string{"hpa", "static:1"}, nil)
		if err != nil || len(rs) != 1 || !rs[0].Interrupted {
			t.Errorf("results %d (error %v): want the first run, interrupted, and no second", len(rs), err)
		}
	})
}

// TestScenarioFieldValidation: every number of the schema that is
// negative, not finite or beyond its limit is rejected with its field path
// and the value; the sizes that bound a run's memory and time are checked
// before it starts.
func TestScenarioFieldValidation(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		edit func(s *scenario.Scenario)
		want string
	}{
		{"1e9 rps", func(s *scenario.Scenario) { s.Models[0].Workload.Rate.RPS = 1e9 },
			"models[0].workload.rate: a peak of 1e+09 requests/s over durationSeconds 600 is up to 6e+11 requests, more than the 20000000 a run may simulate"},
		{"many models", func(s *scenario.Scenario) {
			s.Models[0].Workload.Rate.RPS = 20000
			m := s.Models[0]
			m.Name = "m2"
			s.Models = append(s.Models, m)
		}, "models: the workloads add up to 2.4e+07 requests"},
		{"negative rps", func(s *scenario.Scenario) { s.Models[0].Workload.Rate.RPS = -1 }, "models[0].workload.rate.rps: must be a finite number ≥ 0, got -1"},
		{"NaN rps", func(s *scenario.Scenario) { s.Models[0].Workload.Rate.RPS = nan }, "models[0].workload.rate.rps: must be a finite number ≥ 0, got NaN"},
		{"infinite ramp", func(s *scenario.Scenario) { s.Models[0].Workload.Rate.To = inf }, "models[0].workload.rate.to: must be a finite number ≥ 0, got +Inf"},
		{"negative step", func(s *scenario.Scenario) {
			s.Models[0].Workload.Rate = scenario.Rate{Pattern: "staircase", Steps: []scenario.Step{{AtSeconds: 0, RPS: 1}, {AtSeconds: 60, RPS: -2}}}
		}, "models[0].workload.rate.steps[1].rps: must be a finite number ≥ 0, got -2"},
		{"steps out of order", func(s *scenario.Scenario) {
			s.Models[0].Workload.Rate = scenario.Rate{Pattern: "staircase", Steps: []scenario.Step{{AtSeconds: 60, RPS: 1}, {AtSeconds: 0, RPS: 2}}}
		}, "models[0].workload.rate.steps[1].atSeconds: steps must be in time order, got 0 after 60"},
		{"no steps", func(s *scenario.Scenario) { s.Models[0].Workload.Rate = scenario.Rate{Pattern: "staircase"} }, "models[0].workload.rate.steps: a staircase needs at least one step"},
		{"negative spike", func(s *scenario.Scenario) {
			s.Models[0].Workload.Rate = scenario.Rate{Pattern: "spikes", Spikes: []scenario.Spike{{AtSeconds: 10, DurationSeconds: -5, RPS: 3}}}
		}, "models[0].workload.rate.spikes[0].durationSeconds: must be a finite number ≥ 0, got -5"},
		{"backward ramp", func(s *scenario.Scenario) {
			s.Models[0].Workload.Rate = scenario.Rate{Pattern: "ramp", From: 1, To: 2, StartSeconds: 300, EndSeconds: 100}
		}, "models[0].workload.rate.endSeconds: must be ≥ startSeconds (300), got 100"},
		{"diurnal without period", func(s *scenario.Scenario) { s.Models[0].Workload.Rate = scenario.Rate{Pattern: "diurnal", Mean: 2} },
			"models[0].workload.rate.periodSeconds: a diurnal pattern needs a period > 0 seconds, got 0"},
		{"negative amplitude", func(s *scenario.Scenario) {
			s.Models[0].Workload.Rate = scenario.Rate{Pattern: "diurnal", Mean: 2, Amplitude: -1, PeriodSeconds: 60}
		}, "models[0].workload.rate.amplitude: must be a finite number ≥ 0, got -1"},
		{"infinite cv", func(s *scenario.Scenario) { s.Models[0].Workload.Arrival, s.Models[0].Workload.CV = "gamma", inf },
			"models[0].workload.cv: must be a number between 0 and 100, got +Inf"},
		{"infinite token mean", func(s *scenario.Scenario) { s.Models[0].Workload.Input.Mean = inf },
			"models[0].workload.input.mean: must be a token count between 1 and 10000000, got +Inf"},
		{"negative sd", func(s *scenario.Scenario) { s.Models[0].Workload.Output.SD = -3 },
			"models[0].workload.output.sd: must be a token count between 0 and 10000000, got -3"},
		{"min above max", func(s *scenario.Scenario) { s.Models[0].Workload.Input.Min, s.Models[0].Workload.Input.Max = 100, 10 },
			"models[0].workload.input.max: must be ≥ min (100), got 10"},
		{"huge empirical value", func(s *scenario.Scenario) {
			s.Models[0].Workload.Output = scenario.Tokens{Dist: "empirical", Values: []float64{3, 1e12}}
		}, "models[0].workload.output.values[1]: must be a whole token count between 1 and 10000000, got 1e+12"},
		{"negative prefix groups", func(s *scenario.Scenario) { s.Models[0].Workload.PrefixGroups = -1 },
			"models[0].workload.prefixGroups: must be between 0 and 1000000, got -1"},
		{"infinite SLO", func(s *scenario.Scenario) { s.Models[0].SLO.TTFTMs = inf }, "models[0].slo.ttftMs: must be a finite number of ms > 0, got +Inf"},
		{"attainment 1", func(s *scenario.Scenario) { s.Models[0].SLO.Attainment = 1 }, "models[0].slo.attainment: must be in (0, 1), or 0 for autoscalers.wva.attainment, got 1"},
		{"NaN attainment", func(s *scenario.Scenario) { s.Models[0].SLO.Attainment = math.NaN() }, "models[0].slo.attainment: must be in (0, 1)"},
		{"negative priority", func(s *scenario.Scenario) { s.Models[0].Priority = -1 }, "models[0].priority: must be ≥ 0"},
		{"duplicate model", func(s *scenario.Scenario) { s.Models = append(s.Models, s.Models[0]) }, `models[1].name: duplicates models[0].name "m"`},
		{"duplicate variant", func(s *scenario.Scenario) { v := &s.Models[0]; v.Variants = append(v.Variants, v.Variants[0]) },
			`models[0].variants[1].name: duplicates variants[0].name "v"`},
		{"negative kvBlocks", func(s *scenario.Scenario) { s.Models[0].Variants[0].KVBlocks = -5 },
			"models[0].variants[0].kvBlocks: must be between 1 and 4194304 (0: the default), got -5"},
		{"negative maxBatchSize", func(s *scenario.Scenario) { s.Models[0].Variants[0].MaxBatchSize = -1 },
			"models[0].variants[0].maxBatchSize: must be between 1 and 65536 (0: the default), got -1"},
		{"huge blockSize", func(s *scenario.Scenario) { s.Models[0].Variants[0].BlockSize = 1 << 20 },
			"models[0].variants[0].blockSize: must be between 1 and 4096 (0: the default), got 1048576"},
		{"huge maxReplicas", func(s *scenario.Scenario) { s.Models[0].Variants[0].MaxReplicas = 1e6 },
			"models[0].variants[0].maxReplicas: must be between 1 and 1000 (0: the default 10), got 1000000"},
		{"minReplicas above the default max", func(s *scenario.Scenario) { s.Models[0].Variants[0].MinReplicas = 50 },
			"models[0].variants[0].minReplicas: must be between 0 and maxReplicas (10), got 50"},
		{"default KV cache too large", func(s *scenario.Scenario) { s.Models[0].Workload.Input.Mean = 5e6 },
			"models[0].variants[0].kvBlocks: the default, room for 256 requests of 5e+06 tokens, is 80001025 blocks of 16 tokens, more than 4194304: set kvBlocks"},
		{"fleet KV too large", func(s *scenario.Scenario) {
			v := &s.Models[0].Variants[0]
			v.KVBlocks, v.MaxReplicas = 4<<20, 1000
		}, "models: the variants' KV caches at maxReplicas add up to 4.194e+09 blocks (Σ maxReplicas × kvBlocks), more than 100000000"},
		{"too many replicas", func(s *scenario.Scenario) {
			m := &s.Models[0]
			m.Variants[0].MaxReplicas, m.Variants[0].KVBlocks = 1000, 100
			for i := range 10 {
				v := m.Variants[0]
				v.Name = fmt.Sprint("v", i)
				m.Variants = append(m.Variants, v)
			}
		}, "models: the variants' maxReplicas add up to 11000, more than 10000"},
		{"series too long", func(s *scenario.Scenario) { s.DurationSeconds, s.RecordSeconds = scenario.MaxDurationSeconds, 0.5 },
			"recordSeconds: 0.5 s over 2.592e+06 s with 1 variants records 1.037e+07 values, more than 1000000: record less often"},
		{"too many WVA cycles", func(s *scenario.Scenario) {
			s.DurationSeconds, s.Autoscalers.WVA.IntervalSeconds, s.Models[0].Workload.Rate.RPS = scenario.MaxDurationSeconds, 0.2, 0.01
		}, "autoscalers.wva.intervalSeconds: 0.2 s over 2.592e+06 s is 1.296e+07 rounds, more than the 10000000 a run may have"},
		{"negative gateway timeout", func(s *scenario.Scenario) { s.Gateway.TimeoutSeconds = -1 },
			"gateway.timeoutSeconds: must be ≥ 0 seconds and at most 2.592e+06 (0: the default 120), got -1"},
		{"negative queue threshold", func(s *scenario.Scenario) { s.Gateway.QueueThreshold = -1 }, "gateway.queueThreshold: must be ≥ 0 waiting requests"},
		{"NaN weight", func(s *scenario.Scenario) { s.Gateway.Weights = &scenario.ScorerWeights{KV: nan} }, "gateway.weights.kv: must be a finite number ≥ 0, got NaN"},
		{"endless drain", func(s *scenario.Scenario) { s.DrainSeconds = 1e12 }, "drainSeconds: must be ≥ 0 seconds and at most 2.592e+06 (30 days), got 1e+12"},
		{"unknown mode", func(s *scenario.Scenario) { s.Autoscalers.WVA.Mode = "turbo" }, `autoscalers.wva.mode: must be capacity-only, model-only or hybrid, got "turbo"`},
		{"surge below 1", func(s *scenario.Scenario) { s.Autoscalers.WVA.SurgeRatio = 0.5 }, "autoscalers.wva.surgeRatio: must be in [1, 100] (1 or 0: no surge), got 0.5"},
		{"NaN surge", func(s *scenario.Scenario) { s.Autoscalers.WVA.SurgeRatio = nan }, "autoscalers.wva.surgeRatio: must be in [1, 100] (1 or 0: no surge), got NaN"},
		{"model surge below 1", func(s *scenario.Scenario) { s.Models[0].SurgeRatio = 0.9 }, "models[0].surgeRatio: must be in [1, 100] (1: no surge; 0: autoscalers.wva.surgeRatio), got 0.9"},
		{"margin", func(s *scenario.Scenario) { s.Autoscalers.ClairvoyantMargin = 1e300 }, "autoscalers.clairvoyantMargin: must be a number between 0 and 100, got 1e+300"},
		{"duplicate default", func(s *scenario.Scenario) { s.Autoscalers.Default = []string{"wva", "static:2", "static:02"} },
			"autoscalers.default: static:2 is listed twice"},
		{"huge static", func(s *scenario.Scenario) { s.Autoscalers.Default = []string{"static:99999999999"} },
			`autoscalers.default: static:N needs a replica count between 0 and 1000, got "static:99999999999"`},
		{"empty inventory type", func(s *scenario.Scenario) { s.Inventory = map[string]int{"": 1, "H100": 4} },
			"inventory: an accelerator type must not be empty"},
		{"odd inventory type", func(s *scenario.Scenario) { s.Inventory = map[string]int{"H100\x1b[2J": 4} },
			`inventory["H100\x1b[2J"]: no variant runs on "H100\x1b[2J"`},
		{"misspelt inventory type", func(s *scenario.Scenario) { s.Inventory = map[string]int{"h100": 4} },
			`inventory.h100: no variant runs on "h100" (the variants' accelerators: ["H100"])`},
		{"huge inventory", func(s *scenario.Scenario) { s.Inventory = map[string]int{"H100": 1 << 40} },
			`inventory.H100: must be between 0 and 1073741824 accelerators, got 1099511627776`},
		{"inventory below the initial replicas", func(s *scenario.Scenario) {
			s.Inventory, s.Models[0].Variants[0].InitialReplicas = map[string]int{"H100": 3}, 2
			s.Models[0].Variants[0].AcceleratorsPerReplica = 2
		}, `inventory.H100: 3 accelerators cannot hold the variants' initial replicas, which need 4`},
		{"KV threshold below the spare trigger", func(s *scenario.Scenario) { s.Autoscalers.WVA.KVCacheThreshold = 0.05 },
			"autoscalers.wva.kvCacheThreshold: must be a KV-cache utilisation in (0.1, 1], above the analyzer's spare trigger (0: the default 0.8), got 0.05"},
		{"a scale-up KV threshold above 1", func(s *scenario.Scenario) { s.Autoscalers.WVA.KVScaleUpThreshold = 1.2 },
			"autoscalers.wva.kvScaleUpThreshold: must be a KV-cache utilisation in (0.1, 1] (0: kvCacheThreshold; below it, kvCacheThreshold acts), got 1.2"},
		{"a scale-down window past an hour", func(s *scenario.Scenario) { s.Autoscalers.WVA.ScaleDownStabilizationSeconds = 1e11 },
			"autoscalers.wva.scaleDownStabilizationSeconds: must be between 0 and 3600 seconds (0: the default), got 1e+11"},
		{"a provisioning time past an hour", func(s *scenario.Scenario) { s.Autoscalers.WVA.ProvisioningSeconds = 3601 },
			"autoscalers.wva.provisioningSeconds: must be between 0 and 3600 seconds (0: the default), got 3601"},
		{"limited without inventory", func(s *scenario.Scenario) { s.Autoscalers.WVA.Optimizer = "limited" },
			`inventory: the limited optimizer needs every variant's accelerator type listed; "H100" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.ParseScenario([]byte(simtest.ValidScenario))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&sc)
			err = sc.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			if _, err := sim.Compare(context.Background(), sc, []string{"static:1"}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compare ran it: %v", err)
			}
		})
	}
}

// TestShippedScenariosWithinLimits: every shipped scenario is far below
// the size limits (a tenth of each at most).
func TestShippedScenariosWithinLimits(t *testing.T) {
	for _, name := range scenario.BuiltinNames(scenarios.FS) {
		sc := simtest.Builtin(t, name, 0)
		c := sc.WithDefaults()
		requests, blocks := 0.0, 0.0
		for _, m := range c.Models {
			requests += scenario.ExpectedRequests(m.Workload, c.DurationSeconds)
			for _, v := range m.Variants {
				blocks += float64(v.MaxReplicas * v.KVBlocks)
			}
		}
		if requests > scenario.MaxRequests/10 || blocks > scenario.MaxKVBlocksTotal/10 {
			t.Errorf("%s: %v requests, %v KV blocks", name, requests, blocks)
		}
		// Rounds and series at a tenth of their limits.
		tenth := func(p, format string, args ...any) { t.Errorf("%s: %s: %s", name, p, fmt.Sprintf(format, args...)) }
		c.DurationSeconds *= 10
		scenario.CheckRounds(&c, tenth)
	}
}

// TestHugeCostRefused: a cost the plotting library cannot draw (it panicked
// with "illegal range" on a variant of about 1e17 per hour, after
// results.json was written) is refused by the scenario's validation in the
// first place; that the plots turn such a cost into an error is checked in
// package report, TestPlotsNeverPanic.
func TestHugeCostRefused(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 120)
	sc.Models[0].Variants[0].Cost = 1e17
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "cost: must be at most 1e+12 per replica-hour") {
		t.Errorf("cost 1e17: %v", err)
	}
}

// TestNamesPrintable: names with control characters (printed raw to the
// terminal by the tables) or beyond 256 bytes are refused, quoted escaped.
func TestNamesPrintable(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 60)
	sc.Models[0].Name = "llama\x1b[31m"
	sc.Models[0].Variants[0].Name = strings.Repeat("v", 300)
	err := sc.Validate()
	if err == nil || !strings.Contains(err.Error(), `models[0].name: must be printable text (no control characters), got "llama\x1b[31m"`) ||
		!strings.Contains(err.Error(), "models[0].variants[0].name: must be at most 256 bytes, got 300") {
		t.Errorf("%v", err)
	}
}

// TestFractionalTokenCounts: an empirical distribution's counts are whole
// numbers (3.5 was truncated to 3 in silence).
func TestFractionalTokenCounts(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 60)
	sc.Models[0].Workload.Output = scenario.Tokens{Dist: "empirical", Values: []float64{100, 3.5}}
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "output.values[1]: must be a whole token count between 1 and 10000000, got 3.5") {
		t.Errorf("%v", err)
	}
}
