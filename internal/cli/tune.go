package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// tuneOptions are the flags of "wva tune".
type tuneOptions struct {
	serviceModel string
	file         string
	init         string
	strategy     string
	maxQueueSize int
	output       string
}

// tuneStep is one row of "wva tune" output. Its JSON keys are a contract
// used outside this code base: add keys, never rename them.
type tuneStep struct {
	Line       int      `json:"line"`
	Alpha      float64  `json:"alpha"`
	Beta       float64  `json:"beta"`
	Gamma      float64  `json:"gamma"`
	Delta      *float64 `json:"delta,omitempty"`
	NIS        float64  `json:"nis"`
	Accepted   bool     `json:"accepted"`
	Reason     string   `json:"reason"`
	TTFTObsMs  float64  `json:"ttft_obs_ms"`
	ITLObsMs   float64  `json:"itl_obs_ms"`
	TTFTPredMs float64  `json:"ttft_pred_ms"`
	ITLPredMs  float64  `json:"itl_pred_ms"`
}

// tuneResult is the output of "wva tune"; the top-level parameters are the
// final estimate.
type tuneResult struct {
	ServiceModel   string      `json:"service_model"`
	Strategy       string      `json:"strategy"`
	Init           string      `json:"init"`
	Alpha          float64     `json:"alpha"`
	Beta           float64     `json:"beta"`
	Gamma          float64     `json:"gamma"`
	Delta          *float64    `json:"delta,omitempty"`
	Covariance     [][]float64 `json:"covariance"`
	RelativeStdDev []float64   `json:"relative_std_dev"`
	Accepted       int         `json:"accepted"`
	Rejected       int         `json:"rejected"`
	SkippedRows    int         `json:"skipped_rows"`
	Steps          []tuneStep  `json:"steps"`
}

