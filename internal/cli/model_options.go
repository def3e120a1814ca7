package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/strictyaml"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// modelCase is one fully resolved calculator case: flags, then the case
// file's defaults, then the case itself.
type modelCase struct {
	Name                      string
	ServiceModel              string
	Alpha, Beta, Gamma, Delta float64
	InputTokens, OutputTokens float64
	MaxBatchSize              int
	MaxQueueSize              int
	Rates                     []float64 // analyze only: one result per rate
	TargetTTFT, TargetITL     float64
	TargetTPS, Demand         float64
	// TTFTAttainment sizes for a share of requests within the TTFT target
	// (size); Percentile is the TTFT percentile reported (analyze).
	TTFTAttainment, Percentile float64
	// given holds the flag names of the values set explicitly, by a flag or
	// a case file; required values must be given.
	given map[string]bool
}

// modelOptions are the flags shared by "model analyze" and "model size".
type modelOptions struct {
	c      modelCase
	rate   float64
	file   string
	output string
}

// addModelFlags registers the model, workload and replica flags.
func (o *modelOptions) addModelFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.c.ServiceModel, "service-model", "iteration", `service model: "iteration" (α, β, γ) or "linear" (α, β, γ, δ)`)
	fs.Float64Var(&o.c.Alpha, "alpha", 0, "α in ms: iteration model: fixed cost of one engine iteration; linear: base decode step time (required, > 0)")
	fs.Float64Var(&o.c.Beta, "beta", 0, "β in ms: iteration: compute time per token; linear: decode time added per request in the batch (required, ≥ 0)")
	fs.Float64Var(&o.c.Gamma, "gamma", 0, "γ in ms: iteration: KV-cache read time per cached token (≥ 0); linear: base prefill time (> 0) (required)")
	fs.Float64Var(&o.c.Delta, "delta", 0, "δ in ms (linear model only, required there): prefill time per input token per request in the batch (≥ 0)")
	fs.Float64Var(&o.c.InputTokens, "input-tokens", 0, "average prompt length in tokens (required, ≥ 0)")
	fs.Float64Var(&o.c.OutputTokens, "output-tokens", 0, "average generated tokens per request (required, ≥ 1)")
	fs.IntVar(&o.c.MaxBatchSize, "max-batch-size", 0, "N, most requests in one batch, vLLM --max-num-seqs (required, ≥ 1)")
	fs.IntVar(&o.c.MaxQueueSize, "max-queue-size", queueing.DefaultMaxQueueSize, "Q, most requests waiting for a batch slot; arrivals beyond N+Q are rejected (≥ 0)")
	fs.StringVarP(&o.file, "file", "f", "", "YAML file of cases to run in one call (see docs/queueing.md); flags set the starting values of every case")
	fs.StringVarP(&o.output, "output", "o", "table", `output format: "table" or "json"`)
}

// addSizeFlags registers the targets and demand of "model size".
func (o *modelOptions) addSizeFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&o.c.TargetTTFT, "target-ttft", 0, "largest acceptable average time to first token, ms (0 = no target)")
	fs.Float64Var(&o.c.TargetITL, "target-itl", 0, "largest acceptable average inter-token latency, ms (0 = no target)")
	fs.Float64Var(&o.c.TargetTPS, "target-tps", 0, "output tokens/s the model must deliver in total; a demand floor of TPS/output-tokens requests/s (0 = none)")
	fs.Float64Var(&o.c.Demand, "demand", 0, "total arrival rate of the model, requests/s; when given, the replicas needed are printed")
	fs.Float64Var(&o.c.TTFTAttainment, "ttft-attainment", 0, "judge --target-ttft per request: size so that this share of requests (0 < a < 1, e.g. 0.99) gets its first token within the target, instead of the mean (0)")
}

// cases resolves the command line (and the case file, if any) into cases.
func (o *modelOptions) cases(cmd *cobra.Command) ([]modelCase, error) {
	if err := checkOutput(o.output); err != nil {
		return nil, err
	}
	base := o.c
	base.given = map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { base.given[f.Name] = true })
	if base.given["rate"] {
		base.Rates = []float64{o.rate}
	}
	if o.file == "" {
		return []modelCase{base}, nil
	}
	return loadCases(o.file, base)
}

