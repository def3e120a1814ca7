package sim

import (
	"context"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// The tests in this file pin the server, Kubernetes and gateway semantics
// on cases small enough to work out by hand. The linear step model keeps
// the arithmetic simple: an iteration takes β0 + β1·prefill tokens +
// β2·decode tokens = 10 ms + 0.01 ms per prompt token computed + 0.5 ms per
// decoding request.

// outcome is one completed request, in ms from its arrival.
type outcome struct{ ttft, e2e, itl float64 }

// runRows replays requests (time, input, output, class, prefix) on the
// variant under the autoscaler and returns the result and each completed
// request's outcome by arrival order (from 1).
func runRows(t *testing.T, v scenario.Variant, rows []scenario.TraceRow, a Autoscaler, edit func(*scenario.Scenario)) (*Result, map[int64]outcome) {
	t.Helper()
	sc := scenario.Scenario{Name: "hand", DurationSeconds: 600, DrainSeconds: 600, Models: []scenario.Model{{
		Name: "m", SLO: scenario.SLO{TTFTMs: 1e6, ITLMs: 1e6}, Workload: scenario.Workload{Rows: rows, PrefixTokens: 64,
			Classes: []scenario.Class{{Name: "critical", Share: 0.5, SLO: scenario.SLO{TTFTMs: 1e6, ITLMs: 1e6}},
				{Name: "sheddable", Share: 0.5, SLO: scenario.SLO{TTFTMs: 1e6, ITLMs: 1e6}, Sheddable: true}}},
		Variants: []scenario.Variant{v},
	}}}
	if edit != nil {
		edit(&sc)
	}
	if a == nil {
		a = &Static{n: v.InitialReplicas}
	}
	s := New(sc, a)
	out := map[int64]outcome{}
	s.done = func(s *Sim, q *request) {
		a2 := s.variants[0].tokenOverheadSeconds()
		o := outcome{ttft: 1000 * (q.FirstToken - q.arrive + a2), e2e: 1000 * (s.now - q.arrive + float64(q.Output)*a2)}
		if q.Output > 1 {
			o.itl = 1000 * ((s.now-q.FirstToken)/float64(q.Output-1) + a2)
		}
		out[q.ID] = o
	}
	s.check = func(s *Sim, _ *event) { checkConservation(t, s) }
	res := s.Run(context.Background(), nil)
	if res.Arrived != res.Completed+res.Failed+res.InFlight {
		t.Fatalf("arrived %d ≠ completed %d + failed %d + in flight %d", res.Arrived, res.Completed, res.Failed, res.InFlight)
	}
	return res, out
}

// TestOneRequest: the iteration that completes the prefill yields the
// first token; the other o − 1 tokens take one decode iteration each; α0 +
// α1·input delays the request's entry to the queue; α2 adds to the TTFT
// and to every inter-token interval, not to the clock.
func TestOneRequest(t *testing.T) {
	rows := []scenario.TraceRow{simtest.Row(0, 100, 4)}
	res, got := runRows(t, simtest.LinearVariant(), rows, nil, nil)
	// Prefill of 100 tokens: 10 + 1 = 11 ms; 3 decodes of 10.5 ms.
	simtest.Near(t, "TTFT", got[1].ttft, 11)
	simtest.Near(t, "ITL", got[1].itl, 10.5)
	simtest.Near(t, "E2E", got[1].e2e, 42.5)
	simtest.Near(t, "result TTFT mean", res.TTFTms.Mean, 11)
	simtest.Near(t, "result ITL per token", res.ITLms.Mean, 10.5)
	simtest.Near(t, "result ITL p99", res.ITLms.P99, 10.5)
	simtest.Near(t, "result E2E", res.E2Ems.Mean, 42.5)
	simtest.Near(t, "a drained run's length", res.DurationSecs, 0.0425)
	simtest.Near(t, "throughput", res.ThroughputRPS, 1/0.0425)
	simtest.Near(t, "output tokens/s", res.OutputTokensPerSecond, 4/0.0425)

	v := simtest.LinearVariant()
	v.Linear.Alpha0, v.Linear.Alpha1, v.Linear.Alpha2 = 5, 0.01, 2
	_, got = runRows(t, v, rows, nil, nil)
	// In the queue at 5 + 1 = 6 ms; first token at 17 ms, + α2 = 19;
	// each interval 10.5 + 2; E2E 6 + 11 + 31.5 + 4·2.
	simtest.Near(t, "TTFT with α", got[1].ttft, 19)
	simtest.Near(t, "ITL with α", got[1].itl, 12.5)
	simtest.Near(t, "E2E with α", got[1].e2e, 56.5)

	// One output token: done with the prefill.
	_, got = runRows(t, simtest.LinearVariant(), []scenario.TraceRow{simtest.Row(0, 100, 1)}, nil, nil)
	simtest.Near(t, "one token: E2E", got[1].e2e, 11)
	simtest.Near(t, "one token: ITL", got[1].itl, 0)
}

// TestChunkedPrefill: a prompt larger than the token budget takes what is
// left of it and continues in the next iteration; a decode is served
// before an admission.
func TestChunkedPrefill(t *testing.T) {
	v := simtest.LinearVariant()
	v.MaxBatchedTokens = 64
	_, got := runRows(t, v, []scenario.TraceRow{simtest.Row(0, 100, 2)}, nil, nil)
	// 64 tokens (10.64 ms) then 36 (10.36 ms): first token at 21 ms; one
	// decode of 10.5.
	simtest.Near(t, "chunked TTFT", got[1].ttft, 21)
	simtest.Near(t, "chunked E2E", got[1].e2e, 31.5)

	// A decodes while B (arriving during A's prefill) is chunked into the
	// budget that A's decode leaves: 63 tokens, then 37 with A's next
	// decode.
	_, got = runRows(t, v, []scenario.TraceRow{simtest.Row(0, 50, 3), simtest.Row(0.001, 100, 2)}, nil, nil)
	// Iteration 1 (0–10.5 ms): A's prefill of 50. Iteration 2 (10.5–21.63):
	// A decode + B 63 tokens = 10 + 0.5 + 0.63. Iteration 3 (21.63–32.5):
	// A decode (done) + B 37 = 10 + 0.5 + 0.37 → B's first token.
	// Iteration 4: B decodes alone, 10.5 ms.
	simtest.Near(t, "A TTFT", got[1].ttft, 10.5)
	simtest.Near(t, "A E2E", got[1].e2e, 32.5)
	simtest.Near(t, "B TTFT", got[2].ttft, 32.5-1)
	simtest.Near(t, "B E2E", got[2].e2e, 43-1)
}

// TestSharedPrefix: a request whose prompt starts with a prefix another
// request left in the cache computes only the rest; its own blocks are not
// shared.
func TestSharedPrefix(t *testing.T) {
	rows := []scenario.TraceRow{simtest.Row(0, 100, 2), simtest.Row(1, 100, 2)}
	rows[0].Prefix, rows[1].Prefix = 3, 3
	res, got := runRows(t, simtest.LinearVariant(), rows, nil, nil)
	// The prefix is 64 tokens, four blocks: B computes 36 tokens.
	simtest.Near(t, "A TTFT", got[1].ttft, 11)
	simtest.Near(t, "B TTFT", got[2].ttft, 10.36)
	simtest.Near(t, "hit rate", res.PrefixCacheHitRate, 64.0/200)
	if res.PrefixHits != 1 {
		t.Errorf("%d admissions hit the cache, want 1", res.PrefixHits)
	}
	// Another group shares nothing.
	rows[1].Prefix = 4
	_, got = runRows(t, simtest.LinearVariant(), rows, nil, nil)
	simtest.Near(t, "other group TTFT", got[2].ttft, 11)
}

// TestPreemptionAndRecompute: 16 blocks of 16 tokens; A (96 + 40 tokens)
// and B (96 + 100) start together. At A's 33rd decode both hold 8 blocks
// and A needs a ninth: B, the tail of the batch, is preempted; its blocks
// go to the free list with their content. Next iteration it is admitted
// again and finds 5 of its 6 prompt blocks (the last prompt token is
// always computed), so it computes 16 tokens. Its TTFT stays the first.
func TestPreemptionAndRecompute(t *testing.T) {
	v := simtest.LinearVariant()
	v.KVBlocks = 16
	res, got := runRows(t, v, []scenario.TraceRow{simtest.Row(0, 96, 40), simtest.Row(0, 96, 100)}, nil, nil)
	if res.Preemptions != 1 {
		t.Fatalf("%d preemptions, want 1", res.Preemptions)
	}
	// 1: both prefill 192 tokens, 11.92 ms. 2–33: both decode, 11 ms.
	// 34: A alone (B preempted), 10.5. 35: A + B's 16 tokens, 10.66.
	// 36–40: both decode, 11; A is done. B: 94 more decodes of 10.5.
	simtest.Near(t, "A TTFT", got[1].ttft, 11.92)
	simtest.Near(t, "B TTFT (first prefill)", got[2].ttft, 11.92)
	aDone := 11.92 + 32*11 + 10.5 + 10.66 + 5*11
	simtest.Near(t, "A E2E", got[1].e2e, aDone)
	simtest.Near(t, "A ITL", got[1].itl, (aDone-11.92)/39)
	simtest.Near(t, "B E2E", got[2].e2e, aDone+94*10.5)
	simtest.Near(t, "hit rate", res.PrefixCacheHitRate, 80.0/(3*96))
}

// scripted sets every variant's replicas by time: the last entry at or
// before now.
type scripted struct {
	steps []struct {
		at float64
		n  int
	}
	costs map[string]int32
}

func (s *scripted) Name() string      { return "scripted" }
func (s *scripted) Interval() float64 { return 1 }
func (s *scripted) Decide(v *View) []int {
	n := -1
	for _, st := range s.steps {
		if v.Now >= st.at {
			n = st.n
		}
	}
	out := make([]int, len(v.Variants))
	for i := range out {
		out[i] = n
	}
	return out
}
func (s *scripted) DeletionCosts(*View) map[string]int32 { return s.costs }

func scaleTo(pairs ...float64) *scripted {
	s := &scripted{}
	for i := 0; i < len(pairs); i += 2 {
		s.steps = append(s.steps, struct {
			at float64
			n  int
		}{pairs[i], int(pairs[i+1])})
	}
	return s
}

// TestPodKilledInFlight: two replicas, four long requests (two each, the
// router alternating); at 5 s the Deployment goes to one replica. With
// vLLM's default shutdown (abort) the deleted pod's two requests fail at
// once; with drain they finish within a 30 s grace period, and fail at
// the kill with a 2 s one.
func TestPodKilledInFlight(t *testing.T) {
	rows := []scenario.TraceRow{simtest.Row(0, 100, 2000), simtest.Row(0.1, 100, 2000), simtest.Row(0.2, 100, 2000), simtest.Row(0.3, 100, 2000)}
	rr := func(sc *scenario.Scenario) { sc.Gateway.Router = "round-robin" }
	v := simtest.LinearVariant()
	v.InitialReplicas = 2
	for _, tc := range []struct {
		shutdown   string
		grace      float64
		terminated int64
		goneBy     float64 // the victim's pod is gone by then (cost stops)
	}{
		{"abort", 30, 2, 5},
		{"drain", 30, 0, 22},
		{"drain", 2, 2, 7},
	} {
		v.Shutdown, v.TerminationGracePeriodSeconds = tc.shutdown, &tc.grace
		res, _ := runRows(t, v, rows, scaleTo(0, 2, 5, 1), rr)
		if res.FailedBy.Terminated != tc.terminated || res.Failed != tc.terminated || res.Completed != 4-tc.terminated {
			t.Errorf("%s, grace %v s: %d terminated, %d failed, %d completed; want %d terminated", tc.shutdown, tc.grace,
				res.FailedBy.Terminated, res.Failed, res.Completed, tc.terminated)
		}
		// Replica-hours: the survivor for the whole run, the victim until
		// it is gone.
		if extra := res.Cost*3600 - res.DurationSecs; extra > tc.goneBy+0.5 || extra < 4.9 {
			t.Errorf("%s, grace %v s: the deleted pod cost %.1f replica-seconds, want ≤ %v", tc.shutdown, tc.grace, extra, tc.goneBy)
		}
	}
}

// TestReplicaSetVictims: the ReplicaSet controller's ranking — not ready
// first, then lower pod-deletion-cost, then the most recently ready by
// powers of two of nanoseconds (UID within a bucket), then the newest —
// and never the load.
func TestReplicaSetVictims(t *testing.T) {
	mk := func(name string, st replicaState, created, readyAt float64, uid uint64) *replica {
		return &replica{v: &variantRT{cfg: scenario.Variant{Name: name}}, state: st, created: created, readyAt: readyAt, uid: uid}
	}
	now := 1000.0
	a := mk("a", ready, 0, 0, 5)       // ready 1 000 s
	b := mk("b", ready, 900, 990, 4)   // ready 10 s
	c := mk("c", ready, 950, 999.5, 3) // ready 0.5 s
	d := mk("d", starting, 900, 0, 2)  // loading for 100 s
	e := mk("e", starting, 950, 0, 1)  // loading for 50 s
	busy(t, a, 50)                     // busy: load does not matter
	order := func(pods ...*replica) string {
		rankForDeletion(pods, now)
		s := ""
		for _, p := range pods {
			s += p.v.cfg.Name
		}
		return s
	}
	if got := order(a, b, c, d, e); got != "edcba" {
		t.Errorf("without costs: %s, want edcba", got)
	}
	c.deletionCost = 10
	d.deletionCost = 10
	if got := order(a, b, c, d, e); got != "edbac" {
		t.Errorf("with costs on c and d: %s, want edbac (costs rank after readiness)", got)
	}
	a.deletionCost = -5
	if got := order(a, b, c, d, e); got != "edabc" {
		t.Errorf("with a negative cost on a: %s, want edabc", got)
	}
	// Ready 1.0 s and 0.9 s ago: both in [2^29, 2^30) ns, so the UID decides.
	x := mk("x", ready, 0, 999, 1)
	y := mk("y", ready, 0, 999.1, 2)
	if got := order(y, x); got != "xy" {
		t.Errorf("same power of two: %s, want xy (by UID)", got)
	}
	y.readyAt = 999.6 // 0.4 s: a lower power of two
	if got := order(x, y); got != "yx" {
		t.Errorf("different powers of two: %s, want yx", got)
	}
}

// busy gives r a server running n requests.
func busy(t *testing.T, r *replica, n int) {
	t.Helper()
	r.sim = &Sim{}
	r.Server = *server.New(server.Config{KVBlocks: 1000, BlockSize: 16, MaxBatchSize: n, MaxBatchedTokens: 1000}, r)
	for i := range n {
		q := newRequest(int64(i+1), 0, 0)
		q.Input, q.Output, q.Prefix = 10, 10, -1
		r.Dispatch(&q.Request)
	}
	r.StartIteration()
	if len(r.Running()) != n {
		t.Fatalf("%d running, want %d", len(r.Running()), n)
	}
}

// TestDeletionCostSteersScaleDown: an autoscaler that annotates the busy
// pod with a higher pod-deletion-cost keeps its requests alive; without
// the annotation the ReplicaSet deletes by readiness, whatever the load.
func TestDeletionCostSteersScaleDown(t *testing.T) {
	v := simtest.LinearVariant()
	v.InitialReplicas = 1
	// One replica from the start, a second ready at 1 s; the request goes to
	// the least loaded one: the first (the second is not ready yet).
	rows := []scenario.TraceRow{simtest.Row(0.5, 100, 4000)}
	script := scaleTo(0, 2, 3, 1)
	v.StartupSeconds, v.StartupJitterSeconds = 1, 1e-9
	res, _ := runRows(t, v, rows, script, nil)
	// The busy pod was ready first (at 0): the newer, idle one goes.
	if res.FailedBy.Terminated != 0 {
		t.Errorf("the idle, newer pod should go first: %d terminated", res.FailedBy.Terminated)
	}
	// Annotating the busy pod as cheaper to delete sends its request down.
	script.costs = map[string]int32{"v-1": -100}
	res, _ = runRows(t, v, rows, script, nil)
	if res.FailedBy.Terminated != 1 {
		t.Errorf("with the busy pod annotated cheapest, %d terminated, want 1", res.FailedBy.Terminated)
	}
}

// TestSaturationAdmission: with the endpoint picker's saturation detector,
// once every pod is saturated (5 waiting) sheddable requests are rejected
// at once and the others wait at the gateway until a pod has room; none
// times out.
func TestSaturationAdmission(t *testing.T) {
	v := simtest.LinearVariant()
	v.MaxBatchSize = 1 // one request at a time: the queue builds
	var rows []scenario.TraceRow
	for i := range 20 {
		r := simtest.Row(0.001*float64(i), 100, 10)
		if i%2 == 1 {
			r.Class = "sheddable"
		}
		rows = append(rows, r)
	}
	sat := func(sc *scenario.Scenario) { sc.Gateway.Saturation = &scenario.Saturation{} }
	res, _ := runRows(t, v, rows, nil, sat)
	// Requests 0–5 reach the pod (1 running, 5 waiting); of the next 14,
	// the 7 sheddable ones are rejected and the 7 others wait.
	if res.FailedBy.Rejected != 7 || res.Failed != 7 || res.Completed != 13 {
		t.Errorf("rejected %d, failed %d, completed %d; want 7, 7, 13", res.FailedBy.Rejected, res.Failed, res.Completed)
	}
	if c := res.Classes["m/critical"]; c.Completed != 10 || c.Failed != 0 {
		t.Errorf("critical: %d completed, %d failed; want 10, 0", c.Completed, c.Failed)
	}
	// Without it every request is served.
	res, _ = runRows(t, v, rows, nil, nil)
	if res.Completed != 20 {
		t.Errorf("without saturation admission %d of 20 completed", res.Completed)
	}
}

// TestNumRequestsAndDrain: arrivals stop after numRequests and the run
// ends when the last request is done; without a drain it ends at
// durationSeconds with requests in flight.
func TestNumRequestsAndDrain(t *testing.T) {
	sc := oneReplica(5, simtest.LinearVariant().Params, 64, 3600)
	sc.Models[0].Variants[0] = simtest.LinearVariant()
	sc.Models[0].Workload.NumRequests = 100
	sc.DrainSeconds = 60
	res := New(sc, &Static{n: 1}).Run(context.Background(), nil)
	if res.Arrived != 100 || res.Completed != 100 || res.InFlight != 0 {
		t.Fatalf("arrived %d, completed %d, in flight %d; want 100, 100, 0", res.Arrived, res.Completed, res.InFlight)
	}
	if res.DurationSecs > 60 || res.DurationSecs < 10 {
		t.Errorf("the run lasted %v s: 100 requests at 5/s and a drain", res.DurationSecs)
	}
	sc.DrainSeconds = 0
	sc.DurationSeconds = 10
	sc.Models[0].Workload.NumRequests = 0
	res = New(sc, &Static{n: 1}).Run(context.Background(), nil)
	if res.DurationSecs != 10 || res.InFlight == 0 {
		t.Errorf("without a drain: %v s, %d in flight; want 10 s and some in flight", res.DurationSecs, res.InFlight)
	}
}
