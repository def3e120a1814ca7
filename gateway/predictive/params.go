package predictive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// Parameter defaults.
const (
	// DefaultCriticalPriority: an InferenceObjective priority of 1 or more is
	// critical. Priority 0, the endpoint picker's default, is standard, and
	// a negative one sheddable (the endpoint picker's own rule).
	DefaultCriticalPriority = 1
	// DefaultCharsPerToken converts a prompt's characters to tokens when the
	// endpoint picker did not tokenize it: the endpoint picker's own estimate
	// (the approximate prefix producer's averageCharactersPerToken).
	DefaultCharsPerToken = 4
	// DefaultStepWeight is the weight of the newest inter-token latency in an
	// endpoint's learned step time (an exponentially weighted mean).
	DefaultStepWeight = 0.2
	// DefaultGroupHeader names the request's prefix group for the fairness
	// floor: the endpoint picker's flow-control fairness ID.
	DefaultGroupHeader = "x-gateway-inference-fairness-id"
	// maxInFlight bounds the requests the plugin follows between dispatch and
	// the end of their response; beyond it new requests are not followed.
	maxInFlight = 1 << 16
)

// Parameters are the plugin's JSON parameters (the parameters of its entry
// in the EndpointPickerConfig). Every zero value means its default. The
// nested objects are internal/admission's configurations; their keys are
// its field names in lowerCamelCase, as its validation errors spell them
// (predictive.headroom, calibrator.forgetting, fairness.share). Times are
// in seconds, as in internal/admission.
type Parameters struct {
	// Predictive: the budgets, headroom, TTFT coefficients, default step
	// time and KV limit of the predictive policy.
	Predictive admission.PredictiveConfig `json:"predictive"`
	// Calibrate turns on the online calibration of the TTFT coefficients
	// from the TTFT of streamed responses; Calibrator configures it (its
	// initial coefficients default to predictive.coefficients).
	Calibrate  bool                       `json:"calibrate"`
	Calibrator admission.CalibratorConfig `json:"calibrator"`
	// Fairness, when present, wraps the policy with the fairness floor: the
	// prefix group of a request is the hash of its GroupHeader.
	Fairness    *admission.FloorConfig `json:"fairness"`
	GroupHeader string                 `json:"groupHeader"`
	// CriticalPriority is the lowest InferenceObjective priority that is
	// critical (never rejected); 0 means DefaultCriticalPriority.
	CriticalPriority int `json:"criticalPriority"`
	// PriorityScheduling says that the model servers schedule by priority
	// (vLLM --scheduling-policy priority, with the request's priority in its
	// body), so that a request waits only behind the waiting requests of its
	// priority or higher. Off, every waiting request counts as ahead.
	PriorityScheduling bool `json:"priorityScheduling"`
	// CharsPerToken converts prompt characters to tokens when the request
	// was not tokenized; 0 means DefaultCharsPerToken.
	CharsPerToken float64 `json:"charsPerToken"`
	// StepWeight, in (0, 1], is the weight of the newest observed inter-token
	// latency in an endpoint's step time; 0 means DefaultStepWeight.
	StepWeight float64 `json:"stepWeight"`
}

// ParseParameters decodes raw (empty means every default), rejecting
// unknown keys, and validates the result.
func ParseParameters(raw json.RawMessage) (Parameters, error) {
	var p Parameters
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return Parameters{}, fmt.Errorf("predictive: decoding parameters: %w", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return Parameters{}, errors.New("predictive: decoding parameters: trailing data after the object")
		}
	}
	return p, p.Validate()
}

// Validate reports every problem of the parameters, joined.
func (p Parameters) Validate() error {
	errs := []error{p.Predictive.Validate(), p.calibratorConfig().Validate()}
	if p.Fairness != nil {
		errs = append(errs, p.Fairness.Validate())
	}
	if p.CriticalPriority < 0 {
		errs = append(errs, fmt.Errorf("predictive: criticalPriority: must be ≥ 0 (0 means the default %d), got %d",
			DefaultCriticalPriority, p.CriticalPriority))
	}
	if !(p.CharsPerToken >= 0 && p.CharsPerToken <= 1e6) {
		errs = append(errs, fmt.Errorf("predictive: charsPerToken: must be in (0, 1e6] (0 means the default %d), got %v",
			DefaultCharsPerToken, p.CharsPerToken))
	}
	if !(p.StepWeight >= 0 && p.StepWeight <= 1) {
		errs = append(errs, fmt.Errorf("predictive: stepWeight: must be in (0, 1] (0 means the default %v), got %v",
			DefaultStepWeight, p.StepWeight))
	}
	return errors.Join(errs...)
}

// calibratorConfig is Calibrator, starting from the policy's coefficients
// unless it names its own.
func (p Parameters) calibratorConfig() admission.CalibratorConfig {
	c := p.Calibrator
	if c.Initial == (admission.Coefficients{}) {
		c.Initial = p.Predictive.Coefficients
	}
	return c
}

func or[T int | float64](x, def T) T {
	if x == 0 {
		return def
	}
	return x
}
