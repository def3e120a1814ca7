package queueing

import "fmt"

// ClosedForm is the light-traffic approximation of the iteration model
// (the WVA queueing-model guide §9): with ρ = λ(o + 1)δ̄, Little's law on the batch gives
// n = λ(o + 1)·T_iter, so T_iter = α + n·δ̄ solves to α/(1 − ρ).
type ClosedForm struct {
	Rho        float64 // ρ = λ(o + 1)δ̄ (< 1)
	IterTimeMs float64 // T_iter = α/(1 − ρ)
	TTFTMs     float64 // T_iter + (β + γ)·i
	ITLMs      float64 // T_iter + β + γ(i + (o + 1)/2)
}

// ClosedForm evaluates the approximation at rateRPS requests/s. It has no
// queue limit, so it has no steady state at ρ ≥ 1; that is an error naming
// the largest usable rate.
func (m Iteration) ClosedForm(w Workload, rateRPS float64) (ClosedForm, error) {
	if err := m.Validate(w); err != nil {
		return ClosedForm{}, err
	}
	if !finite(rateRPS) || rateRPS <= 0 {
		return ClosedForm{}, &ParamError{Param: "rate", Value: rateRPS, Reason: "must be a positive finite number of requests/s"}
	}
	perRequest := (w.OutputTokens + 1) * m.Work(w) // ms of iteration time per request
	rho := rateRPS / 1000 * perRequest
	if rho >= 1 {
		return ClosedForm{}, &ParamError{Param: "rate", Value: rateRPS,
			Reason: fmt.Sprintf("load ρ = %.4g ≥ 1 has no steady state; the closed form needs a rate below %.6g requests/s", rho, 1000/perRequest)}
	}
	return m.latenciesAt(w, rho, m.Alpha/(1-rho)), nil
}

// SLOForMultiplier returns the TTFT and ITL targets that correspond to
// running at utilisation ρ = 1 − 1/k, where T_iter = k·α (the WVA queueing-model
// guide §3.2):
// TTFT = kα + (β + γ)i and ITL = kα + β + γ(i + (o + 1)/2).
func (m Iteration) SLOForMultiplier(w Workload, k float64) (ttftMs, itlMs float64, err error) {
	if err := m.Validate(w); err != nil {
		return 0, 0, err
	}
	if !finite(k) || k <= 1 {
		return 0, 0, &ParamError{Param: "slo-multiplier", Value: k, Reason: "must be a finite number > 1"}
	}
	c := m.latenciesAt(w, 1-1/k, k*m.Alpha)
	return c.TTFTMs, c.ITLMs, nil
}

func (m Iteration) latenciesAt(w Workload, rho, iter float64) ClosedForm {
	return ClosedForm{
		Rho:        rho,
		IterTimeMs: iter,
		TTFTMs:     iter + (m.Beta+m.Gamma)*w.InputTokens,
		ITLMs:      iter + m.Beta + m.Gamma*(w.InputTokens+(w.OutputTokens+1)/2),
	}
}
