package sim

import (
	"github.com/llm-d-incubation/wva/internal/admission"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// The gateway's admission control (gateway.admission): for each arriving
// request, the router's candidates — the model's ready replicas, each with
// the request's prefix match computed once (candidates) — are turned into
// the snapshot a gateway has of its instances (queue by priority, running
// batch, KV utilisation, the step time it observed, the request's cached
// tokens), and the policy decides. Rejected requests fail with cause
// "admission" and never reach a server. An admitted request's observed
// TTFT, with its cache-miss tokens and queue position at dispatch, feeds
// the calibrator when calibrate is on; the predictive policy then uses its
// current fit.

// candidate is a ready replica the router may send the current request to,
// with the request's prefix match there.
type candidate struct {
	r *replica
	// blocks is the leading run of the request's shared-prefix blocks
	// resident on the replica; share is blocks over the prefix's blocks
	// (the prefix scorer's value).
	blocks int
	share  float64
}

// candidates lists the ready replicas of q's model into s.cands, with q's
// prefix match on each when the prefix scorer or the admission policy
// needs it: computed once per replica and routing decision, and shared by
// both (s.prefixLookups counts the computations).
func (s *Sim) candidates(q *request) {
	s.cands = s.cands[:0]
	match := q.Prefix >= 0 && (s.sc.Gateway.Weights.Prefix != 0 || s.gate != nil)
	for _, v := range s.byModel[q.model] {
		for _, r := range v.replicas {
			if r.state != ready || r.draining {
				continue
			}
			c := candidate{r: r}
			if match {
				s.prefixLookups++
				c.blocks, c.share = r.PrefixMatch(&q.Request)
			}
			s.cands = append(s.cands, c)
		}
	}
}

// observation is what the gateway knew of an admitted request's replica
// when it dispatched the request: the calibrator's regressors, and the TTFT
// the predictive model estimated there.
type observation struct {
	miss, ahead int
	step        float64
	// estimate with the policy's coefficients at dispatch, with the
	// configured initial ones, and the decision's best case over the fleet.
	estimate, initial, best float64
}

// gate is the gateway's admission state for a run.
type gate struct {
	cfg     *scenario.Admission
	policy  admission.Policy
	pred    *admission.Predictive // the predictive policy, or nil
	cal     *admission.Calibrator // when calibrate is on
	initial admission.Coefficients
	fleet   []admission.Instance
	waits   []admission.Waiting // fcfs replicas' one bucket each
	stats   *admissionTally
}

// newGate builds the scenario's admission policy, or returns nil without
// one. The configuration was validated.
func newGate(sc *scenario.Scenario, res *Result) *gate {
	a := sc.Gateway.Admission
	if a == nil {
		return nil
	}
	p, pred, err := a.Build()
	if err != nil {
		panic("sim: admission: " + err.Error()) // Validate checks what the constructors check
	}
	g := &gate{cfg: a, policy: p, pred: pred, stats: newAdmissionTally(sc, res)}
	if pred != nil {
		g.initial = pred.Coefficients()
	}
	if a.Calibrate {
		cal, err := admission.NewCalibrator(a.CalibratorConfig())
		if err != nil {
			panic("sim: admission: " + err.Error())
		}
		g.cal = cal
	}
	return g
}

// snapshot turns the candidates into the policy's fleet for q. A
// priority-fcfs replica reports its queue by priority; an fcfs one serves
// in arrival order, so every request waiting there is ahead of q: its one
// bucket carries q's priority.
func (g *gate) snapshot(cands []candidate, q *request) []admission.Instance {
	g.fleet, g.waits = g.fleet[:0], g.waits[:0]
	for _, c := range cands {
		r := c.r
		in := admission.Instance{ID: r.id, Running: len(r.Running()), KVUtil: r.KVUsage(), StepTime: r.StepTime(),
			Cached: c.blocks * r.Config().BlockSize}
		if r.PriorityPolicy() {
			in.Waiting = r.Waiting()
		} else {
			g.waits = append(g.waits, admission.Waiting{Priority: q.Priority, Count: r.QueueLen()})
		}
		g.fleet = append(g.fleet, in)
	}
	k := 0
	for i := range g.fleet {
		if !cands[i].r.PriorityPolicy() {
			g.fleet[i].Waiting = g.waits[k : k+1 : k+1]
			k++
		}
	}
	return g.fleet
}

// request is q as the policy sees it.
func (s *Sim) admissionRequest(q *request) admission.Request {
	req := admission.Request{Class: admission.Standard, Priority: q.Priority, InputTokens: q.Input}
	if cs := s.sc.Models[q.model].Workload.Classes; len(cs) > 0 {
		req.Class = cs[q.class].AdmissionClass()
	}
	if q.Prefix >= 0 {
		req.Group = uint64(q.model)<<32 | uint64(q.Prefix+1) //nolint:gosec // model and prefix indices are ≥ 0 and small
	}
	return req
}

// decide asks the policy about q (once per request) and tallies the
// decision; it reports whether q is admitted.
func (s *Sim) decide(q *request) bool {
	g := s.gate
	req := s.admissionRequest(q)
	d := g.policy.Decide(s.now, req, g.fleet)
	q.decided, q.admitted = true, d.Admit
	if d.Admit && g.pred != nil {
		q.obs.best = d.Estimate
		if d.Reason == admission.ReasonFloor || d.Instance < 0 {
			q.obs.best = -1 // no estimate of the decision's own
		}
	}
	g.stats.decision(s, q, req, d, g.fleet)
	return d.Admit
}

// dispatched records what the gateway knew of the replica it sends an
// admitted request to (cand indexes s.cands and g.fleet).
func (s *Sim) dispatched(q *request, cand int) {
	g := s.gate
	in := &g.fleet[cand]
	o := &q.obs
	o.miss = max(q.Input-in.Cached, 0)
	o.ahead = in.Ahead(q.Priority)
	o.step = in.StepTime
	if !(o.step > 0) {
		o.step = g.cfg.StepTimeSeconds() // as the predictive policy assumes
	}
	if g.pred == nil {
		return
	}
	o.estimate = g.pred.Estimate(s.admissionRequest(q), in)
	o.initial = g.initial.TTFT(o.miss, o.ahead, o.step)
}

// firstToken learns from an admitted request's first token, ttft seconds
// after the gateway dispatched it: the time the estimate was made for, as
// the endpoint picker's plugin measures it (a request held at the gateway
// waited before it, outside the model).
func (g *gate) firstToken(q *request, ttft float64) {
	if !q.admitted {
		return
	}
	if g.pred != nil {
		g.stats.observed(q, ttft)
	}
	if g.cal == nil {
		return
	}
	g.cal.Observe(admission.Observation{TTFT: ttft, Miss: q.obs.miss, Ahead: q.obs.ahead, StepTime: q.obs.step})
	if g.pred != nil {
		_ = g.pred.SetCoefficients(g.cal.Coefficients()) // a fit within its bounds; otherwise the model in use stays
	}
}
