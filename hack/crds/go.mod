// Module crds pins the third-party CRDs that the samples in config/samples
// and config/prometheus are validated against (test/manifests): KEDA's
// ScaledObject and TriggerAuthentication, the Prometheus operator's
// ServiceMonitor, PodMonitor and PrometheusRule. `make crds` downloads
// these two modules (their source zips only, checked against go.sum) and
// copies the CRD files into bin/crds. The module has no packages: do not
// run `go mod tidy` here, it would drop the requirements.
module github.com/llm-d-incubation/wva/hack/crds

go 1.26.0

require (
	github.com/kedacore/keda/v2 v2.21.0
	github.com/prometheus-operator/prometheus-operator v0.85.0
)
