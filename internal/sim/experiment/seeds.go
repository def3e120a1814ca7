package experiment

import (
	"context"
	"math"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// Stat is a figure's mean, standard deviation and range over seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func statOf(xs []float64) Stat {
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	for _, x := range xs {
		s.SD += (x - s.Mean) * (x - s.Mean)
	}
	if len(xs) > 1 {
		s.SD = math.Sqrt(s.SD / float64(len(xs)-1))
	} else {
		s.SD = 0
	}
	return s
}

// SeedSummary is one autoscaler's figures over several seeds of a
// scenario: single runs of a bursty scenario differ a lot, so comparisons
// should rest on these.
type SeedSummary struct {
	Autoscaler string   `json:"autoscaler"`
	Seeds      []uint64 `json:"seeds"`
	// SLOAttainment is in percent.
	SLOAttainment       Stat `json:"sloAttainmentPct"`
	EffectiveThroughput Stat `json:"effectiveThroughputRps"`
	TTFTp99Ms           Stat `json:"ttftP99Ms"`
	Cost                Stat `json:"cost"`
	CostPer1kWithinSLO  Stat `json:"costPer1kWithinSlo"`
	Failed              Stat `json:"failed"`
	// Terminated are the failed requests that were in flight on a pod
	// that was removed.
	Terminated Stat `json:"terminated"`
	// Wins counts the seeds where this autoscaler had the highest SLO
	// attainment (ties count for each).
	Wins int `json:"wins"`
	// CostBreakdown is the result's costBreakdown over the seeds (a part
	// a seed lacks counts 0 there), for an autoscaler that reports it.
	CostBreakdown map[string]Stat `json:"costBreakdown,omitempty"`
}

// Summarize turns runs (one Compare result list per seed, the autoscalers
// in the same order) into one summary per autoscaler.
func Summarize(seeds []uint64, runs [][]*sim.Result) []SeedSummary {
	if len(runs) == 0 {
		return nil
	}
	out := make([]SeedSummary, len(runs[0]))
	for i := range out {
		var slo, good, p99, cost, per1k, failed, term []float64
		for _, rs := range runs {
			r := rs[i]
			slo = append(slo, 100*r.SLOAttainment)
			good = append(good, r.EffectiveThroughput)
			p99 = append(p99, r.TTFTms.P99)
			cost = append(cost, r.Cost)
			per1k = append(per1k, r.CostPer1kWithinSLO)
			failed = append(failed, float64(r.Failed))
			term = append(term, float64(r.FailedBy.Terminated))
		}
		out[i] = SeedSummary{Autoscaler: runs[0][i].Autoscaler, Seeds: seeds, SLOAttainment: statOf(slo),
			EffectiveThroughput: statOf(good), TTFTp99Ms: statOf(p99), Cost: statOf(cost), CostPer1kWithinSLO: statOf(per1k),
			Failed: statOf(failed), Terminated: statOf(term), CostBreakdown: breakdownStats(runs, i)}
	}
	for _, rs := range runs {
		best := 0.0
		for _, r := range rs {
			if !sim.Instant(r.Autoscaler) {
				best = math.Max(best, r.SLOAttainment)
			}
		}
		for i, r := range rs {
			if !sim.Instant(r.Autoscaler) && r.SLOAttainment == best {
				out[i].Wins++
			}
		}
	}
	return out
}

// breakdownStats is autoscaler i's cost breakdown over the seeds' runs,
// or nil when no run reports one.
func breakdownStats(runs [][]*sim.Result, i int) map[string]Stat {
	var out map[string]Stat
	for _, rs := range runs {
		for part := range rs[i].CostBreakdown {
			if out == nil {
				out = map[string]Stat{}
			}
			if _, done := out[part]; done {
				continue
			}
			xs := make([]float64, len(runs))
			for k, rs := range runs {
				xs[k] = rs[i].CostBreakdown[part]
			}
			out[part] = statOf(xs)
		}
	}
	return out
}

// CompareSeeds runs Compare for each seed, spreading the runs (one per seed
// and autoscaler) over parallel workers. It returns the seeds that
// finished, in order, with their results; when ctx is cancelled the seeds
// with a missing run are left out. progress (may be nil) is called after
// each run with the runs done and the total.
func CompareSeeds(ctx context.Context, sc scenario.Scenario, names []string, seeds []uint64, parallel int, progress func(done, total int)) ([]uint64, [][]*sim.Result, error) {
	if len(names) == 0 {
		names = sc.WithDefaults().Autoscalers.Default
	}
	if err := sim.CheckAutoscalers(names); err != nil {
		return nil, nil, err
	}
	if err := sc.CheckRunnable(); err != nil {
		return nil, nil, err
	}
	// Seed by seed, so that an interrupted run leaves whole seeds.
	jobs := make([]sim.Job, 0, len(seeds)*len(names))
	for _, seed := range seeds {
		s := sc
		s.Seed = seed
		for _, name := range names {
			jobs = append(jobs, sim.Job{Scenario: s, Autoscaler: name})
		}
	}
	runs := make([][]*sim.Result, len(seeds))
	for i := range runs {
		runs[i] = make([]*sim.Result, len(names))
	}
	err := sim.RunJobs(ctx, jobs, parallel, progress, func(k int, r *sim.Result) {
		runs[k/len(names)][k%len(names)] = r
	})
	if err != nil {
		return nil, nil, err
	}
	var doneSeeds []uint64
	var doneRuns [][]*sim.Result
	for i, rs := range runs {
		complete := true
		for _, r := range rs {
			complete = complete && r != nil
		}
		if complete {
			doneSeeds = append(doneSeeds, seeds[i])
			doneRuns = append(doneRuns, rs)
		}
	}
	return doneSeeds, doneRuns, nil
}
