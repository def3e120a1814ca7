package sim

type request struct {
	id            int64
	model         int
	input, output int
	class         int // index into the model's classes (0 without classes)
	priority      int // the gateway's priority: < 0 is sheddable
	prefix        int // shared-prefix group, -1 for none
	prefixTokens  int

	arrive     float64 // at the gateway
	atServer   float64 // dispatched to a replica
	firstToken float64 // the first token reached the client (0: not yet)
	lastEmit   float64 // the latest new token reached the client
	emitted    int     // output tokens the client has
	routed     bool
	held       bool // has waited at the gateway
	// scheduled is when the request first joined a batch (valid once
	// admitted is true); cached are the prompt tokens its first admission
	// found in the prefix cache (vLLM's queue time and computed tokens).
	scheduled     float64
	cached        int
	everScheduled bool
	failed        bool
	// eppTokens are the uncached prompt tokens the endpoint picker counts
	// in flight for it, until its first token (epp.go).
	eppTokens float64

	// Server state of the current run (reset by a preemption).
	computed   int     // token slots whose KV is computed
	generated  int     // output tokens produced
	sched      int     // tokens scheduled in the current iteration
	blocks     []int32 // KV blocks held, in token order
	keyed      int     // leading blocks that carry their content key
	prevBlocks []int32 // blocks released by the last preemption (cache hits on re-admission)

	// gateway.admission: decided on the first routing; obs is the routed
	// replica as the gateway saw it at dispatch (gate.go).
	decided, admitted bool
	obs               observation
}

type replicaState int

const (
	starting replicaState = iota
	ready
	terminating // deleted: SIGTERM received, no new requests
	gone
)

// counters are a pod's cumulative vLLM-like counters.
type counters struct {
	arrived, completed             float64
	ttftSum, ttftCount             float64 // seconds
	itlSum, itlCount               float64 // seconds, per output token after the first
	promptTokens, generationTokens float64
	preempted                      float64
	prefixQueries, prefixHitTokens float64 // prompt tokens looked up in, and found in, the prefix cache
	prefixHits                     float64 // admissions that found at least one cached block
}

// replica is one continuous-batching server with a vLLM-v1-like scheduler
// (BLIS's rules): every iteration serves the running requests first (a
// prefill in progress gets what is left of the token budget, a decode one
// token), preempting from the tail of the running batch when the KV cache
// cannot take a running request's next tokens; then, unless it preempted,
// admits waiting requests from the head of the queue while the batch size,
// the token budget and the KV cache allow, chunking a prompt that does not
// fit the budget left. The iteration that completes a prefill produces the
// first token.
type replica struct {
	id      int
	uid     uint64 // the pod's UID: Kubernetes' last tie-breaker
	v       *variantRT
	state   replicaState
	created float64
	readyAt float64
	// deletionCost is the controller.kubernetes.io/pod-deletion-cost
	// annotation.
	deletionCost int32
	// draining: the autoscaler took the pod out of the gateway's
	// rotation at drainSince (drain before scale-down); it serves what it
	// holds and gets no new request.
	draining   bool
	drainSince float64

	waiting   []*request // FIFO, head at waitHead
	head      int
	pending   int        // dispatched, still in the server's front end
	running   []*request // in admission order
	nSched    int        // running[:nSched] are in the current iteration
	kv        *kvCache
	busy      bool // an iteration is under way
	stepDue   bool // an iteration starts at this instant
	iterStart float64
	// iterTokens are the tokens the current iteration computes;
	// endedTokens those of the last one that ended.
	iterTokens, endedTokens int
	iterEnd                 event // the one step or iteration-end event a replica has at a time

	c counters
	// samples are the scrapes of this pod (oldest first).
	samples []sample
	// priority: the server schedules priority-fcfs (sched.go); waits
	// counts its waiting requests by priority; stepTime is its step time
	// as the gateway observes it (seconds, 0 before its first iteration).
	priority bool
	waits    waitCounts
	stepTime float64
}

func newReplica(id int, v *variantRT, now float64, uid uint64) *replica {
	return &replica{id: id, uid: uid, v: v, state: starting, created: now, kv: newKVCache(v.cfg.KVBlocks, v.cfg.BlockSize),
		priority: v.cfg.SchedulingPolicy == schedPriority}
}

// queueLen counts the requests waiting at the server, including those
// still in its front end.
func (r *replica) queueLen() int { return len(r.waiting) - r.head + r.pending }

func (r *replica) kvUsage() float64 { return r.kv.usage() }

// inFlight counts the requests the server holds.
func (r *replica) inFlight() int { return r.queueLen() + len(r.running) }

// saturated is the endpoint picker's saturation test.
func (r *replica) saturated(g *Saturation) bool {
	return r.queueLen() >= g.QueueThreshold || r.kvUsage() >= g.KVThreshold
}

