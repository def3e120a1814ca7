// Package report renders the simulator's results for people and files:
// the comparison table and results.json, summary.csv, models.csv,
// classes.csv, admission.csv and the series CSVs (report.go,
// admission.go), the figures (plots.go), the seeds' summary (seeds.go),
// the sweep's frontier table, CSVs and plot (sweep.go) and the admission
// matrix's JSON, CSV and Markdown (matrix.go). It computes nothing:
// package sim summarises the runs (sim.Summarize, sim.SummarizeMatrix, a
// sweep's frontiers and costs at equal attainment), and sim does not
// import it.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// WriteTable prints one row per autoscaler.
func WriteTable(w io.Writer, rs []*sim.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tARRIVED\tCOMPLETED\tFAILED\tGOODPUT rps\tSLO %\tTTFT %\tITL %\tTTFT mean p50/p95/p99 ms\tITL mean p99 ms\tE2E mean p99 s\tGPU-h\tCOST\tCOST/1k OK\tACTIONS\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%.1f\t%.1f\t%.1f\t%s %s/%s/%s\t%s %s\t%.2f %.2f\t%.2f\t%.2f\t%s\t%d\t\n",
			r.Autoscaler, r.Arrived, r.Completed, r.Failed, r.EffectiveThroughput, 100*r.SLOAttainment,
			100*r.TTFTAttainment, 100*r.ITLAttainment, ms(r.TTFTms.Mean), ms(r.TTFTms.P50), ms(r.TTFTms.P95), ms(r.TTFTms.P99),
			ms(r.ITLms.Mean), ms(r.ITLms.P99), r.E2Ems.Mean/1000, r.E2Ems.P99/1000, r.GPUHours, r.Cost, money(r.CostPer1kWithinSLO), r.ScalingActions)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeServerTable(w, rs); err != nil {
		return err
	}
	if err := writeModelTable(w, rs); err != nil {
		return err
	}
	if err := writeClassTable(w, rs); err != nil {
		return err
	}
	if err := writeAdmissionTable(w, rs); err != nil {
		return err
	}
	writeBreakdowns(w, rs)
	return nil
}

// writeBreakdowns prints, for each result that has one, its cost by the
// rule that asked for each replica, for the fleet and, when there are
// several, per model.
func writeBreakdowns(w io.Writer, rs []*sim.Result) {
	for _, r := range rs {
		if len(r.CostBreakdown) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s's cost by the rule that asked for it: %s\n", r.Autoscaler, breakdownLine(r.CostBreakdown))
		if !multiModel(rs) {
			continue
		}
		for _, m := range r.PerModel {
			if len(m.CostBreakdown) > 0 {
				fmt.Fprintf(w, "  %s: %s\n", m.Model, breakdownLine(m.CostBreakdown))
			}
		}
	}
}

// multiModel says whether the results are of a fleet of several models
// (the per-model table and models.csv say what the fleet's figures hide).
func multiModel(rs []*sim.Result) bool { return len(rs) > 0 && len(rs[0].PerModel) > 1 }

// writeModelTable prints each model's figures, when there are several.
func writeModelTable(w io.Writer, rs []*sim.Result) error {
	if !multiModel(rs) {
		return nil
	}
	fmt.Fprintln(w, "\nper model:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tMODEL\tARRIVED\tCOMPLETED\tFAILED\tGOODPUT rps\tSLO %\tGPU-h\tCOST\tFAILED: TIMEOUT\tREJECTED\tSHED\tTERMINATED\tUNSERVABLE\t")
	for _, r := range rs {
		for _, m := range r.PerModel {
			f := m.FailedBy
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.3f\t%.1f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%d\t\n", r.Autoscaler, m.Model, m.Arrived, m.Completed, m.Failed,
				m.EffectiveThroughput, 100*m.SLOAttainment, m.GPUHours, m.Cost, f.Timeout, f.Rejected, f.Shed, f.Terminated, f.Unservable)
		}
	}
	return tw.Flush()
}

