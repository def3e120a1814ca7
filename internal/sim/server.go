package sim

import "math"

type request struct {
	id            int64
	model         int
	input, output int
	arrive        float64 // at the gateway
	atServer      float64 // dispatched to a replica
	firstToken    float64
	done          float64
	admitIter     int64 // iteration of its prefill
	rep           *replica
	routed        bool
	failed        bool
	seq           int64 // admission order within the replica (for preemption)
	class         int   // index into the model's classes (0 without classes)
	prefix        int   // shared-prefix group, -1 for none
	prefixTokens  int
}

type replicaState int

const (
	starting replicaState = iota
	ready
	draining
	gone
)

// counters are a pod's cumulative vLLM-like counters.
type counters struct {
	arrived, completed             float64
	ttftSum, ttftCount             float64 // seconds
	itlSum, itlCount               float64 // seconds
	promptTokens, generationTokens float64
	preempted                      float64
	prefixHits                     float64
}

// replica is one continuous-batching server (seed 001 §9): every
// iteration admits waiting requests up to the batch size, the token budget
// and the KV cache, runs one prefill or decode step for every request in the
// batch, and takes α + Σ per-request work.
type replica struct {
	id      int
	v       *variantRT
	state   replicaState
	created float64
	readyAt float64

	waiting []*request // FIFO, head at waitHead
	head    int
	running []*request // in admission order; nil holes compacted lazily
	nRun    int

	iter    int64 // iterations started
	busy    bool
	iterEnd float64
	kvCap   int
	// Aggregates over decoding requests make an iteration O(admitted +
	// finished) instead of O(batch): a request admitted at iteration a
	// decodes its k-th token at iteration a + k and holds i + k tokens.
	decN      int64
	decSumIn  int64
	decSumAdm int64
	// newly prefilled in the current iteration
	prefilling []*request
	finishAt   map[int64][]*request
	kvUsed     int64
	seq        int64

	c counters
	// samples are the scrapes of this pod (oldest first).
	samples []sample
	// prefixes in the cache: group → last use (iteration), at most
	// prefixSlots of them (LRU).
	prefixes    map[int]int64
	prefixSlots int
}

func newReplica(id int, v *variantRT, now float64) *replica {
	return &replica{id: id, v: v, state: starting, created: now, kvCap: v.cfg.KVBlocks * v.cfg.BlockSize,
		finishAt: map[int64][]*request{}, prefixes: map[int]int64{}, prefixSlots: v.prefixSlots}
}

// prefillTokens is the prompt a request's prefill computes: all of it, or
// the part after a prefix this replica has cached (prefix caching). The
// prefix then counts as used.
func (r *replica) prefillTokens(q *request) int {
	if q.prefix < 0 || r.prefixSlots == 0 {
		return q.input
	}
	_, hit := r.prefixes[q.prefix]
	r.prefixes[q.prefix] = r.iter
	if len(r.prefixes) > r.prefixSlots {
		oldest, at := -1, int64(math.MaxInt64)
		for p, t := range r.prefixes {
			if t < at || (t == at && p < oldest) {
				oldest, at = p, t
			}
		}
		delete(r.prefixes, oldest)
	}
	if hit {
		r.c.prefixHits++
		return max(q.input-q.prefixTokens, 1)
	}
	return q.input
}

func (r *replica) hasPrefix(p int) bool {
	_, ok := r.prefixes[p]
	return p >= 0 && ok
}

func (r *replica) queueLen() int { return len(r.waiting) - r.head }

// load is the replica's share of its batch in use or waiting.
func (r *replica) load() float64 {
	return float64(r.queueLen()+r.nRun) / float64(r.v.cfg.MaxBatchSize)
}

func (r *replica) kvUsage() float64 {
	if r.kvCap == 0 {
		return 0
	}
	return math.Min(float64(r.kvUsed)/float64(r.kvCap), 1)
}

// enqueue accepts a request at the server.
func (r *replica) enqueue(s *Sim, q *request, now float64) {
	q.rep = r
	q.atServer = now + r.v.overheadSeconds(q.input)
	r.c.arrived++
	r.waiting = append(r.waiting, q)
	if !r.busy {
		r.startIteration(s, math.Max(now, q.atServer))
	}
}

