package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/capmodel"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// capacityResult is one line of "model capacity" output. Its JSON keys
// are a contract used outside this code base: add keys, never rename
// them.
type capacityResult struct {
	Model             string  `json:"model"`
	Variant           string  `json:"variant"`
	Replicas          int     `json:"replicas"`
	Attainment        float64 `json:"attainment"`
	MaxRate           float64 `json:"maxRate"`
	MaxRatePerReplica float64 `json:"maxRatePerReplica"`
	// Method: "fleet" (the capacity model) or "mean-latency" (attainment
	// 0: the queueing model's mean TTFT and ITL, one queue per replica).
	Method string `json:"method"`
	// MeasuredMaxRate is the simulator's measured capacity (--measure).
	MeasuredMaxRate *float64 `json:"measuredMaxRate,omitempty"`
	Error           string   `json:"error,omitempty"`
}

// fleetAnalyzeResult is one line of "model analyze --scenario" output.
type fleetAnalyzeResult struct {
	Model      string  `json:"model"`
	Variant    string  `json:"variant"`
	Replicas   int     `json:"replicas"`
	RateRPS    float64 `json:"rate_rps"`
	Arrived    int     `json:"arrived"`
	Completed  int     `json:"completed"`
	Failed     int     `json:"failed"`
	Attainment float64 `json:"attainment"`
	TTFTP50Ms  float64 `json:"ttft_p50_ms"`
	TTFTP90Ms  float64 `json:"ttft_p90_ms"`
	TTFTP95Ms  float64 `json:"ttft_p95_ms"`
	TTFTP99Ms  float64 `json:"ttft_p99_ms"`
	ITLP50Ms   float64 `json:"itl_p50_ms"`
	ITLP90Ms   float64 `json:"itl_p90_ms"`
	ITLP95Ms   float64 `json:"itl_p95_ms"`
	ITLP99Ms   float64 `json:"itl_p99_ms"`
	Error      string  `json:"error,omitempty"`
}

// fleetOptions pick a scenario's variants and a fleet size.
type fleetOptions struct {
	file, builtin  string
	model, variant string
	replicas       int
	requests       int
	seed           uint64
	output         string
	measure        bool
	attainment     float64
	// fileFlag names the flag that gave file, for errors ("--file" unless
	// set).
	fileFlag string
}

func newModelCapacityCommand() *cobra.Command {
	o := &fleetOptions{}
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "The largest rate N replicas of each variant of a scenario serve with a share P of requests within the SLO",
		Long: `Capacity of every model and variant of a simulator scenario.

For each variant, WVA's capacity model finds the largest constant Poisson
arrival rate (maxRate, requests/s) at which --replicas replicas of that
variant alone, behind the scenario's gateway router, serve at least the share
--attainment of the model's requests within its SLO — TTFT and ITL, judged
per request — with the model's own token distributions, classes and shared
prefixes. maxRatePerReplica is maxRate / replicas: more than one replica's
capacity in a pooled fleet, since the router spreads the load.

The capacity model runs the variant's server model (vLLM v1's scheduler,
paged KV cache with preemption, the scenario's latency model and
coefficients) behind the router at a series of rates, 6 000 to 60 000
requests each (about 600 misses at the target), and bisects the rate; it is
deterministic (--seed). docs/queueing.md describes it and how it was
validated against the simulator.

--attainment 0 keeps the mean-latency sizing of WVA's queueing model: the
largest rate at which one replica's mean TTFT and ITL meet the targets,
times the replicas (each replica its own queue). --measure also measures the
capacity with the simulator itself (static fleets of the scenario's gateway
and metrics pipeline), to compare.

Output: a table, or with -o json an array of objects with model, variant,
replicas, attainment, maxRate, maxRatePerReplica, method (fleet or
mean-latency), measuredMaxRate (with --measure) and error.`,
		Example: `  wva model capacity -f examples/scenarios/staircase.yaml
  wva model capacity --scenario compute-bound --replicas 4 --attainment 0.95 -o json
  wva model capacity --scenario production-chat --replicas 2 --measure`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCapacity(cmd, o)
		},
	}
	fs := cmd.Flags()
	o.addFleetFlags(cmd)
	fs.Float64Var(&o.attainment, "attainment", 0.99, "share of requests within the SLO, in [0, 1]; 0: the queueing model's mean-latency sizing")
	fs.BoolVar(&o.measure, "measure", false, "also measure the capacity with the simulator (slower)")
	return cmd
}

