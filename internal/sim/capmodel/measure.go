package capmodel

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"math"
	"sync"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// Measured capacity: the largest constant arrival rate at which N replicas
// of one variant, alone behind the scenario's gateway, serve at least a
// share P of a model's requests within its SLO (TTFT and ITL, per
// request) — found by static-fleet runs of the simulator itself, so that a
// bound built on it does not depend on WVA's queueing model, and handles
// every latency model the simulator has.
//
// A measurement runs the model's own workload (arrival process, token
// distributions, classes, shared prefixes; a trace's token counts as an
// empirical distribution) at a constant rate for long enough to bring
// Measurement.Requests requests (between its MinSeconds and
// MaxSeconds), then lets what is in flight finish. The rate is
// bracketed by doubling and bisected Measurement.Bisections times, every
// run from the same seed (the
// same random numbers at every rate, so that attainment falls smoothly as
// the rate grows). Capacities at fleet sizes between the powers of two
// measured are interpolated linearly. Results are cached for the process:
// a sweep measures a scenario once.

// Measurement sizes a measurement: Requests' worth of arrivals, at least
// MinSeconds (unless that brings ten times as many), at most MaxSeconds;
// Bisections steps of the rate's search; the scenario's seed.
type Measurement struct {
	Requests, MinSeconds, MaxSeconds float64
	Bisections                       int
	Seed                             uint64
}

// capMeasure is the measurements' size. Tests whose subject is not the
// bound's accuracy (the invariants, determinism) make it smaller; it is
// part of the cache's key.
var capMeasure = DefaultMeasurement()

// DefaultMeasurement is the bound's measurement: 3 000 requests, 120 s to
// 1 800 s, 7 bisections, seed 1.
func DefaultMeasurement() Measurement {
	return Measurement{Requests: 3000, MinSeconds: 120, MaxSeconds: 1800, Bisections: 7, Seed: 1}
}

const (
	capDrainSeconds = 600.0
	// capMaxRate bounds the search: a rate beyond it counts as unbounded
	// capacity (no shipped server comes near).
	capMaxRate = 1e4
	// capCacheEntries bounds the process-wide cache.
	capCacheEntries = 100_000
)

// capEntry is one cached measurement; its lock is held while it is
// measured, so that runs in parallel measure it once.
type capEntry struct {
	sync.Mutex
	done bool
	rate float64
}

var capCache = struct {
	sync.Mutex
	m map[string]*capEntry
}{m: map[string]*capEntry{}}

// Measured measures (or recalls) the capacity of n replicas of variant j
// of model m of the defaulted scenario sc at attainment p, in requests/s.
// A measurement cut short by ctx is returned but not kept.
func Measured(ctx context.Context, sc *scenario.Scenario, m, j, n int, p float64) float64 {
	return MeasuredWith(ctx, sc, m, j, n, p, capMeasure)
}

// MeasuredAttainment is the share of the requests n replicas of variant j
// of model m serve within the SLO at a constant rate (the scenario's
// arrival process; p > 0 stops a run early, returning 0, once it cannot
// reach p).
func MeasuredAttainment(ctx context.Context, sc *scenario.Scenario, m, j, n int, rate, p float64, ms Measurement) float64 {
	return attainmentAt(ctx, measureBase(sc, m, j, n, ms.Seed), rate, p, ms)
}

// MeasuredWith is Measured with a measurement of the given size.
func MeasuredWith(ctx context.Context, sc *scenario.Scenario, m, j, n int, p float64, ms Measurement) float64 {
	base := measureBase(sc, m, j, n, ms.Seed)
	data, err := json.Marshal(struct {
		S scenario.Scenario
		P float64
		M Measurement
	}{base, p, ms})
	if err != nil {
		return measure(ctx, base, n, p, ms)
	}
	sum := sha256.Sum256(data) // a trace's token counts make long keys
	key := string(sum[:])
	capCache.Lock()
	e, ok := capCache.m[key]
	if !ok {
		if len(capCache.m) >= capCacheEntries {
			capCache.m = map[string]*capEntry{}
		}
		e = &capEntry{}
		capCache.m[key] = e
	}
	capCache.Unlock()
	e.Lock()
	defer e.Unlock()
	if !e.done {
		e.rate = measure(ctx, base, n, p, ms)
		e.done = ctx.Err() == nil
	}
	return e.rate
}

// measureBase is the static-fleet scenario of a measurement, without its
// rate and duration: model m with variant j alone at n replicas, the
// scenario's gateway and metrics pipeline, no inventory.
func measureBase(sc *scenario.Scenario, m, j, n int, seed uint64) scenario.Scenario {
	mod := sc.Models[m]
	v := mod.Variants[j]
	v.MinReplicas, v.MaxReplicas, v.InitialReplicas = n, n, n
	mod.Variants = []scenario.Variant{v}
	w := &mod.Workload
	if w.Rows != nil {
		w.Input, w.Output = traceTokens(w.Rows)
		w.Rows, w.Trace = nil, ""
		if w.Arrival == "" || w.Arrival == "trace" {
			w.Arrival = "poisson"
		}
	}
	w.NumRequests = 0
	w.Rate = scenario.Rate{}
	return scenario.Scenario{Name: "capacity", Seed: seed, Models: []scenario.Model{mod}, Gateway: sc.Gateway, Scrape: sc.Scrape}
}

// traceTokens turns a trace's token counts into empirical distributions.
func traceTokens(rows []scenario.TraceRow) (in, out scenario.Tokens) {
	in, out = scenario.Tokens{Dist: "empirical"}, scenario.Tokens{Dist: "empirical"}
	for _, r := range rows {
		in.Values = append(in.Values, float64(r.Input))
		out.Values = append(out.Values, float64(r.Output))
	}
	return in, out
}

