//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// KCMOptions start kube-controller-manager.
type KCMOptions struct {
	// SyncPeriod is --horizontal-pod-autoscaler-sync-period (default 2s,
	// the upstream default is 15s).
	SyncPeriod time.Duration
}

// kcmBinary is bin/k8s/kube-controller-manager (make k8s-kcm), or the one
// in $WVA_K8S_ASSETS.
func (h *Harness) kcmBinary() string {
	dir := filepath.Join(h.Root, "bin", "k8s")
	if d := os.Getenv("WVA_K8S_ASSETS"); d != "" {
		dir = d
	}
	return filepath.Join(dir, "kube-controller-manager")
}

// HasKCM says whether kube-controller-manager is built.
func (h *Harness) HasKCM() bool {
	_, err := os.Stat(h.kcmBinary())
	return err == nil
}

// StartKCM runs the real kube-controller-manager with only its HPA
// controller (horizontal-pod-autoscaler-controller): the Deployment and
// ReplicaSet controllers stay off because `wva emulate` plays them. It
// runs as the admin of the harness's kubeconfig
// (--use-service-account-credentials=false: no token controller needed),
// without leader election and without its own HTTPS server. It fails the
// test when the binary is missing: check HasKCM first.
func (h *Harness) StartKCM(o KCMOptions) *Process {
	h.t.Helper()
	if !h.HasKCM() {
		h.t.Fatalf("%s not found: run `make k8s-kcm`", h.kcmBinary())
	}
	if o.SyncPeriod == 0 {
		o.SyncPeriod = 2 * time.Second
	}
	p := h.StartProcess("kube-controller-manager", h.kcmBinary(), nil,
		"--kubeconfig", h.Kubeconfig,
		"--controllers", "horizontal-pod-autoscaler-controller",
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--secure-port=0",
		"--horizontal-pod-autoscaler-sync-period", o.SyncPeriod.String(),
		"--v=2")
	h.Note("kube-controller-manager (HPA controller only): log %s", p.Log)
	// No HTTP server to probe: the process staying up for a moment is the
	// readiness signal; the HPA's conditions say the rest.
	h.Eventually("kube-controller-manager running", 10*time.Second, func(context.Context) (bool, string) {
		if exited, err := p.Exited(); exited {
			h.t.Fatalf("kube-controller-manager exited: %v (log: %s)", err, p.Log)
		}
		st, err := os.Stat(p.Log)
		return err == nil && st.Size() > 0, fmt.Sprintf("log %s empty", p.Log)
	})
	return p
}
