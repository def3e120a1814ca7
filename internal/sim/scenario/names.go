package scenario

import "errors"

// NameRegistry is what the scenario layer needs of the simulator's
// autoscaler registry: which names exist (autoscalers.default and
// matrix.autoscalers are checked against them) and which run when a
// scenario names none. The registry installs itself (UseNameRegistry,
// from package sim's init), so a scenario's validation and defaults agree
// with what the simulator can run.
type NameRegistry interface {
	// Check reports the first unknown or repeated name.
	Check(names []string) error
	// Defaults are run when neither the command nor the scenario names
	// autoscalers.
	Defaults() []string
}

// registered is the installed registry; without one, no name is known.
var registered NameRegistry = noNames{}

// UseNameRegistry installs the autoscaler registry.
func UseNameRegistry(n NameRegistry) { registered = n }

type noNames struct{}

func (noNames) Check(ns []string) error {
	if len(ns) == 0 {
		return nil
	}
	return errors.New("no autoscalers are registered (the simulator's registry, package sim, is not linked)")
}

func (noNames) Defaults() []string { return nil }
