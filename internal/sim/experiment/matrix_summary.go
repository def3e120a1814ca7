package experiment

import (
	"math/rand/v2"
	"sort"

	"github.com/llm-d-incubation/wva/internal/sim"
)

// MatrixCell summarises one configuration at one rate under one
// autoscaler, over the matrix's seeds: each figure's mean, standard
// deviation and range over the seeds (Stat), and the TTFT percentiles of
// each class over the seeds' requests pooled.
type MatrixCell struct {
	Config     string   `json:"config"`
	Rate       string   `json:"rate"`
	Autoscaler string   `json:"autoscaler"`
	Seeds      []uint64 `json:"seeds"`
	// GoodputPct is the share of the arrivals completed within their SLO,
	// in percent (every class together).
	GoodputPct            Stat `json:"goodputPct"`
	EffectiveThroughput   Stat `json:"effectiveThroughputRps"`
	OutputTokensPerSecond Stat `json:"outputTokensPerSecond"`
	GPUHours              Stat `json:"gpuHours"`
	Cost                  Stat `json:"cost"`
	// AdmittedPct is the share of the arrivals the admission policy
	// admitted (100 without one).
	AdmittedPct Stat `json:"admittedPct"`
	// ServerPrefixHitPct is the servers' prefix-cache hit rate (prompt
	// tokens). With admission, CacheHit… are the shares of the requests
	// whose prompt had cached blocks on a ready replica when the gateway
	// decided, among the arrivals and among the admitted requests, and
	// CachedTokens… the shares of their prompt tokens cached on the best
	// such replica.
	ServerPrefixHitPct      Stat  `json:"serverPrefixHitPct"`
	CacheHitArrivedPct      *Stat `json:"cacheHitArrivedPct,omitempty"`
	CacheHitAdmittedPct     *Stat `json:"cacheHitAdmittedPct,omitempty"`
	CachedTokensArrivedPct  *Stat `json:"cachedTokensArrivedPct,omitempty"`
	CachedTokensAdmittedPct *Stat `json:"cachedTokensAdmittedPct,omitempty"`
	// NewGroupAdmittedPct is the new prefix groups' admission share, and
	// EstablishedAdmittedPct the other groups' over the same time (with
	// admission and new groups).
	NewGroupAdmittedPct    *Stat `json:"newGroupAdmittedPct,omitempty"`
	EstablishedAdmittedPct *Stat `json:"establishedAdmittedPct,omitempty"`
	// Estimate: the predictive policy's TTFT estimates against the TTFT
	// then observed (median absolute error, ms) and the calibrator's fit.
	Estimate *MatrixEstimate `json:"estimate,omitempty"`
	Classes  []MatrixClass   `json:"classes"`
}

// MatrixEstimate is the predictive model's accuracy over the seeds.
type MatrixEstimate struct {
	InUseMedianAbsMs    Stat  `json:"inUseMedianAbsMs"`
	InitialMedianAbsMs  Stat  `json:"initialMedianAbsMs"`
	BestCaseMedianAbsMs Stat  `json:"bestCaseMedianAbsMs"`
	InUseMeanSignedMs   Stat  `json:"inUseMeanSignedMs"`
	Beta0Ms             *Stat `json:"beta0Ms,omitempty"`
	Beta1Ms             *Stat `json:"beta1Ms,omitempty"`
	Queue               *Stat `json:"queue,omitempty"`
}

// MatrixClass is one SLO class of a cell.
type MatrixClass struct {
	Class       string `json:"class"`
	GoodputPct  Stat   `json:"goodputPct"`
	AdmittedPct Stat   `json:"admittedPct"`
	// TTFTp50Ms and TTFTp99Ms are over the seeds' completed requests
	// pooled, with 95 % bootstrap intervals; TTFTp99PerSeedMs is each
	// seed's own p99 (its spread is the honest one: the requests of one
	// run are not independent).
	TTFTp50Ms        sim.Interval `json:"ttftP50Ms"`
	TTFTp99Ms        sim.Interval `json:"ttftP99Ms"`
	TTFTp99PerSeedMs Stat         `json:"ttftP99PerSeedMs"`
	// Completed over the seeds, and the fewest of one seed.
	Completed           int64 `json:"completed"`
	CompletedMinPerSeed int64 `json:"completedMinPerSeed"`
}

