package server

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
)

// The tests in this file run a server on its own, hosted by testHost: an
// event queue ordered as the simulator orders it (time, then iteration end
// before queued before step, then scheduling order), with no gateway.

// Event kinds, in the simulator's order for simultaneous events.
const (
	evIterationEnd = iota
	evQueued
	evStep
)

type testEvent struct {
	t    float64
	kind int
	seq  int
	q    *Request
}

type testQueue []testEvent

func (h testQueue) Len() int { return len(h) }
func (h testQueue) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	if h[i].kind != h[j].kind {
		return h[i].kind < h[j].kind
	}
	return h[i].seq < h[j].seq
}
func (h testQueue) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *testQueue) Push(x any)   { *h = append(*h, x.(testEvent)) }
func (h *testQueue) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// testHost hosts one server and records what it reports.
type testHost struct {
	srv       *Server
	now       float64
	seq       int
	events    testQueue
	failed    map[string]int
	completed []*Request
	ttft      map[int64]float64
	itl       []float64 // one entry per token
	// check runs after every event.
	check func()
}

func newTestHost(cfg Config) *testHost {
	h := &testHost{failed: map[string]int{}, ttft: map[int64]float64{}}
	h.srv = New(cfg, h)
	return h
}

func (h *testHost) at(t float64, kind int, q *Request) {
	h.seq++
	heap.Push(&h.events, testEvent{t: t, kind: kind, seq: h.seq, q: q})
}

func (h *testHost) Now() float64                         { return h.now }
func (h *testHost) ScheduleQueued(q *Request, t float64) { h.at(t, evQueued, q) }
func (h *testHost) ScheduleStep()                        { h.at(h.now, evStep, nil) }
func (h *testHost) ScheduleIterationEnd(t float64)       { h.at(t, evIterationEnd, nil) }
func (h *testHost) Fail(_ *Request, cause string)        { h.failed[cause]++ }
func (h *testHost) FirstToken(q *Request, ttft float64)  { h.ttft[q.ID] = ttft }
func (h *testHost) Complete(q *Request, _ float64)       { h.completed = append(h.completed, q) }
func (h *testHost) ObservesStepTime() bool               { return true }
func (h *testHost) Terminating() bool                    { return false }
func (h *testHost) Retire()                              {}
func (h *testHost) AfterIteration()                      {}
func (h *testHost) InterTokenLatency(d float64, n int) {
	for range n {
		h.itl = append(h.itl, d)
	}
}

// run dispatches the requests at their AtServer times (set by the caller;
// Dispatch sets it to the same time), after the events before them (the
// simulator's arrivals come before its steps), and handles the events
// until none is left.
func (h *testHost) run(reqs []*Request) {
	for _, q := range reqs {
		for len(h.events) > 0 && (h.events[0].t < q.AtServer || h.events[0].t == q.AtServer && h.events[0].kind != evStep) {
			h.step()
		}
		h.now = q.AtServer
		h.srv.Dispatch(q)
	}
	for len(h.events) > 0 {
		h.step()
	}
}

