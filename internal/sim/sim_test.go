package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// resultsJSON is the results as indented JSON, the bytes results.json
// holds (report.WriteJSON encodes them the same way).
func resultsJSON(t *testing.T, rs ...*Result) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// firstDifference is the index of the first byte where a and b differ.
func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func checkConservation(t *testing.T, s *Sim) {
	t.Helper()
	for _, v := range s.variants {
		for _, r := range v.replicas {
			checkKV(t, r)
			for _, sq := range r.Running() {
				q := owner(sq)
				if !(q.arrive <= q.AtServer && (q.FirstToken == 0 || q.AtServer <= q.FirstToken)) {
					t.Fatalf("causality: request %d arrive %v server %v first token %v", q.ID, q.arrive, q.AtServer, q.FirstToken)
				}
			}
		}
	}
	var atGateway int64
	for _, g := range s.gateway {
		atGateway += int64(len(g))
	}
	if s.inFlight < 0 || atGateway > s.inFlight {
		t.Fatalf("in flight %d, at the gateway %d", s.inFlight, atGateway)
	}
}

// checkKV: the KV cache's invariants (server.Server.CheckKV): every
// block's reference count is the number of running requests holding it;
// the free list holds exactly the unreferenced blocks; a running request's
// blocks cover its computed and scheduled tokens and no more than one
// block beyond; a shared-prefix index entry names a block with that
// content.
func checkKV(t *testing.T, r *replica) {
	t.Helper()
	if err := r.CheckKV(); err != nil {
		t.Fatalf("replica %d: %v", r.id, err)
	}
}

