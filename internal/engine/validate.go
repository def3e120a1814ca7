package engine

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// FieldError is a problem with one field of a snapshot, named by its path
// (for example "models[0].variants[1].maxReplicas").
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// Validate reports every structural problem of the snapshot, joined. Bad
// metric values (NaN, negative, stale) are not validation errors: the
// engine holds the affected variants' last good decisions instead.
func (s *Snapshot) Validate() error {
	var v validator
	switch s.Mode {
	case "", ModeCapacityOnly, ModeModelOnly, ModeHybrid:
	default:
		v.add("mode", "must be %q, %q or %q, got %q", ModeCapacityOnly, ModeModelOnly, ModeHybrid, s.Mode)
	}
	switch s.Optimizer {
	case "", OptimizerUnlimited, OptimizerLimited:
	default:
		v.add("optimizer", "must be %q or %q, got %q", OptimizerUnlimited, OptimizerLimited, s.Optimizer)
	}
	for _, acc := range sortedKeys(s.Inventory) {
		if acc == "" {
			v.add("inventory", "an accelerator type must not be empty")
		}
		if n := s.Inventory[acc]; n < 0 || n > MaxAcceleratorCount {
			v.add("inventory."+acc, "must be between 0 and %d accelerators, got %d", MaxAcceleratorCount, n)
		}
	}
	v.saturation("saturation", s.Saturation)
	v.config(s.Config)
	for _, name := range sortedKeys(s.ServiceClasses) {
		sc := s.ServiceClasses[name]
		p := "serviceClasses." + name
		if sc.Priority < 1 {
			v.add(p+".priority", "must be ≥ 1 (1 is the highest), got %d", sc.Priority)
		}
		v.targets(p, SLO{TTFTMs: sc.TTFTMs, ITLMs: sc.ITLMs, TPS: sc.TPS})
		v.attainment(p+".attainment", sc.Attainment)
	}
	if len(s.Models) == 0 {
		v.add("models", "must list at least one model")
	}
	// Each model is checked on its own (in parallel: a fleet has thousands
	// of variants and tens of thousands of pods), and the errors are
	// reported in the snapshot's order.
	perModel := make([][]error, len(s.Models))
	forEach(len(s.Models), func(i int) {
		var mv validator
		mv.model(modelPath(i), s, &s.Models[i])
		perModel[i] = mv.errs
	})
	seen := make(map[[2]string]int, len(s.Models))
	for i := range s.Models {
		m := &s.Models[i]
		p := modelPath(i)
		if m.ID == "" {
			v.add(p+".id", "must not be empty")
		}
		key := [2]string{m.Namespace, m.ID}
		if j, dup := seen[key]; dup {
			v.add(p+".id", "duplicates models[%d] (%s in namespace %q)", j, m.ID, m.Namespace)
		}
		seen[key] = i
		v.errs = append(v.errs, perModel[i]...)
	}
	return v.err()
}

type validator struct{ errs []error }

// modelPath is models[i], the path of a model's fields in errors.
func modelPath(i int) string { return "models[" + strconv.Itoa(i) + "]" }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) finiteNonNeg(path string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		v.add(path, "must be a finite number ≥ 0, got %v", x)
	}
}

func (v *validator) targets(p string, t SLO) {
	v.finiteNonNeg(p+".ttftMs", t.TTFTMs)
	v.finiteNonNeg(p+".itlMs", t.ITLMs)
	v.finiteNonNeg(p+".tps", t.TPS)
}

// attainment checks an attainment override: in (0, 1), or 0 to inherit.
func (v *validator) attainment(path string, a float64) {
	if !(a >= 0 && a < 1) {
		v.add(path, "must be in (0, 1), or 0 to inherit, got %v", a)
	}
}

// SurgeRatioOK says whether r is a declared surge: in [1, MaxSurgeRatio]
// (1: none). Where a setting inherits, its caller also accepts 0.
func SurgeRatioOK(r float64) bool { return r >= 1 && r <= MaxSurgeRatio }

// surgeRatio checks a declared surge at prefix.surgeRatio: 0 (inherit or
// none), or SurgeRatioOK. The path is built only for an error: the check
// runs for every model every cycle.
func (v *validator) surgeRatio(prefix string, r float64) {
	if !(r == 0 || SurgeRatioOK(r)) {
		v.add(prefix+".surgeRatio", "must be in [1, %g] (1 or 0: no surge), got %v", MaxSurgeRatio, r)
	}
}

