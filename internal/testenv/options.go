package testenv

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options changes how StartWith runs the control plane. The zero value is
// what Start does.
type Options struct {
	// CRDDirs are installed beside WVA's CRDs.
	CRDDirs []string
	// APIServerArgs are set on kube-apiserver's command line, replacing
	// envtest's value of the same flag: for example the front-proxy
	// (aggregation layer) flags --requestheader-client-ca-file and
	// --proxy-client-cert-file that test/e2e needs for an APIService.
	APIServerArgs map[string][]string
}

// configure applies o to the environment before it starts.
func (o Options) configure(e *envtest.Environment) {
	args := e.ControlPlane.GetAPIServer().Configure()
	for flag, values := range o.APIServerArgs {
		args.Set(strings.TrimPrefix(flag, "--"), values...)
	}
}
