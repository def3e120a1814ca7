package capacity

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// Request is one request the workload offers: its tokens, its shared
// prefix, its priority and the SLO it is held to.
type Request struct {
	Input, Output int
	// Prefix is the request's shared-prefix group (-1: none) and
	// PrefixTokens the prompt tokens the group shares.
	Prefix, PrefixTokens int
	// Priority is the gateway's priority (priority-fcfs servers schedule
	// by it); Sheddable requests are the ones the router may shed or
	// reject.
	Priority  int
	Sheddable bool
	// TTFTMs and ITLMs are the request's SLO, in ms (ITL: the average
	// over its output tokens after the first, as the client sees it).
	TTFTMs, ITLMs float64
}

// Workload draws requests. Draw fills every field of r from rng alone (and
// must not keep r): the same random numbers give the same requests, which
// is what makes a capacity search smooth.
type Workload interface {
	Draw(rng *rand.Rand, r *Request)
}

// Router is how the gateway spreads a model's requests over its replicas:
// llm-d's endpoint picker scores each replica — KV-cache utilisation,
// queue depth relative to 5 waiting, batch occupancy, minus prefix
// affinity (the share of the request's prefix it has cached) — and picks
// the lowest score, ties to the first replica; or round-robin.
type Router struct {
	RoundRobin               bool
	KV, Queue, Batch, Prefix float64 // the scorers' weights
	// QueueThreshold sheds a sheddable request when the chosen replica
	// already has this many waiting (0: never).
	QueueThreshold int
	// Saturation, when set, holds requests at the gateway while every
	// replica is saturated (sheddable ones are rejected instead), for at
	// most TimeoutSeconds.
	Saturation     *Saturation
	TimeoutSeconds float64
}

// Saturation is the endpoint picker's saturation detector: a replica is
// saturated when its queue or its KV-cache use reaches a threshold.
type Saturation struct {
	QueueThreshold int
	KVThreshold    float64
}

// DefaultRouter is llm-d's default scorer mix: every weight 1.
func DefaultRouter() Router {
	return Router{KV: 1, Queue: 1, Batch: 1, Prefix: 1, TimeoutSeconds: 120}
}

// Fleet is what the model sizes: Replicas copies of one server behind a
// router, offered one workload.
type Fleet struct {
	Server   server.Config
	Replicas int
	Router   Router
	Workload Workload
	// Arrivals is the arrival process at a constant mean rate: Poisson
	// (the zero value), evenly spaced, or gamma-distributed gaps.
	Arrivals Arrivals
}

// Arrivals is an arrival process: Kind "" or "poisson", "constant", or
// "gamma" with the gaps' coefficient of variation CV (> 0; 1 is Poisson).
type Arrivals struct {
	Kind string
	CV   float64
}

// gap is the time to the next arrival at rate.
func (a *Arrivals) gap(rng *rand.Rand, rate float64) float64 {
	switch a.Kind {
	case "constant":
		return 1 / rate
	case "gamma":
		k := 1 / (a.CV * a.CV) // shape; mean gap k·θ = 1/rate
		return gammaSample(rng, k) / (k * rate)
	}
	return rng.ExpFloat64() / rate
}

