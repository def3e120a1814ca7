package experiment

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// SweepSpec says what a sweep runs.
type SweepSpec struct {
	// Autoscalers to sweep (default: wva, hpa, keda, clairvoyant). One
	// without knobs (oracle, static:N) is a single point.
	Autoscalers []string
	// Grids overrides the default values of knobs, by key (KnobKeys).
	Grids map[string][]float64
	// Seeds every point runs with (the same for all: common random
	// numbers make the points comparable).
	Seeds []uint64
	// Targets are the SLO attainments (percent) at which each
	// autoscaler's cost is read off its frontier (default 95, 99).
	Targets []float64
	// Parallel runs this many simulations at once (default 1).
	Parallel int
	progress func(done, total int)
}

// SweepPoint is one setting of one autoscaler, over the seeds.
type SweepPoint struct {
	Autoscaler string `json:"autoscaler"`
	// Settings are the knob values, by key; Label writes them out.
	Settings map[string]float64 `json:"settings,omitempty"`
	Label    string             `json:"label"`
	// Default marks the point with the autoscaler's default settings
	// (the scenario's own, where it sets them).
	Default       bool `json:"default"`
	SLOAttainment Stat `json:"sloAttainmentPct"`
	Cost          Stat `json:"cost"`
	// Terminated is the requests that failed in flight on a pod that was
	// removed, per run.
	Terminated Stat `json:"terminated"`
	// Frontier marks the points no other point of the same autoscaler
	// beats on both mean SLO attainment and mean cost.
	Frontier bool `json:"frontier"`
	// WorstModelAttainment is, per seed, the lowest of the models' SLO
	// attainments (percent); WorstModelFrontier marks the frontier on it.
	// For one model they are the fleet's figures.
	WorstModelAttainment Stat `json:"worstModelSloAttainmentPct"`
	WorstModelFrontier   bool `json:"worstModelFrontier"`
}

// AtAttainment is an autoscaler's cost at a given SLO attainment, read off
// its frontier by linear interpolation between the two frontier points
// around it (mixing the two settings in time costs that much).
type AtAttainment struct {
	Autoscaler string  `json:"autoscaler"`
	TargetPct  float64 `json:"targetPct"`
	// Reached is false when no setting reaches the target; Cost is then 0.
	Reached bool    `json:"reached"`
	Cost    float64 `json:"cost,omitempty"`
	// UpperBound: even the cheapest setting swept exceeds the target,
	// so the cost there is at most Cost.
	UpperBound bool `json:"upperBound,omitempty"`
}

// Dominance compares one autoscaler's frontier with another's: A
// dominates B when, at every SLO attainment one of B's frontier points
// reaches, A's frontier costs no more.
type Dominance struct {
	A         string `json:"a"`
	B         string `json:"b"`
	Dominates bool   `json:"dominates"`
	// Beaten lists B's frontier points that A does not match, as
	// "slo% @ cost".
	Beaten []string `json:"beaten,omitempty"`
}

// SweepResult is a scenario's sweep.
type SweepResult struct {
	Scenario     string         `json:"scenario"`
	Seeds        []uint64       `json:"seeds"`
	Points       []SweepPoint   `json:"points"`
	AtAttainment []AtAttainment `json:"atAttainment"`
	Dominance    []Dominance    `json:"dominance,omitempty"`
	// WorstModelAtAttainment and WorstModelDominance are the same on the
	// worst model's attainment, for a scenario of several models.
	WorstModelAtAttainment []AtAttainment `json:"worstModelAtAttainment,omitempty"`
	WorstModelDominance    []Dominance    `json:"worstModelDominance,omitempty"`
	// Interrupted: the run was stopped; points missing a seed are left out.
	Interrupted bool `json:"interrupted,omitempty"`
}

// sweepPoints expands the spec into the points to run, with the scenario
// each runs (the knob values written into a copy of sc's autoscalers).
func sweepPoints(sc scenario.Scenario, spec SweepSpec) ([]SweepPoint, []scenario.Scenario) {
	points := make([]SweepPoint, 0, 64)
	scs := make([]scenario.Scenario, 0, 64)
	base := sc.WithDefaults().Autoscalers
	for _, name := range spec.Autoscalers {
		var keys []string
		for _, k := range sim.KnobKeys() {
			if sim.KnobAutoscaler(k) == name && (len(sim.KnobOf(k).Grid) > 0 || len(spec.Grids[k]) > 0) {
				keys = append(keys, k)
			}
		}
		combos := []map[string]float64{{}}
		for _, k := range keys {
			grid := spec.Grids[k]
			if grid == nil {
				grid = sim.KnobOf(k).Grid
			}
			grid = withValue(grid, sim.KnobValue(base, k))
			var next []map[string]float64
			for _, c := range combos {
				for _, v := range grid {
					m := map[string]float64{k: v}
					for kk, vv := range c {
						m[kk] = vv
					}
					next = append(next, m)
				}
			}
			combos = next
		}
		for _, c := range combos {
			s := sc
			s.Autoscalers = base
			s.Autoscalers.Default = nil
			def := true
			parts := make([]string, 0, len(keys))
			for _, k := range keys {
				*sim.KnobOf(k).Field(&s.Autoscalers) = c[k]
				def = def && c[k] == sim.KnobValue(base, k)
				parts = append(parts, strings.TrimPrefix(k, name+".")+"="+strconv.FormatFloat(c[k], 'g', -1, 64))
			}
			if len(c) == 0 {
				c = nil
			}
			points = append(points, SweepPoint{Autoscaler: name, Settings: c, Label: strings.Join(parts, " "), Default: def})
			scs = append(scs, s)
		}
	}
	return points, scs
}

