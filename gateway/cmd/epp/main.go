// Command epp is the Gateway API Inference Extension's endpoint picker
// (v1.5.0) with WVA's predictive admission plugins registered
// (wva-predictive-filter, wva-predictive-admitter). Its flags and
// configuration are the endpoint picker's; see docs/gateway.md.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/gateway-api-inference-extension/cmd/epp/runner"

	"github.com/llm-d-incubation/wva/gateway/predictive"
)

func main() {
	predictive.Register()
	if err := runner.NewRunner().WithExecutableName("wva-epp").Run(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
