package scenario

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llm-d-incubation/wva/internal/engine"
)

// Validate reports every problem, each naming its field: the fields'
// values, then, when they are valid, the sizes they add up to (the sizes
// of bad values mean nothing).
func (s *Scenario) Validate() error {
	if err := collect(s.checkFields); err != nil {
		return err
	}
	return collect(s.checkSize)
}

// collect runs a check and joins the problems it reports.
func collect(check func(add func(path, format string, args ...any))) error {
	var errs []error
	check(func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	})
	return errors.Join(errs...)
}

// checkFields checks every field's value on its own, and the names
// against each other.
func (s *Scenario) checkFields(add func(path, format string, args ...any)) {
	if !(s.DurationSeconds > 0 && s.DurationSeconds <= MaxDurationSeconds) {
		add("durationSeconds", "must be > 0 seconds and at most %g (30 days), got %v", float64(MaxDurationSeconds), s.DurationSeconds)
	}
	s.validatePeriods(add)
	if !(s.DrainSeconds >= 0 && s.DrainSeconds <= MaxDurationSeconds) {
		add("drainSeconds", "must be ≥ 0 seconds and at most %g (30 days), got %v", float64(MaxDurationSeconds), s.DrainSeconds)
	}
	if len(s.Models) == 0 {
		add("models", "must list at least one model")
	}
	names := map[string]int{}
	for i, m := range s.Models {
		p := "models[" + strconv.Itoa(i) + "]"
		if j, dup := names[m.Name]; dup && m.Name != "" {
			add(p+".name", "duplicates models[%d].name %q", j, m.Name)
		}
		names[m.Name] = i
		validateModel(p, m, add)
	}
	validateGateway(s.Gateway, add)
	if s.Matrix != nil {
		validateMatrix(s, add)
	}
	validateAutoscalers(s.Autoscalers, add)
}

// validateAutoscalers checks every autoscaler's settings and the default
// list.
func validateAutoscalers(a Autoscalers, add func(path, format string, args ...any)) {
	validateWVA("autoscalers.wva", a.WVA, add)
	validateBaselines(a, add)
	validateKEDAEPP(a, add)
	if m := a.ClairvoyantMargin; !(m >= 0 && m <= MaxClairvoyantMargin) {
		add("autoscalers.clairvoyantMargin", "must be a number between 0 and %d, got %v", MaxClairvoyantMargin, m)
	}
	if p := a.ClairvoyantAttainment; !(p >= 0 && p < 1) {
		add("autoscalers.clairvoyantAttainment", "must be a share in (0, 1) (0: the default %g), got %v", DefaultBoundAttainment, p)
	}
	if len(a.Default) > 0 {
		if err := registered.Check(a.Default); err != nil {
			add("autoscalers.default", "%v", err)
		}
	}
}

func validateModel(p string, m Model, add func(string, string, ...any)) {
	if m.Name == "" {
		add(p+".name", "must not be empty")
	}
	validateName(p+".name", m.Name, add)
	if m.Priority < 0 {
		add(p+".priority", "must be ≥ 0 (1 is the highest; 0: the engine's default), got %d", m.Priority)
	}
	validateSLO(p+".slo", m.SLO, add)
	if a := m.SLO.Attainment; !(a >= 0 && a < 1) {
		add(p+".slo.attainment", "must be in (0, 1), or 0 for autoscalers.wva.attainment, got %v", a)
	}
	if r := m.SurgeRatio; !(r == 0 || engine.SurgeRatioOK(r)) {
		add(p+".surgeRatio", "must be in [1, %g] (1: no surge; 0: autoscalers.wva.surgeRatio), got %v", engine.MaxSurgeRatio, r)
	}
	validateWorkload(p+".workload", m.Workload, add)
	if len(m.Variants) == 0 {
		add(p+".variants", "must list at least one variant")
	}
	names := map[string]int{}
	for j, v := range m.Variants {
		vp := p + ".variants[" + strconv.Itoa(j) + "]"
		if k, dup := names[v.Name]; dup && v.Name != "" {
			add(vp+".name", "duplicates variants[%d].name %q", k, v.Name)
		}
		names[v.Name] = j
		validateVariant(vp, v, add)
	}
}

// validateSLO checks latency targets: finite and > 0 ms.
func validateSLO(p string, slo SLO, add func(string, string, ...any)) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"ttftMs", slo.TTFTMs}, {"itlMs", slo.ITLMs}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			add(p+"."+f.name, "must be a finite number of ms > 0, got %v", f.v)
		}
	}
}

