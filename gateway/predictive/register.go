package predictive

import fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"

// Register adds both plugin types to the endpoint picker's plugin registry.
// Call it before the runner loads its configuration.
func Register() {
	fwkplugin.Register(FilterType, FilterFactory)
	fwkplugin.Register(AdmitterType, AdmitterFactory)
}
