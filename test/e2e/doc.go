// Package e2e is the end-to-end suite (issue 16): the controller binary,
// a real kube-apiserver and etcd (bin/k8s), Debian's Prometheus, the real
// HPA controller (kube-controller-manager) and, when it exists, `wva
// emulate`, each run as a process on this machine. The package is
// test-only: the harness (Harness, New, Start*) and the scenarios live in
// _test.go files that build only with the e2e tag, so `make e2e` runs
// them and `go test ./...` does not (docs/e2e.md).
package e2e
