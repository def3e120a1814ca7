package server

import (
	"math"
	"sort"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// Per-server scheduling policies (Variant.SchedulingPolicy), after vLLM's
// --scheduling-policy (https://docs.vllm.ai/en/latest/configuration/engine_args.html)
// and its v1 scheduler (vllm/v1/core/sched/scheduler.py, request_queue.py):
//
//   - fcfs: the waiting queue in arrival order; a preempted request goes
//     back to its head; when the KV cache cannot take a running request's
//     next tokens, the request at the tail of the running batch is
//     preempted. This is the simulator's server as it always was.
//   - priority-fcfs (vLLM's "priority"): the waiting queue ordered by
//     priority, then by arrival at the server (vLLM: lower value first;
//     here, as at the gateway, higher first); a preempted request goes back
//     to its place in that order; the victim of a preemption is the running
//     request of the lowest priority, the latest arrival among equals
//     (vLLM's max(running, key=(priority, arrival_time))), even one already
//     scheduled in this iteration, whose tokens go back to the budget.
//
// Under priority-fcfs the victim may be the head of the batch, which
// leaves the step with nothing scheduled (vLLM stops scheduling running
// requests at the first it cannot schedule); vLLM's model runner returns
// at once from a step without tokens, so the simulator schedules again at
// once instead of spending an iteration's fixed time on nothing.
//
// A higher-priority arrival does not preempt running requests: vLLM's v1
// scheduler preempts only when a running request cannot get KV blocks, and
// admits waiting requests only into the room the running ones leave (the
// v0 scheduler's priority preemption of running requests for waiting ones
// is gone from v1). It overtakes every waiting request of a lower priority
// and runs as soon as the batch has room.
const (
	PolicyFCFS     = "fcfs"
	PolicyPriority = "priority-fcfs"
)

// runsBefore is priority-fcfs's order: the higher priority first, then the
// earlier arrival at the server, then the earlier request.
func runsBefore(a, b *Request) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.AtServer != b.AtServer {
		return a.AtServer < b.AtServer
	}
	return a.ID < b.ID
}

// insertWaiting puts q into the waiting queue at its priority-fcfs place.
func (s *Server) insertWaiting(q *Request) {
	w := s.waiting[s.head:]
	i := s.head + sort.Search(len(w), func(i int) bool { return runsBefore(q, w[i]) })
	s.waiting = append(s.waiting, nil)
	copy(s.waiting[i+1:], s.waiting[i:])
	s.waiting[i] = q
}

// preemptLowest preempts priority-fcfs's victim, the running request that
// runs last, and returns it with the token budget left: a victim already
// scheduled in this iteration gives its tokens back and leaves the work.
func (s *Server) preemptLowest(w *work, budget int) (*Request, int) {
	v := 0
	for i, q := range s.running {
		if runsBefore(s.running[v], q) {
			v = i
		}
	}
	q := s.running[v]
	if v < s.nSched {
		budget += q.sched
		w.unschedule(q)
		s.nSched--
	}
	copy(s.running[v:], s.running[v+1:])
	s.running[len(s.running)-1] = nil
	s.running = s.running[:len(s.running)-1]
	s.recompute(q)
	s.insertWaiting(q)
	return q, budget
}

// recompute frees the blocks of q, preempted under either policy, and
// sets it to prefill again (its blocks' content stays cached until
// evicted); it counts as waiting again. The caller takes it out of the
// batch and queues it.
func (s *Server) recompute(q *Request) {
	s.kv.release(q)
	q.prevBlocks, q.blocks = q.blocks, nil
	q.computed, q.generated, q.sched, q.keyed = 0, 0, 0, 0
	s.c.Preempted++
	s.waits.add(q.Priority, 1)
}

// unschedule takes a request scheduled in this iteration back out of its
// work (schedule's inverse).
func (w *work) unschedule(q *Request) {
	if q.computed < q.Input {
		w.prefillTokens -= q.sched
		return
	}
	w.decodes--
	w.decodeContext -= float64(q.computed + 1)
}

// waitCounts counts a replica's waiting requests (in its front end or its
// queue) by priority: the gateway's view of its queue.
type waitCounts []admission.Waiting

func (c *waitCounts) add(priority, d int) {
	for i := range *c {
		if (*c)[i].Priority == priority {
			(*c)[i].Count += d
			return
		}
	}
	*c = append(*c, admission.Waiting{Priority: priority, Count: d})
}

// stepTimeConstant is the time constant, in seconds of iterations, of the
// step time a gateway observes: vLLM's inter-token latency as the endpoint
// picker scrapes it, a mean over the last second or so.
const stepTimeConstant = 1.0

// observeStep folds an iteration of dur seconds (as its tokens reach the
// client) into the replica's observed step time, an exponentially
// weighted mean over busy time.
func (s *Server) observeStep(dur float64) {
	if s.stepTime == 0 {
		s.stepTime = dur
		return
	}
	s.stepTime += (1 - math.Exp(-dur/stepTimeConstant)) * (dur - s.stepTime)
}
