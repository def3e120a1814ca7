package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/report"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// runMatrix runs --matrix: the scenario's matrix (every configuration at
// every rate under every autoscaler, each with every seed), and writes
// matrix.json, matrix.csv and matrix.md to --out; it prints the report
// (matrix.md), or the cells as JSON with -o json. --autoscalers and
// --repeat (with --seed) replace the matrix's autoscalers and seeds.
func (o *simulateOptions) runMatrix(cmd *cobra.Command, ctx context.Context, sc scenario.Scenario, names []string) error {
	errw := cmd.ErrOrStderr()
	if sc.Matrix == nil {
		return fmt.Errorf("--matrix: scenario %q has no matrix section (see docs/admission.md)", sc.Name)
	}
	m := *sc.Matrix
	if len(names) > 0 {
		m.Autoscalers = names
	}
	if cmd.Flags().Changed("repeat") || cmd.Flags().Changed("seed") {
		first := max(sc.Seed, 1)
		m.Seeds = nil
		for i := range o.repeat {
			m.Seeds = append(m.Seeds, first+uint64(i))
		}
	}
	sc.Matrix = &m
	if err := o.checkOut(); err != nil {
		return err
	}
	start := time.Now()
	var last time.Time
	runs, err := experiment.RunMatrix(ctx, sc, o.parallel, func(done, total int) {
		if time.Since(last) < time.Second && done < total {
			return
		}
		last = time.Now()
		fmt.Fprintf(errw, "\r%s matrix: %d of %d runs (%.0f s)   ", sc.Name, done, total, time.Since(start).Seconds())
	})
	fmt.Fprintln(errw)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintln(errw, "interrupted: the report covers the runs that finished")
	}
	if len(runs) == 0 {
		return errors.New("interrupted before the first run finished")
	}
	cells := experiment.SummarizeMatrix(runs)
	fmt.Fprintf(errw, "%s matrix: %d runs in %.1f s\n", sc.Name, len(runs), time.Since(start).Seconds())
	if !o.noFiles {
		if err := writeMatrixFiles(errw, o.out, &sc, cells); err != nil {
			return err
		}
	}
	if o.output == "json" {
		return report.WriteMatrixJSON(cmd.OutOrStdout(), cells)
	}
	return report.WriteMatrixMarkdown(cmd.OutOrStdout(), &sc, cells)
}

func writeMatrixFiles(errw io.Writer, dir string, sc *scenario.Scenario, cells []experiment.MatrixCell) error {
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"matrix.json", func(w io.Writer) error { return report.WriteMatrixJSON(w, cells) }},
		{"matrix.csv", func(w io.Writer) error { return report.WriteMatrixCSV(w, cells) }},
		{"matrix.md", func(w io.Writer) error { return report.WriteMatrixMarkdown(w, sc, cells) }},
	} {
		if err := createFile(filepath.Join(dir, f.name), f.write); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	fmt.Fprintf(errw, "wrote matrix.json, matrix.csv and matrix.md to %s\n", dir)
	return nil
}