// gammaSample draws from Gamma(k, 1) (Marsaglia and Tsang, ACM TOMS 26(3),
// 2000; k < 1 by the boost Gamma(k+1)·U^(1/k)).
func gammaSample(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaSample(rng, k+1) * math.Pow(rng.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Limits of the model's inputs: a fleet or a server beyond them is an
// error, not a run that never ends.
const (
	MaxReplicas = 1024
	// maxKVBlocks bounds a server's cache (the simulator's own bound).
	maxKVBlocks = 1 << 24
	// minIterationMs is the shortest iteration a server may take: below
	// it a run's event count has no useful bound.
	minIterationMs = 1e-3
)

// Validate reports a fleet the model cannot run.
func (f *Fleet) Validate() error {
	if f.Workload == nil {
		return errors.New("capacity: the fleet has no workload")
	}
	if f.Replicas < 1 || f.Replicas > MaxReplicas {
		return fmt.Errorf("capacity: replicas must be between 1 and %d, got %d", MaxReplicas, f.Replicas)
	}
	if err := validateEngine(&f.Server); err != nil {
		return err
	}
	if err := validateLatency(&f.Server); err != nil {
		return err
	}
	switch a := f.Arrivals; a.Kind {
	case "", "poisson", "constant":
	case "gamma":
		if !(a.CV >= 0.01 && a.CV <= 100) {
			return fmt.Errorf("capacity: gamma arrivals need a coefficient of variation between 0.01 and 100, got %g", a.CV)
		}
	default:
		return fmt.Errorf("capacity: arrivals must be poisson, constant or gamma, got %q", a.Kind)
	}
	r := &f.Router
	for _, w := range []float64{r.KV, r.Queue, r.Batch, r.Prefix, r.TimeoutSeconds} {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("capacity: router weights and timeout must be finite, got %g", w)
		}
	}
	return nil
}

// validateEngine checks the server's engine arguments.
func validateEngine(c *server.Config) error {
	switch {
	case c.KVBlocks < 1 || c.KVBlocks > maxKVBlocks:
		return fmt.Errorf("capacity: kvBlocks must be between 1 and %d, got %d", maxKVBlocks, c.KVBlocks)
	case c.BlockSize < 1 || c.BlockSize > 1<<16:
		return fmt.Errorf("capacity: blockSize must be between 1 and 65536, got %d", c.BlockSize)
	case c.MaxBatchSize < 1:
		return fmt.Errorf("capacity: maxBatchSize must be ≥ 1, got %d", c.MaxBatchSize)
	case c.MaxBatchedTokens < 1:
		return fmt.Errorf("capacity: maxBatchedTokens must be ≥ 1, got %d", c.MaxBatchedTokens)
	}
	return nil
}

// validateLatency checks the latency model's coefficients: finite and
// non-negative, the iteration's fixed cost at least minIterationMs.
func validateLatency(c *server.Config) error {
	var base float64
	var coefs []float64
	if c.LatencyModel == server.LatencyLinear {
		l := c.Linear
		base, coefs = l.Beta0, []float64{l.Beta1, l.Beta2, l.Alpha0, l.Alpha1, l.Alpha2}
	} else {
		p := c.Iteration
		base, coefs = p.Alpha, []float64{p.Beta, p.Gamma}
	}
	if !(base >= minIterationMs) || math.IsInf(base, 0) {
		return fmt.Errorf("capacity: the iteration's fixed cost must be a finite number ≥ %g ms, got %g", minIterationMs, base)
	}
	for _, x := range coefs {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("capacity: latency coefficients must be finite numbers ≥ 0, got %g", x)
		}
	}
	return nil
}

// Event kinds, in the order simultaneous events run (the simulator's).
const (
	evIterationEnd = iota
	evQueued
	evArrival
	evStep
	evTimeout
)

type event struct {
	t   float64
	key uint64 // kind<<56 | sequence: ties in time by kind, then scheduling order
	srv int32
	q   *req
}

func (e *event) kind() int { return int(e.key >> 56) }

func (e *event) before(o *event) bool {
	if e.t != o.t {
		return e.t < o.t
	}
	return e.key < o.key
}

// req is a request in flight: the server's view and the gateway's.
type req struct {
	server.Request
	arrive    float64
	ttft, itl float64 // SLO, seconds
	sheddable bool
	held      bool // waiting at the gateway
	done      bool // completed or failed
}

// host is one replica's server.Host.
type host struct {
	r *run
	i int32
}

func (h *host) Now() float64 { return h.r.now }
func (h *host) ScheduleQueued(q *server.Request, t float64) {
	h.r.schedule(t, evQueued, h.i, q.Owner.(*req))
}
func (h *host) ScheduleStep()                  { h.r.schedule(h.r.now, evStep, h.i, nil) }
func (h *host) ScheduleIterationEnd(t float64) { h.r.schedule(t, evIterationEnd, h.i, nil) }
func (h *host) Fail(q *server.Request, _ string) {
	h.r.fail(q.Owner.(*req))
}
func (h *host) FirstToken(*server.Request, float64) {}
func (h *host) InterTokenLatency(float64, int)      {}
func (h *host) Complete(q *server.Request, a2 float64) {
	h.r.complete(q.Owner.(*req), a2)
}
func (h *host) ObservesStepTime() bool { return false }
func (h *host) Terminating() bool      { return false }
func (h *host) Retire()                {}
func (h *host) AfterIteration()        { h.r.release() }

var _ server.Host = (*host)(nil)
