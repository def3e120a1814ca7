// Package server models one continuous-batching LLM inference server, after
// vLLM's v1 scheduler (chunked prefill, a paged KV cache with prefix
// caching, recompute preemption; https://docs.vllm.ai/) and the BLIS
// simulator's rules (https://github.com/inference-sim/inference-sim): its
// front end, its scheduler (fcfs or priority-fcfs, sched.go), its KV cache
// (kv.go) and its latency models (the iteration model and BLIS's linear
// model).
//
// The server is driven by events that its Host schedules and delivers: it
// neither keeps a clock nor knows what the requests are for. The cluster
// simulator (internal/sim) hosts one per pod; anything else that needs a
// server (a capacity model, a test) can host one without the simulator.
// Time is in seconds; the latency models' coefficients are in ms.
package server

import "github.com/llm-d-incubation/wva/internal/admission"

// Request is a request as the server sees it: its tokens, its priority,
// its shared prefix, what reached the client and the server's own state of
// it.
//
// The fields that every iteration reads and writes of each running request
// come first, together: the simulator's time goes mostly to that loop, and
// these fields then share the first cache line or two of the request.
type Request struct {
	// Server state of the current run (reset by a preemption).
	computed  int     // token slots whose KV is computed
	sched     int     // tokens scheduled in the current iteration
	generated int     // output tokens produced
	blocks    []int32 // KV blocks held, in token order

	Input, Output int
	LastEmit      float64 // the latest new token reached the client
	Emitted       int     // output tokens the client has

	ID           int64
	Priority     int // the gateway's priority: < 0 is sheddable
	Prefix       int // shared-prefix group, -1 for none
	PrefixTokens int

	AtServer   float64 // dispatched to a replica
	FirstToken float64 // the first token reached the client (0: not yet)
	// Scheduled is when the request first joined a batch (valid once
	// EverScheduled is true); Cached are the prompt tokens its first
	// admission found in the prefix cache (vLLM's queue time and computed
	// tokens).
	Scheduled     float64
	Cached        int
	EverScheduled bool

	// Owner is the caller's handle for the request (the Host's callbacks
	// get back to it through it); the server never reads it.
	Owner any

	// More server state of the current run (reset by a preemption).
	keyed      int     // leading blocks that carry their content key
	prevBlocks []int32 // blocks released by the last preemption (cache hits on re-admission)
}

// Failure causes the server reports to its Host.
const (
	CauseTerminated = "terminated" // in flight on a pod that was killed
	CauseUnservable = "unservable" // needs more KV cache than its pod has
)

// Counters are a server's cumulative vLLM-like counters.
type Counters struct {
	Arrived, Completed             float64
	TTFTSum, TTFTCount             float64 // seconds
	ITLSum, ITLCount               float64 // seconds, per output token after the first
	PromptTokens, GenerationTokens float64
	Preempted                      float64
	PrefixQueries, PrefixHitTokens float64 // prompt tokens looked up in, and found in, the prefix cache
	PrefixHits                     float64 // admissions that found at least one cached block
	// TTFTBuckets and TPOTBuckets count requests per bucket of vLLM's
	// histograms (TTFTBucketBounds, then +Inf; not cumulative): each
	// request's TTFT at its first token, its time per output token after
	// the first at its end (requests of one token are not counted).
	TTFTBuckets [len(TTFTBucketBounds) + 1]float64
	TPOTBuckets [len(TPOTBucketBounds) + 1]float64
}

// LatencyLinear is Config.LatencyModel's value for BLIS's linear model;
// any other value is the iteration model.
const LatencyLinear = "linear"

// Config is what the server needs of its variant: vLLM's engine arguments
// and the latency model.
type Config struct {
	KVBlocks         int    // blocks in the KV cache
	BlockSize        int    // token slots per block
	MaxBatchSize     int    // --max-num-seqs
	MaxBatchedTokens int    // the token budget of one iteration (--max-num-batched-tokens)
	Policy           string // PolicyFCFS (or "") or PolicyPriority (sched.go)
	LatencyModel     string // LatencyLinear, or the iteration model
	Iteration        IterationModel
	Linear           LinearModel
}

// IterationModel is the iteration model's coefficients, in ms: an
// iteration takes α + (β + γ)·prefill tokens + Σ over decodes (β +
// γ·context).
type IterationModel struct {
	Alpha, Beta, Gamma float64
}

