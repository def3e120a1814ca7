package tuner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// queuedAt returns obs as the pods would report it in an overload: the
// replicas hold a queue (TTFT mostly wait by Little's law, a hundred times
// the steady state's), their batch is full, so the ITL is the full
// batch's step at the truth's parameters.
func queuedAt(t *testing.T, tr Truth, obs Observation) Observation {
	t.Helper()
	a, err := tr.analyzer(tr.Params, obs.InputTokens, obs.OutputTokens, 100)
	if err != nil {
		t.Fatal(err)
	}
	full, err := a.Analyze(saturationLoad * a.MaxRate())
	if err != nil {
		t.Fatal(err)
	}
	obs.TTFTMs *= 100
	obs.ITLMs = full.ITLMs
	obs.WaitingRequests = 0.9 * obs.TTFTMs * obs.RateRPS / 1000
	obs.Steady = true
	return obs
}

// TestQueuedCycleKeepsITL: after a warm-up on clean observations, cycles
// whose replicas queue are not skipped: their TTFT (a queue that grows) is
// dropped and their ITL, the full batch's step, is fitted at a full batch
// (queuedAt reports no running count: the full batch is assumed; see
// TestQueuedCycleReadsRunningBatch for a running count). The estimate stays the server's — within 5 % of the truth's capacity —
// and the full batch's ITL is predicted to 2 %. Reading the same cycles'
// TTFT as service (MaxWaitShare < 0) moves the capacity by more than
// 10 %: the test would see a tuner that learned the queue.
func TestQueuedCycleKeepsITL(t *testing.T) {
	tr := llama8b
	obs := trace(t, tr, TraceSpec{Cycles: 10, Noise: 0.02, Seed: 3, MaxQueueSize: 100})
	queued := queuedAt(t, tr, obs[9])
	tu, steps := warmThenStep(t, Config{}, obs[:9], queued)
	for i, st := range steps {
		if st.Skipped || !st.Evaluated || st.Innovation[0] != 0 {
			t.Fatalf("step %d: skipped %v, evaluated %v, TTFT innovation %v (%q); want the ITL alone fitted", i, st.Skipped, st.Evaluated, st.Innovation[0], st.Reason)
		}
	}
	if e := capacityError(t, tr, tu.Params()); math.Abs(e) > 0.05 {
		t.Errorf("capacity %+.1f %% off the truth after the queued cycles (%+v)", 100*e, tu.Params())
	}
	m, err := tu.Predict(queued)
	if err != nil || math.Abs(m.ITLMs/queued.ITLMs-1) > 0.02 || m.AvgBatchSize < 0.99*float64(queued.MaxBatchSize) {
		t.Errorf("the queued cycle is predicted at batch %.4g with ITL %.4g ms, observed %.4g ms (%v)", m.AvgBatchSize, m.ITLMs, queued.ITLMs, err)
	}
	open, _ := warmThenStep(t, Config{MaxWaitShare: -1}, obs[:9], queued)
	if e := capacityError(t, tr, open.Params()); math.Abs(e) < 0.1 {
		t.Errorf("fitting the queued cycles' TTFT moved the capacity by %+.1f %% only: the test shows nothing", 100*e)
	}
}

// TestServerGateSkipsPreemption: a cycle whose replicas preempted is
// skipped — the estimate does not move — and the skips neither count as
// rejections nor trigger the re-anchoring that MaxRejections rejections
// in a row would. With KeepPreempting the same cycles move the estimate.
func TestServerGateSkipsPreemption(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 10, Noise: 0.02, Seed: 3})
	preempting := obs[9]
	preempting.ITLMs *= 1.5 // recompute
	preempting.PreemptionsPerSec = 0.2
	gated, steps := warmThenStep(t, Config{}, obs[:9], preempting)
	want := steps[0].Params
	for i, st := range steps {
		if !st.Skipped || st.Accepted || !strings.Contains(st.Reason, "preempted") {
			t.Fatalf("step %d: skipped %v, accepted %v, %q; want skipped", i, st.Skipped, st.Accepted, st.Reason)
		}
		if st.Params != want {
			t.Errorf("step %d: a skipped step moved the estimate: %+v → %+v", i, want, st.Params)
		}
	}
	if acc, rej := gated.Updates(); rej != 0 || gated.Skips() != 4 || acc != 9 {
		t.Errorf("accepted %d, rejected %d, skipped %d; want 9, 0, 4", acc, rej, gated.Skips())
	}
	_, open := warmThenStep(t, Config{KeepPreempting: true}, obs[:9], preempting)
	moved := false
	for _, st := range open {
		moved = moved || st.Skipped || st.Params != want
	}
	if !moved {
		t.Error("keeping the preempting cycles did not move the estimate: the test shows nothing")
	}
}

