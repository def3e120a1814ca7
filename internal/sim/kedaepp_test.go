package sim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// eppProbe keeps one replica and records the EPP's gauges at each decision.
type eppProbe struct {
	interval float64
	seen     []eppGauges
}

type eppGauges struct {
	t                                         float64
	queue, running, saturation, tokens, kvSum float64
	ok                                        bool
}

func (p *eppProbe) Name() string      { return "probe" }
func (p *eppProbe) Interval() float64 { return p.interval }
func (p *eppProbe) ReadsEPP()         {}

var _ EPPReader = (*eppProbe)(nil)

func (p *eppProbe) Decide(v *View) []int {
	g := eppGauges{t: v.Now}
	g.queue, g.running, g.saturation, g.tokens, g.kvSum, g.ok = v.EPP.Gauges(0)
	p.seen = append(p.seen, g)
	return []int{-1}
}

// TestEPPGauges: three 160-token requests reach one replica that runs one
// at a time (max batch 1) at t = 0; the first decodes 4 000 tokens (10.5 ms
// each), so at the EPP's scrape at 10 s the others still wait. Read at
// 25 s (the 15-s query delay lets the 10-s scrape through):
//   - without saturation admission every request is on the pod: queue 0,
//     running 3, saturation max(2 waiting / 5, KV / 0.8) = 0.4, in-flight
//     tokens 2 × 160 (the first is past its first token);
//   - with the detector's queue threshold at 1 the pod takes one waiting
//     request at a time and the gateway holds the third: queue 1, running
//     2, saturation max(1 / 1, KV / 0.8) = 1, in-flight tokens 160.
func TestEPPGauges(t *testing.T) {
	v := linearVariant()
	v.MaxBatchSize, v.MaxReplicas = 1, 1
	rows := []scenario.TraceRow{row(0, 160, 4000), row(0, 160, 10), row(0, 160, 10)}
	// At 10 s the first request holds 160 + ~950 tokens: 70 blocks of 16
	// of the 1 000, KV usage ≈ 0.07.
	kvNear := func(kv float64) bool { return kv > 0.065 && kv < 0.075 }
	for _, tc := range []struct {
		name                             string
		sat                              *scenario.Saturation
		queue, running, saturation, toks float64
	}{
		{"on the pod", nil, 0, 3, 0.4, 320},
		{"held at the gateway", &scenario.Saturation{QueueThreshold: 1, KVThreshold: 0.8}, 1, 2, 1, 160},
	} {
		p := &eppProbe{interval: 25}
		runRows(t, v, rows, p, func(sc *scenario.Scenario) { sc.Gateway.Saturation = tc.sat; sc.DurationSeconds = 30 })
		if len(p.seen) < 2 || p.seen[0].ok {
			t.Fatalf("%s: decisions %+v: want none at 0 s (no scrape yet) and one at 25 s", tc.name, p.seen)
		}
		g := p.seen[1]
		if !g.ok || g.t != 25 || g.queue != tc.queue || g.running != tc.running || g.tokens != tc.toks || !kvNear(g.kvSum) {
			t.Errorf("%s: %+v, want queue %v running %v tokens %v KV ≈ 0.07", tc.name, g, tc.queue, tc.running, tc.toks)
		}
		near(t, tc.name+": saturation", g.saturation, tc.saturation)
	}
}

// TestEPPPrefixEstimate: the in-flight tokens leave out the prefix the
// picker finds cached on the pod. A first request (prefix group 0 of 64
// shared tokens) fills the cache; a second of the same group, sent while
// the pod is busy with a long first request, counts 160 − 64 tokens.
func TestEPPPrefixEstimate(t *testing.T) {
	v := linearVariant()
	v.MaxBatchSize, v.MaxReplicas = 1, 1
	rows := []scenario.TraceRow{{Time: 0, Input: 160, Output: 4000, Class: "critical", Prefix: 0}, {Time: 5, Input: 160, Output: 10, Class: "critical", Prefix: 0}}
	p := &eppProbe{interval: 25}
	runRows(t, v, rows, p, func(sc *scenario.Scenario) { sc.DurationSeconds = 30 })
	if len(p.seen) < 2 || p.seen[1].tokens != 160-64 {
		t.Fatalf("decisions %+v: want %d in-flight tokens at 25 s", p.seen, 160-64)
	}
}

