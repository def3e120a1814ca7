package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestScaleUpLimit: one cycle's scale-up is at most max(current × 4,
// current + 8) by default, or the variant's own limit; never below
// minReplicas.
func TestScaleUpLimit(t *testing.T) {
	cap1 := capacityOf(t, h100Params, 512, 128, 256, queueing.Targets{TTFTMs: 500, ITLMs: 30})
	three := 3
	cases := []struct {
		name     string
		current  int
		perPod   float64 // each pod's rate, as a multiple of one replica's capacity
		factor   float64
		replicas int
		min      *int
		want     int
		reason   Reason
	}{
		// 2 pods at 40× capacity each ask for about 80 replicas.
		{name: "default +8 beats ×4 from 2", current: 2, perPod: 40, want: 10, reason: ReasonScaleUpLimited},
		{name: "default ×4 beats +8 from 5", current: 5, perPod: 40, want: 20, reason: ReasonScaleUpLimited},
		{name: "the variant's own limit", current: 5, perPod: 40, factor: 1.5, replicas: 1, want: 7, reason: ReasonScaleUpLimited},
		{name: "a step within the limit is untouched", current: 2, perPod: 2, want: 4, reason: ReasonModelScaleUp},
		{name: "minReplicas is reached at once", current: 1, perPod: 0.1, replicas: 1, min: &three, want: 3, reason: ReasonModelScaleUp},
	}
	for _, c := range cases {
		b := variant("v", "H100").params(h100Params)
		for range c.current {
			b.pods(0.3, 0)
		}
		b.traffic(c.perPod*cap1, 512, 128, 100, 20)
		b.v.ScaleUpLimitFactor, b.v.ScaleUpLimitReplicas, b.v.MinReplicas = c.factor, c.replicas, c.min
		s := snapshot(ModeModelOnly, b)
		s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
		d := decision(t, plan(t, nil, s), "v")
		if d.Desired != c.want || d.Reason != c.reason {
			t.Errorf("%s: %d (%s), want %d (%s): %s", c.name, d.Desired, d.Reason, c.want, c.reason, d.Explanation)
		}
	}
}

// TestMaxReplicasDefault: a variant without maxReplicas is capped at
// Config.MaxReplicasDefault (default 1 000), but never below what it runs.
func TestMaxReplicasDefault(t *testing.T) {
	cap1 := capacityOf(t, h100Params, 512, 128, 256, queueing.Targets{TTFTMs: 500, ITLMs: 30})
	for _, c := range []struct {
		current, cfgMax, want int
	}{
		{current: 900, want: 1000},             // ×4 would be 3 600
		{current: 900, cfgMax: 950, want: 950}, // configured lower
		{current: 1200, want: 1200},            // already above: kept, not shrunk
	} {
		b := variant("v", "H100").params(h100Params).replicas(c.current, c.current)
		b.v.Pods = []Pod{{Name: "p", ArrivalRateRPS: 50 * cap1, AvgInputTokens: 512, AvgOutputTokens: 128, KVCacheUsage: 0.5}}
		s := snapshot(ModeModelOnly, b)
		s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
		// The pod stands for the others: the gateway counts all the traffic.
		s.Models[0].ArrivalRateRPS = float64(c.current) * 4 * cap1
		s.Config.MaxReplicasDefault = c.cfgMax
		d := decision(t, plan(t, nil, s), "v")
		if d.Desired != c.want {
			t.Errorf("current %d, default cap %d: %d (%s), want %d: %s", c.current, c.cfgMax, d.Desired, d.Reason, c.want, d.Explanation)
		}
	}
}

