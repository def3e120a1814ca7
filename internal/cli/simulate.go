package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/sim"
	_ "github.com/llm-d-incubation/wva/internal/sim/baselines" // registers the autoscalers --autoscalers names
	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/report"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

type simulateOptions struct {
	file        string
	scenario    string
	autoscalers string
	seed        uint64
	out         string
	output      string
	noFiles     bool
	writeTraces string
	repeat      int
	parallel    int
	sweep       bool
	matrix      bool
	grids       []string
	attainment  []float64
	warmUp      float64
}

func newSimulateCommand() *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate a GPU inference fleet under WVA and baseline autoscalers, and compare them",
		Long: `Run a deterministic discrete-event simulation of a fleet of continuous-batching
LLM inference servers (a vLLM-v1-like scheduler: chunked prefill, a paged
KV cache with prefix caching and preemption; start-up delays; Kubernetes'
pod deletion and graceful termination; a gateway with routing and
saturation-based admission; Prometheus-like metrics) under each
autoscaler in turn, from the same seed, and compare them.

` + autoscalerHelp() + `

With no -f, the built-in "staircase" scenario runs (the paper's 2 → 5 → 10
requests/s); --scenario picks another built-in (see --help below for the
list). The table compares, per autoscaler: requests arrived, completed and
failed, goodput (requests served within the SLO per second), SLO
attainment, TTFT (from the gateway), ITL (per token) and E2E means and
percentiles, GPU-hours, cost, cost per 1 000 requests within the SLO, and
scaling actions; then throughput, preemptions, the prefix-cache hit rate
and failures by cause (timeout, rejected, shed, terminated, unservable).
Under the table, WVA's cost split by the rule that asked for each replica
(need, spare, saturation, safetyBlock, window, …: costBreakdown in
results.json). Results
(results.json, summary.csv, series-*.csv) and plots (PNG and SVG) go to
--out. The same scenario and seed give byte-identical JSON. Ctrl-C stops the
run and writes what was simulated so far.

Every scenario starts cold: the autoscalers see their first traffic at
time 0, and a change early in the scenario meets whatever they hold while
they learn it. --warmup SECONDS runs that much of each model's initial
rate first (its steps, ramps, spikes and sine move that much later; the
reports cover the warm-up too), as a deployment that has run for a while
meets them; make evaluate-warm reruns every shipped scenario so.

A model's workload is synthetic (an arrival process, a rate pattern and
token-count distributions, optionally SLO classes and shared prompt
prefixes) or a replayed CSV trace (workload.trace); --write-traces turns a
synthetic workload into such a trace. See docs/evaluation.md for the
scenario format.

--sweep runs each autoscaler over a grid of its settings (HPA: KV and queue
targets; KEDA: its threshold; llm-d's KEDA + EPP paths: their triggers'
targets, scale-up windows and control-law threshold; WVA: the spare
capacity's forecast quantile, the TTFT attainment it sizes for, the
saturation analyzer's KV threshold and the attainment feedback's target;
the clairvoyant bound: its margin; --help's --grid lists every key),
each setting over the same --repeat seeds (default 5), and writes per
setting the mean SLO attainment and cost with their spread (sweep.csv), the
frontier of each autoscaler (the settings no other of its settings beats on
both) as a plot (frontier.png, .svg), and the cost of each autoscaler at
equal SLO attainment, interpolated on its frontier (attainment.csv, default
95 and 99 %). --grid KEY=V1,V2,… replaces a setting's values; the
defaults' value is always added, so the defaults' point is in the sweep.

--matrix runs the scenario's matrix section: each of its configurations
(a gateway — router, scorer weights, admission policy — and the servers'
scheduling policy) at each of its rates, under each autoscaler, with each
seed (defaults 1, 2, 3; --autoscalers and --repeat replace them), and
writes per configuration, rate and autoscaler the goodput, admission,
cache and cost figures over the seeds and each SLO class's TTFT
percentiles with 95 % bootstrap intervals (matrix.json, matrix.csv, and
the report matrix.md, also printed). The shipped admission-matrix and
admission-step scenarios are the experiments of docs/admission.md
(make admission runs both).`,
		Example: `  wva simulate
  wva simulate --scenario cost-tiering --autoscalers wva,hpa,keda,clairvoyant,oracle
  wva simulate -f examples/scenarios/bursty.yaml --seed 7 --out /tmp/bursty -o json
  wva simulate --scenario bursty --write-traces /tmp/traces   # then edit, and replay with workload.trace
  wva simulate --scenario bursty --autoscalers wva,hpa --repeat 10   # mean and spread over seeds 1–10
  wva simulate --scenario bursty --sweep                             # cost–SLO frontiers over 5 seeds
  wva simulate --scenario flash-crowd --warmup 1800 --repeat 5       # the crowd after 30 min of steady traffic
  wva simulate --scenario diurnal --sweep --grid hpa.kvTarget=0.2,0.4,0.6,0.8 --attainment 97,99.5
  wva simulate --scenario admission-matrix --matrix --out /tmp/admission   # docs/admission.md's experiment`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.file, "file", "f", "", "scenario file (YAML or JSON); default: the built-in scenario of --scenario")
	fs.StringVar(&o.scenario, "scenario", "staircase", "built-in scenario: "+strings.Join(scenario.BuiltinNames(scenarios.FS), ", "))
	fs.StringVar(&o.autoscalers, "autoscalers", "", "comma-separated: "+strings.Join(sim.AutoscalerNames(), ", ")+" (default: the scenario's, else "+strings.Join(sim.DefaultAutoscalers(), ",")+")")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (default: the scenario's)")
	fs.StringVar(&o.out, "out", "wva-results", "folder for results and plots")
	fs.StringVarP(&o.output, "output", "o", "table", `output format: "table" or "json"`)
	fs.BoolVar(&o.noFiles, "no-files", false, "print only; write no results or plots")
	fs.IntVar(&o.repeat, "repeat", 1, "run the scenario with N seeds (the seed, seed+1, …) and print each autoscaler's mean, spread and range; writes seeds.csv to --out instead of the single-run files")
	fs.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "simulations run at once by --repeat and --sweep (results do not depend on it)")
	fs.BoolVar(&o.matrix, "matrix", false, "run the scenario's matrix section (configurations × rates × autoscalers × seeds; admission-matrix, admission-step) and write matrix.json, matrix.csv and matrix.md")
	fs.BoolVar(&o.sweep, "sweep", false, "sweep each autoscaler's settings over --repeat seeds (default 5) and write the cost–SLO frontiers")
	fs.StringArrayVar(&o.grids, "grid", nil, "with --sweep, KEY=V1,V2,… sets a swept setting's values (repeatable); KEY: "+strings.Join(sim.KnobKeys(), ", "))
	fs.Float64SliceVar(&o.attainment, "attainment", []float64{95, 99}, "with --sweep, the SLO attainments (%) at which to compare costs")
	fs.Float64Var(&o.warmUp, "warmup", 0, "precede the scenario with SECONDS of each model's initial rate (its steps, ramps, spikes and sine move that much later; the reports cover the warm-up too), so that the autoscalers meet its changes after steady traffic instead of at their first requests; not with a replayed trace or numRequests")
	fs.StringVar(&o.writeTraces, "write-traces", "", "write the requests each model receives to FOLDER/<model>.csv (the trace format workload.trace replays) and exit without simulating")
	return cmd
}

