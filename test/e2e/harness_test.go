//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// Harness is one scenario's world: a fresh control plane, the artifacts
// folder its components log into, and the components it started, all
// stopped when the test ends.
type Harness struct {
	t testing.TB
	// Artifacts holds every component's log, the kubeconfig, Prometheus's
	// config and data, and the failure dump.
	Artifacts string
	// Root is the repository root.
	Root string
	// Env is the control plane (etcd and kube-apiserver of bin/k8s).
	Env *testenv.Env
	// Client is an admin client; Clientset the same as client-go.
	Client    client.Client
	Clientset kubernetes.Interface
	// Kubeconfig is the admin kubeconfig file every component uses.
	Kubeconfig string
	// FrontProxy holds the aggregation layer's certificates.
	FrontProxy FrontProxy

	prom   *Prometheus
	dumps  []func(context.Context) string
	dumped bool
	held   bool
	// procs are the processes started, stopEnv stops the control plane
	// once: both for the deadline watchdog.
	mu      sync.Mutex
	procs   []*Process
	stopEnv func()
}

var (
	buildOnce sync.Once
	wvaBin    string
	buildErr  error
)

// artifactsRoot is $E2E_ARTIFACTS, or bin/e2e-artifacts/<timestamp>; one
// per test binary run.
var artifactsRoot = sync.OnceValue(func() string {
	if dir := os.Getenv("E2E_ARTIFACTS"); dir != "" {
		return dir
	}
	return filepath.Join(testenv.Root(), "bin", "e2e-artifacts", time.Now().UTC().Format("20060102T150405Z"))
})

// New starts a control plane for the test (with the aggregation layer
// configured) and writes its kubeconfig. Everything stops with the test;
// on failure the harness dumps what it knows (VariantAutoscalings,
// Deployments, events, HPAs, last queries) into the log and the artifacts.
func New(t *testing.T) *Harness {
	t.Helper()
	h := &Harness{t: t, Root: testenv.Root()}
	h.Artifacts = filepath.Join(artifactsRoot(), t.Name())
	if err := os.MkdirAll(h.Artifacts, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifacts in %s", h.Artifacts)
	h.FrontProxy = newFrontProxy(t, filepath.Join(h.Artifacts, "pki"))
	start := time.Now()
	env, err := testenv.StartWith(testenv.Options{APIServerArgs: h.FrontProxy.apiServerArgs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane up in %s at %s", time.Since(start).Round(time.Millisecond), env.Config.Host)
	h.stopEnv = sync.OnceFunc(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	t.Cleanup(h.stopEnv)
	h.watchDeadline(t)
	h.Env, h.Client = env, env.Client
	if h.Clientset, err = kubernetes.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	h.Kubeconfig = filepath.Join(h.Artifacts, "kubeconfig")
	writeKubeconfig(t, env.Config, h.Kubeconfig)
	h.Note("kubectl --kubeconfig %s get va,deploy,pods,hpa -A", h.Kubeconfig)
	// Registered after the control plane's cleanup, so it runs first.
	t.Cleanup(h.beforeStop)
	return h
}

// deadlineMargin is how long before `go test -timeout` panics the
// watchdog stops every component: a panicking test binary runs no
// cleanups, and envtest's etcd and kube-apiserver would outlive it.
const deadlineMargin = 20 * time.Second

// watchDeadline stops every component deadlineMargin before the test
// binary's deadline; the test then fails on its own.
func (h *Harness) watchDeadline(t *testing.T) {
	d, ok := t.Deadline()
	if !ok {
		return
	}
	timer := time.AfterFunc(time.Until(d)-deadlineMargin, func() {
		t.Errorf("the test binary's -timeout is %s away: stopping every component", deadlineMargin)
		h.mu.Lock()
		procs := slices.Clone(h.procs)
		h.mu.Unlock()
		for _, p := range procs {
			p.Kill()
		}
		h.stopEnv()
	})
	t.Cleanup(func() { timer.Stop() })
}

// Binary builds cmd/wva once per test run into <artifacts>/bin/wva and
// returns its path.
func (h *Harness) Binary() string {
	h.t.Helper()
	buildOnce.Do(func() {
		wvaBin = filepath.Join(artifactsRoot(), "bin", "wva")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", wvaBin, "./cmd/wva")
		cmd.Dir = testenv.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/wva: %w\n%s", err, out)
			return
		}
		h.t.Logf("built %s in %s", wvaBin, time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		h.t.Fatal(buildErr)
	}
	return wvaBin
}

// HasSubcommand says whether the wva binary has the subcommand (`wva
// <name> --help` succeeds).
func (h *Harness) HasSubcommand(name string) bool {
	out, err := exec.Command(h.Binary(), name, "--help").CombinedOutput()
	return err == nil && !strings.Contains(string(out), "unknown command")
}

// Ctx is a context that ends with the test.
func (h *Harness) Ctx() context.Context { return h.t.Context() }

// OnFailure adds a section to the failure dump: f returns text describing
// the state it knows of.
func (h *Harness) OnFailure(f func(context.Context) string) { h.dumps = append(h.dumps, f) }

// Eventually polls cond every interval until it holds or timeout passes,
// then fails with what, the last detail cond gave, and how long it waited.
// It returns how long the condition took.
func (h *Harness) Eventually(what string, timeout time.Duration, cond func(context.Context) (bool, string)) time.Duration {
	h.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(h.Ctx(), timeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	detail := ""
	for {
		ok, d := cond(ctx)
		if ok {
			h.t.Logf("%s: after %s", what, time.Since(start).Round(time.Millisecond))
			return time.Since(start)
		}
		detail = d
		select {
		case <-ctx.Done():
			h.t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, detail)
		case <-tick.C:
		}
	}
}

// Note appends a line to <artifacts>/world.txt: how to reach what runs
// (URLs, kubectl and curl commands), for a person watching the loop.
func (h *Harness) Note(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(h.Artifacts, "world.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		h.t.Logf("world.txt: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// beforeStop runs once, before the first component stops: the failure
// dump, then the hold of $E2E_HOLD.
func (h *Harness) beforeStop() {
	h.dumpOnFailure()
	h.hold()
}

// hold keeps every component running for $E2E_HOLD (a duration, say
// 10m) after the scenario, so that a person can look at the loop with
// the commands of world.txt; it ends early at the test binary's deadline
// (less deadlineMargin).
func (h *Harness) hold() {
	d, err := time.ParseDuration(os.Getenv("E2E_HOLD"))
	if err != nil || d <= 0 || h.held {
		return
	}
	h.held = true
	if dl, ok := h.t.(*testing.T).Deadline(); ok {
		d = min(d, time.Until(dl)-2*deadlineMargin)
	}
	world, _ := os.ReadFile(filepath.Join(h.Artifacts, "world.txt"))
	h.t.Logf("E2E_HOLD: everything stays up for %s:\n%s", d.Round(time.Second), world)
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}