// writeModelCSV writes models.csv: one row per autoscaler and model.
func writeModelCSV(w io.Writer, rs []*sim.Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"autoscaler", "model", "arrived", "completed", "failed", "within_slo", "slo_attainment", "effective_throughput_rps",
		"gpu_hours", "cost", "failed_timeout", "failed_rejected", "failed_shed", "failed_terminated", "failed_unservable", "failed_admission"})
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range rs {
		for _, m := range r.PerModel {
			fb := m.FailedBy
			_ = cw.Write([]string{r.Autoscaler, m.Model, i(m.Arrived), i(m.Completed), i(m.Failed), i(m.WithinSLO), f(m.SLOAttainment),
				f(m.EffectiveThroughput), f(m.GPUHours), f(m.Cost), i(fb.Timeout), i(fb.Rejected), i(fb.Shed), i(fb.Terminated), i(fb.Unservable), i(fb.Admission)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeServerTable prints the servers' side: throughput, preemptions,
// prefix-cache hits and failures by cause.
func writeServerTable(w io.Writer, rs []*sim.Result) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tTHROUGHPUT rps\tOUTPUT tok/s\tPREEMPTIONS\tPREFIX HIT %\tFAILED: TIMEOUT\tREJECTED\tSHED\tTERMINATED\tUNSERVABLE\t")
	for _, r := range rs {
		f := r.FailedBy
		fmt.Fprintf(tw, "%s\t%.3f\t%.0f\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t\n", r.Autoscaler, r.ThroughputRPS, r.OutputTokensPerSecond,
			r.Preemptions, 100*r.PrefixCacheHitRate, f.Timeout, f.Rejected, f.Shed, f.Terminated, f.Unservable)
	}
	return tw.Flush()
}

// classNames are the SLO classes of the results, sorted.
func classNames(rs []*sim.Result) []string {
	if len(rs) == 0 {
		return nil
	}
	names := make([]string, 0, len(rs[0].Classes))
	for n := range rs[0].Classes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// writeClassTable prints the per-class figures, when there are classes.
func writeClassTable(w io.Writer, rs []*sim.Result) error {
	names := classNames(rs)
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nper SLO class:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tCLASS\tARRIVED\tCOMPLETED\tFAILED\tWITHIN SLO\tSLO %\t")
	for _, r := range rs {
		for _, n := range names {
			c := r.Classes[n]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t\n", r.Autoscaler, n, c.Arrived, c.Completed, c.Failed, c.WithinSLO, 100*c.SLOAttainment)
		}
	}
	return tw.Flush()
}

func writeClassCSV(w io.Writer, rs []*sim.Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"autoscaler", "class", "arrived", "completed", "failed", "within_slo", "slo_attainment"})
	names := classNames(rs)
	for _, r := range rs {
		for _, n := range names {
			c := r.Classes[n]
			_ = cw.Write([]string{r.Autoscaler, n, strconv.FormatInt(c.Arrived, 10), strconv.FormatInt(c.Completed, 10),
				strconv.FormatInt(c.Failed, 10), strconv.FormatInt(c.WithinSLO, 10), f(c.SLOAttainment)})
		}
	}
	cw.Flush()
	return cw.Error()
}

func ms(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func money(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// WriteJSON writes the results (summaries and time series).
func WriteJSON(w io.Writer, rs []*sim.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rs)
}

// WriteFiles writes results.json, summary.csv, models.csv (one row per
// autoscaler and model), classes.csv (when the scenario has SLO classes)
// and one series CSV per autoscaler to dir.
func WriteFiles(dir string, rs []*sim.Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	var files []string
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return err
		}
		files = append(files, name)
		return f.Close()
	}
	if err := write("results.json", func(w io.Writer) error { return WriteJSON(w, rs) }); err != nil {
		return nil, err
	}
	if err := write("summary.csv", func(w io.Writer) error { return writeSummaryCSV(w, rs) }); err != nil {
		return nil, err
	}
	if err := write("models.csv", func(w io.Writer) error { return writeModelCSV(w, rs) }); err != nil {
		return nil, err
	}
	if len(classNames(rs)) > 0 {
		if err := write("classes.csv", func(w io.Writer) error { return writeClassCSV(w, rs) }); err != nil {
			return nil, err
		}
	}
	if hasAdmission(rs) {
		if err := write("admission.csv", func(w io.Writer) error { return writeAdmissionCSV(w, rs) }); err != nil {
			return nil, err
		}
	}
	for _, r := range rs {
		if err := write("series-"+SafeFileName(r.Autoscaler, '-')+".csv", func(w io.Writer) error { return writeSeriesCSV(w, r) }); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// SafeFileName turns a name from an input (an autoscaler's, a model's)
// into a file name that stays in its folder: letters, digits, '.', '_'
// and '-' are kept, anything else (a ':', a '/', a '\', a space, a
// control character) becomes sub, and a leading '.' is prefixed with '_'
// (no "..", no hidden file).
func SafeFileName(name string, sub rune) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune(sub)
		}
	}
	s := b.String()
	if s == "" || s[0] == '.' {
		s = "_" + s
	}
	return s
}

