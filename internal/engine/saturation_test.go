package engine

import (
	"math"
	"strings"
	"testing"
)

// TestSaturationGuideCases are cases worked through the WVA saturation guide's
// analyzer (defaults τ_kv 0.80, τ_q 5, ε_kv 0.10, ε_q 3).
func TestSaturationGuideCases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kvQueue []float64
		want    int
		reason  Reason
		// downSafe is the scale-down simulation's verdict.
		downSafe bool
	}{
		{"KV 0.75/0.76, queues 2/2: scale up", []float64{0.75, 2, 0.76, 2}, 3, ReasonSaturationScaleUp, false},
		{"KV 0.5/0.5, queues 3/3: scale up", []float64{0.5, 3, 0.5, 3}, 3, ReasonSaturationScaleUp, false},
		{"KV 0.5/0.5, queues 1/1: no change", []float64{0.5, 1, 0.5, 1}, 2, ReasonSaturationSteady, false},
		{"KV 0.20/0.30/0.25, queues 1/1/1: scale-down safe", []float64{0.20, 1, 0.30, 1, 0.25, 1}, 2, ReasonSaturationScaleDown, true},
		// 1.45 over one replica leaves no spare: the scale-down is unsafe.
		// (The average spare, 0.075, is also below the trigger: scale up.)
		{"KV 0.70/0.75: scale-down unsafe", []float64{0.70, 0, 0.75, 0}, 3, ReasonSaturationScaleUp, false},
		{"KV 0.60/0.65: scale-down unsafe, no change", []float64{0.60, 0, 0.65, 0}, 2, ReasonSaturationSteady, false},
		{"a single replica is never scaled down", []float64{0.05, 0}, 1, ReasonSaturationSteady, false},
		// The WVA guide keeps two non-saturated replicas; WVA's default keeps
		// one (docs/evaluation.md: -17 % cost on diurnal, no SLO lost).
		{"two idle replicas go down to one", []float64{0.0, 0, 0.0, 0}, 1, ReasonSaturationScaleDown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, nil, snapshot(ModeCapacityOnly, variant("v", "H100").pods(tc.kvQueue...)))
			d := decision(t, p, "v")
			if d.Desired != tc.want || d.Reason != tc.reason {
				t.Errorf("desired %d (%s), want %d (%s): %s", d.Desired, d.Reason, tc.want, tc.reason, d.Explanation)
			}
			if sat := p.Models[0].Saturation[0]; sat.ScaleDownSafe != tc.downSafe {
				t.Errorf("scale-down safe %v, want %v", sat.ScaleDownSafe, tc.downSafe)
			}
		})
	}
}

// TestHeadroomCount goes beyond ±1: the replicas that restore the headroom
// (the WVA paper, Eq. 4) are added at once.
func TestHeadroomCount(t *testing.T) {
	// Four replicas at KV 0.95: load 3.8, each replica may carry 0.70 → 6.
	p := plan(t, nil, snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.95, 0, 0.95, 0, 0.95, 0, 0.95, 0)))
	if d := decision(t, p, "v"); d.Desired != 6 {
		t.Errorf("desired %d, want 6: %s", d.Desired, d.Explanation)
	}
	// Queue-bound: two replicas with 8 waiting each → 16 / (5 − 3) = 8 replicas.
	p = plan(t, nil, snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.3, 8, 0.3, 8)))
	if d := decision(t, p, "v"); d.Desired != 8 {
		t.Errorf("desired %d, want 8: %s", d.Desired, d.Explanation)
	}
}