// LinearModel is BLIS's step-time model, in ms: an iteration takes β0 +
// β1·prefill tokens + β2·decode tokens; the front end adds α0 + α1·input
// before a request is queued, and α2 is a per-output-token overhead added
// to each reported TTFT and ITL, not to the iteration.
type LinearModel struct {
	Beta0, Beta1, Beta2    float64
	Alpha0, Alpha1, Alpha2 float64
}

// Host is the server's environment: the clock, the event queue and the
// fate of requests outside the server. The server calls it synchronously,
// from its own methods; the Host delivers the events it schedules by
// calling Enqueue, Step and EndIteration at their times (after the events
// of the same instant it orders before them, as a discrete-event simulator
// does).
type Host interface {
	// Now is the current time, in seconds.
	Now() float64
	// ScheduleQueued arranges for Enqueue(q) at time t: q leaves the
	// server's front end. (A Host whose server is killed meanwhile calls
	// Drop(q) instead.)
	ScheduleQueued(q *Request, t float64)
	// ScheduleStep arranges for Step at the current time, once the
	// requests arriving at this instant are queued: the idle server starts
	// an iteration.
	ScheduleStep()
	// ScheduleIterationEnd arranges for EndIteration at time t. A server
	// has one step or iteration end scheduled at a time, so a Host may
	// reuse one event for both.
	ScheduleIterationEnd(t float64)
	// Fail tells that the server gives up on q (cause: CauseUnservable,
	// CauseTerminated).
	Fail(q *Request, cause string)
	// FirstToken tells that q's first token reached the client, ttft
	// seconds after q reached the server (α2 included).
	FirstToken(q *Request, ttft float64)
	// InterTokenLatency records n output tokens that each reached the
	// client d seconds after the previous one (α2 included).
	InterTokenLatency(d float64, n int)
	// Complete tells that q's last token reached the client; a2 is the
	// per-token overhead (LinearModel.Alpha2, in seconds) to add to every
	// latency reported for it.
	Complete(q *Request, a2 float64)
	// ObservesStepTime tells whether the server must keep StepTime (asked
	// once, by New: the answer holds for the server's life).
	ObservesStepTime() bool
	// Terminating tells whether the server is to stop once it holds no
	// request; Retire is then called instead of starting an iteration.
	Terminating() bool
	Retire()
	// AfterIteration is called at the end of EndIteration, once the next
	// iteration (if any) has started: the server's load changed.
	AfterIteration()
}

// Server is one continuous-batching server with a vLLM-v1-like scheduler
// (BLIS's rules): every iteration serves the running requests first (a
// prefill in progress gets what is left of the token budget, a decode one
// token), preempting from the tail of the running batch when the KV cache
// cannot take a running request's next tokens; then, unless it preempted,
// admits waiting requests from the head of the queue while the batch size,
// the token budget and the KV cache allow, chunking a prompt that does not
// fit the budget left. The iteration that completes a prefill produces the
// first token.
type Server struct {
	cfg  Config
	host Host

	waiting   []*Request // FIFO, head at waitHead
	head      int
	pending   int        // dispatched, still in the server's front end
	running   []*Request // in admission order
	nSched    int        // running[:nSched] are in the current iteration
	kv        *kvCache
	busy      bool // an iteration is under way
	stepDue   bool // an iteration starts at this instant
	iterStart float64
	// iterTokens are the tokens the current iteration computes;
	// endedTokens those of the last one that ended.
	iterTokens, endedTokens int

	c Counters
	// priority: the server schedules priority-fcfs (sched.go); waits
	// counts its waiting requests by priority; stepTime is its step time
	// as the gateway observes it (seconds, 0 before its first iteration),
	// kept when observed (Host.ObservesStepTime).
	priority bool
	waits    waitCounts
	stepTime float64
	observed bool
	// a2 is the per-token overhead (Config.TokenOverheadSeconds).
	a2 float64
}

// New returns an idle server with an empty KV cache, hosted by h.
func New(cfg Config, h Host) *Server {
	return &Server{cfg: cfg, host: h, kv: newKVCache(cfg.KVBlocks, cfg.BlockSize), priority: cfg.Policy == PolicyPriority,
		observed: h.ObservesStepTime(), a2: cfg.TokenOverheadSeconds()}
}

// QueueLen counts the requests waiting at the server, including those
// still in its front end.
func (s *Server) QueueLen() int { return len(s.waiting) - s.head + s.pending }

