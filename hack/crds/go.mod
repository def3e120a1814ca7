// Module crds pins the third-party CRDs that the samples in config/samples
// and config/prometheus are validated against (test/manifests): KEDA's
// ScaledObject and TriggerAuthentication, the Prometheus operator's
// ServiceMonitor, PodMonitor and PrometheusRule; LeaderWorkerSet (the
// controller's scalable targets, internal/controller; v0.9.0, as the module
// proxy refuses v0.10.0's zip). `make crds` downloads
// these modules (their source zips only, checked against go.sum) and
// copies the CRD files into bin/crds. The module has no packages: do not
// run `go mod tidy` here, it would drop the requirements.
module github.com/llm-d-incubation/wva/hack/crds

go 1.26.0

require (
	github.com/kedacore/keda/v2 v2.21.0
	github.com/prometheus-operator/prometheus-operator v0.85.0
	sigs.k8s.io/lws v0.9.0
)
