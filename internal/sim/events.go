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
// are broken deterministically.
type eventQueue []*event

func (a *event) before(b *event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

func (q *eventQueue) push(e *event) {
	h := append(*q, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *eventQueue) pop() *event {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = nil
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
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
