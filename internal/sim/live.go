package sim

import (
	"strconv"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// Live: the simulator's servers, gateway and workload driven from outside,
// for `wva emulate`. The caller advances virtual time (to the wall clock
// times a scale) and sets each variant's replica count (a Deployment's
// spec.replicas); the replicas start, serve, rank for deletion and retire
// exactly as in a simulated run. No autoscaler, scrape or record loop runs:
// the caller reads each replica's state and counters, and receives the
// per-request latencies vLLM's histograms observe.

// ObservationKind says what an Observation reports.
type ObservationKind int

const (
	// FirstToken: a request's first token (TTFTSeconds is set).
	FirstToken ObservationKind = iota
	// Finished: a request completed (every latency and token count is set).
	Finished
	// Iteration: a replica ended an engine step of Tokens tokens.
	Iteration
)

// Observation is one request's latencies as the serving replica reports
// them (vLLM's histograms): times from the request's arrival at the
// server, in virtual seconds, with the linear model's per-token overhead.
type Observation struct {
	Kind    ObservationKind
	Replica int // LiveReplica.ID
	// TTFTSeconds is the time to the first token; ITLSeconds the mean time
	// per output token after the first (0 for a one-token output);
	// E2ESeconds the whole request.
	TTFTSeconds, ITLSeconds, E2ESeconds float64
	// QueueSeconds is the time from reaching the server to joining its
	// first batch (Finished).
	QueueSeconds              float64
	InputTokens, OutputTokens int
	// CachedTokens are the prompt tokens found in the prefix cache
	// (Finished); Tokens those an engine step computed (Iteration).
	CachedTokens, Tokens int
}

// LiveReplica is one replica (pod) of a variant: starting, ready or, while
// draining after its deletion, terminating.
type LiveReplica struct {
	ID          int
	Ready       bool
	Terminating bool
	// DeletionCost is its controller.kubernetes.io/pod-deletion-cost.
	DeletionCost int32
	// OutOfRotation: the gateway sends it no new request (SetInRotation).
	OutOfRotation bool
}

// ReplicaStats are a replica's vLLM gauges and cumulative counters.
type ReplicaStats struct {
	Running, Waiting    int
	KVUsage             float64 // in [0, 1]
	KVBlocks, BlockSize int
	Arrived, Completed  float64
	// PromptTokens counts at the first token, GenerationTokens at the
	// request's end.
	PromptTokens, GenerationTokens float64
	Preempted                      float64
	PrefixQueries, PrefixHits      float64 // prompt tokens looked up, found
}

// Live is a simulation advanced by its caller. It is not safe for
// concurrent use.
type Live struct {
	s       *Sim
	observe func(Observation)
	done    []*request // completed during the current event
	byID    map[int]*replica
}

// liveScaler is the autoscaler of a Live run: none (no loop runs).
type liveScaler struct{}

func (liveScaler) Name() string       { return "live" }
func (liveScaler) Interval() float64  { return 3600 }
func (liveScaler) Decide(*View) []int { return nil }

// NewLive validates the scenario and prepares a live run at virtual time
// 0: every variant at zero replicas, the first arrivals scheduled. Arrivals
// stop at durationSeconds. observe, if not nil, receives every request's
// first token and completion as they happen.
func NewLive(sc scenario.Scenario, observe func(Observation)) (*Live, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	l := &Live{s: New(sc, liveScaler{}), observe: observe, byID: map[int]*replica{}}
	l.s.done = func(_ *Sim, q *request) { l.done = append(l.done, q) }
	l.s.check = l.afterEvent
	for m := range l.s.streams {
		l.s.nextArrival(m, 0)
	}
	return l, nil
}

// Now is the virtual time, in seconds.
func (l *Live) Now() float64 { return l.s.now }

// Variants names the variants, indexed as Scale and Replicas take them:
// "model/variant", in the scenario's order.
func (l *Live) Variants() []string {
	out := make([]string, len(l.s.variants))
	for i, v := range l.s.variants {
		out[i] = v.key
	}
	return out
}

// AdvanceTo handles every event up to virtual time t and moves the clock
// to t (never back).
func (l *Live) AdvanceTo(t float64) {
	s := l.s
	for len(s.events) > 0 && s.events[0].t <= t {
		s.handle(s.events.pop())
	}
	s.advance(t)
	l.trim()
}

// Scale sets variant i's replicas to n, bounded by its minReplicas and
// maxReplicas: new replicas start and become ready after startupSeconds
// (plus jitter); surplus ones are deleted in the ReplicaSet controller's
// order (not ready first, then the lowest deletion cost, then the most
// recently ready). It panics on a bad index.
func (l *Live) Scale(i, n int) {
	if i < 0 || i >= len(l.s.variants) {
		panic("sim: Live.Scale: no variant " + strconv.Itoa(i))
	}
	l.s.scale(l.s.variants[i], n, false)
	for _, r := range l.s.variants[i].replicas {
		l.byID[r.id] = r
	}
}

// SetDeletionCost sets a replica's pod-deletion-cost; false when the
// replica is gone.
func (l *Live) SetDeletionCost(id int, cost int32) bool {
	r, ok := l.replica(id)
	if ok {
		r.deletionCost = cost
	}
	return ok
}

// SetInRotation puts a replica in the gateway's rotation or takes it out
// (as the endpoint picker does for a pod whose active-ports annotation
// names no port): out of rotation it gets no new request and serves what
// it holds. It returns false when the replica is gone.
func (l *Live) SetInRotation(id int, in bool) bool {
	r, ok := l.replica(id)
	if ok {
		l.s.setDraining(r, !in)
	}
	return ok
}

// Replicas lists variant i's replicas that are not gone, oldest first.
func (l *Live) Replicas(i int) []LiveReplica {
	var out []LiveReplica
	for _, r := range l.s.variants[i].replicas {
		if r.state == gone {
			continue
		}
		out = append(out, LiveReplica{ID: r.id, Ready: r.state == ready, Terminating: r.state == terminating, DeletionCost: r.deletionCost,
			OutOfRotation: r.draining})
	}
	return out
}

// Stats reads a replica's gauges and counters; false when it is gone.
func (l *Live) Stats(id int) (ReplicaStats, bool) {
	r, ok := l.replica(id)
	if !ok {
		return ReplicaStats{}, false
	}
	c := r.Counters()
	return ReplicaStats{Running: len(r.Running()), Waiting: r.QueueLen(), KVUsage: r.KVUsage(), KVBlocks: r.v.cfg.KVBlocks,
		BlockSize: r.v.cfg.BlockSize, Arrived: c.Arrived, Completed: c.Completed, PromptTokens: c.PromptTokens,
		GenerationTokens: c.GenerationTokens, Preempted: c.Preempted, PrefixQueries: c.PrefixQueries, PrefixHits: c.PrefixHitTokens}, true
}

// GatewayWaiting counts model m's requests held at the gateway (no ready
// replica could take them).
func (l *Live) GatewayWaiting(m int) int {
	n := 0
	for _, q := range l.s.gateway[m] {
		if !q.failed {
			n++
		}
	}
	return n
}

// Totals are the run's request counts so far: arrived, completed, failed.
func (l *Live) Totals() (arrived, completed, failed int64) {
	return l.s.res.Arrived, l.s.res.Completed, l.s.res.Failed
}

func (l *Live) replica(id int) (*replica, bool) {
	r, ok := l.byID[id]
	if !ok || r.state == gone {
		delete(l.byID, id)
		return nil, false
	}
	return r, true
}

// afterEvent reports the first tokens and completions of an iteration that
// just ended (requests complete only at an iteration's end).
func (l *Live) afterEvent(s *Sim, e *event) {
	if e.kind != evIterationEnd || e.replica == nil {
		return
	}
	r := e.replica
	a2 := r.v.tokenOverheadSeconds()
	if l.observe != nil {
		l.observe(Observation{Kind: Iteration, Replica: r.id, Tokens: r.EndedTokens()})
		for _, q := range r.Running() {
			if q.FirstToken == s.now && q.Emitted == 1 {
				l.observe(Observation{Kind: FirstToken, Replica: r.id, TTFTSeconds: q.FirstToken - q.AtServer + a2, InputTokens: q.Input})
			}
		}
		for _, q := range l.done {
			ttft := q.FirstToken - q.AtServer + a2
			if q.FirstToken == s.now {
				l.observe(Observation{Kind: FirstToken, Replica: r.id, TTFTSeconds: ttft, InputTokens: q.Input})
			}
			o := Observation{Kind: Finished, Replica: r.id, TTFTSeconds: ttft, InputTokens: q.Input, OutputTokens: q.Output,
				QueueSeconds: q.Scheduled - q.AtServer, CachedTokens: q.Cached}
			if q.Output > 1 {
				o.ITLSeconds = (s.now-q.FirstToken)/float64(q.Output-1) + a2
			}
			o.E2ESeconds = ttft + o.ITLSeconds*float64(q.Output-1)
			l.observe(o)
		}
	}
	for i := range l.done {
		l.done[i] = nil
	}
	l.done = l.done[:0]
}

// trim drops the per-request figures a simulated run keeps for its summary:
// a live run has none, and would otherwise grow without bound.
func (l *Live) trim() {
	res := l.s.res
	res.ttfts, res.itls, res.e2es = res.ttfts[:0], res.itls[:0], res.e2es[:0]
	for i := range res.classTTFTs {
		res.classTTFTs[i] = res.classTTFTs[i][:0]
	}
	l.s.bucket.ttfts = l.s.bucket.ttfts[:0]
}

// Arrivals counts model m's requests so far (at its gateway).
func (l *Live) Arrivals(m int) int64 { return int64(l.s.streams[m].count) }
