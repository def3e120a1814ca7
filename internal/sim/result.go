package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// Result is one autoscaler's run of a scenario.
type Result struct {
	Autoscaler  string `json:"autoscaler"`
	Scenario    string `json:"scenario"`
	Seed        uint64 `json:"seed"`
	Interrupted bool   `json:"interrupted,omitempty"`

	Arrived   int64 `json:"arrived"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	InFlight  int64 `json:"inFlight"`
	// WithinSLO counts completed requests that met both TTFT and ITL.
	WithinSLO    int64   `json:"withinSlo"`
	TTFTMet      int64   `json:"ttftMet"`
	ITLMet       int64   `json:"itlMet"`
	DurationSecs float64 `json:"durationSeconds"`
	// EffectiveThroughput is requests served within the SLO per second.
	EffectiveThroughput float64 `json:"effectiveThroughputRps"`
	TTFTAttainment      float64 `json:"ttftAttainment"` // share of arrived requests completed within the TTFT target
	ITLAttainment       float64 `json:"itlAttainment"`
	SLOAttainment       float64 `json:"sloAttainment"`
	// TTFT is from the gateway to the first token; ITL pools every
	// inter-token interval of every completed request (as vLLM's histogram
	// and BLIS do); ITLPerRequest is each request's decode time over its
	// output tokens after the first (what the SLO judges); E2E is from the
	// gateway to the last token. All of completed requests, in ms.
	TTFTms          Percentiles `json:"ttftMs"`
	ITLms           Percentiles `json:"itlMs"`
	ITLPerRequestMs Percentiles `json:"itlPerRequestMs"`
	E2Ems           Percentiles `json:"e2eMs"`
	// Throughput: completed requests and their output tokens per second of
	// the run.
	ThroughputRPS         float64 `json:"throughputRps"`
	OutputTokensPerSecond float64 `json:"outputTokensPerSecond"`
	GPUHours              float64 `json:"gpuHours"`
	Cost                  float64 `json:"cost"`
	CostPer1kWithinSLO    float64 `json:"costPer1kWithinSlo"`
	ScalingActions        int     `json:"scalingActions"`
	Unschedulable         int     `json:"unschedulableReplicas"`
	Preemptions           int64   `json:"preemptions"`
	// PrefixCacheHitRate is the share of prompt tokens looked up at
	// admission that were found in the KV cache (vLLM's prefix-cache hit
	// rate), PrefixCacheQueries the tokens looked up.
	PrefixCacheHitRate float64  `json:"prefixCacheHitRate"`
	PrefixCacheQueries int64    `json:"prefixCacheQueries"`
	FailedBy           Failures `json:"failedBy"`
	// Warnings say what in a run looks wrong (nothing completed, …).
	Warnings []string `json:"warnings,omitempty"`
	Series   []Point  `json:"series"`
	Variants []string `json:"variants"`

	// Classes are the per-SLO-class figures ("model/class"), when the
	// scenario has classes.
	Classes map[string]*ClassStats `json:"classes,omitempty"`
	// PerModel are each model's figures, in the scenario's order: a
	// fleet's attainment can hide a model far below it.
	PerModel []ModelStats `json:"perModel"`
	// CostBreakdown is the models' CostBreakdown summed (see ModelStats).
	CostBreakdown map[string]float64 `json:"costBreakdown,omitempty"`
	// PrefixHits counts admissions that found cached blocks.
	PrefixHits int64 `json:"prefixHits,omitempty"`
	// Admission is the gateway's admission control, when the scenario has
	// one (admission_result.go).
	Admission *AdmissionStats `json:"admission,omitempty"`

	ttfts, itls, e2es []float64
	itlTokens         histogram
	everReady         bool // a replica was ready at some time
	outputTokens      int64
	prefixHitTokens   float64
	prefixQueries     float64
	classKeys         []*ClassStats // all models' classes in order
	classNames        []string      // their names, "model/class"
	classTTFTs        [][]float64   // each class's TTFTs in seconds (as classKeys), for the admission figures and the matrix
	classBase         []int         // per model: its first class in classKeys, -1 for none
	noClass           ClassStats
}

// ModelStats are one model's figures: its requests, their SLO
// attainment (the share of its arrived requests completed within both
// targets) and goodput, failures by cause, and what its variants' replicas
// cost.
type ModelStats struct {
	Model               string   `json:"model"`
	Arrived             int64    `json:"arrived"`
	Completed           int64    `json:"completed"`
	Failed              int64    `json:"failed"`
	WithinSLO           int64    `json:"withinSlo"`
	SLOAttainment       float64  `json:"sloAttainment"`
	EffectiveThroughput float64  `json:"effectiveThroughputRps"`
	GPUHours            float64  `json:"gpuHours"`
	Cost                float64  `json:"cost"`
	FailedBy            Failures `json:"failedBy"`
	// CostBreakdown splits the cost the autoscaler's decisions asked for
	// by the rule that asked for each replica (an autoscaler that reports
	// it: WVA, whose part names are the plan's breakdown's, docs/plan.md).
	// Its total is the desired replicas' cost, which differs from Cost by
	// the replicas still starting or being removed.
	CostBreakdown map[string]float64 `json:"costBreakdown,omitempty"`
}

// ClassStats are one SLO class's figures.
type ClassStats struct {
	Arrived       int64   `json:"arrived"`
	Completed     int64   `json:"completed"`
	Failed        int64   `json:"failed"`
	WithinSLO     int64   `json:"withinSlo"`
	SLOAttainment float64 `json:"sloAttainment"`
	// Admission: the class at the gateway's admission control, when the
	// scenario has one.
	Admission *ClassAdmission `json:"admission,omitempty"`
}

// ClassNames are every model's classes in order, named "model/class".
func (r *Result) ClassNames() []string { return r.classNames }

// ClassAt is the i-th class in ClassNames' order.
func (r *Result) ClassAt(i int) *ClassStats { return r.classKeys[i] }

// ClassTTFTs are the i-th class's TTFTs in seconds (ClassNames' order).
func (r *Result) ClassTTFTs(i int) []float64 { return r.classTTFTs[i] }

// class returns the stats of class i of model m (a throwaway entry when
// the model has no classes).
func (r *Result) class(m, i int) *ClassStats {
	if r.classBase[m] < 0 {
		return &r.noClass
	}
	return r.classKeys[r.classBase[m]+i]
}

// Percentiles of a latency, in ms: the mean and linearly interpolated
// percentiles (rank p·(n − 1) of the sorted values, as numpy and BLIS).
type Percentiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

// Failures counts failed requests by cause.
type Failures struct {
	Timeout    int64 `json:"timeout"`             // waited at the gateway past gateway.timeoutSeconds
	Rejected   int64 `json:"rejected"`            // sheddable, rejected by saturation-based admission
	Shed       int64 `json:"shed"`                // sheddable, shed at gateway.queueThreshold
	Terminated int64 `json:"terminated"`          // in flight on a pod that was killed
	Unservable int64 `json:"unservable"`          // needs more KV cache than the pod has
	Admission  int64 `json:"admission,omitempty"` // rejected by gateway.admission's policy
}

func (f *Failures) add(cause string) {
	switch cause {
	case causeTimeout:
		f.Timeout++
	case causeRejected:
		f.Rejected++
	case causeShed:
		f.Shed++
	case causeTerminated:
		f.Terminated++
	case causeUnservable:
		f.Unservable++
	case causeAdmission:
		f.Admission++
	}
}

// Point is one record interval of the time series.
type Point struct {
	T           float64 `json:"t"`
	ArrivalRPS  float64 `json:"arrivalRps"`
	Replicas    []int   `json:"replicas"` // per variant: starting + ready + draining
	Ready       []int   `json:"ready"`
	TTFTp99Ms   float64 `json:"ttftP99Ms"`
	KVUsage     float64 `json:"kvUsage"` // mean over ready replicas
	CostPerHour float64 `json:"costPerHour"`
	Failed      int64   `json:"failed"`
}

type bucket struct {
	arrivals int64
	failed   int64
	ttfts    []float64
	last     float64
}

func newResult(name string, sc *scenario.Scenario) *Result {
	r := &Result{Autoscaler: name, Scenario: sc.Name, Seed: sc.Seed, PerModel: make([]ModelStats, len(sc.Models))}
	for i, m := range sc.Models {
		r.PerModel[i].Model = m.Name
	}
	for _, m := range sc.Models {
		base := -1
		if len(m.Workload.Classes) > 0 {
			base = len(r.classKeys)
		}
		r.classBase = append(r.classBase, base)
		for _, c := range m.Workload.Classes {
			if r.Classes == nil {
				r.Classes = map[string]*ClassStats{}
			}
			cs := &ClassStats{}
			r.Classes[m.Name+"/"+c.Name] = cs
			r.classKeys = append(r.classKeys, cs)
			r.classNames = append(r.classNames, m.Name+"/"+c.Name)
		}
	}
	for _, m := range sc.Models {
		for _, v := range m.Variants {
			r.Variants = append(r.Variants, m.Name+"/"+v.Name)
		}
	}
	r.classTTFTs = make([][]float64, len(r.classKeys))
	return r
}

// latencies are a request completed at now as its client saw them, in
// seconds: TTFT from the gateway, and the mean time per output token after
// the first (0 for one token), each with the per-token overhead a2.
func (q *request) latencies(now, a2 float64) (ttft, itl float64) {
	ttft = q.FirstToken - q.arrive + a2
	if q.Output > 1 {
		itl = (now-q.FirstToken)/float64(q.Output-1) + a2
	}
	return ttft, itl
}

// record adds a request completed at now; a2 is its replica's per-token
// overhead, added to every reported latency.
func (r *Result) record(q *request, now, a2 float64, slo *scenario.SLO) {
	r.Completed++
	r.outputTokens += int64(q.Output)
	ttft, itl := q.latencies(now, a2)
	r.ttfts = append(r.ttfts, ttft)
	r.itls = append(r.itls, itl)
	r.e2es = append(r.e2es, now-q.arrive+float64(q.Output)*a2)
	okT, okI := ttft*1000 <= slo.TTFTMs, itl*1000 <= slo.ITLMs
	if okT {
		r.TTFTMet++
	}
	if okI {
		r.ITLMet++
	}
	cs, ms := r.class(q.model, q.class), &r.PerModel[q.model]
	cs.Completed++
	ms.Completed++
	if b := r.classBase[q.model]; b >= 0 {
		r.classTTFTs[b+q.class] = append(r.classTTFTs[b+q.class], ttft)
	}
	if okT && okI {
		r.WithinSLO++
		cs.WithinSLO++
		ms.WithinSLO++
	}
}

// record closes a time-series interval.
func (s *Sim) record() {
	b := &s.bucket
	dt := s.now - b.last
	p := Point{T: s.now, Failed: b.failed}
	if dt > 0 {
		p.ArrivalRPS = float64(b.arrivals) / dt
	}
	if len(b.ttfts) > 0 {
		p.TTFTp99Ms = 1000 * quantile(b.ttfts, 0.99)
	}
	kv, n := 0.0, 0
	for _, v := range s.variants {
		nReady := 0
		for _, r := range v.replicas {
			if r.state == ready {
				nReady++
				kv += r.KVUsage()
				n++
			}
		}
		p.Replicas = append(p.Replicas, len(v.replicas))
		p.Ready = append(p.Ready, nReady)
		p.CostPerHour += float64(len(v.replicas)) * v.cfg.Cost
	}
	if n > 0 {
		p.KVUsage = kv / float64(n)
	}
	s.res.Series = append(s.res.Series, p)
	*b = bucket{last: s.now, ttfts: b.ttfts[:0]}
}

// finish computes the summary.
func (s *Sim) finish() {
	r := s.res
	r.DurationSecs = s.now
	r.InFlight = s.inFlight
	for _, v := range s.variants {
		r.GPUHours += v.gpuSeconds / 3600
		r.Cost += v.costSeconds / 3600 * v.cfg.Cost
		r.PerModel[v.model].GPUHours += v.gpuSeconds / 3600
		r.PerModel[v.model].Cost += v.costSeconds / 3600 * v.cfg.Cost
		for _, rep := range v.replicas {
			r.addCounters(rep.Counters())
		}
	}
	if r.prefixQueries > 0 {
		r.PrefixCacheHitRate = r.prefixHitTokens / r.prefixQueries
	}
	r.PrefixCacheQueries = int64(r.prefixQueries)
	for _, c := range r.Classes {
		if c.Arrived > 0 {
			c.SLOAttainment = float64(c.WithinSLO) / float64(c.Arrived)
		}
	}
	for i := range r.PerModel {
		m := &r.PerModel[i]
		if m.Arrived > 0 {
			m.SLOAttainment = float64(m.WithinSLO) / float64(m.Arrived)
		}
		if r.DurationSecs > 0 {
			m.EffectiveThroughput = float64(m.WithinSLO) / r.DurationSecs
		}
	}
	if r.DurationSecs > 0 {
		r.EffectiveThroughput = float64(r.WithinSLO) / r.DurationSecs
		r.ThroughputRPS = float64(r.Completed) / r.DurationSecs
		r.OutputTokensPerSecond = float64(r.outputTokens) / r.DurationSecs
	}
	if r.Arrived > 0 {
		r.TTFTAttainment = float64(r.TTFTMet) / float64(r.Arrived)
		r.ITLAttainment = float64(r.ITLMet) / float64(r.Arrived)
		r.SLOAttainment = float64(r.WithinSLO) / float64(r.Arrived)
	}
	if r.WithinSLO > 0 {
		r.CostPer1kWithinSLO = r.Cost / float64(r.WithinSLO) * 1000
	}
	r.TTFTms = percentiles(r.ttfts)
	r.ITLPerRequestMs = percentiles(r.itls)
	r.E2Ems = percentiles(r.e2es)
	r.ITLms = r.itlTokens.percentiles()
	if s.gate != nil {
		s.gate.stats.finish(s)
	}
	r.ttfts, r.itls, r.e2es = nil, nil, nil
	r.itlTokens = histogram{}
	r.warn()
}

// addCounters adds a replica's preemption and prefix-cache counters.
func (r *Result) addCounters(c server.Counters) {
	r.Preemptions += int64(c.Preempted)
	r.PrefixHits += int64(c.PrefixHits)
	r.prefixHitTokens += c.PrefixHitTokens
	r.prefixQueries += c.PrefixQueries
}

// warn notes what makes a run's figures suspect.
func (r *Result) warn() {
	switch {
	case r.Arrived == 0 || r.Completed > 0 || r.Interrupted:
	case !r.everReady && r.Unschedulable > 0:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no request of %d completed in %.0f s: no replica was ever ready, %d could not be placed (the inventory has no free accelerator for them)",
			r.Autoscaler, r.Arrived, r.DurationSecs, r.Unschedulable))
	case !r.everReady && r.GPUHours > 0:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no request of %d completed in %.0f s: no replica finished starting (startupSeconds)",
			r.Autoscaler, r.Arrived, r.DurationSecs))
	case !r.everReady:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no request of %d completed in %.0f s: no replica ever ran (the autoscaler never scaled from zero)",
			r.Autoscaler, r.Arrived, r.DurationSecs))
	default:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no request of %d completed in %.0f s (are the latency coefficients in ms? the linear model's are, BLIS's are in µs)",
			r.Autoscaler, r.Arrived, r.DurationSecs))
	}
	if f := r.FailedBy.Unservable; f > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d requests need more KV cache than their replica has (kvBlocks × blockSize)", r.Autoscaler, f))
	}
}

// percentiles of latencies in seconds, in ms (v is sorted in place).
func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	sort.Float64s(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	q := func(p float64) float64 {
		x := p * float64(len(v)-1)
		i := int(x)
		if i+1 >= len(v) {
			return 1000 * v[len(v)-1]
		}
		return 1000 * (v[i] + (x-float64(i))*(v[i+1]-v[i]))
	}
	return Percentiles{Mean: 1000 * sum / float64(len(v)), P50: q(0.50), P90: q(0.90), P95: q(0.95), P99: q(0.99)}
}

// quantile of an unsorted slice (it is sorted in place).
func quantile(v []float64, p float64) float64 {
	sort.Float64s(v)
	return v[max(0, min(len(v)-1, int(math.Ceil(p*float64(len(v))))-1))]
}

// addBreakdown puts an autoscaler's cost breakdown (by model name) on the
// models it names and sums it over the fleet.
func (r *Result) addBreakdown(by map[string]map[string]float64) {
	for i := range r.PerModel {
		m := &r.PerModel[i]
		parts, ok := by[m.Model]
		if !ok {
			continue
		}
		if r.CostBreakdown == nil {
			r.CostBreakdown = map[string]float64{}
		}
		m.CostBreakdown = make(map[string]float64, len(parts))
		for k, v := range parts {
			m.CostBreakdown[k] = v
			r.CostBreakdown[k] += v
		}
	}
}
