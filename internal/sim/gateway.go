package sim

import "github.com/llm-d-incubation/wva/internal/sim/server"

// The gateway: llm-d's endpoint picker in front of each model's pods. It
// routes every request to a ready pod, holds it while the model has none
// (or, with saturation-based admission, while every pod is saturated), and
// rejects sheddable requests when the model is saturated.

// Failure causes, as the results count them.
const (
	causeTimeout    = "timeout"              // waited at the gateway longer than gateway.timeoutSeconds
	causeRejected   = "rejected"             // sheddable, every pod saturated (HTTP 429)
	causeShed       = "shed"                 // sheddable, its pod's queue at gateway.queueThreshold
	causeTerminated = server.CauseTerminated // in flight on a pod that was killed
	causeUnservable = server.CauseUnservable // needs more KV cache than its pod has
	causeAdmission  = "admission"            // rejected by gateway.admission's policy (HTTP 429)
)

// route sends a request to a ready replica of its model, or holds it at
// the gateway. With gateway.admission, the policy decides on the request
// the first time it is routed, on the same candidates the router scores.
func (s *Sim) route(q *request) {
	m := q.model
	s.candidates(q)
	if s.gate != nil {
		s.gate.snapshot(s.cands, q)
		if !q.decided && !s.decide(q) {
			s.fail(q, causeAdmission)
			return
		}
	}
	if anyReady, anyRoom := s.admitting(m); anyReady && !anyRoom {
		if q.Priority < 0 {
			s.fail(q, causeRejected)
			return
		}
		s.hold(q)
		return
	}
	k := s.pick(q)
	if k < 0 {
		s.hold(q)
		return
	}
	r := s.cands[k].r
	if th := s.sc.Gateway.QueueThreshold; th > 0 && r.QueueLen() >= th && s.sheddable(q) {
		s.fail(q, causeShed)
		return
	}
	q.routed = true
	s.eppDispatched(q, s.cands[k])
	if s.gate != nil {
		s.dispatched(q, k)
	}
	r.Dispatch(&q.Request)
}

// hold queues a request at the gateway until a pod can take it or
// gateway.timeoutSeconds after its arrival.
func (s *Sim) hold(q *request) {
	if !q.held {
		s.schedule(&event{t: q.arrive + s.sc.Gateway.TimeoutSeconds, kind: evGatewayTimeout, req: q})
	}
	q.held = true
	s.gateway[q.model] = append(s.gateway[q.model], q)
}

// admitting tells whether model m has ready pods, and whether one of them
// has room: is not saturated, by the endpoint picker's saturation detector
// when saturation admission is on. Every pod saturated means the model is;
// a model without ready pods is not: its requests wait for one.
func (s *Sim) admitting(m int) (anyReady, anyRoom bool) {
	sat := s.sc.Gateway.Saturation
	for _, v := range s.byModel[m] {
		for _, r := range v.replicas {
			if r.state != ready || r.draining {
				continue
			}
			anyReady = true
			if sat == nil || !r.saturated(sat) {
				return true, true
			}
		}
	}
	return anyReady, false
}

// gatewayReleased dispatches held requests of r's model while one of its
// pods can take them: the highest priority first, then the oldest (the
// flow-control queue's order).
func (s *Sim) gatewayReleased(r *replica) {
	m := r.v.model
	for len(s.gateway[m]) > 0 {
		if _, room := s.admitting(m); !room {
			return
		}
		g := s.gateway[m]
		best := 0
		for i, q := range g {
			if q.Priority > g[best].Priority {
				best = i
			}
		}
		q := g[best]
		s.gateway[m] = append(g[:best], g[best+1:]...)
		s.route(q)
	}
}

// pick chooses a candidate (its index in s.cands, -1 when there is none):
// the lowest load score (ties to the oldest), or round-robin. The score
// weighs the scorers of llm-d's endpoint picker: KV-cache utilisation,
// queue depth (relative to 5 waiting), batch occupancy, and prefix
// affinity (the share of the request's shared prefix resident in the
// replica's cache).
func (s *Sim) pick(q *request) int {
	w := s.sc.Gateway.Weights
	best := -1
	bestScore := 0.0
	for i, c := range s.cands {
		r := c.r
		sc := w.KV*r.KVUsage() + w.Queue*float64(r.QueueLen())/5 + w.Batch*float64(len(r.Running()))/float64(r.v.cfg.MaxBatchSize)
		if w.Prefix != 0 && q.Prefix >= 0 {
			sc -= w.Prefix * c.share
		}
		if best < 0 || sc < bestScore {
			best, bestScore = i, sc
		}
	}
	n := len(s.cands)
	if n == 0 || s.sc.Gateway.Router != "round-robin" {
		return best
	}
	k := s.rr[q.model] % n
	s.rr[q.model]++
	return k
}

// sheddable: without classes every request may be shed; with classes only
// those of a sheddable class.
func (s *Sim) sheddable(q *request) bool {
	cs := s.sc.Models[q.model].Workload.Classes
	return len(cs) == 0 || cs[q.class].Sheddable
}

func (s *Sim) dropFromGateway(q *request) {
	g := s.gateway[q.model]
	for i, x := range g {
		if x == q {
			s.gateway[q.model] = append(g[:i], g[i+1:]...)
			return
		}
	}
}

func (s *Sim) fail(q *request, cause string) {
	q.failed = true
	s.eppReleased(q)
	s.res.Failed++
	s.res.FailedBy.add(cause)
	s.res.class(q.model, q.class).Failed++
	s.res.PerModel[q.model].Failed++
	s.res.PerModel[q.model].FailedBy.add(cause)
	s.inFlight--
	s.bucket.failed++
}

// complete records a finished request (a2: the per-token overhead its
// replica adds to every reported latency).
func (s *Sim) complete(q *request, a2 float64) {
	s.inFlight--
	s.res.record(q, s.now, a2, s.sloOf(q))
	if s.epp != nil {
		ttft, itl := q.latencies(s.now, a2)
		s.eppObserve(q, ttft, itl)
	}
	if s.done != nil {
		s.done(s, q)
	}
	s.bucket.ttfts = append(s.bucket.ttfts, q.FirstToken-q.arrive+a2)
}