func (v *validator) config(c Config) {
	for _, f := range []struct {
		name   string
		x, def float64
		max    float64
	}{{"transientDelaySeconds", c.TransientDelaySeconds, DefaultTransientDelay, MaxDelaySeconds},
		{"scaleToZeroRetentionSeconds", c.ScaleToZeroRetentionSeconds, DefaultScaleToZeroRetention, MaxRetentionSeconds},
		{"scaleDownStabilizationSeconds", c.ScaleDownStabilizationSeconds, DefaultStabilization, MaxStabilizationSeconds},
		{"metricsMaxAgeSeconds", c.MetricsMaxAgeSeconds, DefaultMetricsMaxAge, MaxDelaySeconds},
		{"provisioningSeconds", c.ProvisioningSeconds, DefaultProvisioning, MaxDelaySeconds}} {
		if !(f.x >= 0 && f.x <= f.max) {
			v.add("config."+f.name, "must be between 0 and %g s (0 means the default %g), got %v", f.max, f.def, f.x)
		}
	}
	v.finiteNonNeg("config.acceleratorPenaltyFactor", c.AcceleratorPenaltyFactor)
	if c.SLOMultiplier != 0 && !(c.SLOMultiplier > 1) {
		v.add("config.sloMultiplier", "must be > 1, got %v", c.SLOMultiplier)
	}
	v.surgeRatio("config", c.SurgeRatio)
	if !(c.SpareQuantile >= 0 && c.SpareQuantile < 1) {
		v.add("config.spareQuantile", "must be in (0, 1) (0: from each model's attainment target), got %v", c.SpareQuantile)
	}
	v.capacityModel(c)
	if !(c.TTFTAttainment >= 0 && c.TTFTAttainment < 1) {
		v.add("config.ttftAttainment", "must be in (0, 1), or 0 to size for the mean TTFT, got %v", c.TTFTAttainment)
	}
	v.counts(c)
	v.scaleUpLimit("config", c.ScaleUpLimitFactor, c.ScaleUpLimitReplicas)
	if c.MaxPodArrivalRPS != 0 && !(c.MaxPodArrivalRPS > 0 && c.MaxPodArrivalRPS <= math.MaxFloat64) {
		v.add("config.maxPodArrivalRPS", "must be a positive number of requests/s (0 means the default %v), got %v", DefaultMaxPodArrivalRPS, c.MaxPodArrivalRPS)
	}
	v.configChoices(c)
}

// counts checks the configuration's whole-number bounds.
func (v *validator) counts(c Config) {
	if c.MaxQueueSize < 0 || c.MaxQueueSize > MaxQueueSizeLimit {
		v.add("config.maxQueueSize", "must be between 0 and %d, got %d", MaxQueueSizeLimit, c.MaxQueueSize)
	}
	if c.TunerBudget < 0 || c.TunerBudget > MaxTunerBudget {
		v.add("config.tunerBudget", "must be between 1 and %d steps a cycle (0 means the default %d), got %d", MaxTunerBudget, DefaultTunerBudget, c.TunerBudget)
	}
	if c.MaxReplicasDefault < 0 || c.MaxReplicasDefault > MaxReplicaCount {
		v.add("config.maxReplicasDefault", "must be between 1 and %d (0 means the default %d), got %d", MaxReplicaCount, DefaultMaxReplicas, c.MaxReplicasDefault)
	}
}

// capacityModel checks the fleet capacity model's settings.
func (v *validator) capacityModel(c Config) {
	switch c.CapacityModel {
	case "", CapacityQueueing, CapacityFleet:
	default:
		v.add("config.capacityModel", "must be %q or %q, got %q", CapacityQueueing, CapacityFleet, c.CapacityModel)
	}
	if !(c.Attainment >= 0 && c.Attainment < 1) {
		v.add("config.attainment", "must be in (0, 1) (0 means the default %v), got %v", DefaultAttainment, c.Attainment)
	}
	if !(c.TokenCV >= 0 && c.TokenCV <= 10) {
		v.add("config.tokenCV", "must be in [0, 10] (0 means the default %v), got %v", DefaultTokenCV, c.TokenCV)
	}
}

// configChoices checks the configuration's named choices.
func (v *validator) configChoices(c Config) {
	switch c.AllocationAlgorithm {
	case "", "exact", "greedy":
	default:
		v.add("config.allocationAlgorithm", "must be \"exact\" or \"greedy\", got %q", c.AllocationAlgorithm)
	}
	switch c.SaturationPolicy {
	case "", "None", "PriorityExhaustive", "PriorityRoundRobin", "RoundRobin":
	default:
		v.add("config.saturationPolicy", "must be None, PriorityExhaustive, PriorityRoundRobin or RoundRobin, got %q", c.SaturationPolicy)
	}
}