// SummarizeMatrix groups the runs by configuration, rate and autoscaler
// (in the order they come) and summarises each group.
func SummarizeMatrix(runs []MatrixRun) []MatrixCell {
	var cells []MatrixCell
	var groups [][]*sim.Result
	index := map[[3]string]int{}
	for _, r := range runs {
		key := [3]string{r.Config, r.Rate, r.Result.Autoscaler}
		i, ok := index[key]
		if !ok {
			i = len(cells)
			index[key] = i
			cells = append(cells, MatrixCell{Config: r.Config, Rate: r.Rate, Autoscaler: r.Result.Autoscaler})
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r.Result)
	}
	for i := range cells {
		cells[i].summarize(groups[i], uint64(i))
	}
	return cells
}

// pick collects a figure of each result.
func pick(rs []*sim.Result, f func(r *sim.Result) float64) Stat {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return statOf(xs)
}

// pickPtr is pick over the results that have the figure (ok), or nil when
// none has.
func pickPtr(rs []*sim.Result, f func(r *sim.Result) (float64, bool)) *Stat {
	var xs []float64
	for _, r := range rs {
		if x, ok := f(r); ok {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	s := statOf(xs)
	return &s
}

func (c *MatrixCell) summarize(rs []*sim.Result, k uint64) {
	for _, r := range rs {
		c.Seeds = append(c.Seeds, r.Seed)
	}
	c.GoodputPct = pick(rs, func(r *sim.Result) float64 { return 100 * r.SLOAttainment })
	c.EffectiveThroughput = pick(rs, func(r *sim.Result) float64 { return r.EffectiveThroughput })
	c.OutputTokensPerSecond = pick(rs, func(r *sim.Result) float64 { return r.OutputTokensPerSecond })
	c.GPUHours = pick(rs, func(r *sim.Result) float64 { return r.GPUHours })
	c.Cost = pick(rs, func(r *sim.Result) float64 { return r.Cost })
	c.ServerPrefixHitPct = pick(rs, func(r *sim.Result) float64 { return 100 * r.PrefixCacheHitRate })
	c.AdmittedPct = pick(rs, func(r *sim.Result) float64 {
		return 100 * fraction(float64(r.Arrived-r.FailedBy.Admission), float64(r.Arrived))
	})
	adm := func(f func(a *sim.AdmissionStats) (float64, bool)) *Stat {
		return pickPtr(rs, func(r *sim.Result) (float64, bool) {
			if r.Admission == nil {
				return 0, false
			}
			return f(r.Admission)
		})
	}
	c.CacheHitArrivedPct = adm(func(a *sim.AdmissionStats) (float64, bool) { return 100 * a.CacheHitArrived, true })
	c.CacheHitAdmittedPct = adm(func(a *sim.AdmissionStats) (float64, bool) { return 100 * a.CacheHitAdmitted, true })
	c.CachedTokensArrivedPct = adm(func(a *sim.AdmissionStats) (float64, bool) { return 100 * a.CachedTokensArrived, true })
	c.CachedTokensAdmittedPct = adm(func(a *sim.AdmissionStats) (float64, bool) { return 100 * a.CachedTokensAdmitted, true })
	c.NewGroupAdmittedPct = adm(func(a *sim.AdmissionStats) (float64, bool) {
		return 100 * share(a.NewGroups), a.NewGroups != nil
	})
	c.EstablishedAdmittedPct = adm(func(a *sim.AdmissionStats) (float64, bool) {
		return 100 * share(a.EstablishedSinceNewGroups), a.EstablishedSinceNewGroups != nil
	})
	c.Estimate = estimateOf(rs)
	c.summarizeClasses(rs, k)
}

func share(g *sim.GroupAdmission) float64 {
	if g == nil {
		return 0
	}
	return g.Share
}

// estimateOf summarises the predictive model's accuracy, when the runs
// used it.
func estimateOf(rs []*sim.Result) *MatrixEstimate {
	errs := func(f func(e *sim.EstimateErrors) float64) *Stat {
		return pickPtr(rs, func(r *sim.Result) (float64, bool) {
			if r.Admission == nil || r.Admission.EstimateErrorMs == nil {
				return 0, false
			}
			return f(r.Admission.EstimateErrorMs), true
		})
	}
	inUse := errs(func(e *sim.EstimateErrors) float64 { return e.InUse.MedianAbs })
	if inUse == nil {
		return nil
	}
	fit := func(f func(c *sim.Calibration) float64) *Stat {
		return pickPtr(rs, func(r *sim.Result) (float64, bool) {
			if r.Admission == nil || r.Admission.Calibration == nil {
				return 0, false
			}
			return f(r.Admission.Calibration), true
		})
	}
	return &MatrixEstimate{InUseMedianAbsMs: *inUse,
		InitialMedianAbsMs:  *errs(func(e *sim.EstimateErrors) float64 { return e.Initial.MedianAbs }),
		BestCaseMedianAbsMs: *errs(func(e *sim.EstimateErrors) float64 { return e.BestCase.MedianAbs }),
		InUseMeanSignedMs:   *errs(func(e *sim.EstimateErrors) float64 { return e.InUse.MeanSigned }),
		Beta0Ms:             fit(func(c *sim.Calibration) float64 { return c.Beta0Ms }),
		Beta1Ms:             fit(func(c *sim.Calibration) float64 { return c.Beta1Ms }),
		Queue:               fit(func(c *sim.Calibration) float64 { return c.Queue })}
}

// summarizeClasses fills the per-class figures; k seeds the bootstrap.
func (c *MatrixCell) summarizeClasses(rs []*sim.Result, k uint64) {
	for i, name := range rs[0].ClassNames() {
		mc := MatrixClass{Class: name, CompletedMinPerSeed: -1}
		mc.GoodputPct = pick(rs, func(r *sim.Result) float64 { return 100 * r.ClassAt(i).SLOAttainment })
		mc.AdmittedPct = pick(rs, func(r *sim.Result) float64 {
			cs := r.ClassAt(i)
			if cs.Admission == nil {
				return 100
			}
			return 100 * fraction(float64(cs.Admission.Admitted), float64(cs.Arrived))
		})
		var pooled []float64
		p99 := make([]float64, len(rs))
		for j, r := range rs {
			t := r.ClassTTFTs(i)
			pooled = append(pooled, t...)
			sorted := append([]float64(nil), t...)
			sort.Float64s(sorted)
			if len(sorted) > 0 {
				p99[j] = 1000 * sim.QuantileSorted(sorted, 0.99)
			}
			n := r.ClassAt(i).Completed
			mc.Completed += n
			if mc.CompletedMinPerSeed < 0 || n < mc.CompletedMinPerSeed {
				mc.CompletedMinPerSeed = n
			}
		}
		mc.TTFTp99PerSeedMs = statOf(p99)
		sort.Float64s(pooled)
		ci := sim.BootstrapQuantiles(pooled, []float64{0.5, 0.99}, 1000, rand.New(rand.NewPCG(rs[0].Seed, k<<8|uint64(i))))
		mc.TTFTp50Ms, mc.TTFTp99Ms = ci[0], ci[1]
		c.Classes = append(c.Classes, mc)
	}
}

// fraction is a / b, 0 when b is 0 (no run, no request).
func fraction(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
