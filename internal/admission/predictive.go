package admission

import (
	"fmt"
	"math"
)

// Coefficients are the TTFT model's parameters (docs/admission.md):
//
//	TTFT ≈ Queue · ahead · step + Beta0 + Beta1 · miss
//
// where ahead is the number of waiting requests of the same or a higher
// priority, step the instance's engine step time, and miss the prompt
// tokens not found in the instance's prefix cache. Beta0 + Beta1·miss is
// the prefill (the seed's β0 + β1 × cache-miss tokens, the linear step-time
// model of the BLIS simulator); Queue·step is the wait each request ahead
// costs (1 step in the seed's model).
type Coefficients struct {
	Beta0 float64 // seconds: the prefill's fixed cost
	Beta1 float64 // seconds per cache-miss prompt token
	Queue float64 // engine steps of wait per request ahead
}

// DefaultCoefficients are the seed's values, converted from microseconds:
// β0 = 6 910.42 µs, β1 = 17.67 µs per token, one step per request ahead.
var DefaultCoefficients = Coefficients{Beta0: 6.91042e-3, Beta1: 17.67e-6, Queue: 1}

// TTFT is the estimate for a request with miss cache-miss tokens behind
// ahead requests on an instance whose step takes step seconds.
func (c Coefficients) TTFT(miss, ahead int, step float64) float64 {
	return c.Queue*float64(ahead)*step + c.Beta0 + c.Beta1*float64(miss)
}

func (c Coefficients) withDefaults() Coefficients {
	return Coefficients{Beta0: or(c.Beta0, DefaultCoefficients.Beta0), Beta1: or(c.Beta1, DefaultCoefficients.Beta1),
		Queue: or(c.Queue, DefaultCoefficients.Queue)}
}

func (v *validator) coefficients(path string, c Coefficients) {
	for i, name := range [3]string{"beta0", "beta1", "queue"} {
		x, def := c.at(i), DefaultCoefficients.at(i)
		v.nonNeg(path+"."+name, x, def)
		if finite(x) && x > MaxCoefficient {
			v.add(path+"."+name, "must be at most %g (0 means the default %v), got %v", MaxCoefficient, def, x)
		}
	}
}

// MaxCoefficient bounds every TTFT-model coefficient a configuration gives
// (seconds, seconds per token, steps per request ahead): a million is far
// beyond any server, and keeps every product the policy and the
// calibrator form (by token counts, by the calibrator's internal scale,
// squared) finite.
const MaxCoefficient = 1e6

// Predictive defaults: the seed's budgets (sheddable's is tighter than
// standard's on purpose, so that it is shed first), an exact budget
// (headroom 1), and the seed's 7 ms step for instances that report none.
const (
	DefaultCriticalBudget  = 0.2
	DefaultStandardBudget  = 0.5
	DefaultSheddableBudget = 0.3
	DefaultHeadroom        = 1.0
	DefaultStepTime        = 7e-3
	minHeadroom            = 0.5
	maxHeadroom            = 3.0
)

// PredictiveConfig configures a Predictive policy. Times are in seconds.
type PredictiveConfig struct {
	// CriticalBudget, StandardBudget and SheddableBudget are the TTFT
	// budgets per class; 0 means the defaults above. Critical requests are
	// always admitted: their budget only fills their decisions, so that a
	// caller can count the critical requests predicted to miss.
	CriticalBudget, StandardBudget, SheddableBudget float64
	// Headroom multiplies every budget: a request is admitted when its
	// best-case estimate is at most budget × Headroom. In [0.5, 3]; 0 means 1.
	Headroom float64
	// Coefficients start the TTFT model; a zero field means its
	// DefaultCoefficients value. SetCoefficients replaces them (from a
	// Calibrator).
	Coefficients Coefficients
	// StepTime is the step time for an instance that reports none; 0 means
	// DefaultStepTime.
	StepTime float64
	// KVLimit, in (0, 1], skips instances whose KV utilisation is at or
	// above it for non-critical requests (the endpoint picker's saturation
	// detector uses 0.8): they cannot take the request without preempting.
	// 0 means no limit.
	KVLimit float64
}

// Validate reports every problem of the configuration, joined.
func (c PredictiveConfig) Validate() error {
	var v validator
	v.nonNeg("predictive.criticalBudget", c.CriticalBudget, DefaultCriticalBudget)
	v.nonNeg("predictive.standardBudget", c.StandardBudget, DefaultStandardBudget)
	v.nonNeg("predictive.sheddableBudget", c.SheddableBudget, DefaultSheddableBudget)
	v.within("predictive.headroom", c.Headroom, minHeadroom, maxHeadroom, DefaultHeadroom)
	v.coefficients("predictive.coefficients", c.Coefficients)
	v.nonNeg("predictive.stepTime", c.StepTime, DefaultStepTime)
	v.within("predictive.kvLimit", c.KVLimit, math.SmallestNonzeroFloat64, 1, 0)
	return v.err()
}

