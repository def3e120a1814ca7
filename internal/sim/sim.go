package sim

import (
	"container/heap"
	"context"
	"math"
	"math/rand/v2"
)

// variantRT is a variant at run time.
type variantRT struct {
	cfg      Variant
	model    int
	idx      int // index in Sim.variants
	key      string
	replicas []*replica // not gone
	desired  int
	// replica-seconds per state, for cost
	costSeconds float64
	gpuSeconds  float64
	// prefixSlots is how many shared prefixes a replica caches: a fifth of
	// its KV cache.
	prefixSlots int
}

// iterationSeconds is the duration of one iteration with the given
// prefills and decodes (seed 001 §9 for the iteration model; the BLIS step
// model for "linear").
func (v *variantRT) iterationSeconds(nPrefill, prefillTokens int, decN, decSumIn, decSumAdm, j int64) float64 {
	if v.cfg.LatencyModel == "linear" {
		l := v.cfg.Linear
		return (l.Beta0 + l.Beta1*float64(prefillTokens) + l.Beta2*float64(decN)) / 1000
	}
	p := v.cfg.Params
	decodeCtx := float64(decSumIn + decN*j - decSumAdm) // Σ (i + k) over decoding requests
	ms := p.Alpha + (p.Beta+p.Gamma)*float64(prefillTokens) + p.Beta*float64(decN) + p.Gamma*decodeCtx
	_ = nPrefill
	return ms / 1000
}

// overheadSeconds is the BLIS queueing overhead α0 + α1·i (0 for the
// iteration model).
func (v *variantRT) overheadSeconds(input int) float64 {
	if v.cfg.LatencyModel != "linear" {
		return 0
	}
	return (v.cfg.Linear.Alpha0 + v.cfg.Linear.Alpha1*float64(input)) / 1000
}

// Sim is one run of a scenario under one autoscaler.
type Sim struct {
	sc       Scenario
	now      float64
	events   eventQueue
	seq      uint64
	variants []*variantRT
	byModel  [][]*variantRT
	streams  []*stream
	tokenRNG []*rand.Rand
	classRNG []*rand.Rand
	startRNG *rand.Rand
	gateway  [][]*request // per model: requests waiting for a ready replica
	rr       []int
	nextRep  int
	nextReq  int64
	scaler   Autoscaler
	res      *Result
	inFlight int64
	// Record-interval accumulators.
	bucket bucket
	// check, when set (by tests), runs after every event.
	check func(*Sim, *event)
}

// Autoscaler decides replica counts from what a real one could observe.
type Autoscaler interface {
	Name() string
	// Interval is how often Decide runs, in seconds.
	Interval() float64
	// Decide returns the desired replicas per variant (indexed as
	// View.Variants); a negative entry means "no change".
	Decide(v *View) []int
}

// New prepares a run of the scenario under the autoscaler.
func New(sc Scenario, a Autoscaler) *Sim {
	sc = sc.withDefaults()
	s := &Sim{sc: sc, scaler: a, startRNG: rand.New(rand.NewPCG(sc.Seed, 0x57a27))}
	s.res = newResult(a.Name(), &sc)
	for m, mod := range sc.Models {
		var vs []*variantRT
		for _, v := range mod.Variants {
			rt := &variantRT{cfg: v, model: m, idx: len(s.variants), key: mod.Name + "/" + v.Name}
			if pt := mod.Workload.PrefixTokens; pt > 0 {
				rt.prefixSlots = max(1, v.KVBlocks*v.BlockSize/5/pt)
			}
			s.variants = append(s.variants, rt)
			vs = append(vs, rt)
		}
		s.byModel = append(s.byModel, vs)
		s.streams = append(s.streams, &stream{w: mod.Workload, rng: rand.New(rand.NewPCG(sc.Seed, uint64(1000+m))),
			peak: mod.Workload.Rate.maxRate(sc.DurationSeconds)})
		s.tokenRNG = append(s.tokenRNG, rand.New(rand.NewPCG(sc.Seed, uint64(2000+m))))
		s.classRNG = append(s.classRNG, rand.New(rand.NewPCG(sc.Seed, uint64(3000+m))))
	}
	s.gateway = make([][]*request, len(sc.Models))
	s.rr = make([]int, len(sc.Models))
	return s
}

// Run simulates until the scenario's end (or ctx is cancelled: the result
// then covers the time simulated so far) and returns the result.
func (s *Sim) Run(ctx context.Context, progress func(simTime float64)) *Result {
	for _, v := range s.variants {
		for range v.cfg.InitialReplicas {
			r := s.addReplica(v)
			r.state, r.readyAt = ready, 0
		}
		v.desired = v.cfg.InitialReplicas
	}
	for m, st := range s.streams {
		if t := st.next(0, s.sc.DurationSeconds); t < s.sc.DurationSeconds {
			s.schedule(&event{t: t, kind: evArrival, model: m})
		}
	}
	s.schedule(&event{t: s.sc.Scrape.IntervalSeconds, kind: evScrape})
	s.schedule(&event{t: 0, kind: evAutoscale})
	s.schedule(&event{t: s.sc.RecordSeconds, kind: evRecord})
	end := s.sc.DurationSeconds
	next := 0.0
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(*event)
		if e.t > end {
			break
		}
		s.advance(e.t)
		s.dispatch(e)
		if s.check != nil {
			s.check(s, e)
		}
		if e.t >= next {
			next = e.t + 60
			if ctx.Err() != nil {
				s.res.Interrupted = true
				break
			}
			if progress != nil {
				progress(e.t)
			}
		}
	}
	s.advance(math.Min(end, math.Max(s.now, 0)))
	s.finish()
	return s.res
}