// TestServerGateThreshold: the wait test compares Little's-law wait with
// MaxWaitShare of the TTFT, and needs one waiting request; the seed
// strategy skips such a cycle once there is an estimate to protect, the
// robust one keeps its ITL (queueDominated). The preemption gate is off
// while a fit is warming up (the fit is marked instead) and after a first
// fit so marked.
func TestServerGateThreshold(t *testing.T) {
	tu, err := New(Config{}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	o := Observation{RateRPS: 10, TTFTMs: 300, ITLMs: 10, OutputTokens: 100, MaxBatchSize: 8, WaitingRequests: 50}
	for _, tc := range []struct {
		waiting float64
		queued  bool
	}{{0, false}, {0.9, false}, {1.4, false}, {1.6, true}, {50, true}} { // wait = 100·waiting ms against 150
		o.WaitingRequests = tc.waiting
		if got := tu.queueDominated(o); got != tc.queued {
			t.Errorf("%v waiting at 10 requests/s, TTFT 300 ms: queue-dominated %v, want %v", tc.waiting, got, tc.queued)
		}
		if r := tu.gateServer(o); r != "" {
			t.Errorf("the robust strategy skips a queued cycle: %s", r)
		}
	}
	seed, err := New(Config{Strategy: StrategySeed}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	seed.fitting = false
	if r := seed.gateServer(o); !strings.Contains(r, "queueing wait") || !seed.gated(r) {
		t.Errorf("the seed strategy does not skip a queued cycle: %q", r)
	}
	// A 4-ms TTFT at 100 requests/s with half a request waiting: 5 ms of
	// wait by Little's law, but no queue.
	light := Observation{RateRPS: 100, TTFTMs: 4, ITLMs: 1, OutputTokens: 100, MaxBatchSize: 8, WaitingRequests: 0.5}
	if tu.queueDominated(light) {
		t.Error("half a request waiting read as a queue")
	}
	preempting := Observation{RateRPS: 10, TTFTMs: 30, ITLMs: 10, OutputTokens: 100, MaxBatchSize: 8, PreemptionsPerSec: 1}
	if !tu.fitting || tu.gated(tu.gateServer(preempting)) || !tu.queueFit {
		t.Errorf("warming up (fitting %v): a preempting cycle skipped, or the fit not marked (%v); want it fitted and marked", tu.fitting, tu.queueFit)
	}
	tu.fitting = false
	if tu.gated(tu.gateServer(preempting)) {
		t.Error("after a fit marked by preemption: a preempting cycle skipped")
	}
	tu.queueFit = false
	if !tu.gated(tu.gateServer(preempting)) {
		t.Error("a preempting cycle not skipped once the estimate is protected")
	}
	if err := (Observation{RateRPS: 1, TTFTMs: 1, ITLMs: 1, OutputTokens: 1, MaxBatchSize: 1, WaitingRequests: -1}).Validate(); err == nil {
		t.Error("a negative waiting count validated")
	}
}

// TestRunningAndRateWindowValidated: a running count and the rate window
// must be finite (and the count ≥ 0).
func TestRunningAndRateWindowValidated(t *testing.T) {
	for _, running := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := (Observation{RateRPS: 1, TTFTMs: 1, ITLMs: 1, OutputTokens: 1, MaxBatchSize: 1, RunningRequests: running}).Validate(); err == nil {
			t.Errorf("a running count of %v validated", running)
		}
	}
	for _, w := range []float64{math.NaN(), math.Inf(-1)} {
		if err := (Config{RateWindowSeconds: w}).Validate(); err == nil || !strings.Contains(err.Error(), "rate window") {
			t.Errorf("rate window %v: %v", w, err)
		}
	}
}

// TestLoadChangeSkipped: a cycle whose arrival rate per replica differs
// from the previous cycle's by more than 20 %, the first calm cycle after
// a queue, and a cycle whose queue halved are skipped (their averages
// span a change) once the first warm-up is done; a steady observation (a
// synthetic trace) and a growing queue are not; the memory survives a
// record.
func TestLoadChangeSkipped(t *testing.T) {
	tu, err := New(Config{}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	base := Observation{RateRPS: 10, TTFTMs: 40, ITLMs: 12, InputTokens: 1000, OutputTokens: 200, MaxBatchSize: 256}
	// The first warm-up skips nothing: a cold start under a changing load
	// must get sized.
	for i, rate := range []float64{10, 20, 10, 30, 10} {
		o := base
		o.RateRPS = rate
		if st, err := tu.Step(o); err != nil || st.Skipped {
			t.Fatalf("warm-up cycle %d at %v requests/s: %q, %v", i, rate, st.Reason, err)
		}
	}
	if tu.fitting {
		t.Fatal("still warming up after five cycles")
	}
	queued := base
	queued.TTFTMs, queued.WaitingRequests, queued.RunningRequests = 30000, 2000, 250
	filling := queued
	filling.RunningRequests = 120
	draining := queued
	draining.WaitingRequests = 900
	steady := base
	steady.RateRPS, steady.Steady = 30, true
	// Little's law at 10 requests/s: 10 × (0.04 + 200 × 0.012) = 24.4
	// running; a count beyond 73.2 + 3√73.2 + 3 = 101.9 (three times
	// the load, three Poisson deviations of it and three) says the load
	// rose in the window's last seconds. With 2 000 output tokens, 240.4
	// running; fewer than 80.13 − 3√80.13 − 3 = 50.3 says it fell.
	batch := func(out, running float64) Observation {
		o := base
		o.OutputTokens, o.RunningRequests = out, running
		return o
	}
	for i, tc := range []struct {
		obs  Observation
		rate float64
		skip string
	}{
		{base, 10, ""},
		{batch(200, 103), 10, "load rose"},
		{batch(200, 100), 10, ""},
		{batch(2000, 49), 10, "load fell"},
		{batch(2000, 52), 10, ""},
		{base, 11.9, ""},
		{base, 15, "load changed"},
		{base, 15, ""},
		{base, 12, "load changed"},
		{queued, 3, "queue's start"},
		{queued, 30, "queue's start"}, // the window still spans the cycle before
		{queued, 30, ""},
		{filling, 30, "not full"},
		{queued, 30, ""},
		{draining, 30, "draining"},
		{base, 30, "queue's end"},
		{steady, 10, ""},
	} {
		o := tc.obs
		o.RateRPS = tc.rate
		if i > 0 {
			rec := tu.Record(time.Time{})
			if tu, err = Restore(Config{}, rec); err != nil {
				t.Fatal(err)
			}
		}
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Skipped && strings.Contains(st.Reason, "skipped: ") && !strings.Contains(st.Reason, "preempted"); got != (tc.skip != "") || !strings.Contains(st.Reason, tc.skip) {
			t.Errorf("cycle %d (%.3g requests/s, %.3g waiting): %q, want skipped for %q", i, tc.rate, o.WaitingRequests, st.Reason, tc.skip)
		}
	}
}

// warmThenStep runs a tuner over warm, then four times over each of then.
func warmThenStep(t *testing.T, cfg Config, warm []Observation, then ...Observation) (*Tuner, []Step) {
	t.Helper()
	tu, err := New(cfg, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range warm {
		if _, err := tu.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	var steps []Step
	for range 4 {
		for _, o := range then {
			st, err := tu.Step(o)
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, st)
		}
	}
	return tu, steps
}

// TestQueuedContradictionReanchors: a queued cycle whose full batch's ITL
// the estimate cannot explain (the server is 50 % slower than learned)
// re-anchors on that cycle, without waiting for MaxRejections, and the
// capacity is then the slower server's within 10 %; a clean cycle that
// contradicts the estimate only counts a rejection.
func TestQueuedContradictionReanchors(t *testing.T) {
	tr := llama8b
	obs := trace(t, tr, TraceSpec{Cycles: 10, Noise: 0.01, Seed: 3, MaxQueueSize: 100})
	slow := tr
	slow.Params = scale(tr.ServiceModel, tr.Params, 1.5)
	queued := queuedAt(t, slow, obs[9])
	tu, steps := warmThenStep(t, Config{}, obs[:9], queued)
	if !steps[0].Accepted || !strings.Contains(steps[0].Reason, "1 rejections in a row") || !strings.Contains(steps[0].Reason, "estimate wrong") {
		t.Fatalf("first contradicting queued cycle: %q; want a re-anchoring at once, on a joint fit (one ITL cannot identify a change)", steps[0].Reason)
	}
	if e := capacityError(t, slow, tu.Params()); math.Abs(e) > 0.1 {
		t.Errorf("capacity %+.1f %% off the slower server's", 100*e)
	}
	clean := trace(t, slow, TraceSpec{Cycles: 1, Noise: 0.01, Seed: 9, MaxQueueSize: 100})[0]
	clean.RateRPS = obs[8].RateRPS
	_, cleanSteps := warmThenStep(t, Config{}, obs[:9], clean)
	if cleanSteps[0].Accepted || !strings.HasPrefix(cleanSteps[0].Reason, "rejected: NIS") {
		t.Errorf("a clean contradicting cycle: %q; want a rejection", cleanSteps[0].Reason)
	}
}

// queuedRunning is obs with a queue behind a batch of b running requests:
// its TTFT mostly wait, its ITL the truth's at that batch (decode(b)), as
// on a compute-bound server whose per-step token budget holds requests
// back behind a batch that is not full.
func queuedRunning(tr Truth, obs Observation, b float64) Observation {
	m := tr.Params.serviceModel(tr.ServiceModel).(queueing.Iteration)
	obs.TTFTMs *= 100
	obs.ITLMs = m.Decode(queueing.Workload{InputTokens: obs.InputTokens, OutputTokens: obs.OutputTokens}, b)
	obs.WaitingRequests = 0.9 * obs.TTFTMs * obs.RateRPS / 1000
	obs.RunningRequests = b
	obs.Steady = true
	return obs
}

// TestQueuedCycleReadsRunningBatch: a queued cycle's ITL is read at the
// batch its replicas report running, not at a full batch. A server queueing
// behind a quarter-full batch keeps the estimate the truth's (capacity
// within 5 %, the cycle's ITL predicted to 2 %); read at a full batch (no
// running count), the same cycles move the capacity by more than 10 % —
// what cost compute-bound scenarios 3.5 points of attainment (docs/tuner.md
// §7).
func TestQueuedCycleReadsRunningBatch(t *testing.T) {
	tr := llama8b
	obs := trace(t, tr, TraceSpec{Cycles: 10, Noise: 0.02, Seed: 3, MaxQueueSize: 100})
	queued := queuedRunning(tr, obs[9], 64)
	tu, steps := warmThenStep(t, Config{}, obs[:9], queued)
	for i, st := range steps {
		if st.Skipped || !st.Evaluated {
			t.Fatalf("step %d: %q; want the ITL fitted", i, st.Reason)
		}
	}
	if e := capacityError(t, tr, tu.Params()); math.Abs(e) > 0.05 {
		t.Errorf("read at the running batch: capacity %+.1f %% off the truth", 100*e)
	}
	if last := steps[len(steps)-1]; math.Abs(last.PredictedITLMs/queued.ITLMs-1) > 0.02 {
		t.Errorf("ITL predicted %.2f ms, observed %.2f at a batch of 64", last.PredictedITLMs, queued.ITLMs)
	}
	full := queued
	full.RunningRequests = 0
	tu, _ = warmThenStep(t, Config{}, obs[:9], full)
	if e := capacityError(t, tr, tu.Params()); math.Abs(e) < 0.10 {
		t.Errorf("read at a full batch: capacity %+.1f %% off the truth; want the wrong read to show (> 10 %%)", 100*e)
	}
}

// TestEvaluatorRunningBatch: the evaluator's ITL for a queued observation
// with a running count is the model's decode step at that batch, and its
// gradient is decode's (checked against central differences).
func TestEvaluatorRunningBatch(t *testing.T) {
	e := &evaluator{maxQueue: 100}
	e.saturated = func(Observation) bool { return true }
	p := Params{Alpha: 6.5, Beta: 0.0196, Gamma: 0.000246}
	obs := Observation{RateRPS: 9, InputTokens: 1000, OutputTokens: 250, MaxBatchSize: 256, TTFTMs: 5000, ITLMs: 40, WaitingRequests: 50, RunningRequests: 80}
	w := queueing.Workload{InputTokens: obs.InputTokens, OutputTokens: obs.OutputTokens}
	itl := func(p Params) float64 {
		return queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}.Decode(w, 80)
	}
	m, err := e.analyze(p, obs)
	if err != nil || math.Abs(m.ITLMs/itl(p)-1) > 1e-12 {
		t.Fatalf("ITL %v (%v), want decode(80) = %v", m.ITLMs, err, itl(p))
	}
	_, g, err := e.gradient(p, obs)
	if err != nil {
		t.Fatal(err)
	}
	for j, set := range []func(*Params, float64){func(q *Params, v float64) { q.Alpha = v }, func(q *Params, v float64) { q.Beta = v }, func(q *Params, v float64) { q.Gamma = v }} {
		v := [3]float64{p.Alpha, p.Beta, p.Gamma}[j]
		lo, hi := p, p
		set(&lo, v*(1-1e-6))
		set(&hi, v*(1+1e-6))
		want := (itl(hi) - itl(lo)) / (2e-6 * v)
		if math.Abs(g.ITL[j]/want-1) > 1e-6 {
			t.Errorf("∂ITL/∂θ%d = %v, differences %v", j, g.ITL[j], want)
		}
	}
	obs.RunningRequests = 0
	if m, _ := e.analyze(p, obs); math.Abs(m.ITLMs/itl(p)-1) < 0.5 {
		t.Errorf("without a running count the ITL is read at a full batch; got %v, decode(80) %v", m.ITLMs, itl(p))
	}
}

// TestRateSpread: an observation's variance carries its rate's Poisson
// error through the model: nothing at light load, more near saturation,
// nothing for a synthetic (Steady) observation or with the window off.
func TestRateSpread(t *testing.T) {
	tr := llama8b
	lmax, err := tr.MaxRate(100)
	if err != nil {
		t.Fatal(err)
	}
	tu, err := New(Config{}, tr.Params)
	if err != nil {
		t.Fatal(err)
	}
	at := tu.state()
	spread := func(load float64, steady bool) (float64, float64) {
		o, err := tr.Observe(tr.Params, load*lmax, 1024, 256, 100)
		if err != nil {
			t.Fatal(err)
		}
		o.Steady = steady
		return tu.rateSpread(o, at)
	}
	lightT, lightI := spread(0.2, false)
	busyT, busyI := spread(0.85, false)
	if !(busyI > 10*lightI) || !(busyT > 10*lightT) || !(busyI > sq(0.02)) {
		t.Errorf("log-variances at 20 %% load (%.3g, %.3g) and at 85 %% (%.3g, %.3g): want far more near saturation", lightT, lightI, busyT, busyI)
	}
	if a, b := spread(0.85, true); a != 0 || b != 0 {
		t.Errorf("a Steady observation: %v, %v; want 0", a, b)
	}
	tu.cfg.RateWindowSeconds = -1
	if a, b := spread(0.85, false); a != 0 || b != 0 {
		t.Errorf("window off: %v, %v; want 0", a, b)
	}
}

// TestQueuedContradictionAfterWarmup: right after the warm-up the window is
// empty (its fit became the anchor); a queued cycle the estimate cannot
// explain — the server 50 % slower, its batch three-quarters full — still
// re-anchors at once, on the inflated prior centred on the estimate,
// restored from its record every cycle as the engine does. Before, the
// rejection stood until four values had piled up, then the values of one
// operating point were refitted alone (the e2e HPA staircase went
// infeasible and scaled to 7 replicas where 3 serve).
func TestQueuedContradictionAfterWarmup(t *testing.T) {
	tr := llama8b
	obs := trace(t, tr, TraceSpec{Cycles: 5, Noise: 0.01, Seed: 3, MaxQueueSize: 100})
	slow := tr
	slow.Params = scale(tr.ServiceModel, tr.Params, 1.5)
	queued := queuedRunning(slow, obs[4], 200)
	tu, err := New(Config{}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range append(obs, queued) {
		if tu, err = Restore(Config{}, tu.Record(time.Time{})); err != nil {
			t.Fatal(err)
		}
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		if i == len(obs)-1 && len(tu.window) != 0 {
			t.Fatalf("the warm-up left %d observations in the window; the test wants none", len(tu.window))
		}
		if i == len(obs) && (!st.Accepted || !strings.Contains(st.Reason, "estimate wrong")) {
			t.Errorf("the queued cycle: %q; want a re-anchoring on the estimate", st.Reason)
		}
	}
	if e := capacityError(t, slow, tu.Params()); math.Abs(e) > 0.1 {
		t.Errorf("capacity %+.1f %% off the slower server's after one queued cycle", 100*e)
	}
}
