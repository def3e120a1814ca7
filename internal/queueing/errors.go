package queueing

import (
	"errors"
	"fmt"
	"math"
)

// ErrInfeasible is matched by every [InfeasibleError] through errors.Is.
var ErrInfeasible = errors.New("queueing: infeasible SLO")

// ParamError reports an input that the models cannot use. Param is the name
// the CLI uses for the same value (for example "alpha" or "max-batch-size"),
// so that a caller can point the user at the flag or field to change.
type ParamError struct {
	Param  string
	Value  float64
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("queueing: invalid %s %v: %s", e.Param, e.Value, e.Reason)
}

// InfeasibleError reports a latency target that no positive arrival rate
// meets. BestTTFTMs and BestITLMs are the latencies at the lightest load the
// sizing considers, which is what the user can get at best on this hardware.
type InfeasibleError struct {
	Target     string // "ttft" or "itl"
	TargetMs   float64
	BestTTFTMs float64
	BestITLMs  float64
}

func (e *InfeasibleError) Error() string {
	name := "TTFT"
	if e.Target == TargetITL {
		name = "ITL"
	}
	return fmt.Sprintf("queueing: infeasible SLO: target %s %.6g ms cannot be met even at light load "+
		"(best achievable: TTFT %.6g ms, ITL %.6g ms); relax the target or use faster hardware",
		name, e.TargetMs, e.BestTTFTMs, e.BestITLMs)
}

// Is makes errors.Is(err, ErrInfeasible) true.
func (e *InfeasibleError) Is(target error) bool { return target == ErrInfeasible }

// Names of the latency targets, as used in errors and sizing results.
const (
	TargetTTFT = "ttft"
	TargetITL  = "itl"
)

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkPositive returns a ParamError unless v is finite and > 0.
func checkPositive(param string, v float64) error {
	if !finite(v) || v <= 0 {
		return &ParamError{Param: param, Value: v, Reason: "must be a positive finite number"}
	}
	return nil
}

// checkNonNegative returns a ParamError unless v is finite and ≥ 0.
func checkNonNegative(param string, v float64) error {
	if !finite(v) || v < 0 {
		return &ParamError{Param: param, Value: v, Reason: "must be a finite number ≥ 0"}
	}
	return nil
}
