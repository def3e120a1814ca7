package sim

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/alloc"
	"github.com/llm-d-incubation/wva/internal/queueing"
)

func init() {
	registerBaseline(Baseline{Name: "clairvoyant", Order: 40, Bound: true, Default: true, Sweep: true,
		Summary: "the cheapest SLO-meeting replicas for the true future load, ordered ahead by the start-up time: the reference bound",
		New: func(sc *Scenario, _ string) (Autoscaler, error) {
			return &Clairvoyant{interval: sc.Autoscalers.OracleIntervalSeconds, margin: sc.Autoscalers.ClairvoyantMargin}, nil
		},
		Knobs: map[string]knob{
			"margin": {[]float64{0, 0.15, 0.3, 0.5, 0.75, 1},
				func(a *Autoscalers) *float64 { return &a.ClairvoyantMargin }, 0, fromZero(100, false, false)},
		}})
	registerBaseline(Baseline{Name: "oracle", Order: 50, Bound: true, Instant: true,
		Summary: "the same provisioned instantly: a bound no fleet can reach",
		New: func(sc *Scenario, _ string) (Autoscaler, error) {
			return &Oracle{interval: sc.Autoscalers.OracleIntervalSeconds}, nil
		}})
}

// Oracle knows the true parameters and the true load: every interval it
// provisions, instantly, the cheapest replicas that meet the SLO at the
// peak rate of the coming interval (queueing model sizing, exact cheapest
// cover). It bounds what an autoscaler can reach; it is not one, and no
// real fleet can match it (its replicas need no start-up).
type Oracle struct{ interval float64 }

// Name implements Autoscaler.
func (o *Oracle) Name() string { return "oracle" }

// Interval implements Autoscaler.
func (o *Oracle) Interval() float64 { return o.interval }

// Decide implements Autoscaler.
func (o *Oracle) Decide(v *View) []int {
	return provision(v, func(int) float64 { return o.interval }, 0)
}

// Clairvoyant knows the true future arrivals and the true parameters, but
// its replicas take the same start-up time as everyone's: every interval it
// provisions the cheapest replicas that meet the SLO at the peak rate from
// now until the replicas its next decision could order are ready (the
// interval plus the model's longest start-up, jitter included), times
// 1 + Margin. It is the reference an autoscaler can approach in practice.
type Clairvoyant struct {
	interval, margin float64
}

// Name implements Autoscaler.
func (c *Clairvoyant) Name() string { return "clairvoyant" }

// Interval implements Autoscaler.
func (c *Clairvoyant) Interval() float64 { return c.interval }

// Decide implements Autoscaler.
func (c *Clairvoyant) Decide(v *View) []int {
	ahead := func(m int) float64 {
		startup := 0.0
		for _, vv := range v.Variants {
			if vv.Model == m {
				startup = math.Max(startup, vv.Config.StartupSeconds+vv.Config.StartupJitterSeconds)
			}
		}
		return c.interval + startup
	}
	return provision(v, ahead, c.margin)
}

// provision returns, per variant, the cheapest replicas that meet each
// model's SLO at (1 + margin) × its peak true arrival rate over the next
// ahead(model) seconds, sized by the queueing model with the true
// parameters and an exact cheapest cover.
func provision(v *View, ahead func(model int) float64, margin float64) []int {
	out := make([]int, len(v.Variants))
	for m, mod := range v.Scenario.Models {
		peak := peakRate(mod.Workload, v.Now, v.Now+ahead(m)) * (1 + margin)
		w := queueing.Workload{InputTokens: mod.Workload.Input.mean(), OutputTokens: mod.Workload.Output.mean()}
		var opts []alloc.Option
		var idx []int
		for i, vv := range v.Variants {
			if vv.Model != m {
				continue
			}
			opts = append(opts, alloc.Option{Name: vv.Name, Cost: vv.Cost, Capacity: trueCapacity(vv.Config, w, mod.SLO),
				Min: vv.MinReplicas, Max: vv.MaxReplicas})
			idx = append(idx, i)
		}
		c := alloc.CheapestCover(opts, peak)
		for j, i := range idx {
			out[i] = c.Replicas[j]
		}
	}
	return out
}

// peakRate is the workload's highest true arrival rate over [from, to].
func peakRate(w Workload, from, to float64) float64 {
	if w.rows != nil {
		return traceRate(w.rows, from, to)
	}
	peak := 0.0
	for t := from; t <= to; t++ {
		peak = math.Max(peak, w.Rate.rateAt(t))
	}
	return peak
}

// trueCapacity is a replica's SLO capacity (requests/s) under the true
// parameters (iteration model; 0 for the linear model, which the queueing
// model does not size here). The KV cache may hold fewer requests than the
// batch size.
func trueCapacity(c *Variant, w queueing.Workload, slo SLO) float64 {
	if c.LatencyModel != "iteration" {
		return 0
	}
	n := max(1, min(c.MaxBatchSize, int(float64(c.KVBlocks*c.BlockSize)/(w.InputTokens+w.OutputTokens))))
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: c.Params.Alpha, Beta: c.Params.Beta, Gamma: c.Params.Gamma},
		Workload: w, MaxBatchSize: n, MaxQueueSize: queueing.DefaultMaxQueueSize})
	if err != nil {
		return 0
	}
	sz, err := a.Size(queueing.Targets{TTFTMs: slo.TTFTMs, ITLMs: slo.ITLMs})
	if err != nil {
		return 0
	}
	return sz.CapacityRPS
}