func (h *testHost) step() {
	e := heap.Pop(&h.events).(testEvent)
	h.now = e.t
	switch e.kind {
	case evIterationEnd:
		h.srv.EndIteration()
	case evQueued:
		h.srv.Enqueue(e.q)
	case evStep:
		h.srv.Step()
	}
	if h.check != nil {
		h.check()
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestOneRequestLinear: one request of 100 prompt tokens and 3 output
// tokens under the linear model (β0 10 ms, β1 0.01 ms per prompt token, β2
// 0.5 ms per decode, α0 2 ms + α1 0.1 ms per input token in the front end,
// α2 1 ms per output token): it waits 12 ms in the front end, prefills in
// 11 ms (the first token: TTFT 12 + 11 + 1 ms), then decodes twice in
// 10.5 ms (ITL 11.5 ms each).
func TestOneRequestLinear(t *testing.T) {
	h := newTestHost(Config{KVBlocks: 100, BlockSize: 16, MaxBatchSize: 8, MaxBatchedTokens: 2048, LatencyModel: LatencyLinear,
		Linear: LinearModel{Beta0: 10, Beta1: 0.01, Beta2: 0.5, Alpha0: 2, Alpha1: 0.1, Alpha2: 1}})
	q := &Request{ID: 1, Input: 100, Output: 3, Prefix: -1}
	h.run([]*Request{q})
	if len(h.completed) != 1 || h.srv.InFlight() != 0 {
		t.Fatalf("%d completed, %d in flight", len(h.completed), h.srv.InFlight())
	}
	near(t, "TTFT", h.ttft[1], 0.012+0.011+0.001)
	near(t, "queue time", q.Scheduled-q.AtServer, 0.012)
	if len(h.itl) != 2 {
		t.Fatalf("%d inter-token latencies, want 2", len(h.itl))
	}
	for _, d := range h.itl {
		near(t, "ITL", d, 0.0115)
	}
	near(t, "end", q.LastEmit, 0.012+0.011+2*0.0105)
	c := h.srv.Counters()
	near(t, "TTFT sum", c.TTFTSum, h.ttft[1])
	near(t, "ITL sum", c.ITLSum, 2*0.0115)
	if c.Arrived != 1 || c.Completed != 1 || c.PromptTokens != 100 || c.GenerationTokens != 3 || c.ITLCount != 2 {
		t.Errorf("counters %+v", c)
	}
	step := 0.012 // the prefill's 11 ms and α2, then two decodes
	for range 2 {
		step += (1 - math.Exp(-0.0115/stepTimeConstant)) * (0.0115 - step)
	}
	near(t, "step time", h.srv.StepTime(), step)
	if h.srv.KVUsage() != 0 {
		t.Errorf("KV usage %v after the run", h.srv.KVUsage())
	}
}

// TestStandalone: bursts of requests with shared prefixes and priorities
// on a server whose KV cache is too small for them all, under both
// policies: the KV cache's and the queue's invariants hold after every
// event, every request completes but the one too long for the cache
// (rejected), the server preempts and finds prefixes in its cache, and it
// ends empty.
func TestStandalone(t *testing.T) {
	for _, policy := range []string{PolicyFCFS, PolicyPriority} {
		h := newTestHost(Config{KVBlocks: 64, BlockSize: 16, MaxBatchSize: 16, MaxBatchedTokens: 256, Policy: policy,
			Iteration: IterationModel{Alpha: 5, Beta: 0.02, Gamma: 1e-4}})
		h.check = func() {
			if err := h.srv.CheckKV(); err != nil {
				t.Fatalf("%s: %v", policy, err)
			}
			if err := h.srv.CheckWaiting(); err != nil {
				t.Fatalf("%s: %v", policy, err)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var reqs []*Request
		for i := range 200 {
			q := &Request{ID: int64(i + 1), Input: 40 + rng.IntN(200), Output: 1 + rng.IntN(60), Priority: rng.IntN(3) - 1,
				Prefix: rng.IntN(4), PrefixTokens: 32, AtServer: float64(i/20) * 0.05}
			reqs = append(reqs, q)
		}
		reqs = append(reqs, &Request{ID: 999, Input: 2000, Output: 10, Prefix: -1, AtServer: 1})
		h.run(reqs)
		c := h.srv.Counters()
		if len(h.completed) != 200 || h.failed[CauseUnservable] != 1 || c.Completed != 200 || c.Arrived != 201 {
			t.Errorf("%s: %d completed, failed %v, counters %+v", policy, len(h.completed), h.failed, c)
		}
		if c.Preempted == 0 || c.PrefixHits == 0 {
			t.Errorf("%s: %v preemptions, %v prefix hits: the cache was not under pressure", policy, c.Preempted, c.PrefixHits)
		}
		if h.srv.InFlight() != 0 || h.srv.KVUsage() != 0 || len(h.srv.Running()) != 0 {
			t.Errorf("%s: %d in flight, KV usage %v after the run", policy, h.srv.InFlight(), h.srv.KVUsage())
		}
	}
}