// advance moves the clock, charging the replicas' cost for the interval.
func (s *Sim) advance(t float64) {
	dt := t - s.now
	if dt > 0 {
		for _, v := range s.variants {
			n := float64(len(v.replicas))
			v.costSeconds += n * dt
			v.gpuSeconds += n * dt * float64(v.cfg.AcceleratorsPerReplica)
		}
	}
	s.now = math.Max(s.now, t)
}

func (s *Sim) dispatch(e *event) {
	switch e.kind {
	case evArrival:
		s.arrive(e.model)
	case evIterationEnd:
		e.replica.endIteration(s, s.now)
	case evWake:
		e.replica.busy = false
		e.replica.startIteration(s, s.now)
	case evReplicaReady:
		s.ready(e.replica)
	case evGatewayTimeout:
		if !e.req.routed && !e.req.failed {
			s.fail(e.req)
			s.dropFromGateway(e.req)
		}
	case evScrape:
		s.scrape()
		s.schedule(&event{t: s.now + s.sc.Scrape.IntervalSeconds, kind: evScrape})
	case evAutoscale:
		s.autoscale()
		s.schedule(&event{t: s.now + math.Max(s.scaler.Interval(), 1), kind: evAutoscale})
	case evRecord:
		s.record()
		s.schedule(&event{t: s.now + s.sc.RecordSeconds, kind: evRecord})
	}
}

// arrive creates the next request of model m and schedules the one after.
func (s *Sim) arrive(m int) {
	s.nextReq++
	q := &request{id: s.nextReq, model: m, arrive: s.now}
	s.fill(q)
	s.res.Arrived++
	s.res.class(q.model, q.class).Arrived++
	s.inFlight++
	s.bucket.arrivals++
	if t := s.streams[m].next(s.now, s.sc.DurationSeconds); t < s.sc.DurationSeconds {
		s.schedule(&event{t: t, kind: evArrival, model: m})
	}
	s.route(q)
}

// fill gives a new request of its model its token counts, class and
// prefix: from the trace row of this arrival, or drawn from the workload.
func (s *Sim) fill(q *request) {
	m := q.model
	w := &s.sc.Models[m].Workload
	q.prefix = -1
	if w.rows != nil {
		row := w.rows[s.streams[m].pos-1]
		q.input, q.output, q.prefix = row.input, row.output, row.prefix
		q.class = classIndex(w.Classes, row.class)
	} else {
		rng := s.tokenRNG[m]
		q.input, q.output = w.Input.draw(rng), w.Output.draw(rng)
		q.class = drawClass(w.Classes, s.classRNG[m])
		if w.PrefixGroups > 0 {
			q.prefix = s.classRNG[m].IntN(w.PrefixGroups)
		}
	}
	if q.prefix >= 0 {
		q.prefixTokens = min(w.PrefixTokens, q.input-1)
	}
}

// drawClass picks a class by share.
func drawClass(cs []Class, rng *rand.Rand) int {
	if len(cs) < 2 {
		return 0
	}
	u := rng.Float64()
	for i, c := range cs {
		if u < c.Share {
			return i
		}
		u -= c.Share
	}
	return len(cs) - 1
}

func classIndex(cs []Class, name string) int {
	for i, c := range cs {
		if c.Name == name {
			return i
		}
	}
	return 0
}

// sloOf is the SLO a request is judged by: its class's, else its model's.
func (s *Sim) sloOf(q *request) *SLO {
	if cs := s.sc.Models[q.model].Workload.Classes; len(cs) > 0 {
		return &cs[q.class].SLO
	}
	return &s.sc.Models[q.model].SLO
}

// route sends a request to a ready replica of its model, or holds it at
// the gateway until one is ready (or it times out).
func (s *Sim) route(q *request) {
	r := s.pick(q)
	if r == nil {
		s.gateway[q.model] = append(s.gateway[q.model], q)
		s.schedule(&event{t: q.arrive + s.sc.Gateway.TimeoutSeconds, kind: evGatewayTimeout, req: q})
		return
	}
	if th := s.sc.Gateway.QueueThreshold; th > 0 && r.queueLen() >= th && s.sheddable(q) {
		s.fail(q) // shed
		return
	}
	q.routed = true
	r.enqueue(s, q, s.now)
}

