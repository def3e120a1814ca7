package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
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
	v := simtest.LinearVariant()
	v.MaxBatchSize, v.MaxReplicas = 1, 1
	rows := []scenario.TraceRow{simtest.Row(0, 160, 4000), simtest.Row(0, 160, 10), simtest.Row(0, 160, 10)}
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
		simtest.Near(t, tc.name+": saturation", g.saturation, tc.saturation)
	}
}

// TestEPPPrefixEstimate: the in-flight tokens leave out the prefix the
// picker finds cached on the pod. A first request (prefix group 0 of 64
// shared tokens) fills the cache; a second of the same group, sent while
// the pod is busy with a long first request, counts 160 − 64 tokens.
func TestEPPPrefixEstimate(t *testing.T) {
	v := simtest.LinearVariant()
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

// TestEPPKeepsLongWindows: the scrapes kept cover keda-slo's longest
// reading (its rate window over its average) with the pipeline's delay.
func TestEPPKeepsLongWindows(t *testing.T) {
	sc := scenario.Scenario{Autoscalers: scenario.Autoscalers{KEDASLO: scenario.KEDASLOConfig{WindowSeconds: 600, AverageSeconds: 900}}}
	d := sc.WithDefaults()
	if keep := newEPPState(&d).keep; keep < 600+900+15+15 {
		t.Errorf("keeps %v s of scrapes, want at least %v", keep, 600+900+15+15)
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
	s, ok := mk(bucketOf(eppTPOTBuckets, 0.05)).SLOSignal(0, c, slo)
	simtest.Near(t, "s", s, 1.16/3)
	if !ok {
		t.Error("no signal")
	}
	s, _ = mk(bucketOf(eppTPOTBuckets, 0.25)).SLOSignal(0, c, slo)
	simtest.Near(t, "s clamped", s, 2.0/3)
	// Before the first evaluation gets through the delay: no metric.
	e := mk(0)
	e.now = 10
	if _, ok := e.SLOSignal(0, c, slo); ok {
		t.Error("a signal before the first rule evaluation")
	}
}
