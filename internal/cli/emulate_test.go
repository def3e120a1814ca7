package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestEmulateHelp: every flag is explained, and model time is said.
func TestEmulateHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"emulate", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"--spec", "--kubeconfig", "--namespace", "--selector", "--time-scale", "--latency-clock", "--vllm-metrics", "--sd-file",
		"--tick", "--resync", "--progress-every", "--keep-pods", "--log-format", "model seconds", "pod-deletion-cost"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("help lacks %q", s)
		}
	}
}

// TestEmulateBadFlags: bad flags and specs are refused before any
// connection, each named.
func TestEmulateBadFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no spec":   {[]string{"emulate"}, "--spec: required"},
		"bad scale": {[]string{"emulate", "--spec", "../../examples/emulate/fleet.yaml", "--time-scale", "-1"}, "--time-scale"},
		"bad clock": {[]string{"emulate", "--spec", "../../examples/emulate/fleet.yaml", "--latency-clock", "gpu"}, "--latency-clock"},
		"bad metric set": {[]string{"emulate", "--spec", "../../examples/emulate/fleet.yaml", "--vllm-metrics", "0.4"},
			`--vllm-metrics: unknown vLLM metric set "0.4": want current or legacy`},
		"bad selector":  {[]string{"emulate", "--spec", "../../examples/emulate/fleet.yaml", "--selector", "a=(b"}, "--selector"},
		"missing spec":  {[]string{"emulate", "--spec", "nonexistent.yaml"}, "--spec: open nonexistent.yaml"},
		"endless spec":  {[]string{"emulate", "--spec", "/dev/zero"}, "--spec: /dev/zero is larger than 16 MiB"},
		"bad spec":      {[]string{"emulate", "--spec", "../../examples/scenarios/staircase.yaml"}, "unknown field"},
		"no kubeconfig": {[]string{"emulate", "--spec", "../../examples/emulate/fleet.yaml", "--kubeconfig", "/nonexistent"}, "--kubeconfig /nonexistent"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := Run(c.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, errb.String(), c.want)
			}
		})
	}
}

// TestEmulateLatencyClockDefault: latencies are per wall second unless
// asked otherwise (the consistent view at a time scale above 1), and the
// start-up hint tells what a time scale asks of the SLOs.
func TestEmulateLatencyClockDefault(t *testing.T) {
	cmd := newEmulateCommand()
	if got := cmd.Flags().Lookup("vllm-metrics").DefValue; got != "current" {
		t.Errorf("--vllm-metrics defaults to %q, want current", got)
	}
	if got := cmd.Flags().Lookup("latency-clock").DefValue; got != "wall" {
		t.Errorf("--latency-clock defaults to %q, want wall", got)
	}
	if h := timeScaleHint(1, "wall"); h != "" {
		t.Errorf("hint at real time: %q", h)
	}
	if h := timeScaleHint(10, "wall"); !strings.Contains(h, "divide the autoscaler's SLO targets (TTFT, ITL) by 10") {
		t.Errorf("wall hint: %q", h)
	}
	if h := timeScaleHint(10, "model"); !strings.Contains(h, "over-provisions") {
		t.Errorf("model hint: %q", h)
	}
}
