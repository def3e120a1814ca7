package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

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
	return tw.Flush()
}

// WriteSeedCSV writes the summaries, one row per autoscaler.
func WriteSeedCSV(w io.Writer, ss []experiment.SeedSummary) error {
	cw := csv.NewWriter(w)
	names := []string{"slo_attainment_pct", "effective_throughput_rps", "ttft_p99_ms", "cost", "cost_per_1k_within_slo", "failed", "terminated"}
	head := make([]string, 0, 3+4*len(names))
	head = append(head, "autoscaler", "seeds", "best_slo_seeds")
	for _, n := range names {
		head = append(head, n+"_mean", n+"_sd", n+"_min", n+"_max")
	}
	_ = cw.Write(head)
	for _, s := range ss {
		row := []string{s.Autoscaler, strconv.Itoa(len(s.Seeds)), strconv.Itoa(s.Wins)}
		for _, st := range []experiment.Stat{s.SLOAttainment, s.EffectiveThroughput, s.TTFTp99Ms, s.Cost, s.CostPer1kWithinSLO, s.Failed, s.Terminated} {
			row = append(row, f(st.Mean), f(st.SD), f(st.Min), f(st.Max))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
