package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/experiment"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// WriteMatrixJSON writes the cells.
func WriteMatrixJSON(w io.Writer, cells []experiment.MatrixCell) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(cells)
}

// WriteMatrixCSV writes one row per cell and class: the class's figures,
// then its cell's.
func WriteMatrixCSV(w io.Writer, cells []experiment.MatrixCell) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"config", "rate", "autoscaler", "seeds", "class",
		"goodput_pct_mean", "goodput_pct_sd", "admitted_pct_mean", "admitted_pct_sd",
		"ttft_p50_ms", "ttft_p50_low", "ttft_p50_high", "ttft_p99_ms", "ttft_p99_low", "ttft_p99_high",
		"ttft_p99_per_seed_mean", "ttft_p99_per_seed_sd", "completed", "completed_min_per_seed",
		"cell_goodput_pct_mean", "cell_goodput_pct_sd", "cell_admitted_pct_mean", "output_tokens_per_s_mean",
		"gpu_hours_mean", "gpu_hours_sd", "cost_mean", "server_prefix_hit_pct_mean",
		"cache_hit_arrived_pct_mean", "cache_hit_admitted_pct_mean", "cached_tokens_arrived_pct_mean", "cached_tokens_admitted_pct_mean",
		"new_group_admitted_pct_mean", "established_admitted_pct_mean",
		"estimate_in_use_median_abs_ms", "estimate_initial_median_abs_ms"})
	for i := range cells {
		c := &cells[i]
		tail := []string{f(c.GoodputPct.Mean), f(c.GoodputPct.SD), f(c.AdmittedPct.Mean), f(c.OutputTokensPerSecond.Mean),
			f(c.GPUHours.Mean), f(c.GPUHours.SD), f(c.Cost.Mean), f(c.ServerPrefixHitPct.Mean),
			meanOf(c.CacheHitArrivedPct), meanOf(c.CacheHitAdmittedPct), meanOf(c.CachedTokensArrivedPct), meanOf(c.CachedTokensAdmittedPct),
			meanOf(c.NewGroupAdmittedPct), meanOf(c.EstablishedAdmittedPct), "", ""}
		if e := c.Estimate; e != nil {
			tail[len(tail)-2], tail[len(tail)-1] = f(e.InUseMedianAbsMs.Mean), f(e.InitialMedianAbsMs.Mean)
		}
		for _, k := range c.Classes {
			row := make([]string, 0, 19+len(tail))
			row = append(row, c.Config, c.Rate, c.Autoscaler, strconv.Itoa(len(c.Seeds)), k.Class,
				f(k.GoodputPct.Mean), f(k.GoodputPct.SD), f(k.AdmittedPct.Mean), f(k.AdmittedPct.SD),
				f(k.TTFTp50Ms.Value), f(k.TTFTp50Ms.Low), f(k.TTFTp50Ms.High), f(k.TTFTp99Ms.Value), f(k.TTFTp99Ms.Low), f(k.TTFTp99Ms.High),
				f(k.TTFTp99PerSeedMs.Mean), f(k.TTFTp99PerSeedMs.SD), strconv.FormatInt(k.Completed, 10), strconv.FormatInt(k.CompletedMinPerSeed, 10))
			_ = cw.Write(append(row, tail...))
		}
	}
	cw.Flush()
	return cw.Error()
}

func meanOf(s *experiment.Stat) string {
	if s == nil {
		return ""
	}
	return f(s.Mean)
}

// pm formats a Stat as mean ± sd with the given decimals.
func pm(s experiment.Stat, dec int) string {
	return strconv.FormatFloat(s.Mean, 'f', dec, 64) + " ± " + strconv.FormatFloat(s.SD, 'f', dec, 64)
}

func pmPtr(s *experiment.Stat, dec int) string {
	if s == nil {
		return "–"
	}
	return pm(*s, dec)
}

// ci formats an interval in ms: value [low, high].
func ci(v sim.Interval) string {
	return ms(v.Value) + " [" + ms(v.Low) + ", " + ms(v.High) + "]"
}