// measure finds the capacity of the base scenario's fleet of n replicas.
func measure(ctx context.Context, base scenario.Scenario, n int, p float64, ms Measurement) float64 {
	ok := func(rate float64) bool { return ctx.Err() == nil && attainmentAt(ctx, base, rate, p, ms) >= p }
	// Bracket: from half a request per second per replica, double while
	// the fleet keeps up, or halve until it does.
	lo, hi := 0.0, 0.5*float64(n)
	if ok(hi) {
		for lo = hi; ; lo = hi {
			if hi >= capMaxRate {
				return capMaxRate
			}
			hi *= 2
			if !ok(hi) {
				break
			}
		}
	} else {
		for hi > 1.0/64 {
			if ok(hi / 2) {
				lo = hi / 2
				break
			}
			hi /= 2
		}
		if lo == 0 {
			return 0
		}
	}
	for range ms.Bisections {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// attainmentAt runs the base scenario at a constant rate and returns the
// share of its requests completed within the SLO. A run stops early, with
// 0, once more requests have missed the SLO than a share p of the expected
// arrivals allows: it cannot reach p.
func attainmentAt(ctx context.Context, base scenario.Scenario, rate, p float64, ms Measurement) float64 {
	sc := base
	mods := append([]scenario.Model(nil), sc.Models...)
	mods[0].Workload.Rate = scenario.Rate{Pattern: "constant", RPS: rate}
	sc.Models = mods
	// ms.Requests' worth, at least ms.MinSeconds unless that brings ten
	// times as many requests (a fast fleet at a high rate).
	r := ms.Requests
	sc.DurationSeconds = math.Min(math.Max(r/rate, math.Min(ms.MinSeconds, 10*r/rate)), ms.MaxSeconds)
	sc.DrainSeconds = capDrainSeconds
	s := sim.New(sc, sim.NewStatic(sc.Models[0].Variants[0].InitialReplicas))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	budget := (1 - p) * rate * sc.DurationSeconds * 1.5 // the arrivals' count varies: stop only well past it
	hopeless := false
	s.OnRequestDone(func(res *sim.Result) {
		if float64(res.Completed-res.WithinSLO+res.Failed) > budget {
			hopeless = true
			cancel()
		}
	})
	res := s.Run(ctx, nil)
	if hopeless || res.Interrupted {
		return 0
	}
	if res.Arrived == 0 {
		return 1
	}
	return float64(res.WithinSLO) / float64(res.Arrived)
}

// Curve is a variant's measured capacity by fleet size: powers of
// two measured as needed, sizes between them interpolated.
type Curve struct {
	ctx    context.Context // the run's: a cancelled run stops measuring
	sc     *scenario.Scenario
	m, j   int
	p      float64
	maxN   int
	powers map[int]float64
}

// NewCurve is the measured capacity curve of variant j of model m of the
// defaulted scenario sc, at attainment p, up to maxN replicas.
func NewCurve(sc *scenario.Scenario, m, j int, p float64, maxN int) *Curve {
	return &Curve{ctx: context.Background(), sc: sc, m: m, j: j, p: p, maxN: maxN, powers: map[int]float64{}}
}

// WithContext makes the curve's measurements stop when ctx ends (a
// cancelled run); it returns c.
func (c *Curve) WithContext(ctx context.Context) *Curve {
	c.ctx = ctx
	return c
}

// Preset records the capacity of n replicas instead of measuring it (a
// capacity known from elsewhere; a test's hand-made curve).
func (c *Curve) Preset(n int, rate float64) { c.powers[n] = rate }

// At is the capacity of n replicas (0 for none).
func (c *Curve) At(n int) float64 {
	if n <= 0 {
		return 0
	}
	lo := 1
	for lo*2 <= n {
		lo *= 2
	}
	clo := c.power(lo)
	if lo == n {
		return clo
	}
	chi := c.power(lo * 2)
	return clo + (chi-clo)*float64(n-lo)/float64(lo)
}

func (c *Curve) power(n int) float64 {
	if v, ok := c.powers[n]; ok {
		return v
	}
	v := Measured(c.ctx, c.sc, c.m, c.j, n, c.p)
	if c.ctx.Err() == nil {
		c.powers[n] = v
	}
	return v
}

// Fewest is the fewest replicas (at least lo, at most the variant's
// maximum) whose capacity covers demand, and whether any does. It
// measures upwards from lo, so a small demand never measures a large
// fleet.
func (c *Curve) Fewest(lo int, demand float64) (int, bool) {
	if demand <= 0 {
		return lo, true
	}
	if lo > c.maxN {
		return c.maxN, false
	}
	// Capacity grows with the fleet: find the power-of-two bracket, then
	// search it.
	hi := max(lo, 1)
	for hi < c.maxN && c.At(hi) < demand {
		hi = min(hi*2, c.maxN)
	}
	if c.At(hi) < demand {
		return c.maxN, false
	}
	a := max(lo, hi/2)
	for a < hi {
		mid := (a + hi) / 2
		if c.At(mid) >= demand {
			hi = mid
		} else {
			a = mid + 1
		}
	}
	return hi, true
}

// SmallMeasurements makes the bounds' capacity measurements small (300
// requests, 30 s, 3 bisections) for a test whose subject is not their
// accuracy (the invariants, determinism); the returned function puts the
// usual size back. Not safe while a run is measuring.
func SmallMeasurements() func() {
	old := capMeasure
	capMeasure = Measurement{Requests: 300, MinSeconds: 30, MaxSeconds: 1800, Bisections: 3, Seed: 1}
	return func() { capMeasure = old }
}
