package predictive

import (
	"context"
	"encoding/json"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	logutil "sigs.k8s.io/gateway-api-inference-extension/pkg/common/observability/logging"
	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/requestcontrol"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"
	attrprefix "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/attribute/prefix"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// FilterType is the filter's plugin type in the EndpointPickerConfig.
const FilterType = "wva-predictive-filter"

var (
	_ fwksched.Filter             = (*Filter)(nil)
	_ requestcontrol.PreRequest   = (*Filter)(nil)
	_ requestcontrol.ResponseBody = (*Filter)(nil)
	_ fwkplugin.ConsumerPlugin    = (*Filter)(nil)
)

// Filter runs the predictive policy as a scheduling filter. A request the
// policy rejects loses every endpoint, so the scheduling profile fails and
// the endpoint picker answers 429 (ResourceExhausted, "failed to find
// target endpoint"). An admitted request keeps the endpoints whose TTFT
// estimate is within its budget (and, for a non-critical request, whose KV
// utilisation is below the policy's KV limit), or every endpoint when none
// is (a critical request, or one the fairness floor admitted).
type Filter struct {
	typedName fwkplugin.TypedName
	*engine
}

// NewFilter returns the filter with the given parameters.
func NewFilter(name string, p Parameters) (*Filter, error) {
	e, err := newEngine(p, time.Now) //nolint:forbidigo // the plugin is the edge: its clock is the wall clock
	if err != nil {
		return nil, err
	}
	return &Filter{typedName: fwkplugin.TypedName{Type: FilterType, Name: name}, engine: e}, nil
}

// FilterFactory is the filter's fwkplugin.FactoryFunc.
func FilterFactory(name string, raw json.RawMessage, _ fwkplugin.Handle) (fwkplugin.Plugin, error) {
	p, err := ParseParameters(raw)
	if err != nil {
		return nil, err
	}
	return NewFilter(name, p)
}

// TypedName returns the plugin's type and name.
func (f *Filter) TypedName() fwkplugin.TypedName { return f.typedName }

// Consumes declares the prefix-cache match the approximate prefix producer
// puts on each endpoint.
func (f *Filter) Consumes() map[string]any { return consumes() }

// Filter keeps the endpoints where the request meets its budget, none when
// the policy rejects it.
func (f *Filter) Filter(ctx context.Context, _ *fwksched.CycleState, req *fwksched.LLMRequest, eps []fwksched.Endpoint) []fwksched.Endpoint {
	if req == nil || len(eps) == 0 {
		return eps
	}
	kept := make([]fwksched.Endpoint, 0, len(eps))
	d := f.decide(req, eps, func(i int) { kept = append(kept, eps[i]) })
	logDecision(ctx, f.typedName, req, d)
	switch {
	case !d.Admit:
		return []fwksched.Endpoint{}
	case len(kept) == 0:
		return eps
	}
	return kept
}

func consumes() map[string]any {
	return map[string]any{attrprefix.PrefixCacheMatchInfoKey: attrprefix.PrefixCacheMatchInfo{}}
}

// logDecision logs the decision at the endpoint picker's debug level.
func logDecision(ctx context.Context, name fwkplugin.TypedName, req *fwksched.LLMRequest, d admission.Decision) {
	if logger := log.FromContext(ctx).V(logutil.DEBUG); logger.Enabled() {
		logger.Info("WVA predictive admission", "plugin", name, "requestID", req.RequestId,
			"admit", d.Admit, "reason", d.Reason.String(), "decision", d.String())
	}
}