// KVUsage is the share of the KV cache's blocks held by requests (vLLM's
// KV-cache usage counts cached but free blocks as free).
func (s *Server) KVUsage() float64 { return s.kv.usage() }

// InFlight counts the requests the server holds.
func (s *Server) InFlight() int { return s.QueueLen() + len(s.running) }

// Running is the running batch, in admission order. The caller must not
// change it.
func (s *Server) Running() []*Request { return s.running }

// Waiting counts the waiting requests (in the front end or the queue) by
// priority: the gateway's view of the queue. The caller must not change
// it.
func (s *Server) Waiting() []admission.Waiting { return s.waits }

// StepTime is the step time as the gateway observes it (seconds, 0 before
// the first iteration; kept only when the Host ObservesStepTime).
func (s *Server) StepTime() float64 { return s.stepTime }

// EndedTokens are the tokens the last iteration that ended computed.
func (s *Server) EndedTokens() int { return s.endedTokens }

// Counters returns the server's cumulative counters.
func (s *Server) Counters() Counters { return s.c }

// Config returns the server's configuration.
func (s *Server) Config() *Config { return &s.cfg }

// PriorityPolicy tells whether the server schedules priority-fcfs.
func (s *Server) PriorityPolicy() bool { return s.priority }

// PrefixMatch is the leading run of q's shared-prefix blocks resident in
// the KV cache, and its share of the prefix's blocks (the router's prefix
// scorer; kv.go).
func (s *Server) PrefixMatch(q *Request) (blocks int, share float64) { return s.kv.prefixMatch(q) }

// CachedBlocks counts the leading blocks of q's prompt that the scheduler
// would find in the prefix cache if it admitted q now.
func (s *Server) CachedBlocks(q *Request) int { return len(s.kv.cachedPrefix(q)) }

// Dispatch hands a request to the server: it reaches the scheduler's queue
// after the front end's overhead (α0 + α1·input of the linear model).
func (s *Server) Dispatch(q *Request) {
	now := s.host.Now()
	q.AtServer = now
	s.c.Arrived++
	s.waits.add(q.Priority, 1)
	if d := s.cfg.OverheadSeconds(q.Input); d > 0 {
		s.pending++
		s.host.ScheduleQueued(q, now+d)
		return
	}
	s.enqueue(q)
}

// Enqueue is the arrival of a dispatched request at the scheduler's queue,
// when its front end is done (Host.ScheduleQueued).
func (s *Server) Enqueue(q *Request) {
	s.pending--
	s.enqueue(q)
}

// Drop fails a request whose front end was done after the server was
// killed (AbortAll), instead of Enqueue.
func (s *Server) Drop(q *Request) {
	s.pending--
	s.host.Fail(q, CauseTerminated)
}

// enqueue puts a request at the tail of the scheduler's queue.
func (s *Server) enqueue(q *Request) {
	if s.cfg.KVBlocks < s.kv.blocksFor(q.Input+q.Output-1) {
		// It could never hold its own tokens: vLLM rejects it (longer
		// than the model length the cache allows).
		s.waits.add(q.Priority, -1)
		s.host.Fail(q, CauseUnservable)
		return
	}
	if s.priority {
		s.insertWaiting(q)
	} else {
		s.waiting = append(s.waiting, q)
	}
	if !s.busy && !s.stepDue {
		// As in BLIS, the iteration starts after every request arriving
		// at this instant is in the queue.
		s.stepDue = true
		s.host.ScheduleStep()
	}
}

// Step is the step Host.ScheduleStep arranged: an idle server starts an
// iteration.
func (s *Server) Step() {
	s.stepDue = false
	if !s.busy {
		s.StartIteration()
	}
}

// StartIteration forms the batch and schedules the iteration's end.
func (s *Server) StartIteration() {
	var w work
	s.nSched = 0
	budget, preempted := s.continueRunning(&w, s.cfg.MaxBatchedTokens)
	for s.priority && preempted && s.nSched == 0 {
		// A step that scheduled nothing takes no time (sched.go): schedule
		// again, with the victims waiting.
		budget, preempted = s.continueRunning(&w, s.cfg.MaxBatchedTokens)
	}
	now := s.host.Now()
	if !preempted {
		// Admissions only when this iteration preempted none (BLIS, vLLM).
		s.admitWaiting(&w, budget, now)
	}
	if s.head > 1024 && s.head*2 > len(s.waiting) {
		s.waiting = append(s.waiting[:0], s.waiting[s.head:]...)
		s.head = 0
	}
	if s.nSched == 0 && s.head == len(s.waiting) {
		s.busy = false
		return
	}
	s.busy = true
	s.iterTokens = w.prefillTokens + w.decodes
	s.iterStart = now
	s.host.ScheduleIterationEnd(now + s.cfg.iterationSeconds(&w))
}

