// Package manifests validates the shipped samples (config/samples and
// config/prometheus) on the real API server of internal/testenv, with the
// real CRDs of KEDA and of the Prometheus operator (`make crds` copies them
// from the modules pinned by hack/crds into bin/crds) beside WVA's own: each
// object must pass a server-side dry run with strict field validation and
// come back with nothing dropped, deliberately broken copies must be
// rejected, and the points the schemas cannot check (where KEDA's metricType
// goes, ignoreNullValues, fallback, behavior, the adapter rule) are checked
// by checkSamples (semantics_test.go).
package manifests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

var env *testenv.Env

// crdFiles are the files `make crds` puts into bin/crds.
var crdFiles = []string{
	"keda.sh_scaledobjects.yaml",
	"keda.sh_triggerauthentications.yaml",
	"monitoring.coreos.com_servicemonitors.yaml",
	"monitoring.coreos.com_podmonitors.yaml",
	"monitoring.coreos.com_prometheusrules.yaml",
}

// crdDir is bin/crds, or $WVA_CRDS.
func crdDir() string {
	if dir := os.Getenv("WVA_CRDS"); dir != "" {
		return dir
	}
	return filepath.Join(testenv.Root(), "bin", "crds")
}

// checkCRDFiles fails, naming `make crds`, when a CRD file is missing: as
// testenv does for the control plane's binaries, the suite fails rather
// than skips.
func checkCRDFiles(dir string) error {
	var errs []error
	for _, f := range crdFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			errs = append(errs, fmt.Errorf("manifests: %s not found in %s: run `make crds` (make test does it) to download KEDA's and the Prometheus operator's CRDs from the module proxy", f, dir))
		}
	}
	return errors.Join(errs...)
}

// TestMain fails before starting anything when a CRD file is missing.
func TestMain(m *testing.M) {
	dir := crdDir()
	if err := checkCRDFiles(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, &env, dir)
}
