// Collect: the query results grouped by pod and turned into the pods'
// records and their problems.

package prometheus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// podKey identifies a pod's series.
type podKey struct{ ns, pod string }

// Collect implements collector.Source.
func (s *Source) Collect(ctx context.Context, now time.Time, t collector.Target) (collector.Report, error) {
	rep := collector.Report{Target: t, Time: now}
	qs := s.queries(t)
	names := queryOrder(qs)
	res := make(map[string]model.Vector, len(names))
	for _, n := range names {
		v, err := s.query(ctx, qs[n], now)
		if err != nil {
			return rep, fmt.Errorf("prometheus: %s: %w", t, err)
		}
		res[n] = v
	}
	pods := s.gather(names, res)
	for _, k := range pods.keys() {
		pm := pods.pm[k]
		rep.Problems = append(rep.Problems, fill(&pm.Pod, pods.val[k])...)
		rep.Pods = append(rep.Pods, *pm)
	}
	if len(rep.Pods) == 0 {
		rep.Problems = append(rep.Problems, collector.NoPods(t))
	}
	return rep, nil
}

// queryOrder is the order in which Collect runs and reads the queries:
// by name, the cache geometry last (it only annotates pods found by the
// others).
func queryOrder(qs map[string]string) []string {
	names := make([]string, 0, len(qs))
	for n := range qs {
		names = append(names, n)
	}
	sort.Strings(names)
	return append(slices.DeleteFunc(names, func(n string) bool { return n == qCacheBlock }), qCacheBlock)
}

// podValues are the pods the queries found: each pod's record and its
// value of each query, by query name.
type podValues struct {
	pm  map[podKey]*collector.PodMetrics
	val map[podKey]map[string]float64
}

// gather groups the queries' samples by pod, reading the queries in the
// order of names.
func (s *Source) gather(names []string, res map[string]model.Vector) podValues {
	pv := podValues{pm: map[podKey]*collector.PodMetrics{}, val: map[podKey]map[string]float64{}}
	for _, n := range names {
		for _, smp := range res[n] {
			s.add(pv, n, smp)
		}
	}
	return pv
}

// add records the sample of query n. A series without a pod label is
// skipped, and so is a cache geometry of a pod no other query found (a pod
// of another model).
func (s *Source) add(pv podValues, n string, smp *model.Sample) {
	k := podKey{string(smp.Metric[model.LabelName(s.cfg.NamespaceLabel)]), string(smp.Metric[model.LabelName(s.cfg.PodLabel)])}
	if k.pod == "" {
		return
	}
	pm, ok := pv.pm[k]
	if !ok && n == qCacheBlock {
		return // a pod of another model
	}
	if !ok {
		pm = &collector.PodMetrics{Namespace: k.ns, Pod: engine.Pod{Name: k.pod}, Labels: map[string]string{}}
		pv.pm[k] = pm
		pv.val[k] = map[string]float64{}
	}
	for _, l := range s.cfg.KeepLabels {
		if v, ok := smp.Metric[model.LabelName(l)]; ok {
			pm.Labels[l] = string(v)
		}
	}
	pv.val[k][n] = float64(smp.Value)
	if n == qCacheBlock {
		pm.Pod.KVBlocks, _ = strconv.Atoi(string(smp.Metric["num_gpu_blocks"]))
		pm.Pod.BlockSize, _ = strconv.Atoi(string(smp.Metric["block_size"]))
	}
}

// keys are the pods in the order of the report: by namespace/pod.
func (pv podValues) keys() []podKey {
	keys := make([]podKey, 0, len(pv.pm))
	for k := range pv.pm {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ns+"/"+keys[i].pod < keys[j].ns+"/"+keys[j].pod })
	return keys
}

// counters are the rates the engine needs, each as sum and count (the
// arrival rate alone); a pod that lacks one is Missing, not idle.
var counters = []struct{ name, sum, count string }{
	{"vllm:request_success_total", qArrivals, qArrivals},
	{"vllm:request_prompt_tokens", qPromptSum, qPromptCnt},
	{"vllm:request_generation_tokens", qGenSum, qGenCnt},
	{"vllm:time_to_first_token_seconds", qTTFTSum, qTTFTCnt},
	{"vllm:time_per_output_token_seconds", qITLSum, qITLCnt},
}

// fill sets a pod's record from its query values and returns its problems.
//
// A rate needs two samples in the window, so a pod scraped once has none
// yet: it reads as idle, with a problem saying why. A pod scraped twice or
// more that still lacks a counter's rate does not export it, and its zero
// would be a lie (a saturated pod reading 0 rps looks idle): it is
// Missing, which holds its variant.
func fill(p *engine.Pod, v map[string]float64) []collector.Problem {
	var problems []collector.Problem
	missing := func(metric, format string, args ...any) {
		problems = append(problems, collector.Problem{Pod: p.Name, Metric: metric, Kind: engine.HoldMissing, Detail: fmt.Sprintf(format, args...)})
	}
	ratio := func(sum, cnt string, scale float64) float64 {
		c, okC := v[cnt]
		s, okS := v[sum]
		if !okC || !okS || c == 0 {
			return 0 // no requests in the window (or not two samples yet)
		}
		return scale * s / c
	}
	p.ArrivalRateRPS = v[qArrivals]
	p.AvgInputTokens = ratio(qPromptSum, qPromptCnt, 1)
	p.AvgOutputTokens = ratio(qGenSum, qGenCnt, 1)
	p.AvgTTFTMs = ratio(qTTFTSum, qTTFTCnt, 1000)
	p.AvgITLMs = ratio(qITLSum, qITLCnt, 1000)
	p.RunningRequests = v[qRunning]
	kv, okKV := v[qKV]
	wq, okW := v[qWaiting]
	switch {
	case !okKV || !okW:
		p.Missing = true
		missing("vllm:kv_cache_usage_perc", "missing vllm:kv_cache_usage_perc or vllm:num_requests_waiting")
	default:
		p.KVCacheUsage, p.WaitingRequests = kv, wq
	}
	var absent []string
	for _, c := range counters {
		_, okS := v[c.sum]
		_, okC := v[c.count]
		if !okS || !okC {
			absent = append(absent, c.name)
		}
	}
	switch {
	case len(absent) == 0 || p.Missing:
	case v[qSamples] >= 2:
		p.Missing = true
		missing(absent[0], "missing %s (scraped %g times in the window, so not too new for a rate)", strings.Join(absent, ", "), v[qSamples])
	case slices.Contains(absent, counters[0].name):
		// A new pod: it reads idle, and the problem is only information
		// (the pod is not Missing, nothing holds).
		problems = append(problems, collector.Problem{Pod: p.Name, Metric: counters[0].name, Kind: "",
			Detail: "no request rate yet (fewer than two samples in the window)"})
	}
	if ts, ok := v[qSampled]; ok {
		sec, frac := math.Modf(ts)
		p.SampledAt = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	}
	problems = append(problems, collector.InvalidPod(p)...)
	collector.SortProblems(problems)
	return problems
}