// scaleUpLimit checks a per-cycle scale-up limit: a factor ≥ 1 and a
// number of replicas ≥ 1, each 0 for the default.
func (v *validator) scaleUpLimit(p string, factor float64, replicas int) {
	if factor != 0 && !(factor >= 1 && factor <= MaxReplicaCount) {
		v.add(p+".scaleUpLimitFactor", "must be between 1 and %d (0 means the default %v), got %v", MaxReplicaCount, DefaultScaleUpLimitFactor, factor)
	}
	if replicas < 0 || replicas > MaxReplicaCount {
		v.add(p+".scaleUpLimitReplicas", "must be between 1 and %d (0 means the default %d), got %d", MaxReplicaCount, DefaultScaleUpLimitReplicas, replicas)
	}
}

// spareBelowThreshold checks a model's saturation settings in force (the
// defaults, the snapshot's, the model's): the KV spare trigger must be
// below the KV threshold, as the ConfigMap requires, or the analyzer
// divides by a capacity of zero or less.
func (v *validator) spareBelowThreshold(p string, c SaturationConfig) {
	if !(c.KVSpareTrigger < c.KVCacheThreshold) {
		v.add(p, "kvSpareTrigger %v must be below kvCacheThreshold %v (with the defaults and the snapshot's settings)", c.KVSpareTrigger, c.KVCacheThreshold)
	}
}

func (v *validator) saturation(p string, c *SaturationConfig) {
	if c == nil {
		return
	}
	if c.KVCacheThreshold != 0 && !(c.KVCacheThreshold > 0 && c.KVCacheThreshold <= 1) {
		v.add(p+".kvCacheThreshold", "must be in (0, 1], got %v", c.KVCacheThreshold)
	}
	if c.KVScaleUpThreshold != 0 && !(c.KVScaleUpThreshold > 0 && c.KVScaleUpThreshold <= 1) {
		v.add(p+".kvScaleUpThreshold", "must be in (0, 1], got %v", c.KVScaleUpThreshold)
	}
	if c.QueueLengthThreshold != 0 && !(c.QueueLengthThreshold > 0) {
		v.add(p+".queueLengthThreshold", "must be > 0, got %v", c.QueueLengthThreshold)
	}
	v.finiteNonNeg(p+".kvSpareTrigger", c.KVSpareTrigger)
	v.finiteNonNeg(p+".queueSpareTrigger", c.QueueSpareTrigger)
	if c.MinNonSaturatedReplicasForScaleDown < 0 {
		v.add(p+".minNonSaturatedReplicasForScaleDown", "must be ≥ 1, got %d", c.MinNonSaturatedReplicasForScaleDown)
	}
}

func (v *validator) model(p string, s *Snapshot, m *Model) {
	if m.ServiceClass != "" {
		if _, ok := s.ServiceClasses[m.ServiceClass]; !ok {
			v.add(p+".serviceClass", "names no entry of serviceClasses (%q)", m.ServiceClass)
		}
	}
	if m.Priority < 0 {
		v.add(p+".priority", "must be ≥ 1, got %d", m.Priority)
	}
	if m.SLO != nil {
		v.targets(p+".slo", *m.SLO)
	}
	if m.SLOMultiplier != 0 && !(m.SLOMultiplier > 1) {
		v.add(p+".sloMultiplier", "must be > 1, got %v", m.SLOMultiplier)
	}
	v.attainment(p+".attainment", m.Attainment)
	v.surgeRatio(p, m.SurgeRatio)
	v.saturation(p+".saturation", m.Saturation)
	v.spareBelowThreshold(p+".saturation", defaultSaturation.merged(s.Saturation).merged(m.Saturation))
	v.finiteNonNeg(p+".gatewayWaitingRequests", m.GatewayWaitingRequests)
	if m.IdleSeconds != nil {
		v.finiteNonNeg(p+".idleSeconds", *m.IdleSeconds)
	}
	if len(m.Variants) == 0 {
		v.add(p+".variants", "must list at least one variant")
	}
	names := map[string]int{}
	for j := range m.Variants {
		vp := p + ".variants[" + strconv.Itoa(j) + "]"
		va := &m.Variants[j]
		if k, dup := names[va.Name]; dup {
			v.add(vp+".name", "duplicates variants[%d] (%q)", k, va.Name)
		}
		names[va.Name] = j
		v.variant(vp, s, va)
	}
}

