package baselines

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

func init() {
	sim.RegisterBaseline(sim.Baseline{Name: "clairvoyant", Order: 40, Bound: true, Default: true, Sweep: true,
		Summary: "the cheapest SLO-meeting replicas for the true future load, ordered ahead by the start-up time: the reference bound",
		New: func(sc *scenario.Scenario, _ string) (sim.Autoscaler, error) {
			return &Clairvoyant{interval: sc.Autoscalers.OracleIntervalSeconds, margin: sc.Autoscalers.ClairvoyantMargin,
				b: newBound(sc)}, nil
		},
		Knobs: map[string]sim.Knob{
			"margin":     {Grid: []float64{0, 0.15, 0.3, 0.5, 0.75, 1}, Field: func(a *scenario.Autoscalers) *float64 { return &a.ClairvoyantMargin }, Check: sim.FromZero(100, false, false)},
			"attainment": {Field: func(a *scenario.Autoscalers) *float64 { return &a.ClairvoyantAttainment }, Unset: scenario.DefaultBoundAttainment, Check: sim.FromZero(1, true, true)},
		}})
	sim.RegisterBaseline(sim.Baseline{Name: "oracle", Order: 50, Bound: true, Instant: true,
		Summary: "the same provisioned instantly: a bound no fleet can reach",
		New: func(sc *scenario.Scenario, _ string) (sim.Autoscaler, error) {
			return &Oracle{interval: sc.Autoscalers.OracleIntervalSeconds, b: newBound(sc)}, nil
		}})
}

// Oracle knows the servers and the true load: every interval it
// provisions, instantly, the cheapest replicas whose measured capacity
// (capmodel.Measured) covers the peak rate of the coming interval (bound.go). It
// bounds what an autoscaler can reach; it is not one, and no real fleet
// can match it (its replicas need no start-up).
type Oracle struct {
	interval float64
	b        *bound
}

// Name implements Autoscaler.
func (o *Oracle) Name() string { return "oracle" }

// Interval implements Autoscaler.
func (o *Oracle) Interval() float64 { return o.interval }

// Decide implements Autoscaler.
func (o *Oracle) Decide(v *sim.View) []int {
	return o.b.provision(v, func(int) float64 { return o.interval }, 0)
}

// Clairvoyant knows the true future arrivals and the servers' measured
// capacity, but its replicas take the same start-up time as everyone's:
// every interval it provisions the cheapest replicas whose capacity covers
// the peak rate from now until the replicas its next decision could order
// are ready (the interval plus the model's longest start-up, jitter
// included), times 1 + Margin. It is the reference an autoscaler can
// approach in practice.
type Clairvoyant struct {
	interval, margin float64
	b                *bound
}

// Name implements Autoscaler.
func (c *Clairvoyant) Name() string { return "clairvoyant" }

// Interval implements Autoscaler.
func (c *Clairvoyant) Interval() float64 { return c.interval }

// Decide implements Autoscaler.
func (c *Clairvoyant) Decide(v *sim.View) []int {
	ahead := func(m int) float64 {
		startup := 0.0
		for _, vv := range v.Variants {
			if vv.Model == m {
				startup = math.Max(startup, vv.Config.StartupSeconds+vv.Config.StartupJitterSeconds)
			}
		}
		return c.interval + startup
	}
	return c.b.provision(v, ahead, c.margin)
}

// peakRate is the workload's highest true arrival rate over [from, to].
func peakRate(w scenario.Workload, from, to float64) float64 {
	if w.Rows != nil {
		return scenario.TraceRate(w.Rows, from, to)
	}
	peak := 0.0
	for t := from; t <= to; t++ {
		peak = math.Max(peak, w.Rate.At(t))
	}
	return peak
}