// continueRunning schedules the running requests, oldest first, within the
// iteration's token budget: a prefill chunk or one decode token each,
// preempting from the tail when the KV cache has no room. It returns the
// budget left and whether it preempted.
func (s *Server) continueRunning(w *work, budget int) (int, bool) {
	preempted := false
	for s.nSched < len(s.running) && budget > 0 {
		q := s.running[s.nSched]
		n := 1
		if q.computed < q.Input {
			n = min(q.Input-q.computed, budget)
		}
		self := false
		for !self && !s.kv.room(q, n) && !s.kv.grow(q, n) {
			var victim *Request
			if s.priority {
				victim, budget = s.preemptLowest(w, budget)
			} else {
				victim = s.preemptTail()
			}
			self = victim == q
			preempted = true
		}
		if self {
			break
		}
		s.schedule(q, n, w)
		budget -= n
	}
	return budget, preempted
}

// admitWaiting admits requests from the head of the queue while the batch
// and the budget have room, each reusing its cached prefix; the head waits
// when the KV cache cannot hold it (head-of-line blocking).
func (s *Server) admitWaiting(w *work, budget int, now float64) {
	cfg := &s.cfg
	for s.nSched == len(s.running) && len(s.running) < cfg.MaxBatchSize && budget > 0 && s.head < len(s.waiting) {
		q := s.waiting[s.head]
		hits, freeHits := s.kv.headPrefix(q)
		start := len(hits) * s.kv.bs
		n := min(q.Input-start, budget)
		if !s.kv.admit(q, hits, freeHits, n) {
			break // head-of-line blocking: the head waits for room
		}
		s.waiting[s.head] = nil
		s.head++
		s.waits.add(q.Priority, -1)
		s.c.PrefixQueries += float64(q.Input)
		s.c.PrefixHitTokens += float64(start)
		if start > 0 {
			s.c.PrefixHits++
		}
		q.prevBlocks = nil
		q.computed = start
		if !q.EverScheduled {
			q.EverScheduled, q.Scheduled, q.Cached = true, now, start
		}
		s.running = append(s.running, q)
		s.schedule(q, n, w)
		budget -= n
	}
}

// work is what one iteration computes.
type work struct {
	prefillTokens int     // prompt tokens computed (cache hits excluded)
	decodes       int     // requests decoding one token
	decodeContext float64 // Σ context length over the decodes
}

func (s *Server) schedule(q *Request, n int, w *work) {
	q.sched = n
	s.nSched++
	if q.computed < q.Input {
		w.prefillTokens += n
	} else {
		w.decodes++
		w.decodeContext += float64(q.computed + 1)
	}
}

// EndIteration advances every scheduled request: a prefill by its chunk (the
// last chunk yields the first token), a decode by one token; finished
// requests leave and free their blocks. Then the next iteration starts,
// unless the server is terminating and empty (Host.Retire).
func (s *Server) EndIteration() {
	now := s.host.Now()
	dur := now - s.iterStart
	s.endedTokens = s.iterTokens
	a2 := s.a2
	if s.observed {
		s.observeStep(dur + a2) // only the admission policy reads it
	}
	contiguous := 0
	keep := s.running[:0]
	for i, q := range s.running {
		if i >= s.nSched {
			keep = append(keep, q)
			continue
		}
		prefill := q.computed < q.Input
		q.computed += q.sched
		q.sched = 0
		if prefill && q.computed < q.Input {
			keep = append(keep, q)
			continue // more chunks to come
		}
		q.generated++
		if q.generated > q.Emitted {
			if q.Emitted == 0 {
				s.firstToken(q, now, a2)
			} else if q.LastEmit == s.iterStart {
				contiguous++
			} else {
				s.host.InterTokenLatency(now-q.LastEmit+a2, 1)
			}
			q.Emitted, q.LastEmit = q.generated, now
		}
		if q.generated >= q.Output {
			s.finish(q, now, a2)
			continue
		}
		keep = append(keep, q)
	}
	if contiguous > 0 {
		s.host.InterTokenLatency(dur+a2, contiguous)
	}
	for i := len(keep); i < len(s.running); i++ {
		s.running[i] = nil
	}
	s.running = keep
	s.nSched = 0
	s.busy = false
	if s.host.Terminating() && s.InFlight() == 0 {
		s.host.Retire()
		return
	}
	s.StartIteration()
	s.host.AfterIteration()
}

