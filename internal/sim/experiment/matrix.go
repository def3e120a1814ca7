package experiment

import (
	"context"
	"fmt"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// MatrixRun is one run of a matrix.
type MatrixRun struct {
	Config, Rate string
	Result       *sim.Result
}

// RunMatrix runs the scenario's matrix on up to parallel workers and
// returns its runs in order (configuration, rate, autoscaler, seed), those
// cut short by ctx left out. progress (may be nil) is called after each
// run with the runs done and the total.
func RunMatrix(ctx context.Context, sc scenario.Scenario, parallel int, progress func(done, total int)) ([]MatrixRun, error) {
	if sc.Matrix == nil {
		return nil, fmt.Errorf("scenario %q has no matrix", sc.Name)
	}
	if err := sc.CheckRunnable(); err != nil {
		return nil, err
	}
	m := sc.MatrixDefaults()
	var jobs []sim.Job
	var runs []MatrixRun
	for ci := range m.Configs {
		for ri := range m.Rates {
			cell := sc.Cell(&m.Configs[ci], &m.Rates[ri])
			if err := cell.Validate(); err != nil {
				return nil, fmt.Errorf("matrix configuration %q at rate %q: %w", m.Configs[ci].Name, m.Rates[ri].Name, err)
			}
			for _, a := range m.Autoscalers {
				for _, seed := range m.Seeds {
					c := cell
					c.Seed = seed
					jobs = append(jobs, sim.Job{Scenario: c, Autoscaler: a})
					runs = append(runs, MatrixRun{Config: m.Configs[ci].Name, Rate: m.Rates[ri].Name})
				}
			}
		}
	}
	err := sim.RunJobs(ctx, jobs, parallel, progress, func(k int, r *sim.Result) { runs[k].Result = r })
	if err != nil {
		return nil, err
	}
	done := runs[:0]
	for _, r := range runs {
		if r.Result != nil {
			done = append(done, r)
		}
	}
	return done, nil
}
