// Package emulate runs an emulated vLLM fleet in wall-clock time against a
// Kubernetes API server (`wva emulate`): it plays the Deployment controller
// and the kubelet for the Deployments it manages, and each emulated server
// serves vLLM's /metrics, driven by the simulator's server physics
// (internal/sim's Live) under a workload spec. See docs/emulate.md.
package emulate

import (
	"fmt"
	"strings"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/strictyaml"
)

// Spec is the emulator's input: the models, the workload each receives,
// and the Deployments that serve it, each with its server's true speed.
type Spec struct {
	// Seed of the workload's random streams (default 1): the same seed
	// gives the same requests.
	Seed uint64 `json:"seed,omitempty"`
	// DurationSeconds: model seconds after which the arrivals stop
	// (default 86 400, a day; the simulator's limits on the requests of a
	// run apply: at most 20 million).
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	// Gateway routes each model's requests to its ready servers (the
	// simulator's gateway: router, weights, timeoutSeconds, ...).
	Gateway scenario.Gateway `json:"gateway,omitempty"`
	Models  []Model          `json:"models"`
}

// Model is one served model.
type Model struct {
	// Name is the model_name label of its servers' metrics (the
	// VariantAutoscaling's modelID).
	Name string `json:"name"`
	// Workload is the simulator's: rate (constant, staircase, ramp,
	// diurnal, spikes), arrival process, input and output tokens, classes,
	// prefixes. Traces are not supported.
	Workload scenario.Workload `json:"workload"`
	// Deployments serving the model.
	Deployments []Deployment `json:"deployments"`
}

// Deployment is one Deployment the emulator manages, with its server: a
// simulator variant whose name is the Deployment's.
type Deployment struct {
	// Namespace, if set, restricts the entry to the Deployment of that
	// namespace; otherwise it matches the name in any watched namespace.
	Namespace string `json:"namespace,omitempty"`
	scenario.Variant
}

// DefaultMaxReplicas bounds a Deployment's emulated servers when its
// maxReplicas is unset.
const DefaultMaxReplicas = 32

// defaultDurationSeconds: arrivals go on for a day of model time.
const defaultDurationSeconds = 86400

// ParseSpec reads a spec (YAML or JSON), rejecting unknown fields, and
// validates it with the simulator's rules; errors name the spec's fields.
func ParseSpec(data []byte) (Spec, error) {
	var s Spec
	if err := strictyaml.Unmarshal(data, &s); err != nil {
		return Spec{}, fmt.Errorf("emulate spec: %w", err)
	}
	if _, err := s.Scenario(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// Scenario is the simulator scenario that runs the spec: one variant per
// Deployment, bounded by its minReplicas (default 0) and maxReplicas
// (default DefaultMaxReplicas). It validates the result.
func (s Spec) Scenario() (scenario.Scenario, error) {
	sc := scenario.Scenario{Name: "emulate", Seed: s.Seed, DurationSeconds: s.DurationSeconds, Gateway: s.Gateway}
	if sc.Seed == 0 {
		sc.Seed = 1
	}
	if sc.DurationSeconds == 0 {
		sc.DurationSeconds = defaultDurationSeconds
	}
	var errs []string
	seen := map[string]string{}
	for i, m := range s.Models {
		if m.Workload.Trace != "" {
			errs = append(errs, fmt.Sprintf("models[%d].workload.trace: not supported by the emulator", i))
		}
		for _, t := range []struct {
			name string
			t    scenario.Tokens
		}{{"input", m.Workload.Input}, {"output", m.Workload.Output}} {
			if t.t.File != "" {
				errs = append(errs, fmt.Sprintf("models[%d].workload.%s.file: not supported by the emulator (list the counts in values)", i, t.name))
			}
		}
		// The SLO does not matter here; the simulator's validation wants one.
		sm := scenario.Model{Name: m.Name, Workload: m.Workload, SLO: scenario.SLO{TTFTMs: 1000, ITLMs: 100}}
		for j, d := range m.Deployments {
			key := d.Namespace + "/" + d.Name
			if prev, dup := seen[key]; dup {
				errs = append(errs, fmt.Sprintf("models[%d].deployments[%d]: Deployment %q already listed at %s", i, j, key, prev))
			}
			seen[key] = fmt.Sprintf("models[%d].deployments[%d]", i, j)
			v := d.Variant
			if v.Accelerator == "" {
				v.Accelerator = "emulated"
			}
			if v.MaxReplicas == 0 {
				v.MaxReplicas = DefaultMaxReplicas
			}
			v.InitialReplicas = 0
			sm.Variants = append(sm.Variants, v)
		}
		if len(m.Deployments) == 0 {
			errs = append(errs, fmt.Sprintf("models[%d].deployments: must list at least one Deployment", i))
		}
		sc.Models = append(sc.Models, sm)
	}
	if len(errs) > 0 {
		return scenario.Scenario{}, fmt.Errorf("emulate spec: %s", strings.Join(errs, "; "))
	}
	if err := sc.Validate(); err != nil {
		msg := strings.ReplaceAll(err.Error(), ".variants", ".deployments")
		return scenario.Scenario{}, fmt.Errorf("emulate spec: %s", strings.ReplaceAll(msg, "\n", "; "))
	}
	return sc, nil
}