// TestHistogramQuantile checks Prometheus' interpolation by hand.
func TestHistogramQuantile(t *testing.T) {
	bounds := []float64{1, 2, 4}
	zero := []float64{0, 0, 0, 0}
	for _, tc := range []struct {
		q      float64
		counts []float64
		want   float64
		ok     bool
	}{
		{0.9, []float64{2, 6, 2, 0}, 3, true},   // rank 9 of 10: half-way through (2, 4]
		{0.5, []float64{2, 6, 2, 0}, 1.5, true}, // rank 5: 3/6 into (1, 2]
		{0.1, []float64{2, 6, 2, 0}, 0.5, true}, // rank 1: half of (0, 1]
		{0.9, []float64{0, 0, 0, 5}, 4, true},   // in +Inf: the highest finite bound
		{0.9, zero, 0, false},                   // no observation: NaN
	} {
		got, ok := histogramQuantile(tc.q, bounds, zero, tc.counts)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("q %v of %v = %v, %v; want %v, %v", tc.q, tc.counts, got, ok, tc.want, tc.ok)
		}
	}
	// The increase between two scrapes, not the totals.
	if got, _ := histogramQuantile(0.5, bounds, []float64{5, 0, 0, 0}, []float64{5, 4, 0, 0}); got != 1.5 {
		t.Errorf("median of the increase = %v, want 1.5", got)
	}
}

// TestSLOSignal: EPP scrapes every 10 s; the only observations are ten
// requests between the scrapes at 50 and 60 s, TTFT in (0.2, 0.4] and TPOT
// in (0.04, 0.06]. The rule at 60 s: P90 TTFT 0.2 + 0.2 × 0.9 = 0.38 s,
// P90 TPOT 0.04 + 0.02 × 0.9 = 0.058 s; against 1 s and 50 ms, s_raw =
// max(0.38, 1.16) = 1.16. The rules at 45 and 30 s saw no request (0).
// Read at 75 s (the 15-s delay lets the 60-s evaluation through), s =
// (1.16 + 0 + 0) / 3; with TPOT in (0.2, 0.3] s_raw is clamped to 2.
func TestSLOSignal(t *testing.T) {
	mk := func(tpotBucket int) *EPPMetrics {
		st := newEPPState(&scenario.Scenario{Models: []scenario.Model{{}}})
		for i := 0; i <= 6; i++ {
			x := eppSample{t: float64(10 * i), ttft: make([]float64, len(eppTTFTBuckets)+1), tpot: make([]float64, len(eppTPOTBuckets)+1)}
			if i == 6 {
				x.ttft[bucketOf(eppTTFTBuckets, 0.3)] = 10
				x.tpot[tpotBucket] = 10
			}
			st.models[0].samples = append(st.models[0].samples, x)
		}
		return &EPPMetrics{st: st, now: 75, delay: 15}
	}
	c := (&scenario.Scenario{}).WithDefaults().Autoscalers.KEDASLO
	slo := scenario.SLO{TTFTMs: 1000, ITLMs: 50}
	s, ok := sloSignal(c, mk(bucketOf(eppTPOTBuckets, 0.05)), 0, slo)
	near(t, "s", s, 1.16/3)
	if !ok {
		t.Error("no signal")
	}
	s, _ = sloSignal(c, mk(bucketOf(eppTPOTBuckets, 0.25)), 0, slo)
	near(t, "s clamped", s, 2.0/3)
	// Before the first evaluation gets through the delay: no metric.
	e := mk(0)
	e.now = 10
	if _, ok := sloSignal(c, e, 0, slo); ok {
		t.Error("a signal before the first rule evaluation")
	}
}

// TestControlLaw checks the SLO-aware guide's law by hand (θ_up 0.55,
// θ_dn 0.40).
func TestControlLaw(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		n, r int
		want float64
	}{
		{1.1, 4, 4, 8},  // 4 + ceil(4 (1.1/0.55 − 1))
		{1.1, 4, 2, 4},  // two still starting: c = 0.5, 4 + ceil(0)
		{0.6, 3, 3, 4},  // 3 + ceil(3 × 0.0909)
		{0.2, 4, 4, 2},  // 4 − floor(4 × 0.5)
		{0, 5, 5, 0},    // no traffic: to the minimum
		{0.5, 4, 4, 4},  // within the band
		{2, 0, 0, 0},    // nothing provisioned
		{0.56, 1, 0, 2}, // none ready: c = 1
	} {
		if got := controlLaw(tc.s, 0.55, 0.40, tc.n, tc.r); got != tc.want {
			t.Errorf("s %v n %d r %d: %v, want %v", tc.s, tc.n, tc.r, got, tc.want)
		}
	}
}

