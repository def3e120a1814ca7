package tuner

import (
	"math"
	"strings"
	"testing"
	"time"
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
// dropped and their ITL, the full batch's step, is fitted at a full batch.
// The estimate stays the server's — within 5 % of the truth's capacity —
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
	queued.TTFTMs, queued.WaitingRequests = 30000, 2000
	draining := queued
	draining.WaitingRequests = 900
	steady := base
	steady.RateRPS, steady.Steady = 30, true
	for i, tc := range []struct {
		obs  Observation
		rate float64
		skip string
	}{
		{base, 10, ""},
		{base, 11.9, ""},
		{base, 15, "load changed"},
		{base, 15, ""},
		{base, 12, "load changed"},
		{queued, 3, ""},
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
	if !steps[0].Accepted || !strings.Contains(steps[0].Reason, "1 rejections in a row") {
		t.Fatalf("first contradicting queued cycle: %q; want a re-anchoring at once", steps[0].Reason)
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
