package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/llm-d-incubation/wva/internal/sim"
)

func hasAdmission(rs []*sim.Result) bool {
	for _, r := range rs {
		if r.Admission != nil {
			return true
		}
	}
	return false
}

// writeAdmissionTable prints, when the gateway has an admission policy,
// each class's admission, goodput and TTFT percentiles with their 95 %
// bootstrap intervals, and the prefix cache among the arrived and the
// admitted requests.
func writeAdmissionTable(w io.Writer, rs []*sim.Result) error {
	if !hasAdmission(rs) {
		return nil
	}
	fmt.Fprintln(w, "\nadmission (gateway.admission):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "AUTOSCALER\tPOLICY\tCLASS\tADMITTED\tREJECTED\tGOODPUT %\tTTFT p50 ms [95% CI]\tTTFT p99 ms [95% CI]\tCACHE HIT % ARRIVED\tADMITTED\t")
	for _, r := range rs {
		a := r.Admission
		if a == nil {
			continue
		}
		for _, n := range classNames(rs) {
			c := r.Classes[n].Admission
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%.1f\t%.1f\t\n", r.Autoscaler, a.Policy, n, c.Admitted, c.Rejected,
				100*c.Goodput, ci(c.TTFTp50Ms), ci(c.TTFTp99Ms), 100*c.CacheHitArrived, 100*c.CacheHitAdmitted)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f\t\t\t%.1f\t%.1f\t\n", r.Autoscaler, a.Policy, "(all)", a.Admitted, a.Rejected,
			100*r.SLOAttainment, 100*a.CacheHitArrived, 100*a.CacheHitAdmitted)
	}
	return tw.Flush()
}

// writeAdmissionCSV writes one row per result and class (and one for all
// classes, class "*").
func writeAdmissionCSV(w io.Writer, rs []*sim.Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"autoscaler", "policy", "class", "arrived", "admitted", "rejected", "completed", "within_slo", "goodput",
		"ttft_p50_ms", "ttft_p50_low", "ttft_p50_high", "ttft_p99_ms", "ttft_p99_low", "ttft_p99_high",
		"cache_hit_arrived", "cache_hit_admitted"})
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range rs {
		a := r.Admission
		if a == nil {
			continue
		}
		for _, n := range classNames(rs) {
			cs := r.Classes[n]
			c := cs.Admission
			_ = cw.Write([]string{r.Autoscaler, a.Policy, n, i64(cs.Arrived), i64(c.Admitted), i64(c.Rejected), i64(cs.Completed),
				i64(cs.WithinSLO), f(c.Goodput), f(c.TTFTp50Ms.Value), f(c.TTFTp50Ms.Low), f(c.TTFTp50Ms.High),
				f(c.TTFTp99Ms.Value), f(c.TTFTp99Ms.Low), f(c.TTFTp99Ms.High), f(c.CacheHitArrived), f(c.CacheHitAdmitted)})
		}
		_ = cw.Write([]string{r.Autoscaler, a.Policy, "*", i64(r.Arrived), i64(a.Admitted), i64(a.Rejected), i64(r.Completed),
			i64(r.WithinSLO), f(r.SLOAttainment), "", "", "", "", "", "", f(a.CacheHitArrived), f(a.CacheHitAdmitted)})
	}
	cw.Flush()
	return cw.Error()
}
