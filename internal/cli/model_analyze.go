package cli

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"

	"github.com/spf13/cobra"
)

// analyzeResult is one line of "model analyze" output. Its JSON keys are a
// contract used outside this code base: add keys, never rename them.
type analyzeResult struct {
	Case                string  `json:"case,omitempty"`
	ServiceModel        string  `json:"service_model"`
	RateRPS             float64 `json:"rate_rps"`
	ThroughputRPS       float64 `json:"throughput_rps"`
	TTFTMs              float64 `json:"ttft_ms"`
	ITLMs               float64 `json:"itl_ms"`
	WaitMs              float64 `json:"wait_ms"`
	ResponseTimeMs      float64 `json:"response_time_ms"`
	ServiceTimeMs       float64 `json:"service_time_ms"`
	AvgBatchSize        float64 `json:"avg_batch_size"`
	AvgInSystem         float64 `json:"avg_in_system"`
	AvgQueueLength      float64 `json:"avg_queue_length"`
	Utilization         float64 `json:"utilization"`
	BlockingProbability float64 `json:"blocking_probability"`
	MaxRateRPS          float64 `json:"max_rate_rps"`
	TokensPerSecond     float64 `json:"tokens_per_second"`
	// Percentile and TTFTPercentileMs: the TTFT that this share of the
	// arriving requests meets (null when blocking alone exceeds 1 − p).
	Percentile       float64  `json:"percentile"`
	TTFTPercentileMs *float64 `json:"ttft_percentile_ms"`
	// TTFTAttainment: the share of arriving requests whose TTFT is within
	// --target-ttft (only with a target).
	TargetTTFTMs   float64  `json:"target_ttft_ms,omitempty"`
	TTFTAttainment *float64 `json:"ttft_attainment,omitempty"`
	Error          string   `json:"error,omitempty"`
}

func newModelAnalyzeCommand() *cobra.Command {
	o := &modelOptions{}
	fo := &fleetOptions{}
	cmd := &cobra.Command{
		Use:   "analyze",
		Short: "Predict TTFT, ITL and throughput of one replica at an arrival rate",
		Long: `Predict the steady state of one replica at an arrival rate.

Inputs are the service model and its parameters (ms), the average request
(tokens), the batch and queue limits, and --rate in requests/s. Any positive
rate is accepted, also above the replica's capacity: the queue is finite, so
excess requests are rejected (see blocking_probability).

Outputs: rate_rps, throughput_rps (completed requests/s), ttft_ms (queueing
wait + prefill), itl_ms (average time between output tokens), wait_ms,
response_time_ms, service_time_ms, avg_batch_size, avg_in_system,
avg_queue_length, utilization (average batch / N), blocking_probability
(share of arrivals rejected), max_rate_rps (0.999 × the throughput of a full
batch: the highest rate "size" considers), tokens_per_second, percentile and
ttft_percentile_ms (the TTFT that --percentile of the arriving requests meet:
prefill plus that quantile of the FCFS waiting time, Erlang in the number
ahead; blocked requests never meet it), and with --target-ttft,
ttft_attainment (the share of arriving requests within it).

With --scenario (a scenario file or a built-in scenario's name) it analyses
fleets instead, with WVA's capacity model (see "wva model capacity"):
--replicas replicas of each variant of the scenario, behind its router, at
--rate, with the model's own token distributions and classes. Outputs per
variant: arrived, completed and failed requests of one run, attainment (the
share within the SLO, TTFT and ITL per request), and the TTFT and ITL
percentiles p50, p90, p95 and p99 (ms; ITL is each request's average).`,
		Example: `  wva model analyze --alpha 7 --beta 0.02 --gamma 0.00005 \
      --input-tokens 1024 --output-tokens 256 --max-batch-size 256 --rate 10

  wva model analyze --service-model linear --alpha 8 --beta 0.1 --gamma 20 --delta 0.002 \
      --input-tokens 1024 --output-tokens 128 --max-batch-size 64 --rate 2 -o json

  wva model analyze -f examples/model/analyze-sweep.yaml

  wva model analyze --scenario compute-bound --replicas 4 --rate 40`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fo.builtin != "" {
				return analyzeFleet(cmd, o, fo)
			}
			return runCases(cmd, o, analyzeCase,
				func(c modelCase, err error) analyzeResult {
					return analyzeResult{Case: c.Name, ServiceModel: c.ServiceModel, Error: err.Error()}
				}, printAnalyze)
		},
	}
	o.addModelFlags(cmd.Flags())
	cmd.Flags().Float64Var(&o.rate, "rate", 0, "arrival rate in requests/s (required, > 0); a case file may give a list under \"rates\"")
	cmd.Flags().Float64Var(&o.c.Percentile, "percentile", 0.99, "report the TTFT this share of requests meets (0 < p < 1)")
	cmd.Flags().Float64Var(&o.c.TargetTTFT, "target-ttft", 0, "report the share of requests whose TTFT is within this many ms (0 = none)")
	fs := cmd.Flags()
	fs.StringVar(&fo.builtin, "scenario", "", "analyse fleets of this scenario's variants (a file, or a built-in: "+strings.Join(scenario.BuiltinNames(scenarios.FS), ", ")+")")
	fs.IntVar(&fo.replicas, "replicas", 1, "with --scenario: replicas of each variant")
	fs.StringVar(&fo.model, "model", "", "with --scenario: only this model")
	fs.StringVar(&fo.variant, "variant", "", "with --scenario: only this variant")
	fs.IntVar(&fo.requests, "requests", 0, "with --scenario: requests in the run (0: 60 000)")
	fs.Uint64Var(&fo.seed, "seed", capacity.DefaultSettings().Seed, "with --scenario: the capacity model's random seed")
	return cmd
}

