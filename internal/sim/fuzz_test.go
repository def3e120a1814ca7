package sim

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// FuzzScenario parses arbitrary bytes as a scenario. It must never panic;
// a scenario it accepts validates again unchanged, its defaults lie within
// the simulator's limits, every default autoscaler can be built for it,
// and its first simulated seconds run.
func FuzzScenario(f *testing.F) {
	names, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range names {
		data, err := fs.ReadFile(scenarios.FS, n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, glob := range []string{"../../examples/traces/*.yaml", "../../examples/benchmarks/*.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(simtest.ValidScenario))
	// Hardening seeds (issue 28): odd inventories, numbers beyond float64,
	// limited mode, long documents.
	for _, extra := range []string{"inventory: {H100: 0}\n", "inventory: {\"\": 1, H100: 2}\n", "inventory: {h100: 4}\n",
		"inventory: {H100: 1099511627776}\n", "autoscalers: {wva: {optimizer: limited}}\n",
		"autoscalers: {wva: {optimizer: limited, drainTimeoutSeconds: 3600}}\ninventory: {H100: 3}\n",
		"recordSeconds: 1e309\n", "seed: 18446744073709551616\n", "---\nname: second\n"} {
		f.Add([]byte(simtest.ValidScenario + extra))
	}
	f.Add([]byte(`{"name":"j","durationSeconds":1,"models":[{"name":"m","slo":{"ttftMs":1,"itlMs":1},` +
		`"workload":{"rate":{"pattern":"spikes","spikes":[{"atSeconds":0,"durationSeconds":1,"rps":3}]},"input":{"dist":"empirical","values":[1,2]},"output":{"mean":1}},` +
		`"variants":[{"name":"v","accelerator":"a","latencyModel":"linear","linear":{"beta0":1}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenario.ParseScenario(data)
		if err != nil {
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
		checkDefaults(t, sc)
		if sc.Models[0].Workload.Trace != "" {
			return // a trace must be loaded to run
		}
		for _, name := range sc.WithDefaults().Autoscalers.Default {
			if _, err := NewAutoscaler(name, &sc); err != nil {
				t.Fatalf("default autoscaler %q: %v", name, err)
			}
		}
		short := sc
		short.DurationSeconds = math.Min(sc.DurationSeconds, 5)
		short.DrainSeconds = 0
		if scenario.ExpectedRequests(short.Models[0].Workload, short.DurationSeconds) > 1000 {
			return // keep each input fast
		}
		res := New(short, &Static{n: 1}).Run(t.Context(), nil)
		if res.Arrived != res.Completed+res.Failed+res.InFlight {
			t.Fatalf("arrived %d ≠ completed %d + failed %d + in flight %d", res.Arrived, res.Completed, res.Failed, res.InFlight)
		}
	})
}

// checkDefaults asserts what the simulator relies on after defaults: every
// period at least the minimum, every size at least 1 and within its limit.
func checkDefaults(t *testing.T, sc scenario.Scenario) {
	t.Helper()
	c := sc.WithDefaults()
	for _, p := range []float64{c.RecordSeconds, c.Scrape.IntervalSeconds, c.Autoscalers.WVA.IntervalSeconds, c.Autoscalers.HPA.SyncSeconds,
		c.Autoscalers.KEDA.PollingSeconds, c.Autoscalers.OracleIntervalSeconds, c.Autoscalers.WVA.ScaleFromZeroIntervalSeconds} {
		if !(p >= scenario.MinPeriodSeconds) || math.IsInf(p, 0) {
			t.Fatalf("a period of %v s after defaults", p)
		}
	}
	if !(c.DurationSeconds > 0 && c.DurationSeconds <= scenario.MaxDurationSeconds) {
		t.Fatalf("duration %v", c.DurationSeconds)
	}
	requests, replicas, blocks := 0.0, 0, 0.0
	for _, m := range c.Models {
		requests += scenario.ExpectedRequests(m.Workload, c.DurationSeconds)
		for _, v := range m.Variants {
			if !variantInLimits(v) {
				t.Fatalf("variant %s after defaults: %+v", v.Name, v)
			}
			replicas += v.MaxReplicas
			blocks += float64(v.MaxReplicas) * float64(v.KVBlocks)
		}
	}
	if requests > scenario.MaxRequests || replicas > scenario.MaxReplicasTotal || blocks > scenario.MaxKVBlocksTotal {
		t.Fatalf("%v requests, %d replicas, %v KV blocks", requests, replicas, blocks)
	}
}

// variantInLimits: every size of a defaulted variant is at least 1 and
// within its limit.
func variantInLimits(v scenario.Variant) bool {
	return v.MaxBatchSize >= 1 && v.MaxBatchedTokens >= 1 && v.BlockSize >= 1 && v.KVBlocks >= 1 && v.KVBlocks <= scenario.MaxKVBlocks &&
		v.AcceleratorsPerReplica >= 1 && v.MaxReplicas >= 1 && v.MaxReplicas <= scenario.MaxReplicasPerVariant &&
		v.MinReplicas <= v.MaxReplicas && v.InitialReplicas <= v.MaxReplicas && v.TerminationGracePeriodSeconds != nil
}
