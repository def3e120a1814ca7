// Package study is the convergence study of the tuner: synthetic traces
// from known parameters, several starts and noise levels, the robust tuner
// against the reference tuner's configuration, with the figures and plots that
// docs/tuner.md reports. `wva tune study` runs it.
package study

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Truths are the realistic parameter sets of the study (iteration model).
// They are illustrative, not measurements: an 8B model on H100-class and
// A100-class GPUs and a 70B model on four H100-class GPUs.
var Truths = []tuner.Truth{
	{Name: "8B-H100", ServiceModel: tuner.ModelIteration, Params: tuner.Params{Alpha: 6, Beta: 0.012, Gamma: 3.5e-5},
		InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 256},
	{Name: "8B-A100", ServiceModel: tuner.ModelIteration, Params: tuner.Params{Alpha: 9, Beta: 0.025, Gamma: 8e-5},
		InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 256},
	{Name: "70B-4xH100", ServiceModel: tuner.ModelIteration, Params: tuner.Params{Alpha: 18, Beta: 0.03, Gamma: 1.5e-4},
		InputTokens: 2048, OutputTokens: 512, MaxBatchSize: 128},
}

// Starts are the initial estimates: the bootstrap from the first
// observation (falling back to the defaults), the defaults, and 2× and 0.5×
// the truth.
var Starts = []string{"bootstrap", "default", "2x", "0.5x"}

// Noises are the relative standard deviations of the observation noise.
var Noises = []float64{0, 0.02, 0.05}

// HeldOutLoads are the loads, as fractions of the current truth's λmax,
// at which predictions are scored.
var HeldOutLoads = []float64{0.2, 0.5, 0.75}

// maxError caps a reported error (a factor of 1000) so that every figure
// stays finite.
const maxError = 1000

// Tolerance is the largest relative prediction error that counts as
// converged.
const Tolerance = 0.05

// Spec sets the size of the study.
type Spec struct {
	Cycles     int     // per run (default 60)
	JumpAt     int     // cycle of the parameter jump (default Cycles/2)
	JumpFactor float64 // (default 1.3: a 30 % slower node)
	Seed       uint64  // trace seed (default 1)
	Strategies []tuner.Strategy
	Truths     []tuner.Truth
	Starts     []string
	Noises     []float64
}