// withValue returns grid with v added (sorted, no duplicates).
func withValue(grid []float64, v float64) []float64 {
	out := append([]float64(nil), grid...)
	if !containsFloat(out, v) {
		out = append(out, v)
	}
	sort.Float64s(out)
	return out
}

func containsFloat(xs []float64, v float64) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// SweepRuns is the number of simulations a sweep makes.
func SweepRuns(sc scenario.Scenario, spec SweepSpec) int {
	p, _ := sweepPoints(sc, spec)
	return len(p) * len(spec.Seeds)
}

// Sweep runs every point of the spec with every seed, spread over
// spec.Parallel workers, and returns the points with their frontier, the
// cost of each autoscaler at the target attainments and the dominance of
// the first autoscaler's frontier over each other's. progress (may be
// nil) is called after each run with the runs done and the total.
func Sweep(ctx context.Context, sc scenario.Scenario, spec SweepSpec, progress func(done, total int)) (*SweepResult, error) {
	spec.progress = progress
	if len(spec.Seeds) == 0 {
		return nil, fmt.Errorf("sweep: no seeds")
	}
	if err := sc.CheckRunnable(); err != nil {
		return nil, err
	}
	if err := sim.CheckAutoscalers(spec.Autoscalers); err != nil {
		return nil, err
	}
	points, scs := sweepPoints(sc, spec)
	m, err := runPoints(ctx, points, scs, spec)
	if err != nil {
		return nil, err
	}
	res := &SweepResult{Scenario: sc.Name, Seeds: spec.Seeds, Interrupted: ctx.Err() != nil}
	for i, p := range points {
		if !allTrue(m.done[i]) {
			continue
		}
		p.SLOAttainment, p.Cost, p.Terminated = statOf(m.slo[i]), statOf(m.cost[i]), statOf(m.term[i])
		p.WorstModelAttainment = statOf(m.worst[i])
		res.Points = append(res.Points, p)
	}
	res.compare(spec, len(sc.Models))
	return res, nil
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

// pointRuns are the figures of every point's runs, by point and seed.
type pointRuns struct {
	slo, worst, cost, term [][]float64
	done                   [][]bool
}

// runPoints runs every point with every seed; done says which runs
// finished (all of them unless ctx was cancelled).
func runPoints(ctx context.Context, points []SweepPoint, scs []scenario.Scenario, spec SweepSpec) (pointRuns, error) {
	n := len(spec.Seeds)
	grid := func() [][]float64 {
		g := make([][]float64, len(points))
		for i := range g {
			g[i] = make([]float64, n)
		}
		return g
	}
	m := pointRuns{slo: grid(), worst: grid(), cost: grid(), term: grid(), done: make([][]bool, len(points))}
	// Point by point, so that an interrupted sweep leaves whole points.
	jobs := make([]sim.Job, 0, len(points)*n)
	for i := range points {
		m.done[i] = make([]bool, n)
		for _, seed := range spec.Seeds {
			s := scs[i]
			s.Seed = seed
			jobs = append(jobs, sim.Job{Scenario: s, Autoscaler: points[i].Autoscaler})
		}
	}
	err := sim.RunJobs(ctx, jobs, spec.Parallel, spec.progress, func(k int, r *sim.Result) {
		i, j := k/n, k%n
		m.slo[i][j], m.cost[i][j], m.done[i][j] = 100*r.SLOAttainment, r.Cost, true
		m.term[i][j] = float64(r.FailedBy.Terminated)
		m.worst[i][j] = 100 * worstModel(r)
	})
	return m, err
}

// worstModel is the lowest of a run's models' SLO attainments (the fleet's
// without per-model figures).
func worstModel(r *sim.Result) float64 {
	if len(r.PerModel) == 0 {
		return r.SLOAttainment
	}
	w := r.PerModel[0].SLOAttainment
	for _, m := range r.PerModel[1:] {
		w = min(w, m.SLOAttainment)
	}
	return w
}