func validateGateway(g Gateway, add func(string, string, ...any)) {
	switch g.Router {
	case "", "least-loaded", "round-robin":
	default:
		add("gateway.router", "must be least-loaded or round-robin, got %q", g.Router)
	}
	if g.QueueThreshold < 0 {
		add("gateway.queueThreshold", "must be ≥ 0 waiting requests (0: never shed), got %d", g.QueueThreshold)
	}
	if t := g.TimeoutSeconds; !(t >= 0 && t <= MaxDurationSeconds) {
		add("gateway.timeoutSeconds", "must be ≥ 0 seconds and at most %g (0: the default 120), got %v", float64(MaxDurationSeconds), t)
	}
	if w := g.Weights; w != nil {
		validateWeights(w, add)
	}
	if s := g.Saturation; s != nil {
		if s.QueueThreshold < 0 {
			add("gateway.saturation.queueThreshold", "must be ≥ 1 waiting request (0: the default 5), got %d", s.QueueThreshold)
		}
		if !(s.KVThreshold >= 0 && s.KVThreshold <= 1) {
			add("gateway.saturation.kvThreshold", "must be a KV-cache utilisation in (0, 1] (0: the default 0.8), got %v", s.KVThreshold)
		}
	}
	if g.Admission != nil {
		validateAdmission("gateway.admission", g.Admission, add)
	}
}

// validateWeights checks the router's scorer weights: the string form
// parsed, every weight finite and ≥ 0.
func validateWeights(w *ScorerWeights, add func(string, string, ...any)) {
	if w.parseErr != nil {
		add("gateway.weights", "%v", w.parseErr)
		return
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"kv", w.KV}, {"queue", w.Queue}, {"batch", w.Batch}, {"prefix", w.Prefix}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add("gateway.weights."+f.name, "must be a finite number ≥ 0, got %v", f.v)
		}
	}
}

// MaxDurationSeconds bounds a scenario's simulated time (30 days): the
// simulator keeps every request's record in memory.
const MaxDurationSeconds = 30 * 24 * 3600

// MinPeriodSeconds is the shortest period a scenario may set for a
// recurring event (recording, scraping, an autoscaler's loop): each adds
// events for the whole run.
const MinPeriodSeconds = 0.1

// validatePeriods checks every recurring period and every time setting:
// finite and ≥ 0 (0 is the default), and periods not below
// minPeriodSeconds, so that no setting makes the run spin on events or
// grow without bound.
func (s *Scenario) validatePeriods(add func(string, string, ...any)) {
	a := s.Autoscalers
	for _, f := range []struct {
		name   string
		v      float64
		period bool
	}{
		{"recordSeconds", s.RecordSeconds, true}, {"scrape.intervalSeconds", s.Scrape.IntervalSeconds, true},
		{"scrape.windowSeconds", s.Scrape.WindowSeconds, true}, {"scrape.delaySeconds", s.Scrape.DelaySeconds, false},
		{"scrape.eppIntervalSeconds", s.Scrape.EPPIntervalSeconds, true},
		{"autoscalers.oracleIntervalSeconds", a.OracleIntervalSeconds, true},
		{"autoscalers.wva.intervalSeconds", a.WVA.IntervalSeconds, true},
		{"autoscalers.wva.scaleFromZeroIntervalSeconds", a.WVA.ScaleFromZeroIntervalSeconds, true},
		{"autoscalers.hpa.syncSeconds", a.HPA.SyncSeconds, true}, {"autoscalers.hpa.stabilizationSeconds", a.HPA.StabilizationSeconds, false},
		{"autoscalers.hpa.tolerance", a.HPA.Tolerance, false},
		{"autoscalers.keda.pollingSeconds", a.KEDA.PollingSeconds, true}, {"autoscalers.keda.cooldownSeconds", a.KEDA.CooldownSeconds, false},
		{"autoscalers.keda.stabilizationSeconds", a.KEDA.StabilizationSecs, false}, {"autoscalers.keda.activation", a.KEDA.Activation, false},
	} {
		switch {
		case !(f.v >= 0) || math.IsInf(f.v, 0):
			add(f.name, "must be a finite number ≥ 0 (0: the default), got %v", f.v)
		case f.period && f.v > 0 && f.v < MinPeriodSeconds:
			add(f.name, "must be at least %g seconds (0: the default), got %v", MinPeriodSeconds, f.v)
		}
	}
	if a.KEDA.MinReplicaCount < 0 {
		add("autoscalers.keda.minReplicaCount", "must be ≥ 0, got %d", a.KEDA.MinReplicaCount)
	}
	s.validateInventory(add)
}