// TestQueueSizedInBatches: a queue asks for the replicas that take its
// requests into their batches, not for τ_q − ε_q waiting requests per new
// replica. The end-to-end suite's servers (65 536 blocks of 16, a batch of
// 256) under a load step before the tuner had parameters: one replica
// running 245 requests, 138 waiting. Sized at 2 per replica the queue
// asked for 69 more (8, the maximum, for 2 at the true parameters); at
// 245 + 2 per replica it asks for one. Without running counts the old
// rule stands (TestHeadroomCount).
func TestQueueSizedInBatches(t *testing.T) {
	v := variant("v", "H100").minMax(1, 8).pods(0.3, 138)
	v.v.Pods[0].RunningRequests = 245
	v.v.Pods[0].KVBlocks, v.v.Pods[0].BlockSize = 65536, 16
	v.v.Pods[0].AvgInputTokens, v.v.Pods[0].AvgOutputTokens = 1024, 256
	p := plan(t, nil, snapshot(ModeCapacityOnly, v))
	if d := decision(t, p, "v"); d.Desired != 2 || d.Reason != ReasonSaturationScaleUp {
		t.Errorf("desired %d (%s), want 2 (one replica's batch covers the queue): %s", d.Desired, d.Reason, d.Explanation)
	}
	// A KV-bound replica (the WVA paper's §V.B: 16 384 tokens, 5 120 a
	// request) runs 3 and queues 10: the queue's tokens size the scale-up
	// (51 200 + 0.94 × 16 384 over 0.7 × 16 384 per replica → 6), not its
	// count over 3 + 2 per replica (2).
	v = variant("v", "H100").minMax(1, 10).pods(0.94, 10)
	v.v.Pods[0].RunningRequests = 3
	v.v.Pods[0].KVBlocks, v.v.Pods[0].BlockSize = 1024, 16
	v.v.Pods[0].AvgInputTokens, v.v.Pods[0].AvgOutputTokens = 4096, 1024
	if d := decision(t, plan(t, nil, snapshot(ModeCapacityOnly, v)), "v"); d.Desired != 6 {
		t.Errorf("KV-bound: desired %d, want 6: %s", d.Desired, d.Explanation)
	}
	// While that replica starts it takes its batch of the queue: the same
	// scale-up is not asked for again (139 waiting: still one).
	v = variant("v", "H100").minMax(1, 8).pods(0.3, 139).replicas(2, 1)
	v.v.Pods[0].RunningRequests = 245
	v.v.Pods[0].KVBlocks, v.v.Pods[0].BlockSize = 65536, 16
	v.v.Pods[0].AvgInputTokens, v.v.Pods[0].AvgOutputTokens = 1024, 256
	if d := decision(t, plan(t, nil, snapshot(ModeCapacityOnly, v)), "v"); d.Desired != 2 {
		t.Errorf("one replica pending: desired %d, want 2: %s", d.Desired, d.Explanation)
	}
	// Two variants: the cheaper one's batch sizes what it takes.
	cheap := variant("l40s", "L40S").cost(5).minMax(1, 8).pods(0.3, 138)
	dear := variant("h100", "H100").cost(10).minMax(1, 8).pods(0.3, 138)
	for _, b := range []*variantB{cheap, dear} {
		b.v.Pods[0].RunningRequests = 245
		b.v.Pods[0].KVBlocks, b.v.Pods[0].BlockSize = 65536, 16
		b.v.Pods[0].AvgInputTokens, b.v.Pods[0].AvgOutputTokens = 1024, 256
	}
	p = plan(t, nil, snapshot(ModeCapacityOnly, cheap, dear))
	// 276 waiting against 2 × 2 queue slots: (276 − 4) / 247 → 2 more, both
	// of the cheaper variant; the dearer one stays.
	if c, d := decision(t, p, "l40s"), decision(t, p, "h100"); c.Desired != 3 || d.Desired != 1 {
		t.Errorf("cheap %d, dear %d; want 3 and 1: %s | %s", c.Desired, d.Desired, c.Explanation, d.Explanation)
	}
}

// TestHeadroomInTokens uses KV blocks: demand is tokens in use plus the
// queued requests' tokens.
func TestHeadroomInTokens(t *testing.T) {
	v := variant("v", "H100").pods(0.9, 4, 0.9, 4)
	for i := range v.v.Pods {
		p := &v.v.Pods[i]
		p.KVBlocks, p.BlockSize = 1000, 16 // 16 000 tokens
		p.ArrivalRateRPS, p.AvgInputTokens, p.AvgOutputTokens = 1, 1500, 500
	}
	// Load = 2 × (0.9 × 16 000 + 4 × 2000) = 44 800 tokens; a replica may
	// carry 0.7 × 16 000 = 11 200 → 4 replicas. Queue: 8 / 2 = 4 as well.
	p := plan(t, nil, snapshot(ModeCapacityOnly, v))
	d := decision(t, p, "v")
	sat := p.Models[0].Saturation[0]
	if d.Desired != 4 || sat.LoadKV != 44800 || math.Abs(sat.SupplyKV-22400) > 1e-6 {
		t.Errorf("desired %d, load %v, supply %v: %s", d.Desired, sat.LoadKV, sat.SupplyKV, d.Explanation)
	}
}

