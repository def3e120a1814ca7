package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// Stat is a figure's mean, standard deviation and range over seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func statOf(xs []float64) Stat {
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	for _, x := range xs {
		s.SD += (x - s.Mean) * (x - s.Mean)
	}
	if len(xs) > 1 {
		s.SD = math.Sqrt(s.SD / float64(len(xs)-1))
	} else {
		s.SD = 0
	}
	return s
}

// SeedSummary is one autoscaler's figures over several seeds of a
// scenario: single runs of a bursty scenario differ a lot, so comparisons
// should rest on these.
type SeedSummary struct {
	Autoscaler string   `json:"autoscaler"`
	Seeds      []uint64 `json:"seeds"`
	// SLOAttainment is in percent.
	SLOAttainment       Stat `json:"sloAttainmentPct"`
	EffectiveThroughput Stat `json:"effectiveThroughputRps"`
	TTFTp99Ms           Stat `json:"ttftP99Ms"`
	Cost                Stat `json:"cost"`
	CostPer1kWithinSLO  Stat `json:"costPer1kWithinSlo"`
	Failed              Stat `json:"failed"`
	// Terminated are the failed requests that were in flight on a pod
	// that was removed.
	Terminated Stat `json:"terminated"`
	// Wins counts the seeds where this autoscaler had the highest SLO
	// attainment (ties count for each).
	Wins int `json:"wins"`
}

// Summarize turns runs (one Compare result list per seed, the autoscalers
// in the same order) into one summary per autoscaler.
func Summarize(seeds []uint64, runs [][]*Result) []SeedSummary {
	if len(runs) == 0 {
		return nil
	}
	out := make([]SeedSummary, len(runs[0]))
	for i := range out {
		var slo, good, p99, cost, per1k, failed, term []float64
		for _, rs := range runs {
			r := rs[i]
			slo = append(slo, 100*r.SLOAttainment)
			good = append(good, r.EffectiveThroughput)
			p99 = append(p99, r.TTFTms.P99)
			cost = append(cost, r.Cost)
			per1k = append(per1k, r.CostPer1kWithinSLO)
			failed = append(failed, float64(r.Failed))
			term = append(term, float64(r.FailedBy.Terminated))
		}
		out[i] = SeedSummary{Autoscaler: runs[0][i].Autoscaler, Seeds: seeds, SLOAttainment: statOf(slo),
			EffectiveThroughput: statOf(good), TTFTp99Ms: statOf(p99), Cost: statOf(cost), CostPer1kWithinSLO: statOf(per1k),
			Failed: statOf(failed), Terminated: statOf(term)}
	}
	for _, rs := range runs {
		best := 0.0
		for _, r := range rs {
			if !instant(r.Autoscaler) {
				best = math.Max(best, r.SLOAttainment)
			}
		}
		for i, r := range rs {
			if !instant(r.Autoscaler) && r.SLOAttainment == best {
				out[i].Wins++
			}
		}
	}
	return out
}

// WriteSeedTable prints the summaries: mean ± standard deviation, and the
// range of the SLO attainment.
func WriteSeedTable(w io.Writer, ss []SeedSummary) error {
	if len(ss) == 0 {
		return nil
	}
	fmt.Fprintf(w, "over %d seeds (%d–%d): mean ± sd\n\n", len(ss[0].Seeds), ss[0].Seeds[0], ss[0].Seeds[len(ss[0].Seeds)-1])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tSLO %\tSLO % min–max\tBEST SLO\tGOODPUT rps\tTTFT p99 ms\tCOST\tCOST/1k OK\tFAILED\tTERMINATED\t")
	for _, s := range ss {
		wins := strconv.Itoa(s.Wins)
		if instant(s.Autoscaler) {
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
func WriteSeedCSV(w io.Writer, ss []SeedSummary) error {
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
		for _, st := range []Stat{s.SLOAttainment, s.EffectiveThroughput, s.TTFTp99Ms, s.Cost, s.CostPer1kWithinSLO, s.Failed, s.Terminated} {
			row = append(row, f(st.Mean), f(st.SD), f(st.Min), f(st.Max))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
