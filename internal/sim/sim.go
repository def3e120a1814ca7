package sim

import (
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
	uidRNG   *rand.Rand
	gateway  [][]*request // per model: requests waiting for a ready replica
	rr       []int
	nextRep  int
	nextReq  int64
	scaler   Autoscaler
	res      *Result
	inFlight int64
	// arrivalsOpen counts the models whose arrivals are not over;
	// arrivalsEnd is when the last of them ended.
	arrivalsOpen int
	arrivalsEnd  float64
	// Record-interval accumulators.
	bucket bucket
	// check, when set (by tests), runs after every event; done after every
	// completed request.
	check func(*Sim, *event)
	done  func(*Sim, *request)
}

// New prepares a run of the scenario under the autoscaler.
func New(sc Scenario, a Autoscaler) *Sim {
	sc = sc.withDefaults()
	s := &Sim{sc: sc, scaler: a, startRNG: rand.New(rand.NewPCG(sc.Seed, 0x57a27)), uidRNG: rand.New(rand.NewPCG(sc.Seed, 0x0d1d))}
	s.res = newResult(a.Name(), &sc)
	for m, mod := range sc.Models {
		var vs []*variantRT
		for _, v := range mod.Variants {
			rt := &variantRT{cfg: v, model: m, idx: len(s.variants), key: mod.Name + "/" + v.Name}
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
	s.arrivalsOpen = len(sc.Models)
	s.rr = make([]int, len(sc.Models))
	return s
}

// cancelCheckEvents is how many events Run handles between two looks at
// its context: a few milliseconds of wall time, so that Ctrl-C stops a
// run well within a second.
const cancelCheckEvents = 4096

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
	for m := range s.streams {
		s.nextArrival(m, 0)
	}
	s.schedule(&event{t: s.sc.Scrape.IntervalSeconds, kind: evScrape})
	s.schedule(&event{t: 0, kind: evAutoscale})
	if f, ok := s.scaler.(FastLooper); ok && f.FastInterval() > 0 {
		s.schedule(&event{t: f.FastInterval(), kind: evFast})
	}
	s.schedule(&event{t: s.sc.RecordSeconds, kind: evRecord})
	next := 0.0
	var ev event
	for n := 1; len(s.events) > 0; n++ {
		// A simulated minute can take seconds of wall time: look at ctx
		// every cancelCheckEvents events (a few ms) as well.
		if n%cancelCheckEvents == 0 && ctx.Err() != nil {
			s.res.Interrupted = true
			break
		}
		e := s.events.pop()
		if e.t > s.horizon() {
			break
		}
		t := e.t
		if s.check != nil {
			ev = *e // a replica reuses its iteration-end event
		}
		s.advance(t)
		s.dispatch(e)
		if s.check != nil {
			s.check(s, &ev)
		}
		if s.drained() {
			break
		}
		if t >= next {
			next = t + 60
			if ctx.Err() != nil {
				s.res.Interrupted = true
				break
			}
			if progress != nil {
				progress(t)
			}
		}
	}
	if !s.drained() && !s.res.Interrupted {
		s.advance(s.horizon())
	}
	s.finish()
	if w, ok := s.scaler.(Warner); ok {
		s.res.Warnings = append(s.res.Warnings, w.Warnings()...)
	}
	return s.res
}

// nextArrival schedules model m's next arrival after t, unless its
// arrivals are over (durationSeconds reached, or numRequests arrived).
func (s *Sim) nextArrival(m int, t float64) {
	st := s.streams[m]
	if n := s.sc.Models[m].Workload.NumRequests; n == 0 || st.count < n {
		next := st.next(t, s.sc.DurationSeconds)
		if next < s.sc.DurationSeconds {
			s.schedule(&event{t: next, kind: evArrival, model: m})
			return
		}
		if st.w.rows == nil || st.pos < len(st.w.rows) {
			t = s.sc.DurationSeconds // else the trace is over at t
		}
	}
	s.arrivalsOpen--
	s.arrivalsEnd = math.Max(s.arrivalsEnd, t)
}

// horizon is when the run ends at the latest: durationSeconds, or, with a
// drain, drainSeconds after the arrivals are over.
func (s *Sim) horizon() float64 {
	if s.sc.DrainSeconds == 0 {
		return s.sc.DurationSeconds
	}
	if s.arrivalsOpen > 0 {
		return s.sc.DurationSeconds + s.sc.DrainSeconds
	}
	return s.arrivalsEnd + s.sc.DrainSeconds
}

// drained: with a drain, the arrivals are over and no request is left.
func (s *Sim) drained() bool {
	return s.sc.DrainSeconds > 0 && s.arrivalsOpen == 0 && s.now >= s.arrivalsEnd && s.inFlight == 0
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
		if e.replica.state != gone { // a killed pod's iteration never ends
			e.replica.endIteration(s)
		}
	case evStep:
		if r := e.replica; r.state != gone {
			r.stepDue = false
			if !r.busy {
				r.startIteration(s)
			}
		}
	case evQueued:
		r := e.replica
		r.pending--
		if r.state == gone {
			s.fail(e.req, causeTerminated) // its pod was killed meanwhile
			return
		}
		r.enqueue(s, e.req)
	case evReplicaReady:
		s.ready(e.replica)
	case evKill:
		if r := e.replica; r.state == terminating {
			r.abortAll(s)
			s.retire(r)
		}
	case evGatewayTimeout:
		if !e.req.routed && !e.req.failed {
			s.fail(e.req, causeTimeout)
			s.dropFromGateway(e.req)
		}
	case evScrape:
		s.scrape()
		s.schedule(&event{t: s.now + s.sc.Scrape.IntervalSeconds, kind: evScrape})
	case evAutoscale:
		s.autoscale()
		s.schedule(&event{t: s.now + math.Max(s.scaler.Interval(), 1), kind: evAutoscale})
	case evFast:
		f := s.scaler.(FastLooper)
		if s.fast(f) {
			s.autoscale() // an extra cycle: the periodic ones keep their times
		}
		s.schedule(&event{t: s.now + math.Max(f.FastInterval(), 0.1), kind: evFast})
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
	s.streams[m].count++
	s.nextArrival(m, s.now)
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
	if len(w.Classes) > 0 {
		q.priority = w.Classes[q.class].requestPriority()
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
