// Package experiment runs the simulator's experiments over many runs: a
// comparison over seeds and its summary (who wins each seed, means and
// spreads), a sweep of the autoscalers' settings with its frontiers and
// costs at equal attainment, and the admission matrix with its cells. Each
// run is a simulation of package sim (sim.RunJobs spreads them over
// workers); package report renders what these compute. It links the
// baselines (package baselines registers them), so that every experiment
// can run each of them by name.
package experiment

import _ "github.com/llm-d-incubation/wva/internal/sim/baselines" // registers the autoscalers