// dispatch hands a request to the server: it reaches the scheduler's queue
// after the front end's overhead (α0 + α1·input of the linear model).
func (r *replica) dispatch(s *Sim, q *request) {
	q.atServer = s.now
	r.c.arrived++
	r.waits.add(q.priority, 1)
	if d := r.v.overheadSeconds(q.input); d > 0 {
		r.pending++
		s.schedule(&event{t: s.now + d, kind: evQueued, replica: r, req: q})
		return
	}
	r.enqueue(s, q)
}

// enqueue puts a request at the tail of the scheduler's queue.
func (r *replica) enqueue(s *Sim, q *request) {
	if r.v.cfg.KVBlocks < r.kv.blocksFor(q.input+q.output-1) {
		// It could never hold its own tokens: vLLM rejects it (longer
		// than the model length the cache allows).
		r.waits.add(q.priority, -1)
		s.fail(q, causeUnservable)
		return
	}
	if r.priority {
		r.insertWaiting(q)
	} else {
		r.waiting = append(r.waiting, q)
	}
	if !r.busy && !r.stepDue {
		// As in BLIS, the iteration starts after every request arriving
		// at this instant is in the queue.
		r.stepDue = true
		r.iterEnd = event{t: s.now, kind: evStep, replica: r}
		s.schedule(&r.iterEnd)
	}
}

// startIteration forms the batch and schedules the iteration's end.
func (r *replica) startIteration(s *Sim) {
	var w work
	r.nSched = 0
	budget, preempted := r.continueRunning(&w, r.v.cfg.MaxBatchedTokens)
	for r.priority && preempted && r.nSched == 0 {
		// A step that scheduled nothing takes no time (sched.go): schedule
		// again, with the victims waiting.
		budget, preempted = r.continueRunning(&w, r.v.cfg.MaxBatchedTokens)
	}
	if !preempted {
		// Admissions only when this iteration preempted none (BLIS, vLLM).
		r.admitWaiting(&w, budget, s.now)
	}
	if r.head > 1024 && r.head*2 > len(r.waiting) {
		r.waiting = append(r.waiting[:0], r.waiting[r.head:]...)
		r.head = 0
	}
	if r.nSched == 0 && r.head == len(r.waiting) {
		r.busy = false
		return
	}
	r.busy = true
	r.iterTokens = w.prefillTokens + w.decodes
	r.iterStart = s.now
	r.iterEnd = event{t: s.now + r.v.iterationSeconds(&w), kind: evIterationEnd, replica: r}
	s.schedule(&r.iterEnd)
}

// continueRunning schedules the running requests, oldest first, within the
// iteration's token budget: a prefill chunk or one decode token each,
// preempting from the tail when the KV cache has no room. It returns the
// budget left and whether it preempted.
func (r *replica) continueRunning(w *work, budget int) (int, bool) {
	preempted := false
	for r.nSched < len(r.running) && budget > 0 {
		q := r.running[r.nSched]
		n := 1
		if q.computed < q.input {
			n = min(q.input-q.computed, budget)
		}
		self := false
		for !self && !r.kv.grow(q, n) {
			var victim *request
			if r.priority {
				victim, budget = r.preemptLowest(w, budget)
			} else {
				victim = r.preemptTail()
			}
			self = victim == q
			preempted = true
		}
		if self {
			break
		}
		r.schedule(q, n, w)
		budget -= n
	}
	return budget, preempted
}

// admitWaiting admits requests from the head of the queue while the batch
// and the budget have room, each reusing its cached prefix; the head waits
// when the KV cache cannot hold it (head-of-line blocking).
func (r *replica) admitWaiting(w *work, budget int, now float64) {
	cfg := &r.v.cfg
	for r.nSched == len(r.running) && len(r.running) < cfg.MaxBatchSize && budget > 0 && r.head < len(r.waiting) {
		q := r.waiting[r.head]
		hits := r.kv.cachedPrefix(q)
		start := len(hits) * r.kv.bs
		n := min(q.input-start, budget)
		if !r.kv.admit(q, hits, n) {
			break // head-of-line blocking: the head waits for room
		}
		r.waiting[r.head] = nil
		r.head++
		r.waits.add(q.priority, -1)
		r.c.prefixQueries += float64(q.input)
		r.c.prefixHitTokens += float64(start)
		if start > 0 {
			r.c.prefixHits++
		}
		q.prevBlocks = nil
		q.computed = start
		if !q.everScheduled {
			q.everScheduled, q.scheduled, q.cached = true, now, start
		}
		r.running = append(r.running, q)
		r.schedule(q, n, w)
		budget -= n
	}
}

// work is what one iteration computes.
type work struct {
	prefillTokens int     // prompt tokens computed (cache hits excluded)
	decodes       int     // requests decoding one token
	decodeContext float64 // Σ context length over the decodes
}

func (r *replica) schedule(q *request, n int, w *work) {
	q.sched = n
	r.nSched++
	if q.computed < q.input {
		w.prefillTokens += n
	} else {
		w.decodes++
		w.decodeContext += float64(q.computed + 1)
	}
}