// TestImplausibleMetricsHold: rates no server could produce hold the whole
// model at its current count with the implausible cause, instead of being
// sized; a high but possible rate is sized.
func TestImplausibleMetricsHold(t *testing.T) {
	cap1 := capacityOf(t, h100Params, 512, 128, 256, queueing.Targets{TTFTMs: 500, ITLMs: 30})
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: h100Params.Alpha, Beta: h100Params.Beta, Gamma: h100Params.Gamma},
		Workload: queueing.Workload{InputTokens: 512, OutputTokens: 128}, MaxBatchSize: 256, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	maxRate := a.MaxRate()
	cases := []struct {
		name    string
		rate    float64 // per pod
		gateway float64
		params  bool
		held    bool
		why     string
	}{
		{name: "1e6 rps on a pod", rate: 1e6, held: true, why: "above the plausible 10000 per pod"},
		{name: "1e25 rps on a pod", rate: 1e25, held: true, why: "above the plausible"},
		{name: "101× what the parameters allow", rate: 101 * maxRate, params: true, held: true, why: "one replica of v can serve"},
		{name: "the gateway at 1e12 rps", rate: cap1, gateway: 1e12, held: true, why: "the gateway reports"},
		{name: "99× is a backlog, not a lie", rate: 99 * maxRate, params: true},
		{name: "without parameters 5 000 rps passes", rate: 5000},
	}
	for _, c := range cases {
		b := variant("v", "H100").pods(0.5, 0, 0.5, 0).traffic(c.rate, 512, 128, 100, 20)
		b.v.MaxReplicas = 100
		if c.params {
			b.params(h100Params)
		}
		s := snapshot(ModeHybrid, b, variant("w", "A100").pods(0.5, 0).traffic(1, 512, 128, 100, 20))
		s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
		s.Models[0].ArrivalRateRPS = c.gateway
		p := plan(t, nil, s)
		for _, name := range []string{"v", "w"} {
			d := decision(t, p, name)
			held := d.Hold == HoldImplausible
			if held != c.held || (held && (d.Desired != d.Current || !strings.Contains(d.Explanation, c.why))) {
				t.Errorf("%s, %s: hold %q, %d → %d (%s): %s", c.name, name, d.Hold, d.Current, d.Desired, d.Reason, d.Explanation)
			}
		}
	}
}

// TestBoundedCycleOnAbsurdDemand: a gateway rate at the edge of what
// passes the plausibility bound, on a variant without maxReplicas, plans
// within the scale-up limit in bounded time (the allocator's and the
// saturation analyzer's loops are closed-form).
func TestBoundedCycleOnAbsurdDemand(t *testing.T) {
	b := variant("v", "H100").pods(1, 1e9, 1, 1e9).traffic(9000, 512, 128, 100, 20)
	s := snapshot(ModeHybrid, b)
	s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
	s.Models[0].ArrivalRateRPS = 9000 * 10
	d := decision(t, plan(t, nil, s), "v")
	if d.Desired != 10 || d.Reason != ReasonScaleUpLimited {
		t.Errorf("%d (%s), want 10 (scale-up-limited): %s", d.Desired, d.Reason, d.Explanation)
	}
}

// TestModelOnlyKeepsSaturatedReplicas: in model-only mode, four saturated
// replicas whose arrival counter reads almost nothing are not planned down;
// the same replicas idle are.
func TestModelOnlyKeepsSaturatedReplicas(t *testing.T) {
	for _, c := range []struct {
		name   string
		kv, q  float64
		want   int
		reason Reason
	}{
		{"saturated KV", 0.95, 0, 4, ReasonSafetyBlock},
		{"long queues", 0.3, 12, 4, ReasonSafetyBlock},
		{"idle", 0.1, 0, 1, ReasonModelScaleDown},
	} {
		b := variant("v", "H100").params(h100Params).pods(c.kv, c.q, c.kv, c.q, c.kv, c.q, c.kv, c.q).traffic(0.01, 512, 128, 100, 20)
		s := snapshot(ModeModelOnly, b)
		s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
		d := decision(t, plan(t, nil, s), "v")
		if d.Desired != c.want || d.Reason != c.reason {
			t.Errorf("%s: %d (%s), want %d (%s): %s", c.name, d.Desired, d.Reason, c.want, c.reason, d.Explanation)
		}
	}
}

