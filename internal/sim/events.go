// Package sim is a deterministic discrete-event simulator of a fleet of
// continuous-batching LLM inference servers, with a gateway, a router,
// Prometheus-like metrics and an autoscaler in the loop: WVA's decision
// engine, HPA- and KEDA-style baselines, static fleets and an oracle bound.
//
// Time is virtual (seconds as float64); randomness comes from seeded
// sources, one stream per subsystem, so the same scenario and seed give the
// same bytes. See docs/evaluation.md.
package sim

import "container/heap"

// eventKind orders simultaneous events: lower first.
type eventKind int

const (
	evReplicaReady eventKind = iota
	evIterationEnd
	evWake
	evArrival
	evGatewayTimeout
	evScrape
	evAutoscale
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

// eventQueue is a min-heap ordered by (time, kind, sequence): ties are
// broken deterministically.
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// schedule adds an event.
func (s *Sim) schedule(e *event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}