// validateInventory checks the inventory against the variants: every type
// is one a variant runs on (a misspelt type would leave the variants of
// the real one unlimited), holds at most engine.MaxAcceleratorCount, and
// fits the variants' initial replicas (they start at once, so they must be
// placeable); in limited mode every variant's type is listed (the engine
// refuses a snapshot that lacks one, and WVA would hold every cycle).
func (s *Scenario) validateInventory(add func(string, string, ...any)) {
	initial := map[string]int{}
	for _, m := range s.Models {
		for _, v := range m.Variants {
			initial[v.Accelerator] += v.InitialReplicas * max(v.AcceleratorsPerReplica, 1)
		}
	}
	used := slices.Sorted(maps.Keys(initial))
	for _, acc := range slices.Sorted(maps.Keys(s.Inventory)) {
		p, n := "inventory."+acc, s.Inventory[acc]
		if strings.ContainsFunc(acc, func(r rune) bool { return r == '.' || !unicode.IsGraphic(r) || unicode.IsSpace(r) }) {
			p = fmt.Sprintf("inventory[%q]", acc) // an odd key, quoted and escaped
		}
		switch _, ok := initial[acc]; {
		case acc == "":
			add("inventory", "an accelerator type must not be empty")
		case !ok:
			add(p, "no variant runs on %q (the variants' accelerators: %q)", acc, used)
		case n < 0 || n > engine.MaxAcceleratorCount:
			add(p, "must be between 0 and %d accelerators, got %d", engine.MaxAcceleratorCount, n)
		case initial[acc] > n:
			add(p, "%d accelerators cannot hold the variants' initial replicas, which need %d", n, initial[acc])
		}
	}
	if s.Autoscalers.WVA.Optimizer != "limited" {
		return
	}
	for _, acc := range used {
		if _, ok := s.Inventory[acc]; !ok {
			add("inventory", "the limited optimizer needs every variant's accelerator type listed; %q is not", acc)
		}
	}
}

// validateKVThreshold checks WVA's KV threshold: 0 (the default) or above
// the saturation analyzer's spare trigger, at most 1.
func validateKVThreshold(p string, v float64, add func(string, string, ...any)) {
	if v != 0 && !KVThresholdOK(v) {
		add(p+".kvCacheThreshold", "must be a KV-cache utilisation in (%g, 1], above the analyzer's spare trigger (0: the default 0.8), got %v",
			engine.DefaultKVSpareTrigger, v)
	}
}

// validateWVA checks the engine settings a scenario passes to WVA, so that a
// bad one is an error at load time rather than a run where every cycle
// fails.
// validateWVACapacity checks the fleet capacity model's settings.
func validateWVACapacity(p string, w WVAConfig, add func(string, string, ...any)) {
	switch w.CapacityModel {
	case "", "queueing", "fleet":
	default:
		add(p+".capacityModel", "must be queueing or fleet, got %q", w.CapacityModel)
	}
	if !(w.Attainment >= 0 && w.Attainment < 1) {
		add(p+".attainment", "must be in (0, 1) (0: ttftAttainment where set, else 0.99), got %v", w.Attainment)
	}
	if !(w.TokenCV >= 0 && w.TokenCV <= 10) {
		add(p+".tokenCV", "must be in [0, 10] (0: the default 1), got %v", w.TokenCV)
	}
}

// validateWVAHeadroom checks the settings that size the queueing model's
// headroom: the forecast's quantile, the declared surge and the TTFT
// attainment.
func validateWVAHeadroom(p string, w WVAConfig, add func(string, string, ...any)) {
	if !(w.SpareQuantile >= 0 && w.SpareQuantile < 1) {
		add(p+".spareQuantile", "must be in (0, 1) (0: from the attainment target), got %v", w.SpareQuantile)
	}
	if !(w.SurgeRatio == 0 || engine.SurgeRatioOK(w.SurgeRatio)) {
		add(p+".surgeRatio", "must be in [1, %g] (1 or 0: no surge), got %v", engine.MaxSurgeRatio, w.SurgeRatio)
	}
	if !(w.TTFTAttainment >= 0 && w.TTFTAttainment < 1) {
		add(p+".ttftAttainment", "must be in (0, 1), or 0 to size for the mean TTFT, got %v", w.TTFTAttainment)
	}
}

