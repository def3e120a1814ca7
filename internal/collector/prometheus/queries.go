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
)

// The queries: what each reads and how the by() clause groups it.
const (
	qArrivals   = "arrivals"
	qPromptSum  = "promptSum"
	qPromptCnt  = "promptCount"
	qGenSum     = "genSum"
	qGenCnt     = "genCount"
	qTTFTSum    = "ttftSum"
	qTTFTCnt    = "ttftCount"
	qITLSum     = "itlSum"
	qITLCnt     = "itlCount"
	qKV         = "kv"
	qWaiting    = "waiting"
	qRunning    = "running"
	qSampled    = "sampled"
	qSamples    = "samples"
	qCacheBlock = "cache"
)

func (s *Source) queries(t collector.Target) map[string]string {
	sel := fmt.Sprintf(`{%s=%q,model_name=%q}`, s.cfg.NamespaceLabel, t.Namespace, t.Model)
	by := s.by("")
	w := model.Duration(s.cfg.Window).String()
	rate := func(m string) string { return fmt.Sprintf("sum %s (rate(%s%s[%s]))", by, m, sel, w) }
	return map[string]string{
		qArrivals:  rate("vllm:request_success_total"),
		qPromptSum: rate("vllm:request_prompt_tokens_sum"),
		qPromptCnt: rate("vllm:request_prompt_tokens_count"),
		qGenSum:    rate("vllm:request_generation_tokens_sum"),
		qGenCnt:    rate("vllm:request_generation_tokens_count"),
		qTTFTSum:   rate("vllm:time_to_first_token_seconds_sum"),
		qTTFTCnt:   rate("vllm:time_to_first_token_seconds_count"),
		qITLSum:    rate("vllm:time_per_output_token_seconds_sum"),
		qITLCnt:    rate("vllm:time_per_output_token_seconds_count"),
		qKV:        fmt.Sprintf("max %s (max_over_time(vllm:kv_cache_usage_perc%s[%s]))", by, sel, w),
		qWaiting:   fmt.Sprintf("max %s (max_over_time(vllm:num_requests_waiting%s[%s]))", by, sel, w),
		qRunning:   fmt.Sprintf("max %s (vllm:num_requests_running%s)", by, sel),
		qSampled:   fmt.Sprintf("max %s (timestamp(vllm:num_requests_waiting%s))", by, sel),
		// How many scrapes of the pod fall in the window: with two or more,
		// a rate that is absent means the counter is, not that the pod is
		// too new to have one.
		qSamples: fmt.Sprintf("max %s (count_over_time(vllm:num_requests_waiting%s[%s]))", by, sel, w),
		// vLLM's cache_config_info has no model_name label: read the
		// namespace's and keep the pods the other queries found.
		qCacheBlock: fmt.Sprintf("max %s (vllm:cache_config_info{%s=%q})", s.by("num_gpu_blocks,block_size"), s.cfg.NamespaceLabel, t.Namespace),
	}
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
