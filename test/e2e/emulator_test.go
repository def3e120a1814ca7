//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// EmulatorOptions start `wva emulate`.
type EmulatorOptions struct {
	// Spec is the fleet's spec file (examples/emulate/fleet.yaml's format).
	Spec string
	// TimeScale is model seconds per wall second (default 1).
	TimeScale float64
	// Args are added to the command line.
	Args []string
}

// SDFile is the Prometheus file-SD file the emulator keeps: give it to
// StartPrometheus (PrometheusConfig.FileSD) before starting the emulator.
func (h *Harness) SDFile() string { return filepath.Join(h.Artifacts, "emulate", "targets.json") }

// RequireEmulator skips the test when the wva binary has no emulate
// subcommand.
func (h *Harness) RequireEmulator(t *testing.T) {
	t.Helper()
	if !h.HasSubcommand("emulate") {
		t.Skip("the wva binary has no `emulate` subcommand (`wva emulate --help` failed): the scenario needs the emulated vLLM fleet")
	}
}

// StartEmulator runs `wva emulate` with the harness's kubeconfig, writing
// SDFile, and waits (30 s at most) until it has written it.
func (h *Harness) StartEmulator(t *testing.T, o EmulatorOptions) *Process {
	t.Helper()
	h.RequireEmulator(t)
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if err := os.MkdirAll(filepath.Dir(h.SDFile()), 0o750); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"emulate", "--kubeconfig", h.Kubeconfig, "--spec", o.Spec, "--sd-file", h.SDFile(),
		"--time-scale", strconv.FormatFloat(o.TimeScale, 'g', -1, 64), "--progress-every", "5s"}, o.Args...)
	p := h.StartProcess("emulate", h.Binary(), nil, args...)
	h.Note("wva emulate: log %s; file-SD %s", p.Log, h.SDFile())
	h.Eventually("the emulator writes "+h.SDFile(), 30*time.Second, func(context.Context) (bool, string) {
		if exited, err := p.Exited(); exited {
			t.Fatalf("wva emulate exited: %v (log: %s)", err, p.Log)
		}
		_, err := os.Stat(h.SDFile())
		return err == nil, fmt.Sprint(err)
	})
	return p
}
