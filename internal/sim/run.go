package sim

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ParseScenario reads a scenario (YAML or JSON), rejecting unknown fields,
// and validates it.
func ParseScenario(data []byte) (Scenario, error) {
	var sc Scenario
	if err := yaml.UnmarshalStrict(data, &sc); err != nil {
		return Scenario{}, err
	}
	if err := sc.Validate(); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// Builtin loads a shipped scenario by name from fsys (the embedded
// examples/scenarios folder).
func Builtin(fsys fs.FS, name string) (Scenario, error) {
	data, err := fs.ReadFile(fsys, name+".yaml")
	if err != nil {
		return Scenario{}, fmt.Errorf("no built-in scenario %q (have: %s)", name, strings.Join(BuiltinNames(fsys), ", "))
	}
	return ParseScenario(data)
}

// BuiltinNames lists the shipped scenarios.
func BuiltinNames(fsys fs.FS) []string {
	entries, _ := fs.ReadDir(fsys, ".")
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Compare runs the scenario once per autoscaler, each from the same seed
// (the same requests arrive in every run), and returns the results in the
// order asked.
func Compare(ctx context.Context, sc Scenario, names []string, progress func(name string, simTime, total float64)) ([]*Result, error) {
	for i, m := range sc.Models {
		w := m.Workload
		if w.Trace != "" && w.rows == nil {
			return nil, fmt.Errorf("models[%d].workload.trace %q is not loaded: read scenarios that name files with LoadFile", i, w.Trace)
		}
		for _, t := range []Tokens{w.Input, w.Output} {
			if w.Trace == "" && t.File != "" && len(t.Values) == 0 {
				return nil, fmt.Errorf("models[%d].workload: token file %q is not loaded: read scenarios that name files with LoadFile", i, t.File)
			}
		}
	}
	full := sc.withDefaults()
	if len(names) == 0 {
		names = full.Autoscalers.Default
	}
	var out []*Result
	for _, name := range names {
		a, err := NewAutoscaler(name, &sc)
		if err != nil {
			return nil, err
		}
		var cb func(float64)
		if progress != nil {
			cb = func(t float64) { progress(a.Name(), t, full.DurationSeconds) }
		}
		out = append(out, New(sc, a).Run(ctx, cb))
		select {
		case <-ctx.Done():
			return out, nil // interrupted: the partial results stand
		default:
		}
	}
	return out, nil
}