// TestKEDAQueueDecide: the queue path's HPA on hand-made views. Two
// replicas and 40 running requests (target 16 each): ceil(40 / 16) = 3. At
// 80 running 15 s later the guide's 300-s scale-up window holds 3 (the
// lowest recommendation of the window); 300 s after the first it orders 5.
// The count is spread cheapest first: the cheap variant's 2 first.
func TestKEDAQueueDecide(t *testing.T) {
	sc := &scenario.Scenario{Models: []scenario.Model{{Name: "m", Variants: []scenario.Variant{
		{Name: "dear", Cost: 4, MinReplicas: 0, MaxReplicas: 8},
		{Name: "cheap", Cost: 1, MinReplicas: 1, MaxReplicas: 2},
	}}}}
	d := sc.WithDefaults()
	k := newKEDAQueue(&d)
	st := newEPPState(&d)
	view := func(now, running float64, cheap, dear int) *View {
		st.models[0].samples = append(st.models[0].samples, eppSample{t: now - 15, running: running})
		return &View{Now: now, Scenario: &d, EPP: &EPPMetrics{st: st, now: now, delay: 15}, Variants: []VariantView{
			{Model: 0, Name: "dear", Cost: 4, MaxReplicas: 8, Current: dear, Ready: dear},
			{Model: 0, Name: "cheap", Cost: 1, MinReplicas: 1, MaxReplicas: 2, Current: cheap, Ready: cheap}}}
	}
	for _, step := range []struct {
		now, running      float64
		cheap, dear       int
		wantDear, wantChp int
	}{
		{100, 40, 2, 0, 1, 2},
		{115, 80, 2, 1, 1, 2},
		{400, 80, 2, 1, 3, 2},
		{415, 17, 2, 3, 3, 2}, // 17/80: down, but the 300-s down window holds 5
	} {
		got := k.Decide(view(step.now, step.running, step.cheap, step.dear))
		if got[0] != step.wantDear || got[1] != step.wantChp {
			t.Errorf("t %v running %v: dear %d cheap %d, want %d %d", step.now, step.running, got[0], got[1], step.wantDear, step.wantChp)
		}
	}
}