// endIteration advances every scheduled request: a prefill by its chunk (the
// last chunk yields the first token), a decode by one token; finished
// requests leave and free their blocks.
func (r *replica) endIteration(s *Sim) {
	now := s.now
	dur := now - r.iterStart
	r.endedTokens = r.iterTokens
	a2 := r.v.tokenOverheadSeconds()
	if s.gate != nil {
		r.observeStep(dur + a2) // only the admission policy reads it
	}
	contiguous := 0
	keep := r.running[:0]
	for i, q := range r.running {
		if i >= r.nSched {
			keep = append(keep, q)
			continue
		}
		prefill := q.computed < q.input
		q.computed += q.sched
		q.sched = 0
		if prefill && q.computed < q.input {
			keep = append(keep, q)
			continue // more chunks to come
		}
		q.generated++
		if q.generated > q.emitted {
			if q.emitted == 0 {
				q.firstToken = now
				s.eppReleased(q)
				r.c.ttftSum += now - q.atServer + a2
				r.c.ttftCount++
				r.c.promptTokens += float64(q.input)
				if s.gate != nil {
					s.gate.firstToken(q, now-q.atServer+a2)
				}
			} else if q.lastEmit == r.iterStart {
				contiguous++
			} else {
				s.res.itlTokens.add(now-q.lastEmit+a2, 1)
			}
			q.emitted, q.lastEmit = q.generated, now
		}
		if q.generated >= q.output {
			r.finish(s, q)
			continue
		}
		keep = append(keep, q)
	}
	if contiguous > 0 {
		s.res.itlTokens.add(dur+a2, contiguous)
	}
	for i := len(keep); i < len(r.running); i++ {
		r.running[i] = nil
	}
	r.running = keep
	r.nSched = 0
	r.busy = false
	if r.state == terminating && r.inFlight() == 0 {
		s.retire(r)
		return
	}
	r.startIteration(s)
	s.gatewayReleased(r)
}

func (r *replica) finish(s *Sim, q *request) {
	a2 := r.v.tokenOverheadSeconds()
	r.kv.release(q)
	q.blocks, q.prevBlocks = nil, nil
	r.c.completed++
	r.c.generationTokens += float64(q.output)
	if q.output > 1 {
		r.c.itlSum += s.now - q.firstToken + float64(q.output-1)*a2
		r.c.itlCount += float64(q.output - 1)
	}
	s.complete(q, a2)
}

// preemptTail recomputes the request at the tail of the running batch
// (vLLM's recompute preemption, as BLIS models it) and returns it: it
// leaves the batch, its blocks are freed (their content stays cached until
// evicted) and it goes back to the head of the queue, to prefill again and
// regenerate its output. Its client keeps the tokens it already has. The
// tail is never a request already scheduled in this iteration.
func (r *replica) preemptTail() *request {
	q := r.running[len(r.running)-1]
	r.running[len(r.running)-1] = nil
	r.running = r.running[:len(r.running)-1]
	r.recompute(q)
	if r.head > 0 {
		r.head--
		r.waiting[r.head] = q
	} else {
		r.waiting = append([]*request{q}, r.waiting...)
	}
	return q
}

// abortAll fails every request the server holds (its pod is killed).
func (r *replica) abortAll(s *Sim) {
	for _, q := range r.running {
		s.fail(q, causeTerminated)
	}
	for _, q := range r.waiting[r.head:] {
		s.fail(q, causeTerminated)
	}
	r.running, r.waiting, r.head, r.nSched = nil, nil, 0, 0
	r.waits = nil
}

// iterationSeconds is the duration of one iteration: the linear (BLIS)
// model β0 + β1·prefill tokens + β2·decode tokens, or the iteration model
// α + (β + γ)·prefill tokens + Σ over decodes (β + γ·context).
func (v *variantRT) iterationSeconds(w *work) float64 {
	if v.cfg.LatencyModel == "linear" {
		l := v.cfg.Linear
		return (l.Beta0 + l.Beta1*float64(w.prefillTokens) + l.Beta2*float64(w.decodes)) / 1000
	}
	p := v.cfg.Params
	ms := p.Alpha + (p.Beta+p.Gamma)*float64(w.prefillTokens) + p.Beta*float64(w.decodes) + p.Gamma*w.decodeContext
	return ms / 1000
}

// overheadSeconds is the linear model's front-end overhead α0 + α1·input
// (0 for the iteration model).
func (v *variantRT) overheadSeconds(input int) float64 {
	if v.cfg.LatencyModel != "linear" {
		return 0
	}
	return (v.cfg.Linear.Alpha0 + v.cfg.Linear.Alpha1*float64(input)) / 1000
}

// tokenOverheadSeconds is the linear model's per-output-token overhead α2:
// added to each reported TTFT and ITL, not to the clock.
func (v *variantRT) tokenOverheadSeconds() float64 {
	if v.cfg.LatencyModel != "linear" {
		return 0
	}
	return v.cfg.Linear.Alpha2 / 1000
}
