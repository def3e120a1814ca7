package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/experiment"
)

// WriteSeedTable prints the summaries: mean ± standard deviation, and the
// range of the SLO attainment.
func WriteSeedTable(w io.Writer, ss []experiment.SeedSummary) error {
	if len(ss) == 0 {
		return nil
	}
	fmt.Fprintf(w, "over %d seeds (%d–%d): mean ± sd\n\n", len(ss[0].Seeds), ss[0].Seeds[0], ss[0].Seeds[len(ss[0].Seeds)-1])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tSLO %\tSLO % min–max\tBEST SLO\tGOODPUT rps\tTTFT p99 ms\tCOST\tCOST/1k OK\tFAILED\tTERMINATED\t")
	for _, s := range ss {
		wins := strconv.Itoa(s.Wins)
		if sim.Instant(s.Autoscaler) {
			wins = "-"
		}
		fmt.Fprintf(tw, "%s\t%.1f ± %.1f\t%.1f–%.1f\t%s\t%.3f ± %.3f\t%s ± %s\t%.2f ± %.2f\t%.3f ± %.3f\t%.0f\t%.1f\t\n", s.Autoscaler,
			s.SLOAttainment.Mean, s.SLOAttainment.SD, s.SLOAttainment.Min, s.SLOAttainment.Max, wins,
			s.EffectiveThroughput.Mean, s.EffectiveThroughput.SD, ms(s.TTFTp99Ms.Mean), ms(s.TTFTp99Ms.SD),
			s.Cost.Mean, s.Cost.SD, s.CostPer1kWithinSLO.Mean, s.CostPer1kWithinSLO.SD, s.Failed.Mean, s.Terminated.Mean)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range ss {
		if len(s.CostBreakdown) > 0 {
			means := make(map[string]float64, len(s.CostBreakdown))
			for part, st := range s.CostBreakdown {
				means[part] = st.Mean
			}
			fmt.Fprintf(w, "\n%s's cost by the rule that asked for it (mean over the seeds): %s\n", s.Autoscaler, breakdownLine(means))
		}
	}
	return nil
}

// breakdownLine is a cost breakdown (part → cost, the part names of
// engine.Breakdown, the only ones an autoscaler reports) in the plan's
// order of parts, with each part's share of the total: "need 5.71 (66 %),
// spare 1.02 (12 %), …". The total is summed in that order, so that the
// same breakdown prints the same digits.
func breakdownLine(b map[string]float64) string {
	total := 0.0
	for _, p := range (engine.Breakdown{}).Parts() {
		total += b[p.Name]
	}
	var parts []string
	for _, p := range (engine.Breakdown{}).Parts() {
		if v := b[p.Name]; v != 0 {
			parts = append(parts, fmt.Sprintf("%s %.3g (%.0f %%)", p.Name, v, 100*v/total))
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; total %.3g", total)
}

// WriteSeedCSV writes the summaries, one row per autoscaler.
func WriteSeedCSV(w io.Writer, ss []experiment.SeedSummary) error {
	cw := csv.NewWriter(w)
	names := []string{"slo_attainment_pct", "effective_throughput_rps", "ttft_p99_ms", "cost", "cost_per_1k_within_slo", "failed", "terminated"}
	parts := (engine.Breakdown{}).Parts()
	head := make([]string, 0, 3+4*len(names)+len(parts))
	head = append(head, "autoscaler", "seeds", "best_slo_seeds")
	for _, n := range names {
		head = append(head, n+"_mean", n+"_sd", n+"_min", n+"_max")
	}
	// The cost breakdown's mean per part (empty for an autoscaler that
	// reports none), after the fixed columns.
	for _, p := range parts {
		head = append(head, "cost_"+snake(p.Name)+"_mean")
	}
	_ = cw.Write(head)
	for _, s := range ss {
		row := []string{s.Autoscaler, strconv.Itoa(len(s.Seeds)), strconv.Itoa(s.Wins)}
		for _, st := range []experiment.Stat{s.SLOAttainment, s.EffectiveThroughput, s.TTFTp99Ms, s.Cost, s.CostPer1kWithinSLO, s.Failed, s.Terminated} {
			row = append(row, f(st.Mean), f(st.SD), f(st.Min), f(st.Max))
		}
		for _, p := range parts {
			cell := ""
			if s.CostBreakdown != nil {
				cell = f(s.CostBreakdown[p.Name].Mean)
			}
			row = append(row, cell)
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// snake turns a part's name into a CSV column's: safetyBlock → safety_block.
func snake(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