func (o *fleetOptions) addFleetFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&o.file, "file", "f", "", "scenario file (YAML or JSON)")
	fs.StringVar(&o.builtin, "scenario", "", "built-in scenario instead of -f: "+strings.Join(scenario.BuiltinNames(scenarios.FS), ", "))
	fs.StringVar(&o.model, "model", "", "only this model (default: every model)")
	fs.StringVar(&o.variant, "variant", "", "only this variant (default: every variant)")
	fs.IntVar(&o.replicas, "replicas", 1, fmt.Sprintf("replicas of the variant, 1 to %d", capacity.MaxReplicas))
	fs.IntVar(&o.requests, "requests", 0, "requests per run of the capacity model (0: enough for about 600 misses at the target)")
	fs.Uint64Var(&o.seed, "seed", capacity.DefaultSettings().Seed, "the capacity model's random seed")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
}

// load reads the scenario and checks the flags that do not depend on it.
func (o *fleetOptions) load() (*scenario.Scenario, error) {
	if err := checkOutput(o.output); err != nil {
		return nil, err
	}
	if o.replicas < 1 || o.replicas > capacity.MaxReplicas {
		return nil, fmt.Errorf("--replicas: must be between 1 and %d, got %d", capacity.MaxReplicas, o.replicas)
	}
	if o.requests < 0 || o.requests > 1_000_000 {
		return nil, fmt.Errorf("--requests: must be between 0 (automatic) and 1000000, got %d", o.requests)
	}
	var sc scenario.Scenario
	var err error
	switch {
	case o.file != "" && o.builtin != "":
		return nil, errors.New("-f and --scenario: give one (a file, or a built-in scenario)")
	case o.file != "":
		if sc, err = scenario.LoadFile(o.file); err != nil {
			flag := o.fileFlag
			if flag == "" {
				flag = "--file"
			}
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	case o.builtin != "":
		if sc, err = scenario.Builtin(scenarios.FS, o.builtin); err != nil {
			return nil, fmt.Errorf("--scenario: %w", err)
		}
	default:
		return nil, errors.New("-f: a scenario file is required (or --scenario NAME for a built-in one)")
	}
	d := sc.WithDefaults()
	return &d, nil
}

// targets are the (model, variant) pairs the flags select.
func (o *fleetOptions) targets(sc *scenario.Scenario) ([][2]int, error) {
	var out [][2]int
	for m, mod := range sc.Models {
		if o.model != "" && mod.Name != o.model {
			continue
		}
		for j, v := range mod.Variants {
			if o.variant == "" || v.Name == o.variant {
				out = append(out, [2]int{m, j})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no variant matches --model %q --variant %q in scenario %q", o.model, o.variant, sc.Name)
	}
	return out, nil
}

func (o *fleetOptions) settings(p float64) capacity.Settings {
	set := capacity.SettingsFor(p)
	if o.requests > 0 {
		set.Requests = o.requests
	}
	set.Seed = o.seed
	return set
}

func runCapacity(cmd *cobra.Command, o *fleetOptions) error {
	if !(o.attainment >= 0 && o.attainment <= 1) {
		return fmt.Errorf("--attainment: must be a share in [0, 1], got %g", o.attainment)
	}
	sc, err := o.load()
	if err != nil {
		return err
	}
	ts, err := o.targets(sc)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	errw := cmd.ErrOrStderr()
	var rs []capacityResult
	failed := 0
	for k, t := range ts {
		mod, v := &sc.Models[t[0]], &sc.Models[t[0]].Variants[t[1]]
		fmt.Fprintf(errw, "[%d/%d] %s/%s: %d replica(s) at %g attainment…\n", k+1, len(ts), mod.Name, v.Name, o.replicas, o.attainment)
		r := capacityResult{Model: mod.Name, Variant: v.Name, Replicas: o.replicas, Attainment: o.attainment, Method: "fleet"}
		if o.attainment == 0 {
			r.Method = "mean-latency"
			r.MaxRate, err = meanLatencyCapacity(mod, v, o.replicas)
		} else {
			r.MaxRate, err = capmodel.Predicted(ctx, sc, t[0], t[1], o.replicas, o.attainment, o.settings(o.attainment))
		}
		if err == nil && o.measure && o.attainment > 0 {
			m := capmodel.Measured(ctx, sc, t[0], t[1], o.replicas, o.attainment)
			r.MeasuredMaxRate = &m
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			r.Error = err.Error()
			failed++
		}
		r.MaxRatePerReplica = r.MaxRate / float64(o.replicas)
		rs = append(rs, r)
	}
	if err := printCapacity(cmd.OutOrStdout(), o.output, rs); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d variants failed", failed, len(rs))
	}
	return nil
}

// meanLatencyCapacity is the queueing model's sizing of one replica
// against the model's mean TTFT and ITL targets (what WVA's engine did
// before the capacity model), times the replicas. The linear (BLIS) step
// model maps onto the queueing package's linear model: a decode step of n
// requests takes β0 + β2·n, a prefill of n prompts of i tokens β0 +
// β1·i·n (the front end's α0, α1 and the per-token α2 are left out).
func meanLatencyCapacity(mod *scenario.Model, v *scenario.Variant, n int) (float64, error) {
	cfg := sim.ServerConfig(v)
	var sm queueing.ServiceModel = queueing.Iteration{Alpha: cfg.Iteration.Alpha, Beta: cfg.Iteration.Beta, Gamma: cfg.Iteration.Gamma}
	if cfg.LatencyModel == "linear" {
		l := cfg.Linear
		sm = queueing.Linear{Alpha: l.Beta0, Beta: l.Beta2, Gamma: l.Beta0, Delta: l.Beta1}
	}
	in, out := mod.Workload.Input.BoundedMean(), math.Max(mod.Workload.Output.BoundedMean(), 1)
	batch := v.MaxBatchSize
	if kv := v.KVBlocks * v.BlockSize; kv > 0 {
		batch = max(1, min(batch, int(float64(kv)/(in+out))))
	}
	a, err := queueing.NewAnalyzer(queueing.Config{Model: sm, Workload: queueing.Workload{InputTokens: in, OutputTokens: out},
		MaxBatchSize: batch, MaxQueueSize: 100})
	if err != nil {
		return 0, err
	}
	sz, err := a.Size(queueing.Targets{TTFTMs: mod.SLO.TTFTMs, ITLMs: mod.SLO.ITLMs})
	if err != nil {
		return 0, err
	}
	return sz.CapacityRPS * float64(n), nil
}

func printCapacity(w io.Writer, format string, rs []capacityResult) error {
	if format == "json" {
		return writeJSON(w, true, rs)
	}
	cols := []column[capacityResult]{
		{"MODEL", func(r capacityResult) string { return r.Model }},
		{"VARIANT", func(r capacityResult) string { return r.Variant }},
		{"REPLICAS", func(r capacityResult) string { return fmt.Sprint(r.Replicas) }},
		{"ATTAINMENT", func(r capacityResult) string { return pct(r.Attainment) }},
		{"MAX RATE (req/s)", func(r capacityResult) string { return num(r.MaxRate) }},
		{"PER REPLICA", func(r capacityResult) string { return num(r.MaxRatePerReplica) }},
		{"METHOD", func(r capacityResult) string { return r.Method }},
	}
	if len(rs) > 0 && rs[0].MeasuredMaxRate != nil {
		cols = append(cols, column[capacityResult]{"MEASURED", func(r capacityResult) string {
			if r.MeasuredMaxRate == nil {
				return "-"
			}
			return fmt.Sprintf("%s (%+.1f%%)", num(*r.MeasuredMaxRate), 100*(r.MaxRate / *r.MeasuredMaxRate - 1))
		}})
	}
	return writeTable(w, true, rs, cols, func(r capacityResult) string { return r.Error })
}

// runFleetAnalyze is "model analyze --scenario": the capacity model's
// latencies and attainment for --replicas replicas of each variant at
// --rate.
func runFleetAnalyze(cmd *cobra.Command, o *fleetOptions, rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("--rate: must be a positive finite number of requests/s, got %g", rate)
	}
	sc, err := o.load()
	if err != nil {
		return err
	}
	ts, err := o.targets(sc)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var rs []fleetAnalyzeResult
	failed := 0
	for _, t := range ts {
		mod, v := &sc.Models[t[0]], &sc.Models[t[0]].Variants[t[1]]
		r := fleetAnalyzeResult{Model: mod.Name, Variant: v.Name, Replicas: o.replicas, RateRPS: rate}
		f, err := capmodel.Fleet(sc, t[0], t[1], o.replicas)
		var out capacity.Outcome
		if err == nil {
			out, err = capacity.Analyze(ctx, f, rate, o.settings(0.99))
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			r.Error = err.Error()
			failed++
		}
		r.Arrived, r.Completed, r.Failed, r.Attainment = out.Arrived, out.Completed, out.Failed, out.Attainment
		r.TTFTP50Ms, r.TTFTP90Ms, r.TTFTP95Ms, r.TTFTP99Ms = out.TTFT.P50, out.TTFT.P90, out.TTFT.P95, out.TTFT.P99
		r.ITLP50Ms, r.ITLP90Ms, r.ITLP95Ms, r.ITLP99Ms = out.ITL.P50, out.ITL.P90, out.ITL.P95, out.ITL.P99
		rs = append(rs, r)
	}
	if err := printFleetAnalyze(cmd.OutOrStdout(), o.output, rs); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d variants failed", failed, len(rs))
	}
	return nil
}