func (s Spec) withDefaults() Spec {
	if s.Cycles == 0 {
		s.Cycles = 60
	}
	if s.JumpAt == 0 {
		s.JumpAt = s.Cycles / 2
	}
	if s.JumpFactor == 0 {
		s.JumpFactor = 1.3
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if len(s.Strategies) == 0 {
		s.Strategies = []tuner.Strategy{tuner.StrategyRobust, tuner.StrategySeed}
	}
	if len(s.Truths) == 0 {
		s.Truths = Truths
	}
	if len(s.Starts) == 0 {
		s.Starts = Starts
	}
	if s.Noises == nil {
		s.Noises = Noises
	}
	return s
}

// Point is one cycle of a run.
type Point struct {
	Cycle    int
	Accepted bool
	NIS      float64
	Error    float64 // worst relative error of TTFT and ITL over the held-out loads
	Params   tuner.Params
}

// Result is one run: a truth, a start, a noise level and a strategy.
type Result struct {
	Truth    string
	Start    string
	Noise    float64
	Strategy tuner.Strategy
	// ConvergedAt is the number of cycles after which the held-out
	// predictions stay within Tolerance until the jump; -1 if they never do.
	ConvergedAt int
	// ReconvergedAt counts the cycles after the jump until they stay within
	// Tolerance again; -1 if they never do.
	ReconvergedAt int
	// ParamError is the relative error of each parameter just before the
	// jump (α, β, γ).
	ParamError []float64
	Accepted   int
	Steps      int
	// MeanNIS is the mean NIS over the updates the gate accepted (warm-up
	// and overload updates, which bypass the gate, are left out), and
	// Gated counts them.
	MeanNIS float64
	Gated   int
	// Moved is false when the estimate never left its start.
	Moved      bool
	Trajectory []Point
}

// Run runs every combination of the spec. The same spec gives the same
// results.
func Run(spec Spec) ([]Result, error) { return RunContext(context.Background(), spec) }

// RunContext is Run, stopped with ctx's error when ctx is done (checked
// every cycle).
func RunContext(ctx context.Context, spec Spec) ([]Result, error) {
	spec = spec.withDefaults()
	var out []Result
	for _, tr := range spec.Truths {
		for _, noise := range spec.Noises {
			trace := tuner.TraceSpec{Cycles: spec.Cycles, Noise: noise, JumpAt: spec.JumpAt, JumpFactor: spec.JumpFactor,
				MaxQueueSize: 100, Seed: spec.Seed}
			obs, err := tuner.Synthesize(tr, trace)
			if err != nil {
				return nil, err
			}
			for _, strategy := range spec.Strategies {
				for _, start := range spec.Starts {
					r, err := runOne(ctx, tr, trace, obs, start, strategy)
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					if err != nil {
						return nil, fmt.Errorf("study %s %s %s noise %.2f: %w", tr.Name, strategy, start, noise, err)
					}
					out = append(out, r)
				}
			}
		}
	}
	return out, nil
}

// startParams returns the initial estimate for a start name.
func startParams(tr tuner.Truth, start string, first tuner.Observation) (tuner.Params, error) {
	scaled := func(f float64) tuner.Params {
		p := tr.Params
		p.Alpha, p.Beta, p.Gamma, p.Delta = p.Alpha*f, p.Beta*f, p.Gamma*f, p.Delta*f
		return p
	}
	switch start {
	case "bootstrap":
		if p, ok := tuner.Bootstrap(tr.ServiceModel, first); ok {
			return p, nil
		}
		return tuner.Defaults(tr.ServiceModel), nil
	case "default":
		return tuner.Defaults(tr.ServiceModel), nil
	case "2x":
		return scaled(2), nil
	case "0.5x":
		return scaled(0.5), nil
	}
	return tuner.Params{}, fmt.Errorf("unknown start %q", start)
}

func runOne(ctx context.Context, tr tuner.Truth, trace tuner.TraceSpec, obs []tuner.Observation, start string, strategy tuner.Strategy) (Result, error) {
	init, err := startParams(tr, start, obs[0])
	if err != nil {
		return Result{}, err
	}
	tu, err := tuner.New(tuner.Config{ServiceModel: tr.ServiceModel, Strategy: strategy}, init)
	if err != nil {
		return Result{}, err
	}
	r := Result{Truth: tr.Name, Start: start, Noise: trace.Noise, Strategy: strategy, Steps: len(obs)}
	nisSum := 0.0
	for c, o := range obs {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		st, err := tu.Step(o)
		if err != nil {
			return Result{}, err
		}
		if st.Accepted {
			r.Accepted++
		}
		if st.Accepted && st.Gated {
			r.Gated++
			nisSum += st.NIS
		}
		if st.Params != init {
			r.Moved = true
		}
		e, err := heldOutError(tr, tr.ParamsAt(c, trace), tu)
		if err != nil {
			return Result{}, err
		}
		r.Trajectory = append(r.Trajectory, Point{Cycle: c + 1, Accepted: st.Accepted, NIS: st.NIS, Error: e, Params: st.Params})
		if c == trace.JumpAt-1 {
			r.ParamError = paramError(tr.Params, st.Params)
		}
	}
	if r.Gated > 0 {
		r.MeanNIS = nisSum / float64(r.Gated)
	}
	r.ConvergedAt = settled(r.Trajectory, 0, trace.JumpAt)
	r.ReconvergedAt = settled(r.Trajectory, trace.JumpAt, len(obs))
	return r, nil
}

// settled returns how many cycles from `from` it takes until every error up
// to `to` is within Tolerance, or -1.
func settled(tr []Point, from, to int) int {
	k := to
	for c := to - 1; c >= from; c-- {
		if tr[c].Error > Tolerance {
			break
		}
		k = c
	}
	if k == to {
		return -1
	}
	return k - from + 1
}

// heldOutError scores the tuner's predictions at the held-out loads (mean
// request) against the truth.
func heldOutError(tr tuner.Truth, truth tuner.Params, tu *tuner.Tuner) (float64, error) {
	cur := tr
	cur.Params = truth
	lmax, err := cur.MaxRate(100)
	if err != nil {
		return 0, err
	}
	worst := 0.0
	for _, load := range HeldOutLoads {
		want, err := cur.Observe(truth, load*lmax, tr.InputTokens, tr.OutputTokens, 100)
		if err != nil {
			return 0, err
		}
		got, perr := tu.Predict(want)
		if perr != nil {
			return maxError, nil //nolint:nilerr // an estimate the model cannot evaluate scores the worst error
		}
		worst = math.Max(worst, math.Max(math.Abs(got.TTFTMs/want.TTFTMs-1), math.Abs(got.ITLMs/want.ITLMs-1)))
	}
	return math.Min(worst, maxError), nil
}

func paramError(truth, got tuner.Params) []float64 {
	return []float64{got.Alpha/truth.Alpha - 1, got.Beta/truth.Beta - 1, got.Gamma/truth.Gamma - 1}
}

// Spread summarises the held-out error after a fixed number of cycles over
// many traces.
type Spread struct {
	Noise                     float64
	Runs                      int
	Median, P90, P99, Max     float64
	Within                    int // runs within Tolerance
	CyclesObserved, NumTraces int
}

// ErrorAfter runs the robust tuner from every start on `traces` traces per
// truth and noise level (seeds 1..traces), `cycles` cycles each, and
// summarises the held-out error of the final estimate.
func ErrorAfter(cycles, traces int) ([]Spread, error) {
	return ErrorAfterContext(context.Background(), cycles, traces)
}

// ErrorAfterContext is ErrorAfter, stopped with ctx's error when ctx is
// done (checked every run).
func ErrorAfterContext(ctx context.Context, cycles, traces int) ([]Spread, error) {
	var out []Spread
	for _, noise := range Noises {
		var errs []float64
		for i := range traces {
			seed := uint64(i) + 1
			for _, tr := range Truths {
				obs, err := tuner.Synthesize(tr, tuner.TraceSpec{Cycles: cycles, Noise: noise, MaxQueueSize: 100, Seed: seed})
				if err != nil {
					return nil, err
				}
				for _, start := range Starts {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					e, err := finalError(tr, obs, start)
					if err != nil {
						return nil, err
					}
					errs = append(errs, e)
				}
			}
		}
		out = append(out, spreadOf(noise, errs, cycles, traces))
	}
	return out, nil
}

func finalError(tr tuner.Truth, obs []tuner.Observation, start string) (float64, error) {
	init, err := startParams(tr, start, obs[0])
	if err != nil {
		return 0, err
	}
	tu, err := tuner.New(tuner.Config{ServiceModel: tr.ServiceModel}, init)
	if err != nil {
		return 0, err
	}
	for _, o := range obs {
		if _, err := tu.Step(o); err != nil {
			return 0, err
		}
	}
	return heldOutError(tr, tr.Params, tu)
}

func spreadOf(noise float64, errs []float64, cycles, traces int) Spread {
	sort.Float64s(errs)
	s := Spread{Noise: noise, Runs: len(errs), CyclesObserved: cycles, NumTraces: traces}
	q := func(f float64) float64 { return errs[min(len(errs)-1, int(f*float64(len(errs))))] }
	s.Median, s.P90, s.P99, s.Max = q(0.5), q(0.9), q(0.99), errs[len(errs)-1]
	for _, e := range errs {
		if e <= Tolerance {
			s.Within++
		}
	}
	return s
}
