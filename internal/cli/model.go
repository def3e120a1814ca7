package cli

import "github.com/spf13/cobra"

func newModelCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Capacity calculator: analyse or size a replica (queueing model) or a fleet (capacity model)",
		Long: `Capacity calculator over WVA's queueing models, without a cluster.

A replica is a continuous-batching server that runs up to N requests in one
batch (vLLM --max-num-seqs) and queues up to Q more. Its speed is described
by one of two service models:

  iteration  (α, β, γ): every engine iteration costs α ms plus, per request in
             the batch, β ms per token computed and γ ms per token of KV
             cache read. This is the model WVA learns online.
  linear     (α, β, γ, δ): a decode step with n requests takes α + β·n ms and
             a prefill γ + δ·i·n ms for i input tokens.

"analyze" predicts TTFT, ITL and throughput at a given arrival rate;
"size" finds the largest rate that meets TTFT/ITL targets and, given a
demand, how many replicas serve it. See docs/queueing.md for the formulas.

"capacity" answers for fleets instead of one replica, and for a share of
requests within the SLO instead of the mean: the largest rate N replicas of
each variant of a simulator scenario serve with that share, from WVA's
capacity model (the server model behind the router); "analyze --scenario"
gives a fleet's latency percentiles and attainment at a rate.`,
	}
	cmd.AddCommand(newModelAnalyzeCommand(), newModelSizeCommand(), newModelCapacityCommand())
	return cmd
}
