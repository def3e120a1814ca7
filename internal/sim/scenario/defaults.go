package scenario

import (
	"math"
)

// setDefault sets *v to d when it is the zero value (unset in the
// scenario).
func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// WithDefaults returns a copy of the scenario with every unset field at its
// default (docs/evaluation.md, "Scenario schema"); the models and their
// variants are copied, s is not changed.
func (s *Scenario) WithDefaults() Scenario {
	c := *s
	setDefault(&c.Seed, 1)
	setDefault(&c.RecordSeconds, 15)
	c.Gateway = c.Gateway.withDefaults()
	c.Scrape = c.Scrape.withDefaults()
	c.Autoscalers = c.Autoscalers.withDefaults()
	c.Models = make([]Model, len(s.Models))
	for i, m := range s.Models {
		c.Models[i] = m.withDefaults()
	}
	return c
}

// withDefaults fills the gateway's unset fields; a saturation detector,
// when set, is copied with its defaults.
func (g Gateway) withDefaults() Gateway {
	setDefault(&g.TimeoutSeconds, 120)
	setDefault(&g.Router, "least-loaded")
	if g.Weights == nil {
		g.Weights = &ScorerWeights{KV: 1, Queue: 1, Batch: 1, Prefix: 1}
	}
	if g.Saturation != nil {
		sat := *g.Saturation
		setDefault(&sat.QueueThreshold, 5)
		setDefault(&sat.KVThreshold, 0.8)
		g.Saturation = &sat
	}
	return g
}

// withDefaults fills the metrics pipeline's unset periods.
func (p Scrape) withDefaults() Scrape {
	setDefault(&p.IntervalSeconds, 15)
	setDefault(&p.WindowSeconds, 60)
	setDefault(&p.DelaySeconds, 15)
	setDefault(&p.EPPIntervalSeconds, 10)
	return p
}

// withDefaults fills every autoscaler's unset settings, and the default
// list of autoscalers.
func (a Autoscalers) withDefaults() Autoscalers {
	setDefault(&a.OracleIntervalSeconds, 60)
	setDefault(&a.ClairvoyantAttainment, DefaultBoundAttainment)
	a.WVA = a.WVA.withDefaults()
	a.HPA = a.HPA.withDefaults()
	a.KEDA = a.KEDA.withDefaults()
	a.KEDAQueue = a.KEDAQueue.withDefaults()
	a.KEDASaturation = a.KEDASaturation.withDefaults()
	a.KEDATokens = a.KEDATokens.withDefaults()
	a.KEDASLO = a.KEDASLO.withDefaults()
	if len(a.Default) == 0 {
		a.Default = registered.Defaults()
	}
	return a
}

// DefaultDrainTimeoutSeconds is the controller's default drain timeout
// (WVA_DRAIN_TIMEOUT).
const DefaultDrainTimeoutSeconds = 300.0

// MaxDrainTimeoutSeconds bounds the drain timeout (an hour, as the
// controller's WVA_DRAIN_TIMEOUT).
const MaxDrainTimeoutSeconds = 3600.0

// DefaultWVAConfig is WVA's configuration in a scenario that sets none:
// what docs/evaluation.md evaluates, and so what the chart and kustomize
// install (test/manifests checks them against it).
func DefaultWVAConfig() WVAConfig { return WVAConfig{}.withDefaults() }

// withDefaults fills WVA's loop periods, mode and optimizer (the engine's
// own settings keep 0 for the engine's default).
func (w WVAConfig) withDefaults() WVAConfig {
	setDefault(&w.IntervalSeconds, 30)
	setDefault(&w.ScaleFromZeroIntervalSeconds, 2)
	setDefault(&w.Mode, "hybrid")
	setDefault(&w.Optimizer, "unlimited")
	if w.DrainTimeoutSeconds == nil {
		t := DefaultDrainTimeoutSeconds
		w.DrainTimeoutSeconds = &t
	}
	return w
}

// withDefaults fills the HPA's unset settings with Kubernetes' defaults
// (sync period, tolerance, scale-down window) and the targets of the HPA
// baseline in docs/evaluation.md.
func (h HPAConfig) withDefaults() HPAConfig {
	setDefault(&h.SyncSeconds, 15)
	setDefault(&h.QueueTarget, 3)
	setDefault(&h.KVTarget, 0.5)
	setDefault(&h.Tolerance, 0.1)
	setDefault(&h.StabilizationSeconds, 300)
	return h
}

// withDefaults fills KEDA's unset settings (polling interval and cooldown
// are KEDA's defaults).
func (k KEDAConfig) withDefaults() KEDAConfig {
	setDefault(&k.PollingSeconds, 30)
	setDefault(&k.CooldownSeconds, 300)
	setDefault(&k.StabilizationSecs, 300)
	setDefault(&k.ThresholdFraction, 1)
	return k
}

// withDefaults returns the model with its arrival process and a copy of
// its variants, each with its defaults.
func (m Model) withDefaults() Model {
	m.Variants = append([]Variant(nil), m.Variants...)
	setDefault(&m.Workload.Arrival, "poisson")
	for j := range m.Variants {
		m.Variants[j].withDefaults(&m.Workload)
	}
	return m
}

// withDefaults fills a variant's unset fields (w: its model's workload).
func (v *Variant) withDefaults(w *Workload) {
	setDefault(&v.AcceleratorsPerReplica, 1)
	setDefault(&v.LatencyModel, "iteration")
	setDefault(&v.MaxBatchSize, 256)
	setDefault(&v.MaxBatchedTokens, 2048)
	setDefault(&v.Shutdown, "abort")
	if v.TerminationGracePeriodSeconds == nil {
		g := 30.0
		v.TerminationGracePeriodSeconds = &g
	}
	setDefault(&v.BlockSize, 16)
	if v.KVBlocks == 0 { // after the batch and block sizes it depends on
		longest := w.Input.Upper() + w.Output.Upper()
		v.KVBlocks = int(math.Ceil(float64(v.MaxBatchSize)*longest/float64(v.BlockSize))) + 1
	}
	setDefault(&v.MaxReplicas, 10)
	setDefault(&v.StartupSeconds, 120)
	setDefault(&v.StartupJitterSeconds, 30)
}

// Upper is the largest token count the distribution draws.
func (t Tokens) Upper() float64 {
	if t.Max > 0 {
		return t.Max
	}
	if t.Dist == "empirical" {
		m := 1.0
		for _, v := range t.Values {
			m = math.Max(m, v)
		}
		return m
	}
	if t.Dist == "" || t.Dist == "constant" {
		return t.Mean
	}
	return t.Mean + 4*t.SD
}

// DefaultBoundAttainment is the share of requests within the SLO the
// bounds size for unless autoscalers.clairvoyantAttainment says otherwise.
const DefaultBoundAttainment = 0.99
