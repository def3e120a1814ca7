package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// sizeResult is one line of "model size" output. Its JSON keys are a
// contract used outside this code base: add keys, never rename them.
type sizeResult struct {
	Case           string  `json:"case,omitempty"`
	ServiceModel   string  `json:"service_model"`
	TargetTTFTMs   float64 `json:"target_ttft_ms"`
	TargetITLMs    float64 `json:"target_itl_ms"`
	TargetTPS      float64 `json:"target_tps"`
	RateTTFTRPS    float64 `json:"rate_ttft_rps"`
	RateITLRPS     float64 `json:"rate_itl_rps"`
	RateStarRPS    float64 `json:"rate_star_rps"`
	Binding        string  `json:"binding"`
	CapacityRPS    float64 `json:"capacity_rps"`
	TTFTMs         float64 `json:"ttft_ms"`
	ITLMs          float64 `json:"itl_ms"`
	WaitMs         float64 `json:"wait_ms"`
	AvgBatchSize   float64 `json:"avg_batch_size"`
	Utilization    float64 `json:"utilization"`
	MaxRateRPS     float64 `json:"max_rate_rps"`
	DemandRPS      float64 `json:"demand_rps,omitempty"`
	DemandFloorRPS float64 `json:"demand_floor_rps,omitempty"`
	Replicas       *int    `json:"replicas,omitempty"`
	// TargetTTFTAttainment is --ttft-attainment (0: sized for the mean);
	// TTFTAttainment the predicted share of requests within the TTFT
	// target at rate_star_rps (with a TTFT target).
	TargetTTFTAttainment float64  `json:"target_ttft_attainment,omitempty"`
	TTFTAttainment       *float64 `json:"ttft_attainment,omitempty"`
	Error                string   `json:"error,omitempty"`
}

func newModelSizeCommand() *cobra.Command {
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "size",
		Short: "Find the highest rate one replica sustains within TTFT/ITL targets, and the replicas for a demand",
		Long: `Size one replica against latency targets.

For each target given (--target-ttft, --target-itl, in ms) the calculator
finds the largest arrival rate at which the replica still meets it, by
bisection between light load and max_rate_rps (0.999 × the throughput of a
full batch) to a relative tolerance of 1e-6. A target met even at
max_rate_rps does not bind; a target missed even at light load is an error
that says what the hardware can achieve at best.

Outputs: rate_ttft_rps, rate_itl_rps, rate_star_rps (the smaller of the two),
binding ("ttft", "itl" or "" when neither binds), capacity_rps (throughput
at rate_star_rps: what one replica serves), ttft_ms, itl_ms, wait_ms,
avg_batch_size and utilization at rate_star_rps, max_rate_rps,
ttft_attainment (the predicted share of requests within --target-ttft at
rate_star_rps), and with --demand (requests/s) or --target-tps the replicas
needed: ceil(max(demand, target_tps / output_tokens) / capacity_rps).

By default the TTFT target bounds the mean. With --ttft-attainment a (for
example 0.99) it is judged per request: rate_ttft_rps is the largest rate at
which a share a of the arriving requests meets it, from the waiting-time
distribution of the same queue (FCFS: a request that finds n ≥ N present
waits for n − N + 1 completions of a full batch).`,
		Example: `  wva model size --alpha 7 --beta 0.02 --gamma 0.00005 \
      --input-tokens 1024 --output-tokens 256 --max-batch-size 256 \
      --target-ttft 200 --target-itl 20 --demand 100

  wva model size --alpha 7 --beta 0.02 --gamma 0.00005 \
      --input-tokens 1024 --output-tokens 256 --max-batch-size 256 \
      --target-ttft 200 --ttft-attainment 0.99 --demand 100

  wva model size -f examples/model/capacity-plan.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCases(cmd, o, func(c modelCase) ([]sizeResult, error) {
				r, err := sizeCase(c)
				return []sizeResult{r}, err
			}, func(c modelCase, err error) sizeResult {
				return sizeResult{Case: c.Name, ServiceModel: c.ServiceModel, Error: err.Error()}
			}, printSize)
		},
	}
	o.addModelFlags(cmd.Flags())
	o.addSizeFlags(cmd.Flags())
	return cmd
}

func sizeCase(c modelCase) (sizeResult, error) {
	if len(c.Rates) > 0 {
		return sizeResult{}, fmt.Errorf("%s: applies only to \"model analyze\"", c.field("rate"))
	}
	a, err := c.analyzer()
	if err != nil {
		return sizeResult{}, err
	}
	if c.TargetTTFT == 0 && c.TargetITL == 0 && c.TargetTPS == 0 {
		return sizeResult{}, fmt.Errorf("%s: give at least one target (TTFT, ITL or TPS)", c.field("target-ttft"))
	}
	s, err := a.Size(queueingTargets(c))
	if err != nil {
		return sizeResult{}, c.explain(err)
	}
	r := sizeResult{
		Case: c.Name, ServiceModel: c.ServiceModel,
		TargetTTFTMs: c.TargetTTFT, TargetITLMs: c.TargetITL, TargetTPS: c.TargetTPS,
		RateTTFTRPS: s.RateTTFTRPS, RateITLRPS: s.RateITLRPS, RateStarRPS: s.RateStarRPS, Binding: s.Binding,
		CapacityRPS: s.CapacityRPS, TTFTMs: s.AtStar.TTFTMs, ITLMs: s.AtStar.ITLMs, WaitMs: s.AtStar.WaitMs,
		AvgBatchSize: s.AtStar.AvgBatchSize, Utilization: s.AtStar.Utilization, MaxRateRPS: s.AtStar.MaxRateRPS,
		DemandRPS: c.Demand, DemandFloorRPS: s.DemandFloorRPS, TargetTTFTAttainment: c.TTFTAttainment,
	}
	if c.TargetTTFT > 0 {
		at := s.TTFTAttainment
		if c.TTFTAttainment == 0 { // sized for the mean: not computed by Size
			var err error
			if at, err = a.TTFTAttainment(s.RateStarRPS, c.TargetTTFT); err != nil {
				return sizeResult{}, c.explain(err)
			}
		}
		r.TTFTAttainment = &at
	}
	if c.given["demand"] || c.TargetTPS > 0 {
		n, err := s.Replicas(c.Demand)
		if err != nil {
			return sizeResult{}, c.explain(err)
		}
		r.Replicas = &n
	}
	return r, nil
}
