// Package sim is a deterministic discrete-event simulator of a fleet of
// continuous-batching LLM inference servers, with a gateway, a router,
// Prometheus-like metrics and an autoscaler in the loop: WVA's decision
// engine, HPA- and KEDA-style baselines, static fleets and an oracle bound.
//
// Time is virtual (seconds as float64); randomness comes from seeded
// sources, one stream per subsystem, so the same scenario and seed give the
// same bytes. The server (package server) follows vLLM's v1 scheduler
// (chunked prefill, a paged KV cache with prefix caching, preemption;
// https://docs.vllm.ai/) and the BLIS simulator's rules
// (https://github.com/inference-sim/inference-sim). Package report renders
// the results (tables, CSV, JSON, plots); sim does not import it.
// See docs/evaluation.md; docs/references.md lists the sources.
package sim

// eventKind orders simultaneous events: lower first.
type eventKind int

const (
	evReplicaReady eventKind = iota
	evIterationEnd
	evQueued
	evKill
	evArrival
	evStep // an idle server starts an iteration once the arrivals of the instant are in
	evGatewayTimeout
	evScrape
	evEPPScrape
	evAutoscale
	evFast
	evRecord
)

type event struct {
	t       float64
	kind    eventKind
	seq     uint64
	replica *replica
	req     *request
	model   int
}

// eventQueue is a binary min-heap ordered by (time, kind, sequence): ties
// are broken deterministically. An entry carries its event's order (the
// time, and the kind and sequence packed in one key), so that the heap's
// comparisons read the heap alone, not the events it points to.
type eventQueue []queued

// queued is an event in the queue. An event's time, kind and sequence do
// not change while it is queued (a replica reuses its iteration-end event
// only once it is handled).
type queued struct {
	t   float64
	key uint64 // kind << 56 | sequence: kind first, then sequence
	e   *event
}

func (a *queued) before(b *queued) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.key < b.key
}

func (q *eventQueue) push(e *event) {
	x := queued{t: e.t, key: uint64(e.kind)<<56 | e.seq, e: e} //nolint:gosec // kinds are small and ≥ 0, sequences < 2^56
	h := append(*q, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !x.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
	*q = h
}

func (q *eventQueue) pop() *event {
	h := *q
	top := h[0].e
	n := len(h) - 1
	x := h[n]
	h[n] = queued{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	if n > 0 {
		h[i] = x
	}
	*q = h
	return top
}

// schedule adds an event.
func (s *Sim) schedule(e *event) {
	s.seq++
	e.seq = s.seq
	s.events.push(e)
}
