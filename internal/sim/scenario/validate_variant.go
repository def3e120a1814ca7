package scenario

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

func validateVariant(p string, v Variant, add func(string, string, ...any)) {
	if v.Name == "" {
		add(p+".name", "must not be empty")
	}
	validateName(p+".name", v.Name, add)
	if v.Accelerator == "" {
		add(p+".accelerator", "must not be empty")
	}
	validateName(p+".accelerator", v.Accelerator, add)
	validateScheduling(p, v, add)
	switch v.LatencyModel {
	case "", "iteration":
		if err := v.Params.ValidateInput(tuner.ModelIteration); err != nil {
			add(p+".params", "%v", err)
		}
	case "linear":
		validateLinear(p+".linear", v.Linear, add)
	default:
		add(p+".latencyModel", "must be iteration or linear, got %q", v.LatencyModel)
	}
	if v.Profile != nil {
		if err := v.Profile.ValidateInput(tuner.ModelIteration); err != nil {
			add(p+".profile", "%v", err)
		}
	}
	validateVariantSizes(p, v, add)
	if g := v.TerminationGracePeriodSeconds; g != nil && (!(*g >= 0) || math.IsInf(*g, 0)) {
		add(p+".terminationGracePeriodSeconds", "must be ≥ 0 seconds, got %v", *g)
	}
	switch v.Shutdown {
	case "", "abort", "drain":
	default:
		add(p+".shutdown", "must be abort or drain, got %q", v.Shutdown)
	}
}

// validateVariantSizes checks a variant's replica bounds, its server's
// sizes and its times.
func validateVariantSizes(p string, v Variant, add func(string, string, ...any)) {
	if v.MaxReplicas < 0 || v.MaxReplicas > MaxReplicasPerVariant {
		add(p+".maxReplicas", "must be between 1 and %d (0: the default 10), got %d", MaxReplicasPerVariant, v.MaxReplicas)
	}
	maxR := v.MaxReplicas
	if maxR <= 0 {
		maxR = 10
	}
	if v.MinReplicas < 0 || v.MinReplicas > maxR {
		add(p+".minReplicas", "must be between 0 and maxReplicas (%d), got %d", maxR, v.MinReplicas)
	}
	if v.InitialReplicas < 0 || v.InitialReplicas > maxR {
		add(p+".initialReplicas", "must be between 0 and maxReplicas (%d), got %d", maxR, v.InitialReplicas)
	}
	for _, f := range []struct {
		name  string
		v     int
		limit int
	}{{"maxBatchSize", v.MaxBatchSize, MaxBatchSize}, {"maxBatchedTokens", v.MaxBatchedTokens, MaxTokens},
		{"kvBlocks", v.KVBlocks, MaxKVBlocks}, {"blockSize", v.BlockSize, MaxBlockSize},
		{"acceleratorsPerReplica", v.AcceleratorsPerReplica, MaxAcceleratorsPerReplica}} {
		if f.v < 0 || f.v > f.limit {
			add(p+"."+f.name, "must be between 1 and %d (0: the default), got %d", f.limit, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"startupSeconds", v.StartupSeconds}, {"startupJitterSeconds", v.StartupJitterSeconds}, {"cost", v.Cost}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add(p+"."+f.name, "must be a finite number ≥ 0, got %v", f.v)
		}
	}
	if v.Cost > engine.MaxCost {
		add(p+".cost", "must be at most %g per replica-hour (WVA's engine takes no more), got %v", engine.MaxCost, v.Cost)
	}
}

// Plausible bounds of the linear model's coefficients, in ms: beyond them
// the coefficients were most likely given in BLIS's µs.
const (
	maxStepMs     = 1000 // β0, α0, α2: a second per iteration or request
	maxPerTokenMs = 10   // β1, β2, α1: 10 ms per token
)

func validateLinear(p string, l LinearStep, add func(string, string, ...any)) {
	check := func(name string, v, limit float64, unit string, positive bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (positive && v == 0):
			want := "≥ 0"
			if positive {
				want = "> 0"
			}
			add(p+"."+name, "must be %s ms%s, got %v", want, unit, v)
		case v > limit:
			add(p+"."+name, "%v ms%s is implausible (at most %v): the coefficients are in milliseconds, BLIS's in microseconds — divide those by 1000", v, unit, limit)
		}
	}
	check("beta0", l.Beta0, maxStepMs, " per iteration", true)
	check("beta1", l.Beta1, maxPerTokenMs, " per prefill token", false)
	check("beta2", l.Beta2, maxPerTokenMs, " per decode token", false)
	check("alpha0", l.Alpha0, maxStepMs, " per request", false)
	check("alpha1", l.Alpha1, maxPerTokenMs, " per input token", false)
	check("alpha2", l.Alpha2, maxStepMs, " per output token", false)
}
