package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

type planOptions struct {
	file      string
	output    string
	mode      string
	optimizer string
}

func newPlanCommand() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Dry-run the decision engine on a snapshot and explain every decision",
		Long: `Run one cycle of WVA's decision engine on a snapshot of the fleet and print
what it would do, and why. Nothing is changed anywhere.

The snapshot (-f, YAML or JSON) holds the mode (capacity-only, model-only,
hybrid), the optimizer (unlimited, limited) with its accelerator inventory,
saturation thresholds, service classes or per-model SLOs, and the models with
their variants (accelerator, accelerators per replica, cost, min/max/current/
ready replicas, service model parameters if profiled) and each variant's pods
with their metrics. The schema is in docs/plan.md; examples/plan/ has
commented examples. Units: ms, requests/s, tokens.

For each variant the plan gives the current and desired replicas, the
action, a machine-readable reason (saturation-scale-up, capacity-veto,
safety-block, hold-metrics-unavailable, scale-to-zero, …) and a one-line
explanation, plus each analyzer's proposal; for each model the demand, the
SLO used and where it came from, and the saturation figures.

An invalid snapshot is an error that names the field path, for example
models[0].variants[1].maxReplicas.`,
		Example: `  wva plan -f examples/plan/snapshot.yaml
  wva plan -f examples/plan/limited.yaml -o json
  wva plan -f snapshot.yaml --mode hybrid`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.file, "file", "f", "", "snapshot file, YAML or JSON (required; - for standard input)")
	fs.StringVarP(&o.output, "output", "o", "table", `output format: "table" or "json"`)
	fs.StringVar(&o.mode, "mode", "", `override the snapshot's mode: "capacity-only", "model-only" or "hybrid"`)
	fs.StringVar(&o.optimizer, "optimizer", "", `override the snapshot's optimizer: "unlimited" or "limited"`)
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command) error {
	if o.file == "" {
		return errors.New("--file is required")
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	f, err := o.read(cmd)
	if err != nil {
		return err
	}
	if o.mode != "" {
		f.Mode = engine.Mode(o.mode)
	}
	if o.optimizer != "" {
		f.Optimizer = engine.OptimizerKind(o.optimizer)
	}
	if f.Time.IsZero() {
		f.Time = time.Now() // the edge of the system: the engine itself reads no clock
	}
	p, err := f.Plan()
	if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	return printPlan(cmd.OutOrStdout(), p)
}

// read reads the snapshot file (snapshot.ParseFile: the engine's snapshot
// with the optional state, tuner settings and notes a controller writes).
func (o *planOptions) read(cmd *cobra.Command) (*snapshot.File, error) {
	data, err := readInput(o.file, cmd.InOrStdin())
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	f, err := snapshot.ParseFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.file, err)
	}
	return f, nil
}

func printPlan(w io.Writer, p *engine.Plan) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tVARIANT\tACCELERATOR\tCURRENT\tREADY\tDESIRED\tACTION\tREASON")
	for _, d := range p.Variants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", qualified(d.Namespace, d.Model), d.Variant, d.Accelerator,
			d.Current, d.Ready, d.Desired, d.Action, d.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmode %s, %s\n", p.Mode, p.Time.Format(time.RFC3339))
	for _, m := range p.Models {
		printModel(w, m, p.Variants)
	}
	if len(p.Usage) > 0 {
		fmt.Fprintln(w)
		for _, acc := range sortedStrings(p.Usage) {
			u := p.Usage[acc]
			avail := ""
			if u.Available > 0 {
				avail = " of " + strconv.Itoa(u.Available)
			}
			fmt.Fprintf(w, "%s: %d → %d accelerator(s)%s\n", acc, u.Current, u.Desired, avail)
		}
	}
	return nil
}

func qualified(ns, model string) string {
	if ns == "" {
		return model
	}
	return ns + "/" + model
}

func sortedStrings[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// printModel prints a model's figures and its variants' explanations.
func printModel(w io.Writer, m engine.ModelSummary, variants []engine.VariantDecision) {
	fmt.Fprintf(w, "\n%s: demand %s rps, cost %s → %s", qualified(m.Namespace, m.Model), num(m.DemandRPS), num(m.CostBefore), num(m.CostAfter))
	if m.SLOSource != "" {
		fmt.Fprintf(w, "; SLO (%s) TTFT %s ms, ITL %s ms", m.SLOSource, num(m.SLOTTFTMs), num(m.SLOITLMs))
		if m.SLOTPS > 0 {
			fmt.Fprintf(w, ", TPS %s", num(m.SLOTPS))
		}
	}
	fmt.Fprintln(w)
	if m.ModelError != "" {
		fmt.Fprintf(w, "  model analysis: %s\n", m.ModelError)
	}
	if b := m.CostBreakdown; b != nil && b.Total() > 0 {
		var parts []string
		for _, p := range b.Parts() {
			if p.Value != 0 {
				parts = append(parts, p.Name+" "+num(p.Value))
			}
		}
		fmt.Fprintf(w, "  cost %s by the rule that asks for it: %s\n", num(m.CostAfter), strings.Join(parts, ", "))
	}
	for _, sd := range m.Saturation {
		role := ""
		if sd.Role != "" {
			role = " (" + sd.Role + ")"
		}
		fmt.Fprintf(w, "  saturation%s: %d replicas, %d saturated, spare KV %.3f, spare queue %.2f, scale-up %v, scale-down safe %v\n",
			role, sd.Replicas, sd.Saturated, sd.AvgSpareKV, sd.AvgSpareQueue, sd.ScaleUp, sd.ScaleDownSafe)
	}
	for _, d := range variants {
		if d.Model == m.Model && d.Namespace == m.Namespace {
			fmt.Fprintf(w, "  %s → %d: %s\n", d.Variant, d.Desired, d.Explanation)
		}
	}
}
