package sim_test

import (
	"reflect"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// TestDefaultsFillACopy: withDefaults fills every section's unset fields
// with the defaults docs/evaluation.md lists, keeps what is set, and leaves
// the scenario it is called on (its models, variants and saturation
// detector, shared by pointer or slice) unchanged.
func TestDefaultsFillACopy(t *testing.T) {
	sc := scenario.Scenario{
		Gateway: scenario.Gateway{Saturation: &scenario.Saturation{}},
		Models: []scenario.Model{{Name: "m", Workload: scenario.Workload{Input: scenario.Tokens{Mean: 100}, Output: scenario.Tokens{Mean: 28}},
			Variants: []scenario.Variant{{Name: "v", MaxReplicas: 4}}}},
		Autoscalers: scenario.Autoscalers{HPA: scenario.HPAConfig{QueueTarget: 7}},
	}
	c := sc.WithDefaults()
	if !reflect.DeepEqual(sc.Gateway.Saturation, &scenario.Saturation{}) || !reflect.DeepEqual(sc.Models[0].Variants[0], scenario.Variant{Name: "v", MaxReplicas: 4}) ||
		sc.Models[0].Workload.Arrival != "" || sc.Seed != 0 {
		t.Fatalf("withDefaults changed the scenario it was called on: %+v", sc)
	}
	v := c.Models[0].Variants[0]
	grace := 30.0
	// KV blocks: room for the whole batch (256) at the longest request
	// (100 + 28 tokens) in 16-token blocks, plus one.
	want := scenario.Variant{Name: "v", AcceleratorsPerReplica: 1, LatencyModel: "iteration", MaxBatchSize: 256, MaxBatchedTokens: 2048,
		KVBlocks: 256*128/16 + 1, BlockSize: 16, MaxReplicas: 4, StartupSeconds: 120, StartupJitterSeconds: 30,
		TerminationGracePeriodSeconds: &grace, Shutdown: "abort"}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("variant defaults:\n got %+v\nwant %+v", v, want)
	}
	drainTimeout := scenario.DefaultDrainTimeoutSeconds
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"seed", c.Seed, uint64(1)}, {"recordSeconds", c.RecordSeconds, 15.0}, {"arrival", c.Models[0].Workload.Arrival, "poisson"},
		{"gateway", *c.Gateway.Weights, scenario.ScorerWeights{KV: 1, Queue: 1, Batch: 1, Prefix: 1}},
		{"gateway.router", c.Gateway.Router, "least-loaded"}, {"gateway.timeoutSeconds", c.Gateway.TimeoutSeconds, 120.0},
		{"gateway.saturation", *c.Gateway.Saturation, scenario.Saturation{QueueThreshold: 5, KVThreshold: 0.8}},
		{"scrape", c.Scrape, scenario.Scrape{IntervalSeconds: 15, WindowSeconds: 60, DelaySeconds: 15, EPPIntervalSeconds: 10}},
		{"oracleIntervalSeconds", c.Autoscalers.OracleIntervalSeconds, 60.0},
		{"wva", c.Autoscalers.WVA, scenario.WVAConfig{IntervalSeconds: 30, ScaleFromZeroIntervalSeconds: 2, Mode: "hybrid", Optimizer: "unlimited", DrainTimeoutSeconds: &drainTimeout}},
		{"hpa", c.Autoscalers.HPA, scenario.HPAConfig{SyncSeconds: 15, QueueTarget: 7, KVTarget: 0.5, Tolerance: 0.1, StabilizationSeconds: 300}},
		{"keda", c.Autoscalers.KEDA, scenario.KEDAConfig{PollingSeconds: 30, CooldownSeconds: 300, StabilizationSecs: 300, ThresholdFraction: 1}},
		{"default", c.Autoscalers.Default, []string{"wva", "hpa", "clairvoyant"}},
		{"kedaQueue", c.Autoscalers.KEDAQueue, scenario.KEDAQueueConfig{EPPScaler: scenario.EPPScaler{SyncSeconds: 15, Tolerance: 0.1, MinReplicaCount: 1,
			Behavior: &scenario.Behavior{ScaleUp: &scenario.ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
				Policies: []scenario.ScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}},
				ScaleDown: &scenario.ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
					Policies: []scenario.ScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}}}},
			QueueThreshold: 1, RunningThreshold: 16}},
		{"kedaSlo", [2]float64{c.Autoscalers.KEDASLO.ThetaUp, c.Autoscalers.KEDASLO.ThetaDown}, [2]float64{0.55, 0.40}},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s: got %+v, want %+v", f.name, f.got, f.want)
		}
	}
}
func ptr[T any](v T) *T { return &v }
