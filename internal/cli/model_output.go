package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// writeJSON prints one object for a single case, an array for a case file.
func writeJSON[T any](w io.Writer, many bool, results []T) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if many {
		return enc.Encode(results)
	}
	return enc.Encode(results[0])
}

// column is one column of a table: a header and how to render a row.
type column[T any] struct {
	header string
	cell   func(T) string
}

// writeTable prints a single result as "name  value" lines and several as
// one row each. Failed rows show their error after the case name.
func writeTable[T any](w io.Writer, many bool, results []T, cols []column[T], errOf func(T) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !many {
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t%s\n", c.header, c.cell(results[0]))
		}
		return tw.Flush()
	}
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c.header)
	}
	fmt.Fprintln(tw)
	for _, r := range results {
		if e := errOf(r); e != "" {
			fmt.Fprintf(tw, "%s\t%s\terror: %s\n", cols[0].cell(r), cols[1].cell(r), e)
			continue
		}
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c.cell(r))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// num renders a number with four significant digits, without exponent
// notation for everyday magnitudes.
func num(v float64) string {
	if v < 5e-4 && v > -5e-4 {
		return "0" // sub-microsecond waits and the like: noise to a reader
	}
	if v >= 1e7 || v <= -1e7 {
		return strconv.FormatFloat(v, 'e', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', decimals(v), 64)
}

func decimals(v float64) int {
	switch a := max(v, -v); {
	case a >= 1000:
		return 0
	case a >= 100:
		return 1
	case a >= 10:
		return 2
	default:
		return 3
	}
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func printAnalyze(w io.Writer, format string, many bool, rs []analyzeResult) error {
	if format == "json" {
		return writeJSON(w, many, rs)
	}
	cols := []column[analyzeResult]{
		{"CASE", func(r analyzeResult) string { return r.Case }},
		{"MODEL", func(r analyzeResult) string { return r.ServiceModel }},
		{"RATE rps", func(r analyzeResult) string { return num(r.RateRPS) }},
		{"THROUGHPUT rps", func(r analyzeResult) string { return num(r.ThroughputRPS) }},
		{"TTFT ms", func(r analyzeResult) string { return num(r.TTFTMs) }},
		{"TTFT pct ms", func(r analyzeResult) string {
			if r.Error != "" {
				return ""
			}
			v := "∞"
			if r.TTFTPercentileMs != nil {
				v = num(*r.TTFTPercentileMs)
			}
			return fmt.Sprintf("p%s %s", strconv.FormatFloat(100*r.Percentile, 'g', 4, 64), v)
		}},
		{"WITHIN TARGET", func(r analyzeResult) string {
			if r.TTFTAttainment == nil {
				return "-"
			}
			return pct(*r.TTFTAttainment)
		}},
		{"ITL ms", func(r analyzeResult) string { return num(r.ITLMs) }},
		{"WAIT ms", func(r analyzeResult) string { return num(r.WaitMs) }},
		{"BATCH", func(r analyzeResult) string { return num(r.AvgBatchSize) }},
		{"UTIL", func(r analyzeResult) string { return pct(r.Utilization) }},
		{"BLOCKED", func(r analyzeResult) string { return pct(r.BlockingProbability) }},
		{"MAX RATE rps", func(r analyzeResult) string { return num(r.MaxRateRPS) }},
		{"TOKENS/s", func(r analyzeResult) string { return num(r.TokensPerSecond) }},
	}
	if !many {
		cols = cols[1:]
	}
	return writeTable(w, many, rs, cols, func(r analyzeResult) string { return r.Error })
}

func printSize(w io.Writer, format string, many bool, rs []sizeResult) error {
	if format == "json" {
		return writeJSON(w, many, rs)
	}
	target := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return num(v)
	}
	cols := []column[sizeResult]{
		{"CASE", func(r sizeResult) string { return r.Case }},
		{"MODEL", func(r sizeResult) string { return r.ServiceModel }},
		{"TARGET TTFT ms", func(r sizeResult) string { return target(r.TargetTTFTMs) }},
		{"TARGET ITL ms", func(r sizeResult) string { return target(r.TargetITLMs) }},
		{"RATE@TTFT rps", func(r sizeResult) string { return num(r.RateTTFTRPS) }},
		{"RATE@ITL rps", func(r sizeResult) string { return num(r.RateITLRPS) }},
		{"RATE* rps", func(r sizeResult) string { return num(r.RateStarRPS) }},
		{"BINDING", func(r sizeResult) string {
			if r.Binding == "" {
				return "none"
			}
			return r.Binding
		}},
		{"CAPACITY rps", func(r sizeResult) string { return num(r.CapacityRPS) }},
		{"TTFT ms", func(r sizeResult) string { return num(r.TTFTMs) }},
		{"WITHIN TTFT", func(r sizeResult) string {
			if r.TTFTAttainment == nil {
				return "-"
			}
			return pct(*r.TTFTAttainment)
		}},
		{"ITL ms", func(r sizeResult) string { return num(r.ITLMs) }},
		{"UTIL", func(r sizeResult) string { return pct(r.Utilization) }},
		{"DEMAND rps", func(r sizeResult) string { return target(max(r.DemandRPS, r.DemandFloorRPS)) }},
		{"REPLICAS", func(r sizeResult) string {
			if r.Replicas == nil {
				return "-"
			}
			return strconv.Itoa(*r.Replicas)
		}},
	}
	if !many {
		cols = cols[1:]
	}
	return writeTable(w, many, rs, cols, func(r sizeResult) string { return r.Error })
}
