// The PromQL the source runs for a target, and the instant query with
// timeout and retries that runs it.

package prometheus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/servermetrics"
)

// The queries: what each reads and how the by() clause groups it.
const (
	qArrivals    = "arrivals"
	qPromptSum   = "promptSum"
	qPromptCnt   = "promptCount"
	qGenSum      = "genSum"
	qGenCnt      = "genCount"
	qTTFTSum     = "ttftSum"
	qTTFTCnt     = "ttftCount"
	qITLSum      = "itlSum"
	qITLCnt      = "itlCount"
	qKV          = "kv"
	qWaiting     = "waiting"
	qRunning     = "running"
	qSampled     = "sampled"
	qSamples     = "samples"
	qCacheBlock  = "cache"
	qCacheTokens = "cacheTokens"
	qPreempt     = "preemptions"
	qTTFTBuckets = "ttftBuckets"
	qTPOTBuckets = "tpotBuckets"
)

// queries are the PromQL of each query for a target. A figure with
// several names in the schema reads the first a pod exports: the
// alternatives are joined with `or`, which keeps a pod's series from the
// left-hand side when it has one (so a vLLM that exports a metric under
// both its new and its deprecated name is read once, by the new name).
func (s *Source) queries(t collector.Target) map[string]string {
	sc := s.schema
	sel := fmt.Sprintf(`{%s=%q,%s=%q}`, s.cfg.NamespaceLabel, t.Namespace, sc.ModelLabel, t.Model)
	by := s.by("")
	w := model.Duration(s.cfg.Window).String()
	each := func(names []string, f func(string) string) string {
		qs := make([]string, len(names))
		for i, n := range names {
			qs[i] = f(n)
		}
		return strings.Join(qs, " or ")
	}
	rate := func(m string) string { return fmt.Sprintf("sum %s (rate(%s%s[%s]))", by, m, sel, w) }
	rates := func(names []string) string { return each(names, rate) }
	sums := func(rs []servermetrics.Ratio) string { return rates(ratioSeries(rs, true)) }
	counts := func(rs []servermetrics.Ratio) string { return rates(ratioSeries(rs, false)) }
	gauge := func(names []string, f string) string {
		return each(names, func(m string) string { return fmt.Sprintf(f, by, m, sel, w) })
	}
	qs := map[string]string{
		qArrivals:  rates(sc.Requests),
		qPromptSum: sums(sc.PromptTokens), qPromptCnt: counts(sc.PromptTokens),
		qGenSum: sums(sc.OutputTokens), qGenCnt: counts(sc.OutputTokens),
		qTTFTSum: sums(sc.TTFT), qTTFTCnt: counts(sc.TTFT),
		qITLSum: sums(sc.ITL), qITLCnt: counts(sc.ITL),
		qKV:      gauge(sc.KVUsage, "max %s (max_over_time(%s%s[%s]))"),
		qWaiting: gauge(sc.Waiting, "max %s (max_over_time(%s%s[%s]))"),
		qRunning: gauge(sc.Running, "max %s (%s%s)%.0s"),
		qSampled: gauge(sc.Waiting, "max %s (timestamp(%s%s))%.0s"),
		// How many scrapes of the pod fall in the window: with two or more,
		// a rate that is absent means the counter is, not that the pod is
		// too new to have one.
		qSamples: gauge(sc.Waiting, "max %s (count_over_time(%s%s[%s]))"),
	}
	if len(sc.Preemptions) > 0 {
		qs[qPreempt] = rates(sc.Preemptions)
	}
	// The latency histograms' buckets over the window, by le: the share
	// of requests within the SLO (optional; they annotate pods the other
	// queries found).
	byLe := s.by("le")
	buckets := func(names []string) string {
		return each(names, func(m string) string { return fmt.Sprintf("sum %s (increase(%s_bucket%s[%s]))", byLe, m, sel, w) })
	}
	if len(sc.TTFTHistogram) > 0 {
		qs[qTTFTBuckets] = buckets(sc.TTFTHistogram)
	}
	if len(sc.TPOTHistogram) > 0 {
		qs[qTPOTBuckets] = buckets(sc.TPOTHistogram)
	}
	for _, c := range sc.Cache {
		switch {
		case c.Info != "" && qs[qCacheBlock] == "":
			// vLLM's cache_config_info has no model_name label: read the
			// namespace's and keep the pods the other queries found.
			qs[qCacheBlock] = fmt.Sprintf("max %s (%s{%s=%q})", s.by(strings.Join(cacheLabels(c), ",")), c.Info,
				s.cfg.NamespaceLabel, t.Namespace)
		case c.TokensGauge != "" && qs[qCacheTokens] == "":
			qs[qCacheTokens] = fmt.Sprintf("max %s (%s%s)", by, c.TokensGauge, sel)
		}
	}
	return qs
}

// ratioSeries are the Sum (or Count) series of a figure's alternatives.
func ratioSeries(rs []servermetrics.Ratio, sum bool) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Count
		if sum {
			out[i] = r.Sum
		}
	}
	return out
}

// cacheLabels are the labels of an info series that carry the geometry.
func cacheLabels(c servermetrics.Cache) []string {
	var out []string
	for _, l := range []string{c.BlocksLabel, c.BlockSizeLabel, c.TokensLabel} {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (s *Source) by(extra string) string {
	labels := append([]string{s.cfg.NamespaceLabel, s.cfg.PodLabel}, s.cfg.KeepLabels...)
	if extra != "" {
		labels = append(labels, extra)
	}
	return "by (" + strings.Join(labels, ",") + ")"
}

// query runs an instant query with the timeout, retrying with backoff.
func (s *Source) query(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	wait := s.cfg.Backoff
	var last error
	for attempt := 0; attempt <= s.cfg.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			wait *= 2
		}
		qctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		val, _, err := s.api.Query(qctx, q, at)
		cancel()
		if err == nil {
			vec, ok := val.(model.Vector)
			if !ok {
				return nil, fmt.Errorf("query %s: want a vector, got %s", q, val.Type())
			}
			return vec, nil
		}
		last = err
		var perr *v1.Error
		if errors.As(err, &perr) && perr.Type == v1.ErrBadData {
			return nil, fmt.Errorf("query %s: %w", q, err) // a bad query does not get better
		}
	}
	return nil, fmt.Errorf("after %d attempts: %w", s.cfg.Retries+1, last)
}