func validateWVA(p string, w WVAConfig, add func(string, string, ...any)) {
	switch w.Mode {
	case "", "capacity-only", "model-only", "hybrid":
	default:
		add(p+".mode", "must be capacity-only, model-only or hybrid, got %q", w.Mode)
	}
	switch w.Optimizer {
	case "", "unlimited", "limited":
	default:
		add(p+".optimizer", "must be unlimited or limited, got %q", w.Optimizer)
	}
	switch w.SaturationPolicy {
	case "", "None", "PriorityExhaustive", "PriorityRoundRobin", "RoundRobin":
	default:
		add(p+".saturationPolicy", "must be None, PriorityExhaustive, PriorityRoundRobin or RoundRobin, got %q", w.SaturationPolicy)
	}
	validateWVAHeadroom(p, w, add)
	validateWVACapacity(p, w, add)
	for _, f := range []struct {
		name   string
		v, max float64
	}{{"provisioningSeconds", w.ProvisioningSeconds, engine.MaxDelaySeconds},
		{"scaleDownStabilizationSeconds", w.ScaleDownStabilizationSeconds, engine.MaxStabilizationSeconds}} {
		if !(f.v >= 0 && f.v <= f.max) {
			add(p+"."+f.name, "must be between 0 and %g seconds (0: the default), got %v", f.max, f.v)
		}
	}
	validateDrain(p, w, add)
	validateKVThreshold(p, w.KVCacheThreshold, add)
	if up := w.KVScaleUpThreshold; up != 0 && !KVThresholdOK(up) {
		add(p+".kvScaleUpThreshold", "must be a KV-cache utilisation in (%g, 1] (0: kvCacheThreshold; below it, kvCacheThreshold acts), got %v",
			engine.DefaultKVSpareTrigger, up)
	}
	if w.MinNonSaturatedReplicas < 0 || w.MinNonSaturatedReplicas > MaxReplicasPerVariant {
		add(p+".minNonSaturatedReplicas", "must be between 0 and %d (0: the default), got %d", MaxReplicasPerVariant, w.MinNonSaturatedReplicas)
	}
}

// validateBaselines checks the HPA's and KEDA's targets (0 is their
// default).
func validateBaselines(a Autoscalers, add func(string, string, ...any)) {
	if k := a.HPA.KVTarget; !(k >= 0 && k <= 1) {
		add("autoscalers.hpa.kvTarget", "must be a KV-cache utilisation in (0, 1] (0: the default 0.5), got %v", k)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"hpa.queueTarget", a.HPA.QueueTarget}, {"keda.threshold", a.KEDA.Threshold}, {"keda.thresholdFraction", a.KEDA.ThresholdFraction}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add("autoscalers."+f.name, "must be a finite number > 0 (0: the default), got %v", f.v)
		}
	}
}

// validateDrain checks WVA's drain timeout.
func validateDrain(p string, w WVAConfig, add func(string, string, ...any)) {
	if d := w.DrainTimeoutSeconds; d != nil && !(*d >= 0 && *d <= MaxDrainTimeoutSeconds) {
		add(p+".drainTimeoutSeconds", "must be between 0 (no drain) and %g seconds (default %g), got %v", MaxDrainTimeoutSeconds, DefaultDrainTimeoutSeconds, *d)
	}
}

// MaxNameBytes bounds a model's, variant's, accelerator's or class's name.
const MaxNameBytes = 256

// validateName refuses what a name must not hold: control characters
// (the tables print names to a terminal) and invalid UTF-8, or more than
// MaxNameBytes. The error quotes the name escaped.
func validateName(p, name string, add func(string, string, ...any)) {
	if len(name) > MaxNameBytes {
		add(p, "must be at most %d bytes, got %d", MaxNameBytes, len(name))
		return
	}
	if !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		add(p, "must be printable text (no control characters), got %q", name)
	}
}

// KVThresholdOK says whether a KV threshold lies above the saturation
// analyzer's spare trigger and at most 1.
func KVThresholdOK(v float64) bool { return v > engine.DefaultKVSpareTrigger && v <= 1 }