func printFleetAnalyze(w io.Writer, format string, rs []fleetAnalyzeResult) error {
	if format == "json" {
		return writeJSON(w, true, rs)
	}
	ms := func(f func(fleetAnalyzeResult) float64) func(fleetAnalyzeResult) string {
		return func(r fleetAnalyzeResult) string { return num(f(r)) }
	}
	cols := []column[fleetAnalyzeResult]{
		{"MODEL", func(r fleetAnalyzeResult) string { return r.Model }},
		{"VARIANT", func(r fleetAnalyzeResult) string { return r.Variant }},
		{"REPLICAS", func(r fleetAnalyzeResult) string { return fmt.Sprint(r.Replicas) }},
		{"RATE", ms(func(r fleetAnalyzeResult) float64 { return r.RateRPS })},
		{"ATTAINMENT", func(r fleetAnalyzeResult) string { return pct(r.Attainment) }},
		{"TTFT p50/p90/p99 (ms)", func(r fleetAnalyzeResult) string {
			return num(r.TTFTP50Ms) + " / " + num(r.TTFTP90Ms) + " / " + num(r.TTFTP99Ms)
		}},
		{"ITL p50/p90/p99 (ms)", func(r fleetAnalyzeResult) string {
			return num(r.ITLP50Ms) + " / " + num(r.ITLP90Ms) + " / " + num(r.ITLP99Ms)
		}},
		{"FAILED", func(r fleetAnalyzeResult) string { return fmt.Sprint(r.Failed) }},
	}
	return writeTable(w, true, rs, cols, func(r fleetAnalyzeResult) string { return r.Error })
}
