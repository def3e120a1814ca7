package sim

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// A Knob is one autoscaler setting a sweep varies: its default grid, the
// field of the scenario's autoscalers it is written into, and the value
// that field's 0 stands for (the engine's default, where 0 is not a value
// of its own). The autoscaler it belongs to is its key's prefix.
type Knob struct {
	Grid  []float64
	Field func(*scenario.Autoscalers) *float64
	Unset float64
	// UnsetFrom, when set, is what the field's 0 stands for where it
	// depends on another setting (an alias); a 0 it returns means Unset.
	UnsetFrom func(*scenario.Autoscalers) float64
	Check     func(float64) error
}

// FromZero checks that a value lies between 0 and hi, each end open or
// closed.
func FromZero(hi float64, zeroOpen, hiOpen bool) func(float64) error {
	return func(v float64) error {
		ok := !math.IsNaN(v) && (v > 0 || !zeroOpen && v == 0) && (v < hi || !hiOpen && v == hi)
		if !ok {
			l, h := "[", "]"
			if zeroOpen {
				l = "("
			}
			if hiOpen {
				h = ")"
			}
			return fmt.Errorf("must be in %s0, %g%s, got %g", l, hi, h, v)
		}
		return nil
	}
}

// KnobAutoscaler is the autoscaler a knob's key belongs to.
func KnobAutoscaler(key string) string {
	name, _, _ := strings.Cut(key, ".")
	return name
}

// KnobOf is the knob of a key ("autoscaler.setting"), the zero Knob for an
// unknown key.
func KnobOf(key string) Knob { return knobs[key] }

// KnobKeys lists the settings a sweep can vary.
func KnobKeys() []string {
	out := make([]string, 0, len(knobs))
	for k := range knobs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseGrid reads "KEY=V1,V2,…" (one --grid flag).
func ParseGrid(s string) (string, []float64, error) {
	key, list, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	k, known := knobs[key]
	if !ok || !known {
		return "", nil, fmt.Errorf("%q: want KEY=V1,V2,… with KEY one of %s", s, strings.Join(KnobKeys(), ", "))
	}
	var vs []float64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %q is not a number", key, f)
		}
		if err := k.Check(v); err != nil {
			return "", nil, fmt.Errorf("%s: %w", key, err)
		}
		vs = append(vs, v)
	}
	if len(vs) > 50 {
		return "", nil, fmt.Errorf("%s: at most 50 values, got %d", key, len(vs))
	}
	return key, vs, nil
}

// KnobValue is the value a knob has in a (defaulted) configuration, as
// the sweep writes it.
func KnobValue(a scenario.Autoscalers, key string) float64 {
	k := knobs[key]
	v := *k.Field(&a)
	if v == 0 && k.UnsetFrom != nil {
		v = k.UnsetFrom(&a)
	}
	if v == 0 && k.Unset != 0 {
		return k.Unset
	}
	return v
}