// TestCountBounds: counts and costs that would overflow the engine's
// arithmetic are input errors naming the field (maxReplicas near MaxInt64
// with a large scale-up factor gave −9 223 372 036 854 775 808 desired
// replicas; a scale-up limit near MaxInt64 blocked every scale-up).
func TestCountBounds(t *testing.T) {
	huge := int(^uint(0) >> 1)
	for _, c := range []struct {
		name string
		set  func(s *Snapshot, v *Variant)
		want string
	}{
		{"maxReplicas", func(_ *Snapshot, v *Variant) { v.MaxReplicas = huge }, "maxReplicas: must be between minReplicas (1) and 1048576"},
		{"currentReplicas", func(_ *Snapshot, v *Variant) { v.CurrentReplicas, v.ReadyReplicas = huge, 0 }, "currentReplicas: must be between 0 and 1048576"},
		{"scale-up replicas", func(_ *Snapshot, v *Variant) { v.ScaleUpLimitReplicas = huge }, "scaleUpLimitReplicas: must be between 1 and 1048576"},
		{"scale-up factor", func(s *Snapshot, _ *Variant) { s.Config.ScaleUpLimitFactor = 1e300 }, "config.scaleUpLimitFactor: must be between 1 and 1048576"},
		{"default max", func(s *Snapshot, _ *Variant) { s.Config.MaxReplicasDefault = huge }, "config.maxReplicasDefault: must be between 1 and 1048576"},
		{"tuner budget", func(s *Snapshot, _ *Variant) { s.Config.TunerBudget = huge }, "config.tunerBudget: must be between 1 and 1000000 steps a cycle"},
		{"negative tuner budget", func(s *Snapshot, _ *Variant) { s.Config.TunerBudget = -1 }, "config.tunerBudget: must be between 1 and 1000000 steps a cycle (0 means the default 500), got -1"},
		{"accelerators per replica", func(_ *Snapshot, v *Variant) { v.AcceleratorsPerReplica = huge }, "acceleratorsPerReplica: must be between 1 and 1024"},
		{"inventory", func(s *Snapshot, _ *Variant) { s.Inventory = map[string]int{"H100": huge} }, "inventory.H100: must be between 0 and 1073741824"},
		{"empty inventory type", func(s *Snapshot, _ *Variant) { s.Inventory = map[string]int{"": 2} }, "inventory: an accelerator type must not be empty"},
		{"spare trigger above the threshold", func(s *Snapshot, _ *Variant) { s.Saturation = &SaturationConfig{KVSpareTrigger: 0.9} },
			"models[0].saturation: kvSpareTrigger 0.9 must be below kvCacheThreshold 0.8"},
		{"model's threshold below the snapshot's trigger", func(s *Snapshot, _ *Variant) {
			s.Saturation = &SaturationConfig{KVSpareTrigger: 0.5}
			s.Models[0].Saturation = &SaturationConfig{KVCacheThreshold: 0.4}
		}, "models[0].saturation: kvSpareTrigger 0.5 must be below kvCacheThreshold 0.4"},
		{"cost", func(_ *Snapshot, v *Variant) { v.Cost = 1e300 }, "cost: must be at most 1e+12 per replica"},
		{"tiny parameter", func(_ *Snapshot, v *Variant) { p := *v.Params; p.Gamma = 1e-300; v.Params = &p }, "gamma must be between 1e-09 and 1e+09"},
	} {
		b := variant("v", "H100").params(h100Params).pods(0.3, 0)
		s := snapshot(ModeHybrid, b)
		c.set(s, &s.Models[0].Variants[0])
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestParameterExtremesFinite: parameters at the edges of their range
// plan with finite figures (a tiny one once read "NaN rps per replica"),
// and the plan encodes as JSON.
func TestParameterExtremesFinite(t *testing.T) {
	for _, p := range []tuner.Params{{Alpha: 1e-9, Beta: 1e-9, Gamma: 1e-9}, {Alpha: 1e9, Beta: 1e9, Gamma: 1e9},
		{Alpha: 1e-9, Beta: 1e9, Gamma: 1e-9}, {Alpha: 1e9, Beta: 1e-9, Gamma: 1e-9}} {
		b := variant("v", "H100").params(p).pods(0.3, 2).traffic(2, 512, 128, 100, 20)
		s := snapshot(ModeHybrid, b)
		s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
		pl := plan(t, nil, s)
		d := decision(t, pl, "v")
		if strings.Contains(d.Explanation, "NaN") || strings.Contains(d.Explanation, "Inf") {
			t.Errorf("%+v: %s", p, d.Explanation)
		}
		if _, err := json.Marshal(pl); err != nil {
			t.Errorf("%+v: the plan does not encode: %v", p, err)
		}
	}
}
