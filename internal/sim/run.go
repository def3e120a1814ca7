package sim

import (
	"context"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// Compare runs the scenario once per autoscaler, each from the same seed
// (the same requests arrive in every run), and returns the results in the
// order asked.
func Compare(ctx context.Context, sc scenario.Scenario, names []string, progress func(name string, simTime, total float64)) ([]*Result, error) {
	if err := sc.CheckRunnable(); err != nil {
		return nil, err
	}
	full := sc.WithDefaults()
	if len(names) == 0 {
		names = full.Autoscalers.Default
	}
	if err := CheckAutoscalers(names); err != nil {
		return nil, err
	}
	var out []*Result
	for _, name := range names {
		a, err := NewAutoscaler(name, &sc)
		if err != nil {
			return nil, err
		}
		var cb func(float64)
		if progress != nil {
			cb = func(t float64) { progress(a.Name(), t, full.DurationSeconds) }
		}
		out = append(out, New(sc, a).Run(ctx, cb))
		select {
		case <-ctx.Done():
			return out, nil // interrupted: the partial results stand
		default:
		}
	}
	return out, nil
}

// CompareSeeds runs Compare for each seed, spreading the runs (one per seed
// and autoscaler) over parallel workers. It returns the seeds that
// finished, in order, with their results; when ctx is cancelled the seeds
// with a missing run are left out. progress (may be nil) is called after
// each run with the runs done and the total.
func CompareSeeds(ctx context.Context, sc scenario.Scenario, names []string, seeds []uint64, parallel int, progress func(done, total int)) ([]uint64, [][]*Result, error) {
	if len(names) == 0 {
		names = sc.WithDefaults().Autoscalers.Default
	}
	if err := CheckAutoscalers(names); err != nil {
		return nil, nil, err
	}
	if err := sc.CheckRunnable(); err != nil {
		return nil, nil, err
	}
	// Seed by seed, so that an interrupted run leaves whole seeds.
	jobs := make([]job, 0, len(seeds)*len(names))
	for _, seed := range seeds {
		s := sc
		s.Seed = seed
		for _, name := range names {
			jobs = append(jobs, job{sc: s, autoscaler: name})
		}
	}
	runs := make([][]*Result, len(seeds))
	for i := range runs {
		runs[i] = make([]*Result, len(names))
	}
	err := runJobs(ctx, jobs, parallel, progress, func(k int, r *Result) {
		runs[k/len(names)][k%len(names)] = r
	})
	if err != nil {
		return nil, nil, err
	}
	var doneSeeds []uint64
	var doneRuns [][]*Result
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

// A job is one simulation: an autoscaler over a scenario (with its seed).
type job struct {
	sc         scenario.Scenario
	autoscaler string
}

// runJobs runs the jobs on up to parallel workers, in order, and passes
// keep each result that finished (not cut short by ctx) with its job's
// index; keep is called from the workers, once per index. It stops at the
// first error (an autoscaler that cannot be built) or when ctx is done.
// progress (may be nil) is called after each job with the jobs done and
// the total.
func runJobs(ctx context.Context, jobs []job, parallel int, progress func(done, total int), keep func(k int, r *Result)) error {
	return runParallel(ctx, len(jobs), parallel, func(k int) error {
		s := jobs[k].sc
		a, err := NewAutoscaler(jobs[k].autoscaler, &s)
		if err != nil {
			return err
		}
		if r := New(s, a).Run(ctx, nil); !r.Interrupted {
			keep(k, r)
		}
		return nil
	}, progress)
}