var _ Policy = (*Predictive)(nil)

// Predictive admits a request when its best-case TTFT over the fleet is
// within its class's budget (the seed's predictive TTFT-budget admission,
// with its review's fix: the queue wait counts only the requests that
// would run first, and uses each instance's own step time). Critical
// requests are always admitted.
type Predictive struct {
	limit   [numClasses]float64 // budget × headroom
	coef    Coefficients
	step    float64
	kvLimit float64
}

// NewPredictive returns the policy.
func NewPredictive(c PredictiveConfig) (*Predictive, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	h := or(c.Headroom, DefaultHeadroom)
	p := &Predictive{coef: c.Coefficients.withDefaults(), step: or(c.StepTime, DefaultStepTime), kvLimit: c.KVLimit}
	p.limit[Critical] = h * or(c.CriticalBudget, DefaultCriticalBudget)
	p.limit[Standard] = h * or(c.StandardBudget, DefaultStandardBudget)
	p.limit[Sheddable] = h * or(c.SheddableBudget, DefaultSheddableBudget)
	return p, nil
}

// Coefficients returns the TTFT model in use.
func (p *Predictive) Coefficients() Coefficients { return p.coef }

// SetCoefficients replaces the TTFT model, for example with a Calibrator's
// current fit. Every coefficient must be finite, ≥ 0 and at most
// MaxCoefficient; otherwise the model in use stays and the error says why.
func (p *Predictive) SetCoefficients(c Coefficients) error {
	var v validator
	v.coefficients("coefficients", c)
	if err := v.err(); err != nil {
		return fmt.Errorf("admission: SetCoefficients: %w", err)
	}
	p.coef = c
	return nil
}

// Estimate is req's estimated TTFT on in, in seconds.
func (p *Predictive) Estimate(req Request, in *Instance) float64 {
	miss := req.InputTokens - max(in.Cached, 0)
	step := in.StepTime
	if !(step > 0) || math.IsInf(step, 1) {
		step = p.step
	}
	return p.coef.TTFT(max(miss, 0), in.Ahead(req.Priority), step)
}

// Limit is the TTFT req's class may reach on an instance: its budget ×
// headroom, in seconds (classes other than standard and sheddable are
// critical's).
func (p *Predictive) Limit(c Class) float64 {
	if c.protected() {
		c = Critical
	}
	return p.limit[c]
}

// Fits reports whether in can take req within its class's limit: a KV
// utilisation below the policy's KV limit (critical requests excepted) and
// an estimate within Limit — the test Decide applies to each instance, for
// a router that keeps only the instances that fit.
func (p *Predictive) Fits(req Request, in *Instance) bool {
	if p.kvLimit > 0 && !req.Class.protected() && in.KVUtil >= p.kvLimit {
		return false
	}
	return p.Estimate(req, in) <= p.Limit(req.Class)
}

// Decide admits req when its lowest estimate over the fleet is within its
// class's budget × headroom. The decision names that instance, which is
// where the request would meet its budget best (a router may prefer it).
func (p *Predictive) Decide(_ float64, req Request, fleet []Instance) Decision {
	class := req.Class
	if class.protected() {
		class = Critical
	}
	d := Decision{Class: req.Class, Instance: -1, Budget: p.limit[class]}
	if len(fleet) == 0 {
		d.Admit, d.Reason = true, ReasonNoInstance
		return d
	}
	best, lowestKV := math.Inf(1), math.Inf(1)
	for i := range fleet {
		in := &fleet[i]
		if p.kvLimit > 0 && class != Critical && in.KVUtil >= p.kvLimit {
			lowestKV = math.Min(lowestKV, in.KVUtil)
			continue
		}
		if e := p.Estimate(req, in); d.Instance < 0 || e < best {
			best, d.Instance = e, i
		}
	}
	switch {
	case d.Instance < 0:
		d.Reason, d.Estimate, d.Budget = ReasonSaturated, lowestKV, p.kvLimit
	case class == Critical:
		d.Admit, d.Reason, d.Estimate = true, ReasonCritical, best
	default:
		d.Estimate = best
		d.Admit = best <= d.Budget
		d.Reason = ReasonWithinBudget
		if !d.Admit {
			d.Reason = ReasonOverBudget
		}
	}
	return d
}
