package sim

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// variantRT is a variant at run time.
type variantRT struct {
	cfg      scenario.Variant
	srv      server.Config // its replicas' servers
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
	sc       scenario.Scenario
	instant  bool // the autoscaler's replicas are ready at once (Baseline.Instant)
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
	// gate is gateway.admission's state (nil without); cands the current
	// request's routing candidates; prefixLookups counts the prefix
	// matches computed for them (gate.go).
	gate *gate
	// epp holds the endpoint picker's metrics for an autoscaler that
	// reads them (nil otherwise).
	epp *eppState
	// ctx is the run's (Run), handed to the autoscalers' views.
	ctx           context.Context
	cands         []candidate
	prefixLookups int64
	// check, when set (by tests), runs after every event; done after every
	// completed request.
	check func(*Sim, *event)
	done  func(*Sim, *request)
}

// New prepares a run of the scenario under the autoscaler.
func New(sc scenario.Scenario, a Autoscaler) *Sim {
	sc = sc.WithDefaults()
	s := &Sim{sc: sc, scaler: a, startRNG: rand.New(rand.NewPCG(sc.Seed, 0x57a27)), uidRNG: rand.New(rand.NewPCG(sc.Seed, 0x0d1d))}
	s.res = newResult(a.Name(), &sc)
	s.instant = Instant(a.Name())
	s.gate = newGate(&sc, s.res)
	if _, ok := a.(EPPReader); ok {
		s.epp = newEPPState(&sc)
	}
	for m, mod := range sc.Models {
		var vs []*variantRT
		for _, v := range mod.Variants {
			rt := &variantRT{cfg: v, srv: ServerConfig(&v), model: m, idx: len(s.variants), key: mod.Name + "/" + v.Name}
			s.variants = append(s.variants, rt)
			vs = append(vs, rt)
		}
		s.byModel = append(s.byModel, vs)
		s.streams = append(s.streams, &stream{w: mod.Workload, rng: rand.New(rand.NewPCG(sc.Seed, uint64(1000+m))),
			peak: mod.Workload.Rate.Peak(sc.DurationSeconds)})
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
	s.ctx = ctx
	s.start()
	s.loop(ctx, progress)
	if !s.drained() && !s.res.Interrupted {
		s.advance(s.horizon())
	}
	s.finish()
	if w, ok := s.scaler.(Warner); ok {
		s.res.Warnings = append(s.res.Warnings, w.Warnings()...)
	}
	if b, ok := s.scaler.(Breakdowner); ok {
		s.res.addBreakdown(b.CostBreakdown(s.now))
	}
	return s.res
}

// start puts the initial replicas in place, ready, and schedules the first
// arrival of each model and the first round of every periodic loop.
func (s *Sim) start() {
	for _, v := range s.variants {
		for range v.cfg.InitialReplicas {
			r := s.addReplica(v)
			// They started before the run, as a new one would: the
			// start-up's mean.
			r.state, r.readyAt, r.startup = ready, 0, v.cfg.StartupSeconds+v.cfg.StartupJitterSeconds/2
			s.res.everReady = true
		}
		v.desired = v.cfg.InitialReplicas
	}
	for m := range s.streams {
		s.nextArrival(m, 0)
	}
	s.schedule(&event{t: s.sc.Scrape.IntervalSeconds, kind: evScrape})
	if s.epp != nil {
		s.schedule(&event{t: s.sc.Scrape.EPPIntervalSeconds, kind: evEPPScrape})
	}
	s.schedule(&event{t: 0, kind: evAutoscale})
	if f, ok := s.scaler.(FastLooper); ok && f.FastInterval() > 0 {
		s.schedule(&event{t: f.FastInterval(), kind: evFast})
	}
	s.schedule(&event{t: s.sc.RecordSeconds, kind: evRecord})
}

// loop handles the events in time order until none is left, the next is
// past the horizon, the drain is over or ctx is cancelled (the result is
// then marked interrupted). It reports progress every simulated minute.
func (s *Sim) loop(ctx context.Context, progress func(simTime float64)) {
	next := 0.0
	for n := 1; len(s.events) > 0; n++ {
		// A simulated minute can take seconds of wall time: look at ctx
		// every cancelCheckEvents events (a few ms) as well.
		if n%cancelCheckEvents == 0 && ctx.Err() != nil {
			s.res.Interrupted = true
			return
		}
		e := s.events.pop()
		if e.t > s.horizon() {
			return
		}
		t := e.t // a replica reuses its iteration-end event
		s.handle(e)
		if s.drained() {
			return
		}
		if t >= next {
			next = t + 60
			if ctx.Err() != nil {
				s.res.Interrupted = true
				return
			}
			if progress != nil {
				progress(t)
			}
		}
	}
}

// handle moves the clock to the event and handles it, then runs the tests'
// check, if any, on the event as it was.
func (s *Sim) handle(e *event) {
	if s.check != nil {
		s.handleChecked(e)
		return
	}
	s.advance(e.t)
	s.dispatch(e)
}

// handleChecked is handle with the tests' check. Its copy of the event
// escapes to the heap (the check may keep it), so it lives apart from
// handle, which would otherwise allocate one for every event of every run.
func (s *Sim) handleChecked(e *event) {
	ev := *e // a replica reuses its iteration-end event
	s.advance(e.t)
	s.dispatch(e)
	s.check(s, &ev)
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

// dispatch handles one event by its kind.
func (s *Sim) dispatch(e *event) {
	switch e.kind {
	case evArrival:
		s.arrive(e.model)
	case evGatewayTimeout:
		if !e.req.routed && !e.req.failed {
			s.fail(e.req, causeTimeout)
			s.dropFromGateway(e.req)
		}
	case evIterationEnd, evStep, evQueued, evReplicaReady, evKill:
		s.dispatchReplica(e)
	default:
		s.dispatchLoop(e)
	}
}

// dispatchReplica handles an event of one replica: an iteration's end, an
// idle server's step, a request reaching its queue, start-up done, the
// kill at the end of the grace period.
func (s *Sim) dispatchReplica(e *event) {
	switch e.kind {
	case evIterationEnd:
		if e.replica.state != gone { // a killed pod's iteration never ends
			e.replica.EndIteration()
		}
	case evStep:
		if r := e.replica; r.state != gone {
			r.Step()
		}
	case evQueued:
		if r := e.replica; r.state == gone {
			r.Drop(&e.req.Request) // its pod was killed meanwhile
		} else {
			r.Enqueue(&e.req.Request)
		}
	case evReplicaReady:
		s.ready(e.replica)
	case evKill:
		if r := e.replica; r.state == terminating {
			r.AbortAll()
			s.retire(r)
		}
	}
}

// dispatchLoop runs a round of a periodic loop (scraping, the autoscaler's
// cycle, its fast loop, recording) and schedules the next.
func (s *Sim) dispatchLoop(e *event) {
	switch e.kind {
	case evScrape:
		s.scrape()
		s.schedule(&event{t: s.now + s.sc.Scrape.IntervalSeconds, kind: evScrape})
	case evEPPScrape:
		s.eppScrape()
		s.schedule(&event{t: s.now + s.sc.Scrape.EPPIntervalSeconds, kind: evEPPScrape})
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

// tokenOverheadSeconds is the linear model's per-output-token overhead α2
// (server.Config.TokenOverheadSeconds).
func (v *variantRT) tokenOverheadSeconds() float64 { return v.srv.TokenOverheadSeconds() }

// OnRequestDone has f called with the run's result so far after every
// request that completes (the measured capacity stops a run that can no
// longer reach its attainment).
func (s *Sim) OnRequestDone(f func(res *Result)) {
	s.done = func(s *Sim, _ *request) { f(s.res) }
}