func newTuneCommand() *cobra.Command {
	o := &tuneOptions{}
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Learn a variant's queueing-model parameters from an observation file",
		Long: `Learn the parameters of a variant's service model offline, with the same
Extended Kalman Filter the controller runs online.

Input (-f) is a CSV file with a header and one row per observation cycle, in
time order. Required columns (any order; others are ignored):

  rate_rps        arrival rate per replica, requests/s
  input_tokens    average prompt tokens
  output_tokens   average generated tokens (≥ 1)
  max_batch_size  N of the servers (vLLM --max-num-seqs)
  ttft_ms         observed average time to first token, ms
  itl_ms          observed average inter-token latency, ms

Rows with a missing, non-numeric, zero or negative value are reported on
stderr with their line number and column, and skipped.

The tuner starts from --init: "bootstrap" (default) guesses the parameters
from the first row (the WVA queueing-model guide, §9.3) and falls back to "default"
(α=5, β=0.05, γ=0.00005 ms for the iteration model); or give the start as
"A,B,G" ("A,B,G,D" for the linear model), in ms.

Output: the final alpha, beta, gamma (and delta), their covariance (ms²) and
relative standard deviation, the numbers of accepted and rejected updates,
and per step the estimate, the NIS, whether the update was accepted and why,
and the observed and predicted TTFT and ITL. See docs/tuner.md.`,
		Example: `  wva tune -f examples/tune/observations.csv
  wva tune -f observations.csv --init 6,0.01,0.00004 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.serviceModel, "service-model", tuner.ModelIteration, `service model: "iteration" (α, β, γ) or "linear" (α, β, γ, δ)`)
	fs.StringVarP(&o.file, "file", "f", "", "observation CSV file (required; - for standard input)")
	fs.StringVar(&o.init, "init", "bootstrap", `starting estimate: "bootstrap", "default", or "A,B,G[,D]" in ms`)
	fs.StringVar(&o.strategy, "strategy", string(tuner.StrategyRobust), `"robust" (WVA's tuner) or "seed" (the reference tuner's configuration, for comparison; docs/tuner.md)`)
	fs.IntVar(&o.maxQueueSize, "max-queue-size", queueing.DefaultMaxQueueSize, "Q of the queueing model (≥ 0)")
	fs.StringVarP(&o.output, "output", "o", "table", `output format: "table" or "json"`)
	cmd.AddCommand(newTuneStudyCommand())
	return cmd
}

func (o *tuneOptions) run(cmd *cobra.Command) error {
	if o.file == "" {
		return fmt.Errorf("--file is required")
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.serviceModel != tuner.ModelIteration && o.serviceModel != tuner.ModelLinear {
		return fmt.Errorf("--service-model: must be \"iteration\" or \"linear\", got %q", o.serviceModel)
	}
	if o.strategy != string(tuner.StrategyRobust) && o.strategy != string(tuner.StrategySeed) {
		return fmt.Errorf("--strategy: must be \"robust\" or \"seed\", got %q", o.strategy)
	}
	if o.maxQueueSize < 0 || o.maxQueueSize > engine.MaxQueueSizeLimit {
		return fmt.Errorf("--max-queue-size: must be between 0 and %d (the engine's limit), got %d", engine.MaxQueueSizeLimit, o.maxQueueSize)
	}
	rows, err := o.readRows(cmd)
	if err != nil {
		return err
	}
	cfg := tuner.Config{ServiceModel: o.serviceModel, Strategy: tuner.Strategy(o.strategy), MaxQueueSize: o.maxQueueSize}
	if o.maxQueueSize == 0 {
		cfg.MaxQueueSize = -1 // Q = 0; the tuner reads a zero as its default
	}
	tu, how, err := o.start(cfg, rows[0].Observation)
	if err != nil {
		return err
	}
	res := tuneResult{ServiceModel: o.serviceModel, Strategy: o.strategy, Init: how}
	for _, r := range rows {
		st, err := tu.Step(r.Observation)
		if err != nil {
			return fmt.Errorf("line %d: %w", r.Line, err)
		}
		res.Steps = append(res.Steps, stepOf(r.Line, st, o.serviceModel))
	}
	fillFinal(&res, tu, o.serviceModel)
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return printTune(cmd.OutOrStdout(), res)
}

// readRows reads the observation file, reporting skipped rows on stderr.
func (o *tuneOptions) readRows(cmd *cobra.Command) ([]tuner.Row, error) {
	data, err := readInput(o.file, cmd.InOrStdin())
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	rows, problems, err := tuner.ReadCSV(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", o.file, err)
	}
	for _, p := range problems {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s:%s\n", o.file, p)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("--file %s: no usable observation rows", o.file)
	}
	return rows, nil
}

// start builds the tuner from --init.
func (o *tuneOptions) start(cfg tuner.Config, first tuner.Observation) (*tuner.Tuner, string, error) {
	switch o.init {
	case "bootstrap":
		return tuner.NewCold(cfg, first)
	case "default":
		t, err := tuner.New(cfg, tuner.Defaults(o.serviceModel))
		return t, "default", err
	}
	parts := strings.Split(o.init, ",")
	want := 3
	if o.serviceModel == tuner.ModelLinear {
		want = 4
	}
	if len(parts) != want {
		return nil, "", fmt.Errorf("--init: want \"bootstrap\", \"default\" or %d comma-separated numbers for the %s model, got %q", want, o.serviceModel, o.init)
	}
	v := make([]float64, 4)
	for i, s := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(x > 0) || x > 1e12 {
			return nil, "", fmt.Errorf("--init: value %d (%q) must be a positive number", i+1, s)
		}
		v[i] = x
	}
	t, err := tuner.New(cfg, tuner.Params{Alpha: v[0], Beta: v[1], Gamma: v[2], Delta: v[3]})
	if err != nil {
		return nil, "", fmt.Errorf("--init: %w", err)
	}
	return t, "explicit", nil
}

func stepOf(line int, st tuner.Step, model string) tuneStep {
	s := tuneStep{Line: line, Alpha: st.Params.Alpha, Beta: st.Params.Beta, Gamma: st.Params.Gamma, NIS: st.NIS,
		Accepted: st.Accepted, Reason: st.Reason, TTFTObsMs: st.ObservedTTFTMs, ITLObsMs: st.ObservedITLMs,
		TTFTPredMs: st.PredictedTTFTMs, ITLPredMs: st.PredictedITLMs}
	if model == tuner.ModelLinear {
		d := st.Params.Delta
		s.Delta = &d
	}
	return s
}

func fillFinal(res *tuneResult, tu *tuner.Tuner, model string) {
	p := tu.Params()
	res.Alpha, res.Beta, res.Gamma = p.Alpha, p.Beta, p.Gamma
	if model == tuner.ModelLinear {
		d := p.Delta
		res.Delta = &d
	}
	res.Covariance = tu.Covariance()
	res.RelativeStdDev = tu.RelativeStdDev()
	res.Accepted, res.Rejected = tu.Updates()
}

func printTune(w io.Writer, res tuneResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tTTFT obs/pred ms\tITL obs/pred ms\tNIS\tRESULT\tALPHA\tBETA\tGAMMA")
	for _, s := range res.Steps {
		result := "rejected"
		if s.Accepted {
			result = "accepted"
		}
		fmt.Fprintf(tw, "%d\t%s / %s\t%s / %s\t%s\t%s\t%.4g\t%.4g\t%.4g\n", s.Line, num(s.TTFTObsMs), num(s.TTFTPredMs),
			num(s.ITLObsMs), num(s.ITLPredMs), num(s.NIS), result, s.Alpha, s.Beta, s.Gamma)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s model, %s tuner, start: %s; %d updates accepted, %d rejected\n", res.ServiceModel, res.Strategy, res.Init, res.Accepted, res.Rejected)
	names := []string{"alpha", "beta", "gamma", "delta"}
	vals := []float64{res.Alpha, res.Beta, res.Gamma}
	if res.Delta != nil {
		vals = append(vals, *res.Delta)
	}
	for i, v := range vals {
		fmt.Fprintf(w, "%-6s %.6g ms  (±%.1f %%)\n", names[i], v, 100*res.RelativeStdDev[i])
	}
	return nil
}
