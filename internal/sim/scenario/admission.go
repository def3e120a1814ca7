package scenario

import (
	"github.com/llm-d-incubation/wva/internal/admission"
)

// Admission configures the gateway's admission control: one of
// internal/admission's policies decides on every arriving request, on a
// snapshot of the model's ready replicas as a gateway sees them
// (docs/admission.md, "In the simulator"). Times are in ms here, as
// everywhere in a scenario; the package works in seconds.
type Admission struct {
	// Policy is always, token-bucket, slo-gated or predictive.
	Policy string `json:"policy"`
	// BudgetsMs are the predictive policy's TTFT budgets per criticality
	// (defaults 200, 500 and 300 ms: the seed's; sheddable's is tighter
	// than standard's so that it is shed first).
	BudgetsMs Budgets `json:"budgetsMs,omitempty"`
	// Headroom multiplies the budgets, in [0.5, 3] (default 1).
	Headroom float64 `json:"headroom,omitempty"`
	// StepTimeMs is the step time assumed for a replica that has not run
	// an iteration yet (default 7).
	StepTimeMs float64 `json:"stepTimeMs,omitempty"`
	// KVLimit, in (0, 1], skips replicas at that KV-cache utilisation for
	// non-critical requests (0: none).
	KVLimit float64 `json:"kvLimit,omitempty"`
	// Coefficients start the predictive TTFT model (defaults: the seed's
	// β0 = 6.91042 ms, β1 = 0.01767 ms per cache-miss token, one step per
	// request ahead).
	Coefficients Coefficients `json:"coefficients,omitempty"`
	// Calibrate learns the coefficients online from every admitted
	// request's observed TTFT (admission.Calibrator), starting from
	// Coefficients; the predictive policy uses the current fit.
	Calibrate bool `json:"calibrate,omitempty"`
	// Forgetting is the calibrator's λ, in [0.9, 1] (default 0.999).
	Forgetting float64 `json:"forgetting,omitempty"`
	// TokenBucket configures token-bucket (rate required).
	TokenBucket *TokenBucket `json:"tokenBucket,omitempty"`
	// SLOGated configures slo-gated (defaults: 10 and 5 waiting, on the
	// shortest queue).
	SLOGated *SLOGated `json:"sloGated,omitempty"`
	// Fairness, when set, wraps the policy with the fairness floor: each
	// prefix group gets at least Share of its arrivals admitted.
	Fairness *Fairness `json:"fairness,omitempty"`
}

// Budgets are TTFT budgets per criticality, in ms (0: the default).
type Budgets struct {
	Critical  float64 `json:"critical,omitempty"`
	Standard  float64 `json:"standard,omitempty"`
	Sheddable float64 `json:"sheddable,omitempty"`
}

// Coefficients of the predictive TTFT model Queue·ahead·step + β0 +
// β1·miss, in ms (0: the default).
type Coefficients struct {
	Beta0Ms float64 `json:"beta0Ms,omitempty"`
	Beta1Ms float64 `json:"beta1Ms,omitempty"` // per cache-miss prompt token
	Queue   float64 `json:"queue,omitempty"`   // steps per request ahead
}

// TokenBucket is admission.BucketConfig.
type TokenBucket struct {
	Rate  float64 `json:"rate"`            // requests/s
	Burst float64 `json:"burst,omitempty"` // requests (0: one second of rate)
}

// SLOGated is admission.GatedConfig.
type SLOGated struct {
	StandardThreshold  int    `json:"standardThreshold,omitempty"`
	SheddableThreshold int    `json:"sheddableThreshold,omitempty"`
	Fleet              string `json:"fleet,omitempty"` // min (default) or max
}

// Fairness is admission.FloorConfig.
type Fairness struct {
	Share         float64 `json:"share,omitempty"`         // default 0.05
	WindowSeconds float64 `json:"windowSeconds,omitempty"` // default 60
}

// Admission policies by name.
const (
	PolicyAlways      = "always"
	PolicyTokenBucket = "token-bucket"
	PolicySLOGated    = "slo-gated"
	PolicyPredictive  = "predictive"
)

// coefficients converts the model's coefficients to the package's
// seconds; a zero field keeps the package's default.
func (c Coefficients) coefficients() admission.Coefficients {
	return admission.Coefficients{Beta0: c.Beta0Ms / 1000, Beta1: c.Beta1Ms / 1000, Queue: c.Queue}
}

// predictiveConfig is the predictive policy's configuration in seconds.
func (a *Admission) predictiveConfig() admission.PredictiveConfig {
	return admission.PredictiveConfig{
		CriticalBudget: a.BudgetsMs.Critical / 1000, StandardBudget: a.BudgetsMs.Standard / 1000,
		SheddableBudget: a.BudgetsMs.Sheddable / 1000, Headroom: a.Headroom,
		Coefficients: a.Coefficients.coefficients(), StepTime: a.StepTimeMs / 1000, KVLimit: a.KVLimit,
	}
}

// CalibratorConfig starts the calibrator at the predictive policy's
// coefficients.
func (a *Admission) CalibratorConfig() admission.CalibratorConfig {
	return admission.CalibratorConfig{Initial: a.Coefficients.coefficients(), Forgetting: a.Forgetting}
}

// Build returns the policy the configuration names (behind the fairness
// floor when set) and, for predictive, the predictive policy itself.
func (a *Admission) Build() (admission.Policy, *admission.Predictive, error) {
	var (
		p    admission.Policy
		pred *admission.Predictive
		err  error
	)
	switch a.Policy {
	case PolicyAlways:
		p = admission.AlwaysAdmit{}
	case PolicyTokenBucket:
		var c admission.BucketConfig
		if a.TokenBucket != nil {
			c = admission.BucketConfig{Rate: a.TokenBucket.Rate, Burst: a.TokenBucket.Burst}
		}
		p, err = admission.NewTokenBucket(c)
	case PolicySLOGated:
		var c admission.GatedConfig
		if g := a.SLOGated; g != nil {
			c = admission.GatedConfig{StandardThreshold: g.StandardThreshold, SheddableThreshold: g.SheddableThreshold,
				Fleet: admission.FleetDepth(g.Fleet)}
		}
		p, err = admission.NewSLOGated(c)
	case PolicyPredictive:
		pred, err = admission.NewPredictive(a.predictiveConfig())
		p = pred
	default:
		panic("sim: unknown admission policy " + a.Policy) // Validate rejects it
	}
	if err != nil || a.Fairness == nil {
		return p, pred, err
	}
	p, err = admission.NewFloor(p, admission.FloorConfig{Share: a.Fairness.Share, WindowSeconds: a.Fairness.WindowSeconds})
	return p, pred, err
}

// AdmissionClass is the admission class of a workload class.
func (c Class) AdmissionClass() admission.Class {
	switch c.Criticality {
	case "critical":
		return admission.Critical
	case "sheddable":
		return admission.Sheddable
	case "standard":
		return admission.Standard
	}
	if c.Sheddable {
		return admission.Sheddable
	}
	return admission.Standard
}

// StepTimeSeconds is the step time assumed for a replica that reports
// none.
func (a *Admission) StepTimeSeconds() float64 {
	if a.StepTimeMs > 0 {
		return a.StepTimeMs / 1000
	}
	return admission.DefaultStepTime
}