// caseSpec is one case of a case file; nil fields are not given.
type caseSpec struct {
	Name         string    `json:"name,omitempty"`
	ServiceModel *string   `json:"serviceModel,omitempty"`
	Alpha        *float64  `json:"alpha,omitempty"`
	Beta         *float64  `json:"beta,omitempty"`
	Gamma        *float64  `json:"gamma,omitempty"`
	Delta        *float64  `json:"delta,omitempty"`
	InputTokens  *float64  `json:"inputTokens,omitempty"`
	OutputTokens *float64  `json:"outputTokens,omitempty"`
	MaxBatchSize *int      `json:"maxBatchSize,omitempty"`
	MaxQueueSize *int      `json:"maxQueueSize,omitempty"`
	Rate         *float64  `json:"rate,omitempty"`
	Rates        []float64 `json:"rates,omitempty"`
	TargetTTFT   *float64  `json:"targetTTFT,omitempty"`
	TargetITL    *float64  `json:"targetITL,omitempty"`
	TargetTPS    *float64  `json:"targetTPS,omitempty"`
	Demand       *float64  `json:"demand,omitempty"`
	// TTFTAttainment (size) and Percentile (analyze), as the flags.
	TTFTAttainment *float64 `json:"ttftAttainment,omitempty"`
	Percentile     *float64 `json:"percentile,omitempty"`
}

// Bounds of a case file: cases, and rates over every case.
const (
	maxCases = 10_000
	maxRates = 10_000
)

// caseFile is the layout of a -f file.
type caseFile struct {
	Defaults caseSpec   `json:"defaults"`
	Cases    []caseSpec `json:"cases"`
}

func loadCases(path string, base modelCase) ([]modelCase, error) {
	data, err := readInput(path, nil)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	var f caseFile
	if err := strictyaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("--file %s: no cases (expected a top-level \"cases:\" list)", path)
	}
	// Each case is a queueing analysis (a rate of a large batch takes
	// milliseconds): bound the work of one call.
	if len(f.Cases) > maxCases {
		return nil, fmt.Errorf("--file %s: %d cases, at most %d in one file", path, len(f.Cases), maxCases)
	}
	rates := len(f.Defaults.Rates)
	for _, c := range f.Cases {
		rates += len(c.Rates)
	}
	if rates > maxRates {
		return nil, fmt.Errorf("--file %s: %d rates in all, at most %d in one file", path, rates, maxRates)
	}
	base = base.with(f.Defaults)
	out := make([]modelCase, len(f.Cases))
	for i, spec := range f.Cases {
		out[i] = base.with(spec)
		if out[i].Name == "" {
			out[i].Name = fmt.Sprintf("case-%d", i+1)
		}
	}
	return out, nil
}

// with returns c overridden by the values given in s.
func (c modelCase) with(s caseSpec) modelCase {
	given := make(map[string]bool, len(c.given))
	for k, v := range c.given {
		given[k] = v
	}
	c.given = given
	if s.Name != "" {
		c.Name = s.Name
	}
	setString(&c.ServiceModel, s.ServiceModel, "service-model", given)
	for _, f := range []struct {
		dst  *float64
		src  *float64
		flag string
	}{
		{&c.Alpha, s.Alpha, "alpha"}, {&c.Beta, s.Beta, "beta"}, {&c.Gamma, s.Gamma, "gamma"}, {&c.Delta, s.Delta, "delta"},
		{&c.InputTokens, s.InputTokens, "input-tokens"}, {&c.OutputTokens, s.OutputTokens, "output-tokens"},
		{&c.TargetTTFT, s.TargetTTFT, "target-ttft"}, {&c.TargetITL, s.TargetITL, "target-itl"},
		{&c.TargetTPS, s.TargetTPS, "target-tps"}, {&c.Demand, s.Demand, "demand"},
		{&c.TTFTAttainment, s.TTFTAttainment, "ttft-attainment"}, {&c.Percentile, s.Percentile, "percentile"},
	} {
		if f.src != nil {
			*f.dst = *f.src
			given[f.flag] = true
		}
	}
	for _, f := range []struct {
		dst  *int
		src  *int
		flag string
	}{{&c.MaxBatchSize, s.MaxBatchSize, "max-batch-size"}, {&c.MaxQueueSize, s.MaxQueueSize, "max-queue-size"}} {
		if f.src != nil {
			*f.dst = *f.src
			given[f.flag] = true
		}
	}
	if s.Rate != nil || len(s.Rates) > 0 {
		c.Rates = append([]float64(nil), s.Rates...)
		if s.Rate != nil {
			c.Rates = append([]float64{*s.Rate}, c.Rates...)
		}
		given["rate"] = true
	}
	return c
}

func setString(dst *string, src *string, flag string, given map[string]bool) {
	if src != nil {
		*dst = *src
		given[flag] = true
	}
}