func (v *validator) variant(p string, s *Snapshot, va *Variant) {
	if va.Name == "" {
		v.add(p+".name", "must not be empty")
	}
	if va.Accelerator == "" {
		v.add(p+".accelerator", "must not be empty")
	} else if s.Optimizer == OptimizerLimited {
		if _, ok := s.Inventory[va.Accelerator]; !ok {
			v.add(p+".accelerator", "%q is not in the inventory (limited mode needs every accelerator type there)", va.Accelerator)
		}
	}
	if va.AcceleratorsPerReplica < 0 || va.AcceleratorsPerReplica > MaxAcceleratorsPerReplica {
		v.add(p+".acceleratorsPerReplica", "must be between 1 and %d, got %d", MaxAcceleratorsPerReplica, va.AcceleratorsPerReplica)
	}
	v.finiteNonNeg(p+".cost", va.Cost)
	if va.Cost > MaxCost {
		v.add(p+".cost", "must be at most %g per replica, got %v", MaxCost, va.Cost)
	}
	switch va.Role {
	case "", "prefill", "decode", "both":
	default:
		v.add(p+".role", "must be \"prefill\", \"decode\" or empty, got %q", va.Role)
	}
	switch va.ServiceModel {
	case "", tuner.ModelIteration, tuner.ModelLinear:
	default:
		v.add(p+".serviceModel", "must be \"iteration\" or \"linear\", got %q", va.ServiceModel)
	}
	if va.Params != nil {
		if err := va.Params.ValidateInput(va.serviceModel()); err != nil {
			v.add(p+".params", "%v", err)
		}
	}
	if va.MaxBatchSize < 0 {
		v.add(p+".maxBatchSize", "must be ≥ 1, got %d", va.MaxBatchSize)
	}
	v.replicas(p, va)
	v.scaleUpLimit(p, va.ScaleUpLimitFactor, va.ScaleUpLimitReplicas)
	v.pods(p, va)
}

// Bounds of every count and cost a snapshot gives, so that the engine's
// integer arithmetic (a count times a scale-up factor, times accelerators
// per replica, summed over a fleet) cannot overflow and every cost it sums
// stays finite. Far beyond any real fleet: a million replicas of a variant,
// 1 024 accelerators per replica, a billion accelerators of a type, 10¹²
// per replica-hour.
const (
	MaxReplicaCount           = 1 << 20
	MaxAcceleratorsPerReplica = 1 << 10
	MaxAcceleratorCount       = 1 << 30
	MaxCost                   = 1e12
)

func (v *validator) replicas(p string, va *Variant) {
	minR := va.minReplicas()
	if minR < 0 || minR > MaxReplicaCount {
		v.add(p+".minReplicas", "must be between 0 and %d, got %d", MaxReplicaCount, minR)
	}
	if va.MaxReplicas < 0 || (va.MaxReplicas > 0 && va.MaxReplicas < minR) || va.MaxReplicas > MaxReplicaCount {
		v.add(p+".maxReplicas", "must be between minReplicas (%d) and %d, got %d", minR, MaxReplicaCount, va.MaxReplicas)
	}
	if va.CurrentReplicas < 0 || va.CurrentReplicas > MaxReplicaCount {
		v.add(p+".currentReplicas", "must be between 0 and %d, got %d", MaxReplicaCount, va.CurrentReplicas)
	}
	if va.ReadyReplicas < 0 || va.ReadyReplicas > va.CurrentReplicas {
		v.add(p+".readyReplicas", "must be between 0 and currentReplicas (%d), got %d", va.CurrentReplicas, va.ReadyReplicas)
	}
	if va.PendingReplicas != nil && (*va.PendingReplicas < 0 || *va.PendingReplicas > MaxReplicaCount) {
		v.add(p+".pendingReplicas", "must be between 0 and %d, got %d", MaxReplicaCount, *va.PendingReplicas)
	}
}

func (v *validator) pods(p string, va *Variant) {
	pods := map[string]bool{}
	for k, pod := range va.Pods {
		if pod.Name == "" {
			v.add(fmt.Sprintf("%s.pods[%d].name", p, k), "must not be empty")
		} else if pods[pod.Name] {
			v.add(fmt.Sprintf("%s.pods[%d].name", p, k), "duplicates pod %q", pod.Name)
		}
		pods[pod.Name] = true
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
