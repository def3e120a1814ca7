package admission

import "math"

var (
	_ Policy = AlwaysAdmit{}
	_ Policy = (*TokenBucket)(nil)
	_ Policy = (*SLOGated)(nil)
)

// AlwaysAdmit admits every request: the baseline.
type AlwaysAdmit struct{}

// Decide admits req.
func (AlwaysAdmit) Decide(_ float64, req Request, _ []Instance) Decision {
	return Decision{Admit: true, Reason: ReasonAlways, Class: req.Class, Instance: -1}
}

// BucketConfig configures a TokenBucket.
type BucketConfig struct {
	// Rate is the sustained admission rate in requests per second; required.
	Rate float64
	// Burst is the bucket's size in requests, at least 1; 0 means one
	// second's worth of Rate (and at least 1).
	Burst float64
}

// Validate reports every problem of the configuration, joined.
func (c BucketConfig) Validate() error {
	var v validator
	if !finite(c.Rate) || c.Rate <= 0 {
		v.add("tokenBucket.rate", "must be a finite number of requests/s > 0, got %v", c.Rate)
	}
	if !finite(c.Burst) || (c.Burst != 0 && c.Burst < 1) {
		v.add("tokenBucket.burst", "must be 0 (one second of rate) or a finite number ≥ 1, got %v", c.Burst)
	}
	return v.err()
}

// TokenBucket admits at most Rate requests per second on average and Burst
// at once (the token bucket of RFC 2697 §1, one bucket, one colour). Critical
// requests are always admitted and take a token when there is one, so their
// load counts against the other classes' share.
type TokenBucket struct {
	rate, burst float64
	tokens      float64
	last        float64 // time of the last refill
	started     bool
}

// NewTokenBucket returns a full bucket.
func NewTokenBucket(c BucketConfig) (*TokenBucket, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	burst := or(c.Burst, math.Max(1, c.Rate))
	return &TokenBucket{rate: c.Rate, burst: burst, tokens: burst}, nil
}

// Decide refills the bucket for the time since the last call and spends a
// token on req if there is one. A clock that goes backwards (or is NaN)
// refills nothing.
func (b *TokenBucket) Decide(now float64, req Request, _ []Instance) Decision {
	if !b.started {
		b.started, b.last = true, now
	}
	if now > b.last {
		b.tokens = math.Min(b.burst, b.tokens+b.rate*(now-b.last))
		b.last = now
	}
	d := Decision{Class: req.Class, Instance: -1, Estimate: b.tokens, Budget: 1}
	has := b.tokens >= 1
	if has {
		b.tokens--
	}
	switch {
	case req.Class.protected():
		d.Admit, d.Reason, d.Estimate, d.Budget = true, ReasonCritical, 0, 0
	case has:
		d.Admit, d.Reason = true, ReasonToken
	default:
		d.Reason = ReasonNoToken
	}
	return d
}

// FleetDepth says which instance's queue the SLO gate compares with a
// class's threshold.
type FleetDepth string

const (
	// FleetMin (the default) gates on the shortest queue: a class is shed
	// only when no instance has a queue below its threshold, since the router
	// can send the request to that instance.
	FleetMin FleetDepth = "min"
	// FleetMax gates on the longest queue, as the seed's SLO-gated admission
	// did: one hot instance sheds the class fleet-wide.
	FleetMax FleetDepth = "max"
)

// Default SLO-gate thresholds, in waiting requests. Sheddable's is the
// endpoint picker's saturation detector's default queue threshold (5);
// standard tolerates twice as deep a queue.
const (
	DefaultSheddableThreshold = 5
	DefaultStandardThreshold  = 10
)

// GatedConfig configures an SLOGated policy.
type GatedConfig struct {
	// StandardThreshold and SheddableThreshold are the fleet queue depths
	// (waiting requests, all priorities) at which the class is rejected; 0
	// means the defaults above. Critical is never rejected.
	StandardThreshold  int
	SheddableThreshold int
	// Fleet is FleetMin ("" means it) or FleetMax.
	Fleet FleetDepth
}

// Validate reports every problem of the configuration, joined.
func (c GatedConfig) Validate() error {
	var v validator
	if c.StandardThreshold < 0 {
		v.add("sloGated.standardThreshold", "must be ≥ 1 waiting requests (0 means the default %d), got %d", DefaultStandardThreshold, c.StandardThreshold)
	}
	if c.SheddableThreshold < 0 {
		v.add("sloGated.sheddableThreshold", "must be ≥ 1 waiting requests (0 means the default %d), got %d", DefaultSheddableThreshold, c.SheddableThreshold)
	}
	if c.Fleet != "" && c.Fleet != FleetMin && c.Fleet != FleetMax {
		v.add("sloGated.fleet", "must be %q or %q, got %q", FleetMin, FleetMax, c.Fleet)
	}
	return v.err()
}

// SLOGated rejects a non-critical request when the fleet's queue depth (the
// shortest or the longest queue, by Fleet) is at or above its class's
// threshold: the seed's SLO-gated admission, a crude proxy for the TTFT the
// request would see, kept as the baseline the predictive policy improves on.
type SLOGated struct {
	threshold [numClasses]int
	max       bool
}

// NewSLOGated returns the gate.
func NewSLOGated(c GatedConfig) (*SLOGated, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := &SLOGated{max: c.Fleet == FleetMax}
	g.threshold[Standard] = or(c.StandardThreshold, DefaultStandardThreshold)
	g.threshold[Sheddable] = or(c.SheddableThreshold, DefaultSheddableThreshold)
	return g, nil
}

// Decide gates req on the fleet's queue depth.
func (g *SLOGated) Decide(_ float64, req Request, fleet []Instance) Decision {
	d := Decision{Class: req.Class, Instance: -1}
	switch {
	case req.Class.protected():
		d.Admit, d.Reason = true, ReasonCritical
		return d
	case len(fleet) == 0:
		d.Admit, d.Reason = true, ReasonNoInstance
		return d
	}
	depth, at := fleet[0].Queued(), 0
	for i := 1; i < len(fleet); i++ {
		q := fleet[i].Queued()
		if (g.max && q > depth) || (!g.max && q < depth) {
			depth, at = q, i
		}
	}
	th := g.threshold[req.Class]
	d.Estimate, d.Budget, d.Instance = float64(depth), float64(th), at
	d.Admit = depth < th
	d.Reason = ReasonQueueBelow
	if !d.Admit {
		d.Reason = ReasonQueueAtLimit
	}
	return d
}
