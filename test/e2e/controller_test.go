//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// ControllerOptions start one controller process.
type ControllerOptions struct {
	// Name names its log (<artifacts>/<Name>.log); default "controller".
	Name string
	// PrometheusURL is where it reads vLLM metrics.
	PrometheusURL string
	// Interval is the optimisation interval (--interval; the main
	// ConfigMap's GLOBAL_OPT_INTERVAL overrides it). Default 5s.
	Interval time.Duration
	// MetricsAddr is --metrics-bind-address (default a free loopback
	// port): pick it first with FreeAddr when Prometheus must scrape it.
	MetricsAddr string
	// Args are added to the command line.
	Args []string
}

// Controller is a running `wva controller`.
type Controller struct {
	*Process
	// MetricsAddr serves /metrics over HTTPS (authn/authz by the API
	// server); HealthAddr /healthz and /readyz over HTTP.
	MetricsAddr, HealthAddr string
}

// LeaseName is the controller's leader Lease (--leader-election-id).
const LeaseName = "wva.llmd.ai"

// StartController runs the wva binary's controller out of cluster with
// the harness's kubeconfig, leader election on, in ControllerNamespace,
// and waits (60 s at most) until it answers /readyz.
func (h *Harness) StartController(o ControllerOptions) *Controller {
	h.t.Helper()
	if o.Name == "" {
		o.Name = "controller"
	}
	if o.Interval == 0 {
		o.Interval = 5 * time.Second
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = h.FreeAddr()
	}
	c := &Controller{MetricsAddr: o.MetricsAddr, HealthAddr: h.FreeAddr()}
	args := append([]string{"controller", "--kubeconfig", h.Kubeconfig, "--namespace", ControllerNamespace,
		"--leader-elect=true", "--metrics-bind-address", c.MetricsAddr, "--health-probe-bind-address", c.HealthAddr,
		"--prometheus-url", o.PrometheusURL, "--interval", o.Interval.String(), "--log-level", "debug"}, o.Args...)
	c.Process = h.StartProcess(o.Name, h.Binary(), nil, args...)
	h.Note("%s: log %s; metrics (with a wva-metrics-reader token file, above): curl -k -H \"Authorization: Bearer $(cat TOKEN_FILE)\" https://%s/metrics",
		o.Name, c.Log, c.MetricsAddr)
	h.Eventually(o.Name+" ready", 60*time.Second, func(ctx context.Context) (bool, string) {
		if exited, err := c.Exited(); exited {
			h.t.Fatalf("%s exited: %v (log: %s)", o.Name, err, c.Log)
		}
		code, body, err := httpGet(ctx, "http://"+c.HealthAddr+"/readyz", "")
		return err == nil && code == http.StatusOK, fmt.Sprintf("/readyz: %d %v %.200s", code, err, body)
	})
	return c
}

// LeaderHolder returns the holder of the controller's Lease ("" when none).
func (h *Harness) LeaderHolder(ctx context.Context) (string, error) {
	l := &coordinationv1.Lease{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: ControllerNamespace, Name: LeaseName}, l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// FreeAddr is a loopback host:port free now.
func (h *Harness) FreeAddr() string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(h.t)) }

// FreePort is a loopback port free now.
func (h *Harness) FreePort() int { return testenv.FreePort(h.t) }
