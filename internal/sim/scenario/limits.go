package scenario

import (
	"math"
	"strconv"
)

// Limits on what a scenario may ask of the simulator. Each bounds the
// memory or the time of a run, so that a typing error (a rate of 1e9, a
// trace of /dev/zero) is an error that names its field instead of a run
// that never ends or exhausts memory. docs/evaluation.md lists them; to
// raise one, change it here and rebuild.
const (
	// MaxRequests bounds the requests one run may simulate, summed over
	// the models: each model's peak rate × durationSeconds (the arrivals
	// the generator may draw), or its trace's rows. A request costs about
	// 70 bytes once completed and 250 while in flight; 20 million take
	// about 20 s of wall time per autoscaler at light load.
	MaxRequests = 20_000_000
	// MaxTokens bounds every token count: a request's input and output
	// (mean, sd, min, max, empirical values, trace rows), prefixTokens and
	// maxBatchedTokens.
	MaxTokens = 10_000_000
	// MaxEmpiricalValues bounds an empirical distribution's values.
	MaxEmpiricalValues = 10_000_000
	// MaxReplicasPerVariant bounds a variant's maxReplicas (and so its
	// minReplicas and initialReplicas).
	MaxReplicasPerVariant = 1000
	// MaxReplicasTotal bounds the sum of every variant's maxReplicas: the
	// gateway scores every replica of a model for each request.
	MaxReplicasTotal = 10_000
	// MaxKVBlocks bounds one replica's KV cache, given or defaulted (16
	// bytes of simulator memory per block and its free list's 4-byte
	// entries: 20–24 bytes typically, at most about 32).
	MaxKVBlocks = 1 << 22
	// MaxKVBlocksTotal bounds Σ maxReplicas × kvBlocks over the variants:
	// the KV memory of a fleet at its largest (about 2.4 GB, at most 3.2).
	MaxKVBlocksTotal = 100_000_000
	// MaxBatchSize bounds a variant's maxBatchSize.
	MaxBatchSize = 1 << 16
	// MaxBlockSize bounds a variant's blockSize (tokens per KV block).
	MaxBlockSize = 4096
	// MaxAcceleratorsPerReplica bounds a variant's acceleratorsPerReplica.
	MaxAcceleratorsPerReplica = 1024
	// MaxPrefixGroups bounds a workload's prefixGroups.
	MaxPrefixGroups = 1_000_000
	// MaxRatePoints bounds a rate's steps and spikes (each looked at for
	// every arrival drawn).
	MaxRatePoints = 1000
	// MaxClasses bounds a workload's SLO classes.
	MaxClasses = 100
	// MaxCV bounds a gamma workload's coefficient of variation.
	MaxCV = 100
	// MaxClairvoyantMargin bounds autoscalers.clairvoyantMargin.
	MaxClairvoyantMargin = 100
	// MaxSeriesValues bounds the recorded time series: (durationSeconds +
	// drainSeconds) / recordSeconds points of 1 + one per variant values,
	// which results.json, the series CSVs and the plots hold (at the
	// limit about 40 s to write and 0.7 GB). 30 days at the default 15 s
	// fit with up to 4 variants.
	MaxSeriesValues = 1_000_000
	// MaxRounds bounds the rounds of every periodic loop in a run
	// ((durationSeconds + drainSeconds) / its period): scrapes, each
	// autoscaler's decisions, WVA's fast loop.
	MaxRounds = 10_000_000
	// MaxScenarioBytes bounds a scenario file.
	MaxScenarioBytes = 16 << 20
	// MaxInputFileBytes bounds a trace or token-count file a scenario
	// names.
	MaxInputFileBytes = 64 << 20
	// MaxLineBytes bounds one line of a trace or token-count file.
	MaxLineBytes = 64 << 10
)