// startIteration admits what fits and schedules the iteration's end.
func (r *replica) startIteration(s *Sim, now float64) {
	cfg := &r.v.cfg
	j := r.iter
	r.prefilling = r.prefilling[:0]
	budget := cfg.MaxBatchedTokens
	used := int(r.decN)
	prefillTokens := 0
	for r.queueLen() > 0 && r.nRun < cfg.MaxBatchSize {
		q := r.waiting[r.head]
		if q.atServer > now {
			break // still in the server's front-end overhead
		}
		if int(r.kvUsed)+q.input > r.kvCap && r.nRun > 0 {
			break // no room in the KV cache (a lone request is always admitted)
		}
		if budget > 0 && used+q.input > budget && (r.nRun > 0 || len(r.prefilling) > 0) {
			break
		}
		r.head++
		q.admitIter = j
		r.seq++
		q.seq = r.seq
		r.running = append(r.running, q)
		r.nRun++
		r.prefilling = append(r.prefilling, q)
		r.kvUsed += int64(q.input)
		compute := r.prefillTokens(q)
		used += compute
		prefillTokens += compute
	}
	if r.head > 1024 && r.head*2 > len(r.waiting) {
		r.waiting = append(r.waiting[:0], r.waiting[r.head:]...)
		r.head = 0
	}
	if r.nRun == 0 {
		r.busy = false
		if r.queueLen() > 0 { // the head is still in the front-end overhead
			r.busy = true
			s.schedule(&event{t: r.waiting[r.head].atServer, kind: evWake, replica: r})
		}
		return
	}
	dur := r.v.iterationSeconds(len(r.prefilling), prefillTokens, r.decN, r.decSumIn, r.decSumAdm, j)
	r.busy = true
	r.iterEnd = now + dur
	r.iter++
	s.schedule(&event{t: r.iterEnd, kind: evIterationEnd, replica: r})
}

// endIteration advances every request in the batch by one step.
func (r *replica) endIteration(s *Sim, now float64) {
	j := r.iter - 1
	// Decoding requests each produced a token and hold one more.
	r.kvUsed += r.decN
	// Requests that prefilled: first token now; they decode from j+1.
	for _, q := range r.prefilling {
		q.firstToken = now
		r.c.ttftSum += now - q.atServer
		r.c.ttftCount++
		r.c.promptTokens += float64(q.input)
		r.decN++
		r.decSumIn += int64(q.input)
		r.decSumAdm += q.admitIter
		end := q.admitIter + int64(q.output)
		r.finishAt[end] = append(r.finishAt[end], q)
	}
	r.prefilling = r.prefilling[:0]
	if done, ok := r.finishAt[j]; ok {
		delete(r.finishAt, j)
		for _, q := range done {
			if q.rep != r || q.admitIter+int64(q.output) != j {
				continue // preempted and re-admitted since
			}
			r.finish(s, q, now)
		}
	}
	for r.kvUsed > int64(r.kvCap) && r.nRun > 1 {
		r.preemptNewest()
	}
	r.compact()
	if r.state == draining && r.nRun == 0 && r.queueLen() == 0 {
		s.retire(r, now)
		return
	}
	r.startIteration(s, now)
}

func (r *replica) finish(s *Sim, q *request, now float64) {
	q.done = now
	itl := (now - q.firstToken) / float64(q.output)
	r.c.completed++
	r.c.itlSum += itl * float64(q.output)
	r.c.itlCount += float64(q.output)
	r.c.generationTokens += float64(q.output)
	r.release(q)
	s.complete(q, itl)
}

// release takes a running request out of the batch and the KV cache. It
// is called at the end of an iteration, when every running request has
// prefilled: admitted at iteration a, it holds i + (j − a) tokens after
// iteration j.
func (r *replica) release(q *request) {
	j := r.iter - 1
	r.kvUsed -= int64(q.input) + (j - q.admitIter)
	r.decN--
	r.decSumIn -= int64(q.input)
	r.decSumAdm -= q.admitIter
	for i, x := range r.running {
		if x == q {
			r.running[i] = nil
			break
		}
	}
	r.nRun--
}

// preemptNewest recomputes the most recently admitted request: it loses
// its KV cache and goes back to the head of the queue (vLLM's recompute
// preemption).
func (r *replica) preemptNewest() {
	var newest *request
	for i := len(r.running) - 1; i >= 0; i-- {
		if r.running[i] != nil {
			newest = r.running[i]
			break
		}
	}
	if newest == nil {
		return
	}
	r.release(newest)
	newest.firstToken = 0
	newest.admitIter = -1
	r.c.preempted++
	if r.head > 0 {
		r.head--
		r.waiting[r.head] = newest
	} else {
		r.waiting = append([]*request{newest}, r.waiting...)
	}
}

func (r *replica) compact() {
	if len(r.running) < 2*r.nRun+16 {
		return
	}
	out := r.running[:0]
	for _, q := range r.running {
		if q != nil {
			out = append(out, q)
		}
	}
	for i := len(out); i < len(r.running); i++ {
		r.running[i] = nil
	}
	r.running = out
}
