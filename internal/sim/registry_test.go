package sim_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestRegistryNames: the registered names in order, and the defaults.
func TestRegistryNames(t *testing.T) {
	if got := sim.AutoscalerNames(); !slices.Equal(got, []string{"wva", "hpa", "keda", "keda-queue", "keda-saturation", "keda-tokens", "keda-slo", "clairvoyant", "oracle", "static:N"}) {
		t.Errorf("names %v", got)
	}
	if got := sim.DefaultAutoscalers(); !slices.Equal(got, []string{"wva", "hpa", "clairvoyant"}) {
		t.Errorf("defaults %v", got)
	}
	if sim.BaselineOf("oracle") == nil || !sim.Instant("oracle") || sim.Instant("clairvoyant") || !sim.BaselineOf("clairvoyant").Bound {
		t.Error("oracle is the instant bound; clairvoyant a bound that is not instant")
	}
}

// TestRegistryBuilds: every registered autoscaler builds under its name
// for a shipped scenario, and its runs carry that name.
func TestRegistryBuilds(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 0)
	for _, name := range sim.ExampleNames() {
		a, err := sim.NewAutoscaler(name, &sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.Name() != name || !(a.Interval() > 0) {
			t.Errorf("%s: built %q with interval %v", name, a.Name(), a.Interval())
		}
	}
}

// TestRegistryKnobs: every knob is under its autoscaler's prefix, with a
// valid default grid.
func TestRegistryKnobs(t *testing.T) {
	for key, k := range sim.AllKnobs() {
		b := sim.BaselineOf(sim.KnobAutoscaler(key))
		if b == nil || b.Knobs[strings.TrimPrefix(key, b.Name+".")].Field == nil {
			t.Errorf("knob %s belongs to no registered autoscaler", key)
		}
		for _, v := range k.Grid {
			if err := k.Check(v); err != nil {
				t.Errorf("knob %s: default grid value %v: %v", key, v, err)
			}
		}
	}
}

// TestRegistryLookup: names resolve with their parameter in canonical
// form; an unknown name lists the known ones.
func TestRegistryLookup(t *testing.T) {
	sc := simtest.Builtin(t, "staircase", 0)
	if b, arg, err := sim.Lookup("static:007"); err != nil || b.Name != "static" || arg != "7" {
		t.Errorf("static:007: %v %q %v", b, arg, err)
	}
	for _, bad := range []string{"static", "wva:2", "turbo", "static:-1"} {
		if _, err := sim.NewAutoscaler(bad, &sc); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := sim.NewAutoscaler("turbo", &sc); err == nil || !strings.Contains(err.Error(), "want wva, hpa, keda, keda-queue, keda-saturation, keda-tokens, keda-slo, clairvoyant, oracle or static:N") {
		t.Errorf("unknown: %v", err)
	}
}
