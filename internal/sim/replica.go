package sim

import (
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// request is a request of the simulation: the server's view of it
// (server.Request, whose Owner is the request) and the gateway's and the
// evaluation's.
type request struct {
	server.Request
	model int
	class int // index into the model's classes (0 without classes)

	arrive float64 // at the gateway
	routed bool
	held   bool // has waited at the gateway
	failed bool
	// eppTokens are the uncached prompt tokens the endpoint picker counts
	// in flight for it, until its first token (epp.go).
	eppTokens float64

	// gateway.admission: decided on the first routing; obs is the routed
	// replica as the gateway saw it at dispatch (gate.go).
	decided, admitted bool
	obs               observation
}

// newRequest returns request id of model m, arrived at the gateway at
// arrive.
func newRequest(id int64, m int, arrive float64) *request {
	q := &request{model: m, arrive: arrive}
	q.ID, q.Owner = id, q
	return q
}

// owner is the request whose server view q is.
func owner(q *server.Request) *request { return q.Owner.(*request) }

type replicaState int

const (
	starting replicaState = iota
	ready
	terminating // deleted: SIGTERM received, no new requests
	gone
)

// replica is a pod: one continuous-batching server (server.Server, which
// the replica hosts on the simulation's clock and event queue) and its
// life in Kubernetes.
type replica struct {
	server.Server
	sim     *Sim
	id      int
	uid     uint64 // the pod's UID: Kubernetes' last tie-breaker
	v       *variantRT
	state   replicaState
	created float64
	readyAt float64
	// startup is how long the pod took from its creation to Ready; for
	// the initial replicas, which were running before the run began, the
	// mean of the variant's start-up time.
	startup float64
	// deletionCost is the controller.kubernetes.io/pod-deletion-cost
	// annotation.
	deletionCost int32
	// draining: the autoscaler took the pod out of the gateway's
	// rotation at drainSince (drain before scale-down); it serves what it
	// holds and gets no new request.
	draining   bool
	drainSince float64

	iterEnd event // the one step or iteration-end event a replica has at a time

	// samples are the scrapes of this pod (oldest first).
	samples []sample
}

func newReplica(s *Sim, id int, v *variantRT, uid uint64) *replica {
	r := &replica{sim: s, id: id, uid: uid, v: v, state: starting, created: s.now}
	r.Server = *server.New(v.srv, r)
	return r
}

// ServerConfig is what a variant's server needs of it.
func ServerConfig(v *scenario.Variant) server.Config {
	return server.Config{KVBlocks: v.KVBlocks, BlockSize: v.BlockSize, MaxBatchSize: v.MaxBatchSize,
		MaxBatchedTokens: v.MaxBatchedTokens, Policy: v.SchedulingPolicy, LatencyModel: v.LatencyModel,
		Iteration: server.IterationModel{Alpha: v.Params.Alpha, Beta: v.Params.Beta, Gamma: v.Params.Gamma},
		Linear:    server.LinearModel(v.Linear)}
}

// saturated is the endpoint picker's saturation test.
func (r *replica) saturated(g *scenario.Saturation) bool {
	return r.QueueLen() >= g.QueueThreshold || r.KVUsage() >= g.KVThreshold
}

// The replica is its server's host (server.Host).

// Now is the simulation's clock.
func (r *replica) Now() float64 { return r.sim.now }

// ScheduleQueued: q reaches the server's queue at t (evQueued).
func (r *replica) ScheduleQueued(q *server.Request, t float64) {
	r.sim.schedule(&event{t: t, kind: evQueued, replica: r, req: owner(q)})
}

// ScheduleStep: the idle server starts an iteration once the arrivals of
// the instant are in (evStep).
func (r *replica) ScheduleStep() {
	r.iterEnd = event{t: r.sim.now, kind: evStep, replica: r}
	r.sim.schedule(&r.iterEnd)
}

// ScheduleIterationEnd: the iteration ends at t (evIterationEnd).
func (r *replica) ScheduleIterationEnd(t float64) {
	r.iterEnd = event{t: t, kind: evIterationEnd, replica: r}
	r.sim.schedule(&r.iterEnd)
}

// Fail counts a request the server gave up on.
func (r *replica) Fail(q *server.Request, cause string) { r.sim.fail(owner(q), cause) }

// FirstToken releases the request's tokens from the endpoint picker's
// count and lets gateway.admission learn from its TTFT.
func (r *replica) FirstToken(q *server.Request, ttft float64) {
	s := r.sim
	s.eppReleased(owner(q))
	if s.gate != nil {
		s.gate.firstToken(owner(q), ttft)
	}
}

// InterTokenLatency records n inter-token latencies of d seconds.
func (r *replica) InterTokenLatency(d float64, n int) { r.sim.res.itlTokens.add(d, n) }

// Complete records a finished request.
func (r *replica) Complete(q *server.Request, a2 float64) { r.sim.complete(owner(q), a2) }

// ObservesStepTime: only gateway.admission reads the step time.
func (r *replica) ObservesStepTime() bool { return r.sim.gate != nil }

// Terminating: the pod was deleted.
func (r *replica) Terminating() bool { return r.state == terminating }

// Retire removes the pod, empty after its grace period's last iteration.
func (r *replica) Retire() { r.sim.retire(r) }

// AfterIteration lets the gateway dispatch the requests it holds.
func (r *replica) AfterIteration() { r.sim.gatewayReleased(r) }
