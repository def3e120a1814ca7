package predictive

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// engine is what both plugin types share: the policy, its calibrator, and
// what the plugin learns about the endpoints from the requests it follows
// (tracker.go). The endpoint picker calls plugins concurrently, and the
// policy and the calibrator are not safe for concurrent use, so one mutex
// guards everything; a decision holds it for a few microseconds.
type engine struct {
	params   Parameters
	stepTime float64 // the policy's step time for an endpoint without one
	now      func() time.Time
	start    time.Time // the policy's clock is seconds since start

	mu        sync.Mutex
	pred      *admission.Predictive
	policy    admission.Policy      // pred, or the fairness floor around it
	cal       *admission.Calibrator // nil without calibration
	endpoints map[types.NamespacedName]*endpointState
	flights   map[string]*flight // by request ID
	// Scratch space for one decision, reused under mu.
	fleet  []admission.Instance
	waits  []admission.Waiting
	bounds []int
}

func newEngine(p Parameters, now func() time.Time) (*engine, error) {
	pred, err := admission.NewPredictive(p.Predictive)
	if err != nil {
		return nil, err
	}
	e := &engine{params: p,
		stepTime: or(p.Predictive.StepTime, admission.DefaultStepTime),
		now:      now, start: now(), pred: pred, policy: pred,
		endpoints: map[types.NamespacedName]*endpointState{}, flights: map[string]*flight{}}
	e.params.CriticalPriority = or(p.CriticalPriority, DefaultCriticalPriority)
	e.params.CharsPerToken = or(p.CharsPerToken, DefaultCharsPerToken)
	e.params.StepWeight = or(p.StepWeight, DefaultStepWeight)
	if e.params.GroupHeader == "" {
		e.params.GroupHeader = DefaultGroupHeader
	}
	if p.Fairness != nil {
		if e.policy, err = admission.NewFloor(pred, *p.Fairness); err != nil {
			return nil, err
		}
	}
	if p.Calibrate {
		if e.cal, err = admission.NewCalibrator(p.calibratorConfig()); err != nil {
			return nil, err
		}
		if err := e.pred.SetCoefficients(e.cal.Coefficients()); err != nil {
			return nil, fmt.Errorf("predictive: calibrator: %w", err)
		}
	}
	return e, nil
}

// request maps the endpoint picker's request to the policy's.
func (e *engine) request(req *fwksched.LLMRequest) admission.Request {
	prio := req.Objectives.Priority
	r := admission.Request{Class: classOf(prio, e.params.CriticalPriority), Priority: prio,
		InputTokens: promptTokens(req, e.params.CharsPerToken)}
	if e.params.Fairness != nil {
		r.Group = groupOf(req.Headers[e.params.GroupHeader])
	}
	return r
}

// decide runs the policy on req over the candidate endpoints. When the
// request is admitted and keep is not nil, keep is called with the index of
// every endpoint whose estimate is within the request's budget.
func (e *engine) decide(req *fwksched.LLMRequest, eps []fwksched.Endpoint, keep func(int)) admission.Decision {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.request(req)
	fleet := e.buildFleet(eps)
	d := e.policy.Decide(e.seconds(now), r, fleet)
	if keep != nil && d.Admit {
		for i := range fleet {
			if e.pred.Fits(r, &fleet[i]) {
				keep(i)
			}
		}
	}
	return d
}

// buildFleet maps the endpoints to the policy's fleet, in e's scratch space.
func (e *engine) buildFleet(eps []fwksched.Endpoint) []admission.Instance {
	e.fleet, e.waits, e.bounds = e.fleet[:0], e.waits[:0], append(e.bounds[:0], 0)
	for i, ep := range eps {
		q, step := queue{scraped: scrapedWaiting(ep)}, 0.0
		if st := e.endpoints[nameOf(ep)]; st != nil {
			q.known, step = st.waiting, st.step
		}
		e.waits = q.appendWaiting(e.waits, e.params.PriorityScheduling)
		e.bounds = append(e.bounds, len(e.waits))
		e.fleet = append(e.fleet, instance(i, ep, step))
	}
	for i := range e.fleet {
		lo, hi := e.bounds[i], e.bounds[i+1]
		e.fleet[i].Waiting = e.waits[lo:hi:hi]
	}
	return e.fleet
}

func (e *engine) seconds(t time.Time) float64 { return t.Sub(e.start).Seconds() }

// Coefficients returns the TTFT model in use (calibrated, when calibration
// is on).
func (e *engine) Coefficients() admission.Coefficients {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pred.Coefficients()
}

// nameOf is the endpoint's pod, the key of what the plugin learns about it.
func nameOf(ep fwksched.Endpoint) types.NamespacedName {
	if m := ep.GetMetadata(); m != nil {
		return m.NamespacedName
	}
	return types.NamespacedName{}
}