// TestTunerLearnsTheSimulator feeds the tuner with the simulator's own
// metrics (per-minute pod averages at loads stepping from 20 % to 70 %) and
// checks that the learned parameters predict the simulator's ITL within
// 5 % and TTFT within 15 %: the tuner learns what it sees, including the
// half-iteration wait of TestFidelity.
func TestTunerLearnsTheSimulator(t *testing.T) {
	p := tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	a, _ := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma},
		Workload: queueing.Workload{InputTokens: 1024, OutputTokens: 256}, MaxBatchSize: 64, MaxQueueSize: 100})
	var obs []tuner.Observation
	for i, load := range []float64{0.2, 0.45, 0.7, 0.3, 0.6, 0.25, 0.5, 0.65, 0.35, 0.55} {
		sc := oneReplica(load*a.MaxRate(), p, 64, 600)
		sc.Seed = uint64(20 + i)
		ttft, itl := serverLatencies(t, sc)
		// Each a run of its own at one load: a steady state, which the
		// tuner need not compare with the previous run's load.
		obs = append(obs, tuner.Observation{RateRPS: load * a.MaxRate(), InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 64, TTFTMs: ttft, ITLMs: itl, Steady: true})
	}
	tu, _, err := tuner.NewCold(tuner.Config{}, obs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if _, err := tu.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, load := range []float64{0.4, 0.6} {
		sc := oneReplica(load*a.MaxRate(), p, 64, 1200)
		ttft, itl := serverLatencies(t, sc)
		got, err := tu.Predict(tuner.Observation{RateRPS: load * a.MaxRate(), InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 64, TTFTMs: 1, ITLMs: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("load %.1f: TTFT sim %.1f predicted %.1f; ITL sim %.2f predicted %.2f; learned %+v", load, ttft, got.TTFTMs, itl, got.ITLMs, tu.Params())
		if d := got.ITLMs/itl - 1; d > 0.05 || d < -0.05 {
			t.Errorf("load %.1f: ITL predicted %.2f, simulated %.2f", load, got.ITLMs, itl)
		}
		if d := got.TTFTMs/ttft - 1; d > 0.15 || d < -0.15 {
			t.Errorf("load %.1f: TTFT predicted %.1f, simulated %.1f", load, got.TTFTMs, ttft)
		}
	}
}

func TestScenarioValidation(t *testing.T) {
	_, err := scenario.ParseScenario([]byte(`
name: bad
durationSeconds: 0
models:
  - name: m
    slo: {ttftMs: 0, itlMs: 10}
    workload:
      arrival: weibull
      rate: {pattern: sawtooth}
      input: {mean: 0}
      output: {mean: 10}
    variants:
      - name: v
        accelerator: ""
        params: {alpha: -1, beta: 0.1, gamma: 0.1}
`))
	if err == nil {
		t.Fatal("accepted a bad scenario")
	}
	for _, want := range []string{"durationSeconds: must be > 0", "models[0].slo", "models[0].workload.arrival", "models[0].workload.rate.pattern",
		"models[0].workload.input.mean", "models[0].variants[0].accelerator", "models[0].variants[0].params"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	// Periods and times that would make the run spin or never end.
	_, err = scenario.ParseScenario([]byte(`
name: spin
durationSeconds: 315360000
recordSeconds: -15
scrape: {intervalSeconds: 0.001, windowSeconds: -1, delaySeconds: -5}
inventory: {H100: -2}
autoscalers:
  oracleIntervalSeconds: -60
  wva: {intervalSeconds: 0.01, scaleFromZeroIntervalSeconds: 0.001}
  hpa: {syncSeconds: -15, tolerance: -0.1}
  keda: {pollingSeconds: 0.05, cooldownSeconds: -1, minReplicaCount: -1}
models:
  - name: m
    slo: {ttftMs: 100, itlMs: 10}
    workload: {arrival: poisson, rate: {pattern: constant, rps: 1}, input: {mean: 10}, output: {mean: 10}}
    variants: [{name: v, accelerator: H100, params: {alpha: 1, beta: 0.1, gamma: 0.1}, acceleratorsPerReplica: -1, startupSeconds: -5, maxReplicas: -3}]
`))
	if err == nil {
		t.Fatal("accepted a scenario with bad periods")
	}
	for _, want := range []string{"durationSeconds: must be > 0 seconds and at most 2.592e+06 (30 days), got 3.1536e+08",
		"recordSeconds: must be a finite number ≥ 0 (0: the default), got -15",
		"scrape.intervalSeconds: must be at least 0.1 seconds (0: the default), got 0.001",
		"scrape.windowSeconds: must be a finite number ≥ 0", "scrape.delaySeconds: must be a finite number ≥ 0 (0: the default), got -5",
		"inventory.H100: must be between 0 and 1073741824 accelerators, got -2", "autoscalers.oracleIntervalSeconds: must be a finite number ≥ 0",
		"autoscalers.wva.intervalSeconds: must be at least 0.1 seconds", "autoscalers.wva.scaleFromZeroIntervalSeconds: must be at least 0.1 seconds",
		"autoscalers.hpa.syncSeconds: must be a finite number ≥ 0", "autoscalers.hpa.tolerance: must be a finite number ≥ 0",
		"autoscalers.keda.pollingSeconds: must be at least 0.1 seconds", "autoscalers.keda.cooldownSeconds: must be a finite number ≥ 0",
		"autoscalers.keda.minReplicaCount: must be ≥ 0, got -1",
		"models[0].variants[0].acceleratorsPerReplica: must be between 1 and 1024 (0: the default), got -1",
		"models[0].variants[0].startupSeconds: must be a finite number ≥ 0, got -5",
		"models[0].variants[0].maxReplicas: must be between 1 and 1000 (0: the default 10), got -3"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if _, err := scenario.ParseScenario([]byte("name: x\nturbo: 1\n")); err == nil {
		t.Error("accepted an unknown field")
	}
	if _, err := NewAutoscaler("static:x", &scenario.Scenario{}); err == nil {
		t.Error("accepted static:x")
	}
}

// BenchmarkSimulator: a large scenario, in simulated requests per wall
// minute (target: at least 5 million).
func BenchmarkSimulator(b *testing.B) {
	sc := simtest.Builtin(b, "diurnal", 0)
	sc.Models[0].Workload.Rate = scenario.Rate{Pattern: "constant", RPS: 60}
	sc.DurationSeconds = 1200
	sc.Models[0].Variants[0].MaxReplicas = 40
	sc.Models[0].Variants[0].InitialReplicas = 20
	var requests int64
	b.ReportAllocs()
	for b.Loop() {
		res := New(sc, &Static{n: 20}).Run(context.Background(), nil)
		requests += res.Arrived
	}
	b.ReportMetric(float64(requests)/b.Elapsed().Minutes(), "requests/min")
	_ = fmt.Sprint()
}

// TestLinearUnits: coefficients given in BLIS's µs instead of ms are
// rejected with the field path and the unit; a run that completes nothing
// says so.
func TestLinearUnits(t *testing.T) {
	_, err := scenario.ParseScenario([]byte(`
name: us
durationSeconds: 60
drainSeconds: -1
models:
  - name: m
    slo: {ttftMs: 1000, itlMs: 100}
    workload: {rate: {pattern: constant, rps: 1}, input: {mean: 512}, output: {mean: 128}, numRequests: -3}
    variants:
      - name: v
        accelerator: H100
        cost: 1
        latencyModel: linear
        linear: {beta0: 6910.4, beta1: 17.67, beta2: 2.84, alpha0: 1601.4, alpha1: 3.51, alpha2: 1805.5}
        shutdown: later
        terminationGracePeriodSeconds: -2
`))
	if err == nil {
		t.Fatal("accepted coefficients in µs")
	}
	for _, want := range []string{
		"models[0].variants[0].linear.beta0: 6910.4 ms per iteration is implausible",
		"models[0].variants[0].linear.beta1: 17.67 ms per prefill token is implausible",
		"models[0].variants[0].linear.alpha2: 1805.5 ms per output token is implausible",
		"BLIS's in microseconds",
		"drainSeconds: must be ≥ 0 seconds",
		"models[0].workload.numRequests: must be ≥ 0",
		"models[0].variants[0].shutdown: must be abort or drain",
		"models[0].variants[0].terminationGracePeriodSeconds: must be ≥ 0 seconds",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	// In ms the same coefficients are fine.
	sc := oneReplica(1, tuner.Params{}, 64, 30)
	sc.Models[0].Variants[0].LatencyModel = "linear"
	sc.Models[0].Variants[0].Linear = scenario.LinearStep{Beta0: 6.9104, Beta1: 0.01767, Beta2: 0.00284, Alpha0: 1.6014, Alpha1: 0.00351, Alpha2: 1.8055}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	if res := New(sc, &Static{n: 1}).Run(context.Background(), nil); res.Completed == 0 || len(res.Warnings) != 0 {
		t.Errorf("%d completed, warnings %q", res.Completed, res.Warnings)
	}
	// Slow enough that nothing completes in 30 s (a 1 s iteration, 1 024
	// decode steps): a warning.
	sc.Models[0].Variants[0].Linear.Beta0 = 999
	res := New(sc, &Static{n: 1}).Run(context.Background(), nil)
	if res.Completed != 0 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "no request of") {
		t.Errorf("%d completed, warnings %q", res.Completed, res.Warnings)
	}
}
