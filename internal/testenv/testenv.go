// Package testenv starts a real kube-apiserver and etcd for tests, from the
// binaries `make k8s` builds into bin/k8s (hack/k8s builds them from the Go
// module proxy; nothing is downloaded at test time). Tests that need a
// cluster call Start once per package, from TestMain.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	// Root is the repository root.
	Root string
}

// Root returns the repository root (the folder of go.mod above this file).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Start runs kube-apiserver and etcd with WVA's CRDs installed, and those
// of crdDirs (envtest waits until every one is served). It fails
// with a clear message when the binaries are missing: `make test` builds
// them (make k8s); `go test` alone does not.
func Start(crdDirs ...string) (*Env, error) {
	return StartWith(Options{CRDDirs: crdDirs})
}

// StartWith is Start with options.
func StartWith(o Options) (*Env, error) {
	root := Root()
	assets := filepath.Join(root, "bin", "k8s")
	if dir := os.Getenv("WVA_K8S_ASSETS"); dir != "" {
		assets = dir
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("testenv: %s not found in %s: run `make k8s` (make test does it) to build the real control plane from the module proxy", b, assets)
		}
	}
	if err := wvav1.AddToScheme(scheme.Scheme); err != nil {
		return nil, err
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        append([]string{filepath.Join(root, "config", "crd", "bases")}, o.CRDDirs...),
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	o.configure(e)
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("testenv: starting the control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	return &Env{env: e, Config: cfg, Client: c, Root: root}, nil
}

// Stop shuts the control plane down.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return errors.New("testenv: not started")
	}
	return e.env.Stop()
}

// VariantAutoscalingGVR is the resource of the CRD.
var VariantAutoscalingGVR = schema.GroupVersionResource{Group: "llmd.ai", Version: "v1alpha1", Resource: "variantautoscalings"}

// Main starts the control plane (with the CRDs of crdDirs beside WVA's),
// runs the package's tests with it in *env, stops it and exits: the whole
// of a TestMain.
func Main(m interface{ Run() int }, env **Env, crdDirs ...string) {
	e, err := Start(crdDirs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping:", err)
	}
	os.Exit(code)
}
