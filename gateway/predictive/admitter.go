package predictive

import (
	"context"
	"encoding/json"
	"time"

	errcommon "sigs.k8s.io/gateway-api-inference-extension/pkg/common/error"
	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/requestcontrol"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"
)

// AdmitterType is the admission plugin's type in the EndpointPickerConfig.
const AdmitterType = "wva-predictive-admitter"

var (
	_ requestcontrol.AdmissionPlugin = (*Admitter)(nil)
	_ requestcontrol.PreRequest      = (*Admitter)(nil)
	_ requestcontrol.ResponseBody    = (*Admitter)(nil)
	_ fwkplugin.ConsumerPlugin       = (*Admitter)(nil)
)

// Admitter runs the predictive policy at the endpoint picker's admission
// extension point (AdmitRequest), once per request, before scheduling. It
// rejects with a ResourceExhausted error that names the decision; the
// endpoint picker v1.5.0 logs that error but answers every admission
// plugin's rejection with 500 ("request cannot be admitted"), so the
// Filter, whose rejection is a 429, is the one to use with that version.
type Admitter struct {
	typedName fwkplugin.TypedName
	*engine
}

// NewAdmitter returns the admission plugin with the given parameters.
func NewAdmitter(name string, p Parameters) (*Admitter, error) {
	e, err := newEngine(p, time.Now) //nolint:forbidigo // the plugin is the edge: its clock is the wall clock
	if err != nil {
		return nil, err
	}
	return &Admitter{typedName: fwkplugin.TypedName{Type: AdmitterType, Name: name}, engine: e}, nil
}

// AdmitterFactory is the admission plugin's fwkplugin.FactoryFunc.
func AdmitterFactory(name string, raw json.RawMessage, _ fwkplugin.Handle) (fwkplugin.Plugin, error) {
	p, err := ParseParameters(raw)
	if err != nil {
		return nil, err
	}
	return NewAdmitter(name, p)
}

// TypedName returns the plugin's type and name.
func (a *Admitter) TypedName() fwkplugin.TypedName { return a.typedName }

// Consumes declares the prefix-cache match the approximate prefix producer
// puts on each endpoint.
func (a *Admitter) Consumes() map[string]any { return consumes() }

// AdmitRequest returns nil when the policy admits the request, else an
// errcommon.Error with code ResourceExhausted (HTTP 429 wherever the
// endpoint picker passes it on) whose message is the decision.
func (a *Admitter) AdmitRequest(ctx context.Context, req *fwksched.LLMRequest, eps []fwksched.Endpoint) error {
	if req == nil {
		return nil
	}
	d := a.decide(req, eps, nil)
	logDecision(ctx, a.typedName, req, d)
	if d.Admit {
		return nil
	}
	return errcommon.Error{Code: errcommon.ResourceExhausted, Msg: d.String()}
}