// WriteMatrixMarkdown writes the report: per rate, a table of the cells
// (every class together), a table per class, and the predictive model's
// accuracy where a cell used it.
func WriteMatrixMarkdown(w io.Writer, sc *scenario.Scenario, cells []experiment.MatrixCell) error {
	fmt.Fprintf(w, "# %s\n\n%s\n\n", sc.Name, sc.Description)
	if len(cells) > 0 {
		fmt.Fprintf(w, "Seeds %s; figures are mean ± sd over the seeds, TTFT percentiles over the seeds' requests pooled with 95 %% bootstrap intervals.\n",
			joinSeeds(cells[0].Seeds))
	}
	for _, rate := range rateOrder(cells) {
		fmt.Fprintf(w, "\n## Rate %s\n\n", rate)
		writeCellTable(w, cells, rate)
		writeClassTables(w, cells, rate)
		writeEstimateTable(w, cells, rate)
	}
	return nil
}

func joinSeeds(seeds []uint64) string {
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = strconv.FormatUint(s, 10)
	}
	return strings.Join(parts, ", ")
}

func rateOrder(cells []experiment.MatrixCell) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cells {
		if !seen[c.Rate] {
			seen[c.Rate] = true
			out = append(out, c.Rate)
		}
	}
	return out
}

func writeCellTable(w io.Writer, cells []experiment.MatrixCell, rate string) {
	fmt.Fprintln(w, "| config | autoscaler | goodput % | admitted % | new group / established admitted % | cache hit % of requests, arrived → admitted | cached prompt tokens %, arrived → admitted | server prefix hit % | output tok/s | GPU-h | cost |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range cells {
		if c.Rate != rate {
			continue
		}
		hits, cached := "–", "–"
		if c.CachedTokensArrivedPct != nil {
			hits = pm(*c.CacheHitArrivedPct, 1) + " → " + pm(*c.CacheHitAdmittedPct, 1)
			cached = pm(*c.CachedTokensArrivedPct, 1) + " → " + pm(*c.CachedTokensAdmittedPct, 1)
		}
		group := "–"
		if c.NewGroupAdmittedPct != nil {
			group = pm(*c.NewGroupAdmittedPct, 1) + " / " + pmPtr(c.EstablishedAdmittedPct, 1)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Config, c.Autoscaler, pm(c.GoodputPct, 1),
			pm(c.AdmittedPct, 1), group, hits, cached, pm(c.ServerPrefixHitPct, 1), pm(c.OutputTokensPerSecond, 0),
			pm(c.GPUHours, 2), pm(c.Cost, 2))
	}
}

func writeClassTables(w io.Writer, cells []experiment.MatrixCell, rate string) {
	fmt.Fprintln(w, "\n| config | autoscaler | class | goodput % | admitted % | TTFT p50 ms [95 % CI] | TTFT p99 ms [95 % CI] | p99 per seed ms | completed (fewest per seed) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range cells {
		if c.Rate != rate {
			continue
		}
		for _, k := range c.Classes {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %d (%d) |\n", c.Config, c.Autoscaler, k.Class,
				pm(k.GoodputPct, 1), pm(k.AdmittedPct, 1), ci(k.TTFTp50Ms), ci(k.TTFTp99Ms),
				ms(k.TTFTp99PerSeedMs.Mean)+" ± "+ms(k.TTFTp99PerSeedMs.SD), k.Completed, k.CompletedMinPerSeed)
		}
	}
}

func writeEstimateTable(w io.Writer, cells []experiment.MatrixCell, rate string) {
	header := false
	for _, c := range cells {
		e := c.Estimate
		if c.Rate != rate || e == nil {
			continue
		}
		if !header {
			header = true
			fmt.Fprintln(w, "\nPredictive TTFT estimate − observed TTFT of the admitted requests (ms):")
			fmt.Fprintln(w, "\n| config | autoscaler | median abs. error, coefficients in use | median abs. error, initial coefficients | median abs. error, best case | mean error, in use | fit β0 ms | fit β1 ms/token | fit queue steps |")
			fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Config, c.Autoscaler, pm(e.InUseMedianAbsMs, 1),
			pm(e.InitialMedianAbsMs, 1), pm(e.BestCaseMedianAbsMs, 1), pm(e.InUseMeanSignedMs, 1),
			pmPtr(e.Beta0Ms, 2), pmPtr(e.Beta1Ms, 4), pmPtr(e.Queue, 3))
	}
}
