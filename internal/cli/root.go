// Package cli holds the wva command line: one file per subcommand, each
// built as a cobra command over an options struct that is validated before
// anything runs.
package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Version is the release of this binary; set at link time with
// -ldflags "-X github.com/llm-d-incubation/wva/internal/cli.Version=…".
var Version = "dev"

// NewRootCommand returns the wva command with every subcommand attached.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "wva",
		Short: "SLO-driven autoscaler for LLM inference servers",
		Long: `WVA (Workload Variant Autoscaler) is an SLO-driven autoscaler for LLM
inference servers (vLLM and alike): it sizes each model's fleet so that it
meets time-to-first-token (TTFT) and inter-token-latency (ITL) objectives
with as few GPUs as possible.

It models each server variant (a model on a given accelerator) as a
continuous-batching queue, learns the queue's performance parameters from
the latencies the servers report, and picks the cheapest mix of replicas
across heterogeneous accelerators. This command gives access to its parts
without a cluster.

Units everywhere: times in milliseconds, rates in requests per second,
token counts per request.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newModelCommand(), newTuneCommand(), newPlanCommand(), newSimulateCommand(), newControllerCommand(), newEmulateCommand())
	return root
}

// Run executes the command line args and returns the process exit status.
// Errors are printed as one line on stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return 1
	}
	return 0
}