func f(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

func writeSummaryCSV(w io.Writer, rs []*sim.Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"autoscaler", "arrived", "completed", "failed", "within_slo", "effective_throughput_rps", "slo_attainment",
		"ttft_attainment", "itl_attainment", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p95_ms", "itl_p99_ms",
		"gpu_hours", "cost", "cost_per_1k_within_slo", "scaling_actions",
		"ttft_mean_ms", "ttft_p90_ms", "itl_mean_ms", "itl_p90_ms", "itl_per_request_mean_ms", "itl_per_request_p50_ms",
		"itl_per_request_p90_ms", "itl_per_request_p95_ms", "itl_per_request_p99_ms", "e2e_mean_ms", "e2e_p50_ms", "e2e_p90_ms",
		"e2e_p95_ms", "e2e_p99_ms", "throughput_rps", "output_tokens_per_second", "preemptions", "prefix_cache_hit_rate",
		"failed_timeout", "failed_rejected", "failed_shed", "failed_terminated", "failed_unservable", "duration_seconds"})
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range rs {
		fb := r.FailedBy
		_ = cw.Write([]string{r.Autoscaler, i64(r.Arrived), i64(r.Completed), i64(r.Failed), i64(r.WithinSLO),
			f(r.EffectiveThroughput), f(r.SLOAttainment), f(r.TTFTAttainment), f(r.ITLAttainment),
			f(r.TTFTms.P50), f(r.TTFTms.P95), f(r.TTFTms.P99), f(r.ITLms.P50), f(r.ITLms.P95), f(r.ITLms.P99),
			f(r.GPUHours), f(r.Cost), f(r.CostPer1kWithinSLO), strconv.Itoa(r.ScalingActions),
			f(r.TTFTms.Mean), f(r.TTFTms.P90), f(r.ITLms.Mean), f(r.ITLms.P90), f(r.ITLPerRequestMs.Mean), f(r.ITLPerRequestMs.P50),
			f(r.ITLPerRequestMs.P90), f(r.ITLPerRequestMs.P95), f(r.ITLPerRequestMs.P99), f(r.E2Ems.Mean), f(r.E2Ems.P50), f(r.E2Ems.P90),
			f(r.E2Ems.P95), f(r.E2Ems.P99), f(r.ThroughputRPS), f(r.OutputTokensPerSecond), i64(r.Preemptions), f(r.PrefixCacheHitRate),
			i64(fb.Timeout), i64(fb.Rejected), i64(fb.Shed), i64(fb.Terminated), i64(fb.Unservable), f(r.DurationSecs)})
	}
	cw.Flush()
	return cw.Error()
}

func writeSeriesCSV(w io.Writer, r *sim.Result) error {
	cw := csv.NewWriter(w)
	head := make([]string, 0, 6+2*len(r.Variants))
	head = append(head, "t", "arrival_rps", "ttft_p99_ms", "kv_usage", "cost_per_hour", "failed")
	for _, v := range r.Variants {
		head = append(head, "replicas:"+v, "ready:"+v)
	}
	_ = cw.Write(head)
	for _, p := range r.Series {
		row := make([]string, 0, cap(head))
		row = append(row, f(p.T), f(p.ArrivalRPS), f(p.TTFTp99Ms), f(p.KVUsage), f(p.CostPerHour), strconv.FormatInt(p.Failed, 10))
		for i := range r.Variants {
			row = append(row, strconv.Itoa(p.Replicas[i]), strconv.Itoa(p.Ready[i]))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
