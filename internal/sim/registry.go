package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// A Baseline is an autoscaler the simulator can run. Each registers itself
// (registerBaseline, from an init in its own file); the names
// --autoscalers takes, the defaults, the sweep's knobs and the tests that
// run every autoscaler all come from the registry, so adding one touches
// its own file only.
type Baseline struct {
	// Name is what --autoscalers takes; with Param, NAME:ARG.
	Name string
	// Summary says in a few words what it does, for --help.
	Summary string
	// Order sorts the registry (the help, the defaults, the tests).
	Order int
	// Param, when set, reads the ARG of NAME:ARG and returns it in
	// canonical form (static:02 is static:2); Example is a name with an
	// argument, for the help and the tests.
	Param   func(arg string) (string, error)
	Example string
	// New builds the autoscaler for a scenario with its defaults applied;
	// arg is Param's canonical argument ("" without Param).
	New func(sc *scenario.Scenario, arg string) (Autoscaler, error)
	// Knobs are the settings a sweep can vary, by key without the
	// "name." prefix.
	Knobs map[string]Knob
	// Bound: a reference to compare against (it knows the future), not a
	// rival: no dominance check against it.
	Bound bool
	// Instant: its replicas are ready the moment it orders them, which no
	// fleet can match, so it wins no seed.
	Instant bool
	// Default: run when neither the command nor the scenario names
	// autoscalers; Sweep: swept when --sweep names none.
	Default, Sweep bool
}

var baselines []*Baseline

// knobs are the settings a sweep can vary, by "autoscaler.key", filled
// from the registry. The defaults' value of every knob is always added to
// its grid, so the sweep contains the default point of each autoscaler.
var knobs = map[string]Knob{}

// RegisterBaseline adds b to the registry; a name registered twice is a
// programming error.
func RegisterBaseline(b Baseline) {
	for _, o := range baselines {
		if o.Name == b.Name {
			panic("sim: autoscaler " + b.Name + " registered twice")
		}
	}
	baselines = append(baselines, &b)
	slices.SortStableFunc(baselines, func(x, y *Baseline) int { return x.Order - y.Order })
	for k, v := range b.Knobs {
		knobs[b.Name+"."+k] = v
	}
}

// Baselines lists the registered autoscalers in order.
func Baselines() []Baseline {
	out := make([]Baseline, len(baselines))
	for i, b := range baselines {
		out[i] = *b
	}
	return out
}

// Usage is how a baseline is written: its name, or NAME:N for one with a
// parameter.
func (b *Baseline) Usage() string {
	if b.Param != nil {
		return b.Name + ":N"
	}
	return b.Name
}

// AutoscalerNames lists the names --autoscalers takes, static:N as such.
func AutoscalerNames() []string {
	out := make([]string, len(baselines))
	for i, b := range baselines {
		out[i] = b.Usage()
	}
	return out
}

// ExampleNames lists one runnable name per registered autoscaler (the
// example of one with a parameter): what the tests run.
func ExampleNames() []string {
	out := make([]string, len(baselines))
	for i, b := range baselines {
		out[i] = b.Name
		if b.Param != nil {
			out[i] = b.Example
		}
	}
	return out
}

// namesWhere lists, in order, the names of the baselines with a property.
func namesWhere(keep func(*Baseline) bool) []string {
	var out []string
	for _, b := range baselines {
		if keep(b) {
			out = append(out, b.Name)
		}
	}
	return out
}

// DefaultAutoscalers are run when neither the command nor the scenario
// names any.
func DefaultAutoscalers() []string { return namesWhere(func(b *Baseline) bool { return b.Default }) }

// SweepAutoscalers are swept when --sweep names none.
func SweepAutoscalers() []string { return namesWhere(func(b *Baseline) bool { return b.Sweep }) }

// lookup finds the baseline of a name and its canonical argument.
func lookup(name string) (*Baseline, string, error) {
	base, arg, hasArg := strings.Cut(name, ":")
	for _, b := range baselines {
		if b.Name != base || hasArg != (b.Param != nil) {
			continue
		}
		if !hasArg {
			return b, "", nil
		}
		canon, err := b.Param(arg)
		if err != nil {
			return nil, "", err
		}
		return b, canon, nil
	}
	return nil, "", fmt.Errorf("unknown autoscaler %q (want %s)", name, orList(AutoscalerNames()))
}

// orList writes "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// BaselineOf is the registered baseline of a run's autoscaler name, nil
// for one not registered (a test's own).
func BaselineOf(name string) *Baseline {
	b, _, err := lookup(name)
	if err != nil {
		return nil
	}
	return b
}

// NewAutoscaler builds a registered autoscaler by name (AutoscalerNames)
// for a scenario.
func NewAutoscaler(name string, sc *scenario.Scenario) (Autoscaler, error) {
	b, arg, err := lookup(name)
	if err != nil {
		return nil, err
	}
	c := sc.WithDefaults()
	return b.New(&c, arg)
}

// CheckAutoscalers checks a list of autoscaler names: each known, and none
// twice (static:2 and static:02 are the same).
func CheckAutoscalers(names []string) error {
	seen := map[string]bool{}
	for _, name := range names {
		b, arg, err := lookup(name)
		if err != nil {
			return err
		}
		key := b.Name
		if b.Param != nil {
			key += ":" + arg
		}
		if seen[key] {
			return fmt.Errorf("%s is listed twice", key)
		}
		seen[key] = true
	}
	return nil
}

// Instant says whether a run's autoscaler has its replicas ready at once
// (Baseline.Instant): such a run wins no seed, and the seeds' table says
// so.
func Instant(name string) bool {
	b := BaselineOf(name)
	return b != nil && b.Instant
}

func init() { scenario.UseNameRegistry(registryNames{}) }

// registryNames is the registry as the scenario layer sees it.
type registryNames struct{}

func (registryNames) Check(names []string) error { return CheckAutoscalers(names) }
func (registryNames) Defaults() []string         { return DefaultAutoscalers() }