// fileKeys maps flag names to the keys of a case file.
var fileKeys = map[string]string{
	"service-model": "serviceModel", "input-tokens": "inputTokens", "output-tokens": "outputTokens",
	"max-batch-size": "maxBatchSize", "max-queue-size": "maxQueueSize", "target-ttft": "targetTTFT",
	"target-itl": "targetITL", "target-tps": "targetTPS", "ttft-attainment": "ttftAttainment",
}

// fromFile tells whether the case came from a case file; its errors then
// name file keys instead of flags.
func (c modelCase) fromFile() bool { return c.Name != "" }

// field names a parameter the way the user wrote it.
func (c modelCase) field(flag string) string {
	if !c.fromFile() {
		return "--" + flag
	}
	if k, ok := fileKeys[flag]; ok {
		return fmt.Sprintf("case %q: %s", c.Name, k)
	}
	return fmt.Sprintf("case %q: %s", c.Name, flag)
}

// explain turns a queueing error into one line that names the flag or key.
func (c modelCase) explain(err error) error {
	var pe *queueing.ParamError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s, got %v", c.field(pe.Param), pe.Reason, pe.Value)
	}
	if errors.Is(err, queueing.ErrInfeasible) {
		var ie *queueing.InfeasibleError
		errors.As(err, &ie)
		return fmt.Errorf("%s: %s", c.field("target-"+ie.Target), strings.TrimPrefix(err.Error(), "queueing: "))
	}
	return err
}

// analyzer checks that every required value is given and builds the model.
func (c modelCase) analyzer(extraRequired ...string) (*queueing.Analyzer, error) {
	var model queueing.ServiceModel
	switch c.ServiceModel {
	case "iteration":
		if c.given["delta"] {
			return nil, fmt.Errorf("%s: applies only to the linear service model", c.field("delta"))
		}
		model = queueing.Iteration{Alpha: c.Alpha, Beta: c.Beta, Gamma: c.Gamma}
	case "linear":
		extraRequired = append(extraRequired, "delta")
		model = queueing.Linear{Alpha: c.Alpha, Beta: c.Beta, Gamma: c.Gamma, Delta: c.Delta}
	default:
		return nil, fmt.Errorf("%s: must be \"iteration\" or \"linear\", got %q", c.field("service-model"), c.ServiceModel)
	}
	required := append([]string{"alpha", "beta", "gamma", "input-tokens", "output-tokens", "max-batch-size"}, extraRequired...)
	for _, name := range required {
		if !c.given[name] {
			return nil, fmt.Errorf("%s is required", c.field(name))
		}
	}
	for _, f := range []struct {
		flag string
		v    float64
	}{{"input-tokens", c.InputTokens}, {"output-tokens", c.OutputTokens}} {
		if f.v > scenario.MaxTokens { // beyond it the model's times overflow into meaningless figures
			return nil, fmt.Errorf("%s: must be at most %d tokens, got %v", c.field(f.flag), scenario.MaxTokens, f.v)
		}
	}
	a, err := queueing.NewAnalyzer(queueing.Config{
		Model:        model,
		Workload:     queueing.Workload{InputTokens: c.InputTokens, OutputTokens: c.OutputTokens},
		MaxBatchSize: c.MaxBatchSize,
		MaxQueueSize: c.MaxQueueSize,
	})
	if err != nil {
		return nil, c.explain(err)
	}
	return a, nil
}

func queueingTargets(c modelCase) queueing.Targets {
	return queueing.Targets{TTFTMs: c.TargetTTFT, ITLMs: c.TargetITL, TPS: c.TargetTPS, TTFTAttainment: c.TTFTAttainment}
}

// runCases evaluates every case and prints the results. On the command line
// alone an error ends the command; from a case file it becomes that case's
// row, the other cases still run, and the command fails at the end.
func runCases[T any](cmd *cobra.Command, o *modelOptions, eval func(modelCase) ([]T, error),
	failed func(modelCase, error) T, render func(io.Writer, string, bool, []T) error) error {
	cases, err := o.cases(cmd)
	if err != nil {
		return err
	}
	var results []T
	nFailed := 0
	for _, c := range cases {
		rs, err := eval(c)
		if err != nil && !c.fromFile() {
			return err
		}
		if err != nil {
			nFailed++
			rs = []T{failed(c, err)}
		}
		results = append(results, rs...)
	}
	if err := render(cmd.OutOrStdout(), o.output, o.file != "", results); err != nil {
		return err
	}
	if nFailed > 0 {
		return fmt.Errorf("%d of %d cases failed", nFailed, len(cases))
	}
	return nil
}

// checkOutput validates an --output flag.
func checkOutput(output string) error {
	if output != "table" && output != "json" {
		return fmt.Errorf("--output: must be \"table\" or \"json\", got %q", output)
	}
	return nil
}
