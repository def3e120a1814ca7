package tuner

import (
	"strings"
	"testing"
)

// TestServerGateSkipsQueueAndPreemption: after a warm-up on clean
// observations, a cycle whose replicas queue (the TTFT mostly wait by
// Little's law) or preempt is skipped — the estimate does not move — and
// the skips neither count as rejections nor trigger the re-anchoring that
// MaxRejections rejections in a row would. Without the gate (MaxWaitShare
// < 0, KeepPreempting) the same overload observations move the estimate.
func TestServerGateSkipsQueueAndPreemption(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 10, Noise: 0.02, Seed: 3})
	overload := obs[9]
	overload.TTFTMs *= 40 // a queue that grows: 40× the TTFT, nearly all wait
	overload.WaitingRequests = 0.9 * overload.TTFTMs * overload.RateRPS / 1000
	preempting := obs[9]
	preempting.ITLMs *= 1.5 // recompute
	preempting.PreemptionsPerSec = 0.2
	run := func(cfg Config) (*Tuner, []Step) { return warmThenStep(t, cfg, obs[:9], overload, preempting) }
	gated, steps := run(Config{})
	want := steps[0].Params
	for i, st := range steps {
		if !st.Skipped || st.Accepted || !strings.HasPrefix(st.Reason, "skipped: ") {
			t.Fatalf("step %d: skipped %v, accepted %v, %q; want skipped", i, st.Skipped, st.Accepted, st.Reason)
		}
		if st.Params != want {
			t.Errorf("step %d: a skipped step moved the estimate: %+v → %+v", i, want, st.Params)
		}
	}
	if acc, rej := gated.Updates(); rej != 0 || gated.Skips() != 8 || acc != 9 {
		t.Errorf("accepted %d, rejected %d, skipped %d; want 9, 0, 8", acc, rej, gated.Skips())
	}
	if !strings.Contains(steps[0].Reason, "queueing wait") || !strings.Contains(steps[1].Reason, "preempted") {
		t.Errorf("reasons %q, %q", steps[0].Reason, steps[1].Reason)
	}
	_, open := run(Config{MaxWaitShare: -1, KeepPreempting: true})
	moved := false
	for _, st := range open {
		moved = moved || st.Skipped || st.Params != want
	}
	if !moved {
		t.Error("without the gate the overload observations did not move the estimate: the test shows nothing")
	}
}

// TestServerGateThreshold: the wait gate compares Little's-law wait with
// MaxWaitShare of the TTFT once there is an estimate to protect; a short
// queue at light load, less than one waiting request, or any cycle of the
// warm-up passes.
func TestServerGateThreshold(t *testing.T) {
	tu, err := New(Config{}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	o := Observation{RateRPS: 10, TTFTMs: 300, ITLMs: 10, OutputTokens: 100, MaxBatchSize: 8, WaitingRequests: 50}
	if !tu.fitting || tu.gated(tu.gateServer(o)) || !tu.queueFit {
		t.Errorf("warming up (fitting %v): a queue-dominated cycle skipped, or the fit not marked (%v); want it fitted and marked", tu.fitting, tu.queueFit)
	}
	// After a first fit that took the queue, the gate stays off.
	tu.fitting = false
	if tu.gated(tu.gateServer(o)) {
		t.Error("after a fit marked by the queue: a queue-dominated cycle skipped")
	}
	tu.queueFit = false
	for _, tc := range []struct {
		waiting float64
		skip    bool
	}{{0, false}, {0.9, false}, {1.4, false}, {1.6, true}, {50, true}} { // wait = 100·waiting ms against 150
		o.WaitingRequests = tc.waiting
		if got := tu.gated(tu.gateServer(o)); got != tc.skip {
			t.Errorf("%v waiting at 10 requests/s, TTFT 300 ms: skipped %v, want %v", tc.waiting, got, tc.skip)
		}
	}
	// A 4-ms TTFT at 100 requests/s with half a request waiting: 5 ms of
	// wait by Little's law, but no queue.
	light := Observation{RateRPS: 100, TTFTMs: 4, ITLMs: 1, OutputTokens: 100, MaxBatchSize: 8, WaitingRequests: 0.5}
	if r := tu.gateServer(light); r != "" {
		t.Errorf("half a request waiting skipped: %s", r)
	}
	if err := (Observation{RateRPS: 1, TTFTMs: 1, ITLMs: 1, OutputTokens: 1, MaxBatchSize: 1, WaitingRequests: -1}).Validate(); err == nil {
		t.Error("a negative waiting count validated")
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
