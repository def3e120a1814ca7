package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/internal/tuner"
	"github.com/llm-d-incubation/wva/internal/tuner/study"
)

func newTuneStudyCommand() *cobra.Command {
	var (
		out    string
		traces string
		cycles int
		seed   uint64
	)
	cmd := &cobra.Command{
		Use:   "study",
		Short: "Run the tuner convergence study on synthetic traces and write its tables and plots",
		Long: `Run the convergence study of docs/tuner.md.

Observations are generated from the iteration model with known parameters
(an 8B model on H100- and A100-class GPUs, a 70B model on four GPUs), loads
drawn between 10 % and 80 % of capacity, token counts varying ±10 % around
their means, and 0 %, 2 % or 5 % multiplicative noise on TTFT and ITL. In the
middle of each run every parameter grows by 30 %. The tuner starts from the
bootstrap guess, the defaults, and 2× and 0.5× the truth, once as WVA's
robust tuner and once configured exactly as the reference tuner (the WVA
queueing-model guide §4; docs/tuner.md §2).

For each run it reports the cycles until the predicted TTFT and ITL at three
held-out loads (20 %, 50 %, 75 % of capacity) stay within 5 % of the truth,
the same after the jump, the final parameter errors, the accepted updates
and the mean NIS. It also scores the final estimate after 10 cycles on 20 traces per truth
and noise level. It writes summary.md, runs.md, after10.md and PNG plots to
--out and prints the summaries.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cycles < 4 || cycles > maxStudyCycles {
				return fmt.Errorf("--cycles: must be between 4 and %d, got %d", maxStudyCycles, cycles)
			}
			tracesDir, err := studyTracesDir(out, traces)
			if err != nil {
				return err
			}
			if err := checkWritable(out); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "running %d runs of %d cycles…\n",
				len(study.Truths)*len(study.Noises)*len(study.Starts)*2, cycles)
			spec := study.Spec{Cycles: cycles, Seed: seed}
			if tracesDir != "" {
				if err := writeTraces(tracesDir, cycles, seed); err != nil {
					return fmt.Errorf("--traces: %w", err)
				}
			}
			rs, err := study.RunContext(ctx, spec)
			if err != nil {
				return interrupted(err, "the study wrote no results")
			}
			return interrupted(writeStudy(ctx, cmd, out, rs, cycles), "some of the study's files were not written")
		},
	}
	cmd.Flags().StringVar(&out, "out", "docs/tuner-study", "folder for summary.md, runs.md and the plots; the study writes nothing elsewhere")
	cmd.Flags().IntVar(&cycles, "cycles", 60, fmt.Sprintf("observation cycles per run (4 to %d); the parameters jump by 30 %% at the middle", maxStudyCycles))
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the synthetic traces")
	cmd.Flags().StringVar(&traces, "traces", "", "also write each synthetic trace as an observation CSV (for wva tune) to this folder, a relative path inside --out")
	return cmd
}

// maxStudyCycles bounds --cycles: each cycle of the 72 runs costs about
// 10 ms, so the limit is a study of about two minutes.
const maxStudyCycles = 10_000

// studyTracesDir places --traces inside --out: the study writes nowhere
// else.
func studyTracesDir(out, traces string) (string, error) {
	if traces == "" {
		return "", nil
	}
	if !filepath.IsLocal(traces) {
		return "", fmt.Errorf("--traces: must be a relative folder inside --out (no absolute path, no \"..\"), got %q", traces)
	}
	return filepath.Join(out, traces), nil
}

// interrupted explains the error of a cancelled study.
func interrupted(err error, what string) error {
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted: " + what)
	}
	return err
}

// spreadTraces is how many traces per truth and noise level score the
// estimate after 10 cycles.
const spreadTraces = 20

func writeStudy(ctx context.Context, cmd *cobra.Command, out string, rs []study.Result, cycles int) error {
	write := func(name string, fn func(io.Writer) error) error { return createFile(filepath.Join(out, name), fn) }
	if err := write("summary.md", func(f io.Writer) error { return study.WriteSummary(f, rs) }); err != nil {
		return err
	}
	if err := write("runs.md", func(f io.Writer) error { return study.WriteTable(f, rs) }); err != nil {
		return err
	}
	files, err := study.PlotTrajectories(rs, 0.02, out)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Truth == study.Truths[0].Name && r.Start == "bootstrap" && r.Noise == 0.02 && r.Strategy == tuner.StrategyRobust {
			name := "tuner-params-8b-h100-bootstrap-noise2.png"
			if err := study.PlotParams(r, study.Truths[0], cycles/2, 1.3, filepath.Join(out, name)); err != nil {
				return err
			}
			files = append(files, name)
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "scoring the final estimate after 10 cycles on %d traces per truth and noise level…\n", spreadTraces)
	ss, err := study.ErrorAfterContext(ctx, 10, spreadTraces)
	if err != nil {
		return err
	}
	if err := write("after10.md", func(f io.Writer) error { return study.WriteSpread(f, ss) }); err != nil {
		return err
	}
	if err := study.WriteSummary(cmd.OutOrStdout(), rs); err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout())
	if err := study.WriteSpread(cmd.OutOrStdout(), ss); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote summary.md, runs.md, after10.md and %v to %s\n", files, out)
	return nil
}

// writeTraces writes the study's traces in the format "wva tune" reads.
func writeTraces(dir string, cycles int, seed uint64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for _, tr := range study.Truths {
		for _, noise := range study.Noises {
			obs, err := tuner.Synthesize(tr, tuner.TraceSpec{Cycles: cycles, Noise: noise, JumpAt: cycles / 2, JumpFactor: 1.3, MaxQueueSize: 100, Seed: seed})
			if err != nil {
				return err
			}
			path := filepath.Join(dir, fmt.Sprintf("trace-%s-noise%.0f.csv", tr.Name, 100*noise))
			if err := createFile(path, func(w io.Writer) error { return tuner.WriteCSV(w, obs) }); err != nil {
				return err
			}
		}
	}
	return nil
}