// checkSize checks the limits that depend on the defaults or on loaded
// files: the requests a run simulates, the default KV caches, and the
// replicas and KV blocks over all variants. Validate calls it once the
// fields are valid; LoadFile once, too, after the traces and token files
// are read.
func (s *Scenario) checkSize(add func(string, string, ...any)) {
	c := s.WithDefaults()
	if !(c.DurationSeconds > 0 && c.DurationSeconds <= MaxDurationSeconds) {
		return // reported by Validate; the products below would mean nothing
	}
	total, replicas, blocks := 0.0, 0.0, 0.0
	oneTooMany := false
	for i, m := range c.Models {
		p := "models[" + strconv.Itoa(i) + "]"
		n := ExpectedRequests(m.Workload, c.DurationSeconds)
		if n > MaxRequests {
			oneTooMany = true
			if m.Workload.Rows != nil {
				add(p+".workload.trace", "%d requests are more than the %d a run may simulate", len(m.Workload.Rows), MaxRequests)
			} else {
				add(p+".workload.rate", "a peak of %.4g requests/s over durationSeconds %v is up to %.4g requests, more than the %d a run may simulate: lower the rate or the duration",
					m.Workload.Rate.Peak(c.DurationSeconds), c.DurationSeconds, n, MaxRequests)
			}
		}
		total += n
		for j, v := range m.Variants {
			vp := p + ".variants[" + strconv.Itoa(j) + "]"
			if v.KVBlocks > MaxKVBlocks || v.KVBlocks < 0 {
				if s.Models[i].Variants[j].KVBlocks == 0 {
					add(vp+".kvBlocks", "the default, room for %d requests of %.4g tokens, is %d blocks of %d tokens, more than %d: set kvBlocks",
						v.MaxBatchSize, m.Workload.Input.Upper()+m.Workload.Output.Upper(), v.KVBlocks, v.BlockSize, MaxKVBlocks)
				} else {
					add(vp+".kvBlocks", "must be at most %d blocks, got %d", MaxKVBlocks, v.KVBlocks)
				}
			}
			replicas += float64(v.MaxReplicas)
			blocks += float64(v.MaxReplicas) * float64(v.KVBlocks)
		}
	}
	CheckRounds(&c, add)
	if total > MaxRequests && !oneTooMany {
		add("models", "the workloads add up to %.4g requests (each model's peak rate × durationSeconds, or its trace's rows), more than the %d a run may simulate", total, MaxRequests)
	}
	if replicas > MaxReplicasTotal {
		add("models", "the variants' maxReplicas add up to %.0f, more than %d", replicas, MaxReplicasTotal)
	}
	if blocks > MaxKVBlocksTotal {
		add("models", "the variants' KV caches at maxReplicas add up to %.4g blocks (Σ maxReplicas × kvBlocks), more than %d", blocks, MaxKVBlocksTotal)
	}
}

// ExpectedRequests bounds the requests a workload brings in d seconds:
// its trace's rows, or its peak rate × d (the candidates the Poisson
// generator draws, and more than any arrival process brings).
func ExpectedRequests(w Workload, d float64) float64 {
	if w.Rows != nil {
		return float64(len(w.Rows))
	}
	if w.Trace != "" {
		return 0 // not loaded yet: LoadFile checks the rows
	}
	n := w.Rate.Peak(d) * d
	if math.IsNaN(n) {
		return math.Inf(1)
	}
	return n
}

// CheckRounds checks the recorded series and the rounds of the periodic
// loops against their limits (c has its defaults).
func CheckRounds(c *Scenario, add func(string, string, ...any)) {
	span := c.DurationSeconds + c.DrainSeconds
	variants := 0
	for _, m := range c.Models {
		variants += len(m.Variants)
	}
	if n := span / c.RecordSeconds * float64(1+variants); n > MaxSeriesValues {
		add("recordSeconds", "%v s over %v s with %d variants records %.4g values, more than %d: record less often",
			c.RecordSeconds, span, variants, n, MaxSeriesValues)
	}
	a := c.Autoscalers
	for _, f := range []struct {
		name string
		v    float64
	}{{"scrape.intervalSeconds", c.Scrape.IntervalSeconds}, {"autoscalers.oracleIntervalSeconds", a.OracleIntervalSeconds},
		{"autoscalers.wva.intervalSeconds", a.WVA.IntervalSeconds}, {"autoscalers.wva.scaleFromZeroIntervalSeconds", a.WVA.ScaleFromZeroIntervalSeconds},
		{"autoscalers.hpa.syncSeconds", a.HPA.SyncSeconds}, {"autoscalers.keda.pollingSeconds", a.KEDA.PollingSeconds}} {
		if n := span / f.v; n > MaxRounds {
			add(f.name, "%v s over %v s is %.4g rounds, more than the %d a run may have", f.v, span, n, MaxRounds)
		}
	}
}
