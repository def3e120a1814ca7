package scenario

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/llm-d-incubation/wva/internal/strictyaml"
)

// ParseScenario reads a scenario (YAML or JSON), rejecting unknown fields,
// and validates it.
func ParseScenario(data []byte) (Scenario, error) {
	sc, err := decodeScenario(data)
	if err != nil {
		return Scenario{}, err
	}
	if err := sc.Validate(); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// decodeScenario reads a scenario (YAML or JSON), rejecting unknown
// fields, without validating it.
func decodeScenario(data []byte) (Scenario, error) {
	var sc Scenario
	if err := strictyaml.Unmarshal(data, &sc); err != nil {
		if strings.Contains(err.Error(), "unsupported value: ") {
			return Scenario{}, fmt.Errorf("%w (numbers must be finite: no .nan or .inf)", err)
		}
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

// CheckRunnable validates the scenario (one built or edited in code has
// not been) and fails when it names files (a trace, token values) that
// were not read: only LoadFile reads them.
func (sc *Scenario) CheckRunnable() error {
	if err := sc.Validate(); err != nil {
		return err
	}
	for i, m := range sc.Models {
		w := m.Workload
		if w.Trace != "" && w.Rows == nil {
			return fmt.Errorf("models[%d].workload.trace %q is not loaded: read scenarios that name files with LoadFile", i, w.Trace)
		}
		for _, t := range []Tokens{w.Input, w.Output} {
			if w.Trace == "" && t.File != "" && len(t.Values) == 0 {
				return fmt.Errorf("models[%d].workload: token file %q is not loaded: read scenarios that name files with LoadFile", i, t.File)
			}
		}
	}
	return nil
}