// pick chooses a ready replica: the lowest load score (ties to the
// oldest), or round-robin. The score weighs the scorers of llm-d's
// endpoint picker: KV-cache utilisation, queue depth (relative to 5
// waiting), batch occupancy, and prefix affinity.
func (s *Sim) pick(q *request) *replica {
	m := q.model
	w := s.sc.Gateway.Weights
	var best *replica
	bestScore := 0.0
	n := 0
	for _, v := range s.byModel[m] {
		for _, r := range v.replicas {
			if r.state != ready {
				continue
			}
			n++
			sc := w.KV*r.kvUsage() + w.Queue*float64(r.queueLen())/5 + w.Batch*float64(r.nRun)/float64(r.v.cfg.MaxBatchSize)
			if r.hasPrefix(q.prefix) {
				sc -= w.Prefix
			}
			if best == nil || sc < bestScore {
				best, bestScore = r, sc
			}
		}
	}
	if n == 0 || s.sc.Gateway.Router != "round-robin" {
		return best
	}
	k := s.rr[m] % n
	s.rr[m]++
	for _, v := range s.byModel[m] {
		for _, r := range v.replicas {
			if r.state == ready {
				if k == 0 {
					return r
				}
				k--
			}
		}
	}
	return best
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

func (s *Sim) fail(q *request) {
	q.failed = true
	s.res.Failed++
	s.res.class(q.model, q.class).Failed++
	s.inFlight--
	s.bucket.failed++
}

// complete records a finished request.
func (s *Sim) complete(q *request, itlSeconds float64) {
	s.inFlight--
	s.res.record(q, itlSeconds, s.sloOf(q))
	s.bucket.ttfts = append(s.bucket.ttfts, q.firstToken-q.arrive)
}

// addReplica creates a starting replica of v.
func (s *Sim) addReplica(v *variantRT) *replica {
	s.nextRep++
	r := newReplica(s.nextRep, v, s.now)
	v.replicas = append(v.replicas, r)
	return r
}

func (s *Sim) ready(r *replica) {
	if r.state != starting {
		return
	}
	r.state, r.readyAt = ready, s.now
	m := r.v.model
	waiting := s.gateway[m]
	s.gateway[m] = nil
	for _, q := range waiting {
		if !q.failed {
			s.route(q)
		}
	}
}

// retire removes a drained replica.
func (s *Sim) retire(r *replica, _ float64) {
	r.state = gone
	s.res.Preemptions += r.c.preempted // the live replicas add theirs at the end
	s.res.PrefixHits += r.c.prefixHits
	v := r.v
	for i, x := range v.replicas {
		if x == r {
			v.replicas = append(v.replicas[:i], v.replicas[i+1:]...)
			break
		}
	}
}

// free returns the accelerators of a type not held by any replica.
func (s *Sim) free(acc string) int {
	inv, ok := s.sc.Inventory[acc]
	if !ok {
		return math.MaxInt32
	}
	for _, v := range s.variants {
		if v.cfg.Accelerator == acc {
			inv -= len(v.replicas) * v.cfg.AcceleratorsPerReplica
		}
	}
	return inv
}

// scale moves variant v towards n replicas (not counting draining ones):
// new replicas start (if accelerators are free), surplus ones are
// cancelled while starting, else drained, the least loaded first.
func (s *Sim) scale(v *variantRT, n int, instant bool) bool {
	n = max(min(n, v.cfg.MaxReplicas), v.cfg.MinReplicas)
	active := 0
	for _, r := range v.replicas {
		if r.state == starting || r.state == ready {
			active++
		}
	}
	changed := n != active
	for ; active < n; active++ {
		if s.free(v.cfg.Accelerator) < v.cfg.AcceleratorsPerReplica {
			s.res.Unschedulable++
			break
		}
		r := s.addReplica(v)
		delay := v.cfg.StartupSeconds + v.cfg.StartupJitterSeconds*s.startRNG.Float64()
		if instant {
			delay = 0
		}
		s.schedule(&event{t: s.now + delay, kind: evReplicaReady, replica: r})
	}
	for active > n {
		victim := s.victim(v)
		if victim == nil {
			break
		}
		active--
		if victim.state == starting {
			s.retire(victim, s.now)
			continue
		}
		victim.state = draining
		if victim.nRun == 0 && victim.queueLen() == 0 {
			s.retire(victim, s.now)
		}
	}
	v.desired = n
	return changed
}

// victim picks the replica to remove: a starting one (newest first), else
// the ready one with the least load (fragmentation-aware scale-down).
func (s *Sim) victim(v *variantRT) *replica {
	var best *replica
	for i := len(v.replicas) - 1; i >= 0; i-- {
		if r := v.replicas[i]; r.state == starting {
			return r
		}
	}
	for _, r := range v.replicas {
		if r.state == ready && (best == nil || r.load() < best.load()) {
			best = r
		}
	}
	return best
}

func (s *Sim) autoscale() {
	view := s.view()
	want := s.scaler.Decide(view)
	_, instant := s.scaler.(*Oracle)
	for i, n := range want {
		if n < 0 {
			continue
		}
		if s.scale(s.variants[i], n, instant) {
			s.res.ScalingActions++
		}
	}
	if instant {
		// The oracle's replicas are ready at once.
		for _, v := range s.variants {
			for _, r := range v.replicas {
				if r.state == starting {
					s.ready(r)
				}
			}
		}
	}
}