// firstToken records q's first token, produced at now.
func (s *Server) firstToken(q *Request, now, a2 float64) {
	q.FirstToken = now
	ttft := now - q.AtServer + a2
	s.c.TTFTSum += ttft
	s.c.TTFTCount++
	s.c.TTFTBuckets[bucketOf(TTFTBucketBounds[:], ttft)]++
	s.c.PromptTokens += float64(q.Input)
	s.host.FirstToken(q, ttft)
}

func (s *Server) finish(q *Request, now, a2 float64) {
	s.kv.release(q)
	q.blocks, q.prevBlocks = nil, nil
	s.c.Completed++
	s.c.GenerationTokens += float64(q.Output)
	if q.Output > 1 {
		decode := now - q.FirstToken + float64(q.Output-1)*a2
		s.c.ITLSum += decode
		s.c.ITLCount += float64(q.Output - 1)
		s.c.TPOTBuckets[bucketOf(TPOTBucketBounds[:], decode/float64(q.Output-1))]++
	}
	s.host.Complete(q, a2)
}

// preemptTail recomputes the request at the tail of the running batch
// (vLLM's recompute preemption, as BLIS models it) and returns it: it
// leaves the batch, its blocks are freed (their content stays cached until
// evicted) and it goes back to the head of the queue, to prefill again and
// regenerate its output. Its client keeps the tokens it already has. The
// tail is never a request already scheduled in this iteration.
func (s *Server) preemptTail() *Request {
	q := s.running[len(s.running)-1]
	s.running[len(s.running)-1] = nil
	s.running = s.running[:len(s.running)-1]
	s.recompute(q)
	if s.head > 0 {
		s.head--
		s.waiting[s.head] = q
	} else {
		s.waiting = append([]*Request{q}, s.waiting...)
	}
	return q
}

// AbortAll fails every request the server holds (its pod is killed);
// those still in its front end fail when they leave it (Drop).
func (s *Server) AbortAll() {
	for _, q := range s.running {
		s.host.Fail(q, CauseTerminated)
	}
	for _, q := range s.waiting[s.head:] {
		s.host.Fail(q, CauseTerminated)
	}
	s.running, s.waiting, s.head, s.nSched = nil, nil, 0, 0
	s.waits = nil
	s.kv.forget()
}

// iterationSeconds is the duration of one iteration: the linear (BLIS)
// model β0 + β1·prefill tokens + β2·decode tokens, or the iteration model
// α + (β + γ)·prefill tokens + Σ over decodes (β + γ·context).
func (c *Config) iterationSeconds(w *work) float64 {
	if c.LatencyModel == LatencyLinear {
		l := c.Linear
		return (l.Beta0 + l.Beta1*float64(w.prefillTokens) + l.Beta2*float64(w.decodes)) / 1000
	}
	p := c.Iteration
	ms := p.Alpha + (p.Beta+p.Gamma)*float64(w.prefillTokens) + p.Beta*float64(w.decodes) + p.Gamma*w.decodeContext
	return ms / 1000
}

// PrefillSeconds is the duration of an iteration that computes tokens
// prompt tokens and nothing else.
func (c *Config) PrefillSeconds(tokens int) float64 {
	return c.iterationSeconds(&work{prefillTokens: tokens})
}

// OverheadSeconds is the linear model's front-end overhead α0 + α1·input
// (0 for the iteration model).
func (c *Config) OverheadSeconds(input int) float64 {
	if c.LatencyModel != LatencyLinear {
		return 0
	}
	return (c.Linear.Alpha0 + c.Linear.Alpha1*float64(input)) / 1000
}

// TokenOverheadSeconds is the linear model's per-output-token overhead α2:
// added to each reported TTFT and ITL, not to the clock.
func (c *Config) TokenOverheadSeconds() float64 {
	if c.LatencyModel != LatencyLinear {
		return 0
	}
	return c.Linear.Alpha2 / 1000
}