// TestCostAwareVariantChoice: scale-up goes to the lowest cost per unit of
// capacity, scale-down takes from the highest.
func TestCostAwareVariantChoice(t *testing.T) {
	p := plan(t, nil, snapshot(ModeCapacityOnly,
		variant("a100", "A100").cost(20).pods(0.78, 2, 0.78, 2),
		variant("l4", "L4").cost(5).pods(0.78, 2)))
	// Load 3 × 0.78 = 2.34 against 3 × 0.70 = 2.10: one more replica, of
	// the cheaper L4.
	if a, l := decision(t, p, "a100"), decision(t, p, "l4"); a.Desired != 2 || l.Desired != 2 {
		t.Errorf("scale-up: a100 %d, l4 %d; want the cheaper L4 to grow to 2", a.Desired, l.Desired)
	}
	// Three replicas at 0.3: one may go (0.9 over two leaves 0.35 spare),
	// and it is the expensive A100's.
	p = plan(t, nil, snapshot(ModeCapacityOnly,
		variant("a100", "A100").cost(20).pods(0.3, 0, 0.3, 0),
		variant("l4", "L4").cost(5).pods(0.3, 0)))
	if a, l := decision(t, p, "a100"), decision(t, p, "l4"); a.Desired != 1 || l.Desired != 1 {
		t.Errorf("scale-down: a100 %d, l4 %d; want the expensive A100 to shrink", a.Desired, l.Desired)
	}
}

// TestPendingCountsAsSupply: while replicas start, the same scale-up is not
// asked for again, and nothing scales down.
func TestPendingCountsAsSupply(t *testing.T) {
	v := variant("v", "H100").pods(0.75, 2, 0.76, 2).replicas(3, 2)
	p := plan(t, nil, snapshot(ModeCapacityOnly, v))
	d := decision(t, p, "v")
	if d.Desired != 3 || d.Pending != 1 {
		t.Errorf("desired %d with one pending, want 3: %s", d.Desired, d.Explanation)
	}
	if !strings.Contains(p.Models[0].Saturation[0].Note, "pending") {
		t.Errorf("note %q", p.Models[0].Saturation[0].Note)
	}
	v = variant("v", "H100").pods(0.1, 0, 0.1, 0, 0.1, 0).replicas(4, 3)
	if d := decision(t, plan(t, nil, snapshot(ModeCapacityOnly, v)), "v"); d.Desired != 4 {
		t.Errorf("scale-down while a replica starts: desired %d", d.Desired)
	}
}

// TestGroupJudgesScaleDown: one saturated replica does not veto a
// scale-down the group's load allows, and the victim named is never the
// saturated one. KV loads in usage units (no block counts):
//   - 0.85 + 0.05 + 0.04 + 0.05 = 0.99; over two replicas 0.5, spare 0.3 ≥
//     0.10 and one waiting request over two: two can go; a third would
//     leave no non-saturated replica;
//   - 0.85 + 3×0.60 = 2.65; over three 0.88, above τ_kv: none can go.
func TestGroupJudgesScaleDown(t *testing.T) {
	p := plan(t, nil, snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.85, 0, 0.05, 0, 0.04, 1, 0.05, 0)))
	d := decision(t, p, "v")
	if d.Desired != 2 {
		t.Errorf("desired %d, want 2: %s", d.Desired, d.Explanation)
	}
	// Least loaded first: v-1 and v-3 hold no request (v-2 has one
	// waiting) and the same KV; the name breaks the tie.
	if strings.Join(d.Victims, ",") != "v-1,v-3" {
		t.Errorf("victims %v, want [v-1 v-3]", d.Victims)
	}
	p = plan(t, nil, snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.85, 0, 0.6, 0, 0.6, 0, 0.6, 0)))
	if d := decision(t, p, "v"); d.Desired != 4 || len(d.Victims) != 0 {
		t.Errorf("desired %d, victims %v: %s", d.Desired, d.Victims, d.Explanation)
	}
}

func TestPerModelThresholds(t *testing.T) {
	s := snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.5, 1, 0.5, 1))
	s.Models[0].Saturation = &SaturationConfig{KVCacheThreshold: 0.55}
	if d := decision(t, plan(t, nil, s), "v"); d.Desired != 3 {
		t.Errorf("with τ_kv 0.55 the spare is 0.05 < 0.10: desired %d", d.Desired)
	}
}

// TestAggregateDeficitTriggers: five saturated replicas and one idle one
// pass Eq. 3 (the idle one's spare is the average), but the load exceeds
// the supply, so WVA scales up.
func TestAggregateDeficitTriggers(t *testing.T) {
	p := plan(t, nil, snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.85, 0, 0.85, 0, 0.85, 0, 0.85, 0, 0.85, 0, 0.10, 0)))
	sat := p.Models[0].Saturation[0]
	if sat.AvgSpareKV < 0.1 || !sat.ScaleUp {
		t.Fatalf("saturation %+v", sat)
	}
	// Load 4.35 over 0.70 per replica: 7 replicas.
	if d := decision(t, p, "v"); d.Desired != 7 {
		t.Errorf("desired %d: %s", d.Desired, d.Explanation)
	}
}