func (o *simulateOptions) run(cmd *cobra.Command) error {
	if err := o.validate(cmd); err != nil {
		return err
	}
	sc, err := o.load()
	if err != nil {
		return err
	}
	if o.seed != 0 {
		sc.Seed = o.seed
	}
	if sc, err = scenario.WarmUp(sc, o.warmUp); err != nil {
		return fmt.Errorf("--warmup: %w", err)
	}
	if o.writeTraces != "" {
		return writeScenarioTraces(cmd, o.writeTraces, sc)
	}
	var names []string
	if o.autoscalers != "" {
		names = strings.Split(o.autoscalers, ",")
		if err := sim.CheckAutoscalers(names); err != nil {
			return fmt.Errorf("--autoscalers: %w", err)
		}
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	if o.matrix {
		return o.runMatrix(cmd, ctx, sc, names)
	}
	if o.sweep {
		if !cmd.Flags().Changed("repeat") {
			o.repeat = 5
		}
		return o.runSweep(cmd, ctx, sc, names)
	}
	if o.repeat > 1 {
		return o.runSeeds(cmd, ctx, sc, names)
	}
	return o.runOnce(cmd, ctx, sc, names)
}

// runOnce runs the scenario once with every autoscaler named (all when
// none), writes the files and prints the comparison.
func (o *simulateOptions) runOnce(cmd *cobra.Command, ctx context.Context, sc scenario.Scenario, names []string) error {
	errw := cmd.ErrOrStderr()
	start := time.Now()
	last := time.Time{}
	progress := func(name string, t, total float64) {
		if time.Since(last) < time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(errw, "\r%s: %s %3.0f%% of %.0f s simulated (%.1f s)   ", sc.Name, name, 100*t/total, total, time.Since(start).Seconds())
	}
	if err := o.checkOut(); err != nil {
		return err
	}
	rs, err := sim.Compare(ctx, sc, names, progress)
	if err != nil {
		return err
	}
	if !last.IsZero() {
		fmt.Fprintln(errw)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(errw, "interrupted: the results cover the time simulated so far")
	}
	for _, r := range rs {
		for _, w := range r.Warnings {
			fmt.Fprintln(errw, "warning:", w)
		}
	}
	if err := o.writeFiles(errw, sc, rs, start); err != nil {
		return err
	}
	if o.output == "json" {
		return report.WriteJSON(cmd.OutOrStdout(), rs)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s (seed %d, %.0f s): %s\n\n", sc.Name, sc.Seed, sc.DurationSeconds, sc.Description)
	return report.WriteTable(cmd.OutOrStdout(), rs)
}

// validate checks the flags that need no scenario.
func (o *simulateOptions) validate(cmd *cobra.Command) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.repeat < 1 || o.repeat > 1000 {
		return fmt.Errorf("--repeat: must be 1 to 1000, got %d", o.repeat)
	}
	if o.parallel < 1 || o.parallel > 256 {
		return fmt.Errorf("--parallel: must be 1 to 256, got %d", o.parallel)
	}
	if !o.sweep && (len(o.grids) > 0 || cmd.Flags().Changed("attainment")) {
		return errors.New("--grid and --attainment need --sweep")
	}
	if err := o.validateSources(cmd); err != nil {
		return err
	}
	for _, a := range o.attainment {
		if !(a > 0 && a <= 100) {
			return fmt.Errorf("--attainment: each must be a percentage in (0, 100], got %v", a)
		}
	}
	return nil
}

// checkOut checks that --out can be written, unless --no-files: a run
// whose results could not be written fails before it starts, not after.
func (o *simulateOptions) checkOut() error {
	if o.noFiles {
		return nil
	}
	if err := checkWritable(o.out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// writeFiles writes the results and plots to --out, unless --no-files.
func (o *simulateOptions) writeFiles(errw io.Writer, sc scenario.Scenario, rs []*sim.Result, start time.Time) error {
	if o.noFiles {
		return nil
	}
	files, err := report.WriteFiles(o.out, rs)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	plots, err := report.WritePlots(o.out, sc, rs)
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	fmt.Fprintf(errw, "wrote %d files to %s (%s, …) in %.1f s\n", len(files)+len(plots), o.out, strings.Join(append(files[:1], plots[:1]...), ", "), time.Since(start).Seconds())
	return nil
}

// runSeeds runs the scenario with --repeat consecutive seeds and prints
// the per-autoscaler summaries.
func (o *simulateOptions) runSeeds(cmd *cobra.Command, ctx context.Context, sc scenario.Scenario, names []string) error {
	errw := cmd.ErrOrStderr()
	start := time.Now()
	first := sc.Seed
	if first == 0 {
		first = 1
	}
	all := make([]uint64, o.repeat)
	for i := range all {
		all[i] = first + uint64(i)
	}
	if err := o.checkOut(); err != nil {
		return err
	}
	var last time.Time
	seeds, runs, err := experiment.CompareSeeds(ctx, sc, names, all, o.parallel, func(done, total int) {
		if time.Since(last) < time.Second && done < total {
			return
		}
		last = time.Now()
		fmt.Fprintf(errw, "\r%s: %d of %d runs (%d seeds, %.1f s)   ", sc.Name, done, total, o.repeat, time.Since(start).Seconds())
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(errw)
	if ctx.Err() != nil {
		fmt.Fprintln(errw, "interrupted: the summary covers the seeds that finished")
	}
	if len(runs) == 0 {
		return errors.New("interrupted before the first seed finished")
	}
	ss := experiment.Summarize(seeds, runs)
	if !o.noFiles {
		if err := createFile(filepath.Join(o.out, "seeds.csv"), func(w io.Writer) error { return report.WriteSeedCSV(w, ss) }); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(errw, "wrote %s\n", filepath.Join(o.out, "seeds.csv"))
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(ss)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s (%.0f s): %s\n", sc.Name, sc.DurationSeconds, sc.Description)
	return report.WriteSeedTable(cmd.OutOrStdout(), ss)
}

// writeScenarioTraces writes one trace CSV per model of the scenario,
// named after the model with the characters that could leave the folder
// or confuse a shell replaced.
func writeScenarioTraces(cmd *cobra.Command, dir string, sc scenario.Scenario) error {
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("--write-traces: %w", err)
	}
	files := map[string]string{}
	for _, mod := range sc.Models {
		name := report.SafeFileName(mod.Name, '_') + ".csv"
		if other, dup := files[name]; dup {
			return fmt.Errorf("--write-traces: models %q and %q would both be written to %s; rename one", other, mod.Name, name)
		}
		files[name] = mod.Name
	}
	for m, mod := range sc.Models {
		path := filepath.Join(dir, report.SafeFileName(mod.Name, '_')+".csv")
		if err := createFile(path, func(w io.Writer) error { return sim.WriteTrace(w, sc, m) }); err != nil {
			return fmt.Errorf("--write-traces: %s: %w", path, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
	}
	return nil
}

func (o *simulateOptions) load() (scenario.Scenario, error) {
	if o.file == "" {
		return scenario.Builtin(scenarios.FS, o.scenario)
	}
	sc, err := scenario.LoadFile(o.file)
	if err != nil {
		return scenario.Scenario{}, fmt.Errorf("--file: %w", err)
	}
	return sc, nil
}

// validateSources checks where the scenario comes from and where traces go.
func (o *simulateOptions) validateSources(cmd *cobra.Command) error {
	if o.file != "" && cmd.Flags().Changed("scenario") {
		return errors.New("-f and --scenario: give one (a file, or a built-in scenario)")
	}
	if cmd.Flags().Changed("write-traces") && strings.TrimSpace(o.writeTraces) == "" {
		return errors.New("--write-traces: needs a folder")
	}
	if o.matrix && (o.sweep || o.writeTraces != "") {
		return errors.New("--matrix runs the scenario's matrix: it does not go with --sweep or --write-traces")
	}
	return nil
}

// autoscalerHelp is the help's paragraph on the registered autoscalers,
// wrapped at 76 columns.
func autoscalerHelp() string {
	bs := sim.Baselines()
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		parts = append(parts, b.Usage()+" ("+b.Summary+")")
	}
	text := "Autoscalers: " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1] + "."
	var out, line strings.Builder
	for _, w := range strings.Fields(text) {
		if line.Len() > 0 && line.Len()+1+len(w) > 76 {
			out.WriteString(line.String() + "\n")
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(w)
	}
	out.WriteString(line.String())
	return out.String()
}