// TestKEDAEPPValidation: every setting of the four paths out of range is
// named, and a valid one parses with the guides' defaults filled in.
func TestKEDAEPPValidation(t *testing.T) {
	_, err := scenario.ParseScenario([]byte(`
name: bad
durationSeconds: 60
scrape: {eppIntervalSeconds: 0.01}
autoscalers:
  kedaQueue: {syncSeconds: -1, queueThreshold: -1, runningThreshold: 2e6, minReplicaCount: 5, maxReplicaCount: 2}
  kedaSaturation: {saturationThreshold: 1e300, tolerance: 1.5}
  kedaTokens: {backlogSeconds: -2, kvThreshold: 2, prefillTokensPerSecond: -1}
  kedaSlo:
    thetaUp: 0.3
    quantile: 1
    clamp: 1e9
    ruleSeconds: 0.01
    behavior: {scaleUp: {selectPolicy: Often, policies: [{type: Pods, value: 0, periodSeconds: 15}]}}
models:
  - name: m
    slo: {ttftMs: 100, itlMs: 10}
    workload: {arrival: poisson, rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {mean: 10}}
    variants: [{name: v, accelerator: H100, params: {alpha: 1, beta: 0.1, gamma: 0.1}}]
`))
	if err == nil {
		t.Fatal("accepted bad KEDA + EPP settings")
	}
	for _, want := range []string{"scrape.eppIntervalSeconds: must be at least 0.1 seconds",
		"autoscalers.kedaQueue.syncSeconds", "autoscalers.kedaQueue.queueThreshold", "autoscalers.kedaQueue.runningThreshold",
		"autoscalers.kedaQueue.maxReplicaCount: must be at least minReplicaCount (5), got 2",
		"autoscalers.kedaSaturation.saturationThreshold", "autoscalers.kedaSaturation.tolerance",
		"autoscalers.kedaTokens.backlogSeconds", "autoscalers.kedaTokens.kvThreshold", "autoscalers.kedaTokens.prefillTokensPerSecond",
		"autoscalers.kedaSlo.thetaDown: must be below thetaUp (0.3), got 0.4", "autoscalers.kedaSlo.quantile",
		"autoscalers.kedaSlo.clamp", "autoscalers.kedaSlo.ruleSeconds: must be at least 0.1",
		"autoscalers.kedaSlo.behavior.scaleUp.selectPolicy", "autoscalers.kedaSlo.behavior.scaleUp.policies[0].value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	sc, err := scenario.ParseScenario([]byte(`
name: good
durationSeconds: 60
autoscalers:
  kedaSlo: {behavior: {scaleDown: {stabilizationWindowSeconds: 60}}}
models:
  - name: m
    slo: {ttftMs: 100, itlMs: 10}
    workload: {arrival: poisson, rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {mean: 10}}
    variants: [{name: v, accelerator: H100, params: {alpha: 1, beta: 0.1, gamma: 0.1}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	b := sc.WithDefaults().Autoscalers.KEDASLO.Behavior
	if *b.ScaleDown.StabilizationWindowSeconds != 60 || b.ScaleDown.Policies[0] != (scenario.ScalingPolicy{Type: "Pods", Value: 1, PeriodSeconds: 120}) ||
		*b.ScaleUp.StabilizationWindowSeconds != 30 {
		t.Errorf("behavior %+v %+v: want the window set and the guide's other settings", *b.ScaleUp, *b.ScaleDown)
	}
}

// TestKEDAEPPKeepsTheSplit: a change of a model's count moves only that
// change: with one replica on each of two variants and the count
// unchanged, nothing moves (no pod is killed to start a cheaper one); one
// more goes to the cheapest variant with a free accelerator (the cheap
// one's type is used up by another model), one less comes from the
// dearest.
func TestKEDAEPPKeepsTheSplit(t *testing.T) {
	vs := []VariantView{
		{Model: 0, Name: "dear", Accelerator: "A100", AcceleratorsPerReplica: 1, Cost: 4, MaxReplicas: 8, Current: 1},
		{Model: 0, Name: "cheap", Accelerator: "H100", AcceleratorsPerReplica: 1, Cost: 1, MaxReplicas: 8, Current: 1},
		{Model: 1, Name: "other", Accelerator: "H100", AcceleratorsPerReplica: 1, Cost: 1, MinReplicas: 3, MaxReplicas: 3, Current: 3},
	}
	sc := &scenario.Scenario{Inventory: map[string]int{"H100": 4}, Models: []scenario.Model{{Name: "a"}, {Name: "b"}}}
	v := &View{Scenario: sc, Variants: vs}
	idx := modelOrder(v)[0]
	for _, tc := range []struct {
		delta int
		want  []int
	}{
		{0, []int{1, 1, 3}},
		{1, []int{2, 1, 3}}, // H100 full (1 + 3 of 4): the A100 variant
		{-1, []int{0, 1, 3}},
		{-2, []int{0, 0, 3}},
	} {
		out := []int{1, 1, 3}
		adjust(v, idx, tc.delta, out)
		if !slices.Equal(out, tc.want) {
			t.Errorf("change %+d: %v, want %v", tc.delta, out, tc.want)
		}
	}
	// With room on H100 the cheap variant takes it; beyond every free
	// accelerator the rest is asked for anyway (pending pods).
	sc.Inventory["H100"] = 5
	out := []int{1, 1, 3}
	adjust(v, idx, 1, out)
	if !slices.Equal(out, []int{1, 2, 3}) {
		t.Errorf("room on H100: %v", out)
	}
	sc.Inventory = map[string]int{"H100": 4, "A100": 1}
	out = []int{1, 1, 3}
	adjust(v, idx, 2, out)
	if !slices.Equal(out, []int{1, 3, 3}) {
		t.Errorf("no room anywhere: %v, want the cheapest asked for", out)
	}
}

// TestEPPKeepsLongWindows: the scrapes kept cover keda-slo's longest
// reading (its rate window over its average) with the pipeline's delay.
func TestEPPKeepsLongWindows(t *testing.T) {
	sc := scenario.Scenario{Autoscalers: scenario.Autoscalers{KEDASLO: scenario.KEDASLOConfig{WindowSeconds: 600, AverageSeconds: 900}}}
	d := sc.WithDefaults()
	if keep := newEPPState(&d).keep; keep < 600+900+15+15 {
		t.Errorf("keeps %v s of scrapes, want at least %v", keep, 600+900+15+15)
	}
}
