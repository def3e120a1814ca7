package sim

import (
	"context"
	"errors"

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
	if len(names) == 0 {
		return nil, errors.New("no autoscaler to run: name one (--autoscalers) or list autoscalers.default in the scenario")
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
