// Package tuner learns the parameters of a variant's queueing model online,
// from the TTFT and ITL its servers report, with an Extended Kalman Filter
// over the queueing model (the WVA queueing-model guide §4–5; Kumar, Tantawi
// & Zhang 2009; docs/tuner.md). It learns (α, β, γ) for the iteration model and (α, β, γ, δ)
// for the linear model, from a cold start, and says how sure it is.
//
// See docs/tuner.md for the design and the convergence study.
package tuner

import (
	"fmt"
	"math"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// Service model names, as on the command line.
const (
	ModelIteration = "iteration"
	ModelLinear    = "linear"
)

// Params are the parameters of a service model, in ms. Delta is used by the
// linear model only.
type Params struct {
	Alpha, Beta, Gamma, Delta float64
}

// dim returns the number of parameters the model learns.
func dim(model string) int {
	if model == ModelLinear {
		return 4
	}
	return 3
}

// vector returns the learned components in filter order.
func (p Params) vector(model string) []float64 {
	v := []float64{p.Alpha, p.Beta, p.Gamma, p.Delta}
	return v[:dim(model)]
}

func paramsOf(model string, v []float64) Params {
	p := Params{Alpha: v[0], Beta: v[1], Gamma: v[2]}
	if model == ModelLinear {
		p.Delta = v[3]
	}
	return p
}

// serviceModel builds the queueing model for p.
func (p Params) serviceModel(model string) queueing.ServiceModel {
	if model == ModelLinear {
		return queueing.Linear{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma, Delta: p.Delta}
	}
	return queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}
}

// Validate checks that every learned parameter is positive and finite.
func (p Params) Validate(model string) error {
	for i, v := range p.vector(model) {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("tuner: %s must be a positive finite number, got %v", paramNames[i], v)
		}
	}
	return nil
}

// ValidateInput is Validate for parameters a user gives (a profile, a
// snapshot): each must also lie within [MinParam, MaxParam]. The tuner's
// own estimates are held by its bounds instead.
func (p Params) ValidateInput(model string) error {
	if err := p.Validate(model); err != nil {
		return err
	}
	for i, v := range p.vector(model) {
		if v < MinParam || v > MaxParam {
			return fmt.Errorf("tuner: %s must be between %g and %g (ms, or ms per token), got %v", paramNames[i], MinParam, MaxParam, v)
		}
	}
	return nil
}

// MinParam and MaxParam bound every parameter, in ms (or ms per token):
// the fitted values of real servers lie between about 1e-6 and 100; beyond
// these bounds a replica's modelled rate or latency leaves the range the
// queueing model can compute (a tiny γ gave "NaN rps per replica").
const (
	MinParam = 1e-9
	MaxParam = 1e9
)

var paramNames = []string{"alpha", "beta", "gamma", "delta"}

// Defaults are the starting parameters when no bootstrap is possible. For
// the iteration model they are the WVA queueing-model guide's (§8: α = 5,
// β = 0.05, γ = 0.00005 ms). It gives none for the linear model; ours describe a mid-size model
// on a current GPU (5 ms decode step, 20 ms prefill base).
func Defaults(model string) Params {
	if model == ModelLinear {
		return Params{Alpha: 5, Beta: 0.05, Gamma: 20, Delta: 0.001}
	}
	return Params{Alpha: 5, Beta: 0.05, Gamma: 0.00005}
}

// baseFactor is the share of the observed ITL attributed to α by the
// bootstrap (the WVA queueing-model guide §8–9, "BaseFactor").
const baseFactor = 0.9

// Bootstrap guesses parameters from one observation by inverting the light-
// load equations, assuming T_iter ≈ α (the WVA queueing-model guide §9):
//
//	α = 0.9·ITL,  β + γ = (TTFT − α)/i,
//	γ = ((ITL − α) − (β + γ)) / (i + (o + 1)/2 − 1),  β = (β + γ) − γ.
//
// For the linear model (which the guide does not bootstrap) it splits the
// light-load decode step α + β ≈ ITL and prefill γ + δ·i ≈ TTFT: α = 0.9·ITL,
// β = 0.1·ITL, γ = TTFT/2, δ = TTFT/(2i). It reports false when any value
// would not be positive, and the caller should use Defaults.
func Bootstrap(model string, obs Observation) (Params, bool) {
	i, o := obs.InputTokens, obs.OutputTokens
	alpha := baseFactor * obs.ITLMs
	var p Params
	if model == ModelLinear {
		if i <= 0 {
			return Params{}, false
		}
		p = Params{Alpha: alpha, Beta: obs.ITLMs - alpha, Gamma: obs.TTFTMs / 2, Delta: obs.TTFTMs / (2 * i)}
	} else {
		if i <= 0 {
			return Params{}, false
		}
		bg := (obs.TTFTMs - alpha) / i
		gamma := ((obs.ITLMs - alpha) - bg) / (i + (o+1)/2 - 1)
		p = Params{Alpha: alpha, Beta: bg - gamma, Gamma: gamma}
	}
	if p.Validate(model) != nil {
		return Params{}, false
	}
	return p, true
}