// analyzeFleet runs the fleet mode: --scenario names a file or a
// built-in scenario; the queueing model's flags do not apply.
func analyzeFleet(cmd *cobra.Command, o *modelOptions, fo *fleetOptions) error {
	for _, f := range []string{"file", "service-model", "alpha", "beta", "gamma", "delta", "input-tokens", "output-tokens",
		"max-batch-size", "max-queue-size", "percentile", "target-ttft"} {
		if cmd.Flags().Changed(f) {
			return fmt.Errorf("--%s does not go with --scenario (the scenario gives the server and the workload)", f)
		}
	}
	if _, err := os.Stat(fo.builtin); err == nil {
		fo.file, fo.builtin, fo.fileFlag = fo.builtin, "", "--scenario"
	}
	fo.output = o.output
	return runFleetAnalyze(cmd, fo, o.rate)
}

func analyzeCase(c modelCase) ([]analyzeResult, error) {
	a, err := c.analyzer("rate")
	if err != nil {
		return nil, err
	}
	out := make([]analyzeResult, 0, len(c.Rates))
	for _, rate := range c.Rates {
		m, err := a.Analyze(rate)
		if err != nil {
			return nil, c.explain(err)
		}
		r := analyzeResult{
			Case: c.Name, ServiceModel: c.ServiceModel, RateRPS: m.RateRPS, ThroughputRPS: m.ThroughputRPS,
			TTFTMs: m.TTFTMs, ITLMs: m.ITLMs, WaitMs: m.WaitMs, ResponseTimeMs: m.RespTimeMs, ServiceTimeMs: m.ServTimeMs,
			AvgBatchSize: m.AvgBatchSize, AvgInSystem: m.AvgInSystem, AvgQueueLength: m.AvgQueued,
			Utilization: m.Utilization, BlockingProbability: m.Blocking, MaxRateRPS: m.MaxRateRPS, TokensPerSecond: m.TokensPerSec,
			Percentile: c.Percentile, TargetTTFTMs: c.TargetTTFT,
		}
		p, err := a.TTFTPercentile(rate, c.Percentile)
		if err != nil {
			return nil, c.explain(err)
		}
		if !math.IsInf(p, 1) {
			r.TTFTPercentileMs = &p
		}
		if c.TargetTTFT > 0 {
			at, err := a.TTFTAttainment(rate, c.TargetTTFT)
			if err != nil {
				return nil, c.explain(err)
			}
			r.TTFTAttainment = &at
		}
		out = append(out, r)
	}
	return out, nil
}
