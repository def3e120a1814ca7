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
	"github.com/llm-d-incubation/wva/internal/servermetrics"
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
		rep.Problems = append(rep.Problems, fill(s.schema, &pm.Pod, pods.val[k], pods.cache[k])...)
		pm.Pod.TTFTBuckets, pm.Pod.TPOTBuckets = pods.histogram(k, qTTFTBuckets), pods.histogram(k, qTPOTBuckets)
		rep.Pods = append(rep.Pods, *pm)
	}
	if len(rep.Pods) == 0 {
		rep.Problems = append(rep.Problems, collector.NoPods(t))
	}
	return rep, nil
}

// queryOrder is the order in which Collect runs and reads the queries:
// by name, the cache's size last (it only annotates pods found by the
// others).
func queryOrder(qs map[string]string) []string {
	names := make([]string, 0, len(qs))
	for n := range qs {
		if !annotates(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range []string{qCacheBlock, qCacheTokens, qTPOTBuckets, qTTFTBuckets} {
		if _, ok := qs[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// annotates says whether query n only annotates pods the others found.
func annotates(n string) bool {
	return n == qCacheBlock || n == qCacheTokens || n == qTTFTBuckets || n == qTPOTBuckets
}

// podValues are the pods the queries found: each pod's record and its
// value of each query, by query name.
type podValues struct {
	pm    map[podKey]*collector.PodMetrics
	val   map[podKey]map[string]float64
	cache map[podKey]cacheSize
	// hist are the pods' histogram buckets, by query name.
	hist map[podKey]map[string][]engine.Bucket
}

// gather groups the queries' samples by pod, reading the queries in the
// order of names.
func (s *Source) gather(names []string, res map[string]model.Vector) podValues {
	pv := podValues{pm: map[podKey]*collector.PodMetrics{}, val: map[podKey]map[string]float64{}, cache: map[podKey]cacheSize{},
		hist: map[podKey]map[string][]engine.Bucket{}}
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
	if !ok && annotates(n) {
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
	if n == qTTFTBuckets || n == qTPOTBuckets {
		addBucket(pv, k, n, smp)
		return
	}
	pv.val[k][n] = float64(smp.Value)
	if n == qCacheBlock {
		pv.cache[k] = s.geometry(smp.Metric)
	}
}

// addBucket records one bucket of a pod's histogram; a bucket whose le
// label is not a number is left out (the histogram is then checked by the
// engine as it is), and so are buckets beyond engine.MaxBuckets.
func addBucket(pv podValues, k podKey, n string, smp *model.Sample) {
	le, err := strconv.ParseFloat(string(smp.Metric[model.BucketLabel]), 64)
	if err != nil {
		return
	}
	if pv.hist[k] == nil {
		pv.hist[k] = map[string][]engine.Bucket{}
	}
	if len(pv.hist[k][n]) < engine.MaxBuckets {
		pv.hist[k][n] = append(pv.hist[k][n], engine.Bucket{UpperBound: le, Count: float64(smp.Value)})
	}
}

// histogram is a pod's histogram of query n, by bound.
func (pv podValues) histogram(k podKey, n string) []engine.Bucket {
	h := pv.hist[k][n]
	sort.Slice(h, func(i, j int) bool { return h[i].UpperBound < h[j].UpperBound })
	return h
}

// geometry reads the KV cache's size from the labels of an info series:
// blocks × block size, or the tokens label when the server gives one that
// differs (a hybrid model's cache, whose block size is its smallest
// group's), as that many blocks of one token. A label that is present must
// be a positive integer within bounds.
func (s *Source) geometry(m model.Metric) cacheSize {
	c := s.cacheInfo()
	var v [3]int
	for i, l := range []string{c.TokensLabel, c.BlocksLabel, c.BlockSizeLabel} {
		n, why := sizeLabel(m, c.Info, l)
		if why != "" {
			return cacheSize{invalid: why}
		}
		v[i] = n
	}
	tokens, blocks, size := v[0], v[1], v[2]
	product := float64(blocks) * float64(size)
	switch {
	case tokens > 0 && product != float64(tokens):
		return cacheSize{blocks: tokens, blockSize: 1}
	case product > engine.MaxKVCacheTokens:
		return cacheSize{invalid: fmt.Sprintf("%s: %d blocks of %d tokens is more than %d tokens", c.Info, blocks, size, engine.MaxKVCacheTokens)}
	}
	return cacheSize{blocks: blocks, blockSize: size}
}

// cacheInfo is the schema's info series of the KV cache's size.
func (s *Source) cacheInfo() servermetrics.Cache {
	for _, c := range s.schema.Cache {
		if c.Info != "" {
			return c
		}
	}
	return servermetrics.Cache{}
}

// sizeLabel reads label l of an info series as a size: 0 when absent or
// None (unknown), else a whole number in [1, engine.MaxKVCacheTokens], or
// why not.
func sizeLabel(m model.Metric, info, l string) (int, string) {
	v, ok := m[model.LabelName(l)]
	if !ok || l == "" || v == "" || v == "None" {
		return 0, ""
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n <= 0 || n > engine.MaxKVCacheTokens {
		return 0, fmt.Sprintf("%s label %s=%q is not a whole number in [1, %d]", info, l, string(v), engine.MaxKVCacheTokens)
	}
	return int(n), ""
}

// cacheSize is a pod's KV cache as its server reports it: blocks of
// blockSize tokens (zero: unknown), or why the report is invalid.
type cacheSize struct {
	blocks, blockSize int
	invalid           string
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

// counter is a rate the engine needs: its family's names for messages and
// its sum and count queries (the arrival rate is both).
type counter struct{ name, sum, count string }

// counters are the rates the engine needs, each as sum and count; a pod
// that lacks one is Missing, not idle.
func counters(sc servermetrics.Schema) []counter {
	families := func(rs []servermetrics.Ratio) string {
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Family
		}
		return servermetrics.Alternatives(names)
	}
	return []counter{
		{servermetrics.Alternatives(sc.Requests), qArrivals, qArrivals},
		{families(sc.PromptTokens), qPromptSum, qPromptCnt},
		{families(sc.OutputTokens), qGenSum, qGenCnt},
		{families(sc.TTFT), qTTFTSum, qTTFTCnt},
		{families(sc.ITL), qITLSum, qITLCnt},
	}
}

// fill sets a pod's record from its query values and its cache's size,
// and returns its problems.
//
// A rate needs two samples in the window, so a pod scraped once has none
// yet: it reads as idle, with a problem saying why. A pod scraped twice or
// more that still lacks a counter's rate does not export it, and its zero
// would be a lie (a saturated pod reading 0 rps looks idle): it is
// Missing, which holds its variant. So is a pod whose KV cache's size is
// invalid: a cache modelled smaller than it is would scale up.
func fill(sc servermetrics.Schema, p *engine.Pod, v map[string]float64, cache cacheSize) []collector.Problem {
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
	// Optional: a server that does not count preemptions (or has not
	// been scraped twice) reads as not preempting.
	p.PreemptionsPerSec = v[qPreempt]
	kv, okKV := v[qKV]
	wq, okW := v[qWaiting]
	switch {
	case !okKV || !okW:
		p.Missing = true
		missing(sc.KVUsage[0], "missing %s or %s", servermetrics.Alternatives(sc.KVUsage), servermetrics.Alternatives(sc.Waiting))
	default:
		p.KVCacheUsage, p.WaitingRequests = kv, wq
	}
	cs := counters(sc)
	var absent []string
	for _, c := range cs {
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
	case slices.Contains(absent, cs[0].name):
		// A new pod: it reads idle, and the problem is only information
		// (the pod is not Missing, nothing holds).
		problems = append(problems, collector.Problem{Pod: p.Name, Metric: cs[0].name, Kind: "",
			Detail: "no request rate yet (fewer than two samples in the window)"})
	}
	fillCache(p, v, cache, &problems)
	if ts, ok := v[qSampled]; ok {
		fillSampledAt(p, ts, &problems)
	}
	problems = append(problems, collector.InvalidPod(p)...)
	collector.SortProblems(problems)
	return problems
}

// maxTimestamp bounds a sample's time (the year 2286): beyond it, or not
// positive, or not finite, the time cannot be a scrape's.
const maxTimestamp = 1e10

// fillSampledAt sets when the pod's metrics were sampled, from the series'
// timestamp in seconds; one that cannot be a time makes the pod Missing,
// with an invalid-metrics problem (converted, NaN or 1e300 gave a time
// that differs by platform, and a time in the future is never stale).
func fillSampledAt(p *engine.Pod, ts float64, problems *[]collector.Problem) {
	if !(ts > 0 && ts <= maxTimestamp) {
		p.Missing = true
		*problems = append(*problems, collector.Problem{Pod: p.Name, Metric: "sampledAt", Kind: engine.HoldInvalid,
			Detail: fmt.Sprintf("the samples' timestamp is %v s, not a time", ts)})
		return
	}
	sec, frac := math.Modf(ts)
	p.SampledAt = time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// fillCache sets the pod's KV cache's size: from the info series' labels,
// else from a gauge of tokens. An invalid size makes the pod Missing, with
// an invalid-metrics problem.
func fillCache(p *engine.Pod, v map[string]float64, cache cacheSize, problems *[]collector.Problem) {
	invalid := cache.invalid
	if t, ok := v[qCacheTokens]; ok && invalid == "" && cache.blocks == 0 {
		switch {
		case !(t >= 1 && t <= engine.MaxKVCacheTokens) || t != math.Trunc(t):
			invalid = fmt.Sprintf("the KV cache's size is %v tokens, not a whole number in [1, %d]", t, engine.MaxKVCacheTokens)
		default:
			cache.blocks, cache.blockSize = int(t), 1
		}
	}
	if invalid != "" {
		p.Missing = true
		*problems = append(*problems, collector.Problem{Pod: p.Name, Metric: "kvBlocks", Kind: engine.HoldInvalid, Detail: invalid})
		return
	}
	p.KVBlocks, p.BlockSize = cache.blocks, cache.blockSize
}
