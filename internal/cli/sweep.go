package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/report"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// runSweep runs --sweep: every autoscaler over its settings' grid, each
// setting over --repeat seeds, and writes the frontiers.
func (o *simulateOptions) runSweep(cmd *cobra.Command, ctx context.Context, sc scenario.Scenario, names []string) error {
	errw := cmd.ErrOrStderr()
	if len(names) == 0 {
		names = sim.SweepAutoscalers()
	}
	spec := experiment.SweepSpec{Autoscalers: names, Grids: map[string][]float64{}, Targets: o.attainment, Parallel: o.parallel}
	grids, err := o.parseGrids(names)
	if err != nil {
		return err
	}
	spec.Grids = grids
	first := sc.Seed
	if first == 0 {
		first = 1
	}
	for i := range o.repeat {
		spec.Seeds = append(spec.Seeds, first+uint64(i))
	}
	if n := experiment.SweepRuns(sc, spec); n > 20000 {
		return fmt.Errorf("--sweep: %d simulations (settings × seeds) is more than 20 000; narrow --grid or --repeat", n)
	}
	if err := o.checkOut(); err != nil {
		return err
	}
	start := time.Now()
	var last time.Time
	res, err := experiment.Sweep(ctx, sc, spec, func(done, total int) {
		if time.Since(last) < time.Second && done < total {
			return
		}
		last = time.Now()
		fmt.Fprintf(errw, "\r%s sweep: %d of %d runs (%.0f s)   ", sc.Name, done, total, time.Since(start).Seconds())
	})
	fmt.Fprintln(errw)
	if err != nil {
		return err
	}
	if res.Interrupted {
		fmt.Fprintln(errw, "interrupted: the results cover the settings whose seeds all finished")
	}
	if !o.noFiles {
		if err := writeSweepFiles(errw, o.out, res); err != nil {
			return err
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return report.WriteSweepTable(cmd.OutOrStdout(), res)
}

func writeSweepFiles(errw io.Writer, dir string, res *experiment.SweepResult) error {
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"sweep.csv", func(w io.Writer) error { return report.WriteSweepCSV(w, res) }},
		{"attainment.csv", func(w io.Writer) error { return report.WriteAttainmentCSV(w, res) }},
		{"sweep.json", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}},
	}
	for _, f := range files {
		if err := createFile(filepath.Join(dir, f.name), f.write); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	plots, err := report.WriteSweepPlot(dir, res)
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	fmt.Fprintf(errw, "wrote %d files to %s (sweep.csv, attainment.csv, sweep.json, %s, …)\n", len(files)+len(plots), dir, plots[0])
	return nil
}

// parseGrids reads the --grid flags: each key once, each for an
// autoscaler the sweep runs.
func (o *simulateOptions) parseGrids(names []string) (map[string][]float64, error) {
	grids := map[string][]float64{}
	for _, g := range o.grids {
		key, vs, err := sim.ParseGrid(g)
		if err != nil {
			return nil, fmt.Errorf("--grid: %w", err)
		}
		if _, dup := grids[key]; dup {
			return nil, fmt.Errorf("--grid: %s is given twice (list its values in one --grid)", key)
		}
		if as, _, _ := strings.Cut(key, "."); !slices.Contains(names, as) {
			return nil, fmt.Errorf("--grid: %s sets %s, which the sweep does not run (--autoscalers %s)", key, as, strings.Join(names, ","))
		}
		grids[key] = vs
	}
	return grids, nil
}
