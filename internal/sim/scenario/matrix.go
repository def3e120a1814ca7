package scenario

import (
	"strconv"
	"strings"
)

// Matrix is an experiment over a scenario, run by `wva simulate --matrix`:
// every configuration at every rate under every autoscaler, each with every
// seed. A configuration replaces the scenario's gateway (router, weights,
// admission) and its servers' scheduling policy; a rate replaces every
// model's arrival rate. docs/admission.md runs the seed's isolation matrix
// (examples/scenarios/admission-matrix.yaml) and admission with autoscaling
// (admission-step.yaml) this way.
type Matrix struct {
	// Seeds default to 1, 2 and 3.
	Seeds []uint64 `json:"seeds,omitempty"`
	// Autoscalers default to the scenario's autoscalers.default.
	Autoscalers []string `json:"autoscalers,omitempty"`
	// Rates default to the scenario's own.
	Rates   []MatrixRate   `json:"rates,omitempty"`
	Configs []MatrixConfig `json:"configs"`
}

// MatrixRate is a named arrival rate for every model.
type MatrixRate struct {
	Name string `json:"name"`
	Rate Rate   `json:"rate"`
}

// MatrixConfig is a named gateway and scheduling policy.
type MatrixConfig struct {
	Name    string  `json:"name"`
	Gateway Gateway `json:"gateway"`
	// SchedulingPolicy, when set, is every variant's.
	SchedulingPolicy string `json:"schedulingPolicy,omitempty"`
}

// MaxMatrixRuns bounds the runs of a matrix (configurations × rates ×
// autoscalers × seeds).
const MaxMatrixRuns = 10_000

// MatrixDefaults returns the matrix with its default seeds, autoscalers
// and rate.
func (s *Scenario) MatrixDefaults() Matrix {
	m := *s.Matrix
	if len(m.Seeds) == 0 {
		m.Seeds = []uint64{1, 2, 3}
	}
	if len(m.Autoscalers) == 0 {
		m.Autoscalers = s.WithDefaults().Autoscalers.Default
	}
	if len(m.Rates) == 0 {
		m.Rates = []MatrixRate{{Name: "scenario"}}
	}
	return m
}

// Cell is the scenario of configuration c at rate r (nil: the scenario's
// own rates).
func (s *Scenario) Cell(c *MatrixConfig, r *MatrixRate) Scenario {
	d := *s
	d.Matrix = nil
	d.Gateway = c.Gateway
	d.Models = make([]Model, len(s.Models))
	for i, m := range s.Models {
		m.Variants = append([]Variant(nil), m.Variants...)
		if c.SchedulingPolicy != "" {
			for j := range m.Variants {
				m.Variants[j].SchedulingPolicy = c.SchedulingPolicy
			}
		}
		if r != nil && r.Rate.Pattern != "" {
			m.Workload.Rate = r.Rate
		}
		d.Models[i] = m
	}
	return d
}

// runCount is the product of list lengths, in floating point: four
// lengths a file can make as long as it likes wrap an int's product past
// any limit.
func runCount(lens ...int) float64 {
	n := 1.0
	for _, l := range lens {
		n *= float64(l)
	}
	return n
}

// validateMatrix checks the matrix and the scenario of each of its cells.
func validateMatrix(s *Scenario, add func(string, string, ...any)) {
	m := s.MatrixDefaults()
	if len(m.Configs) == 0 {
		add("matrix.configs", "must list at least one configuration")
	}
	if err := registered.Check(m.Autoscalers); err != nil {
		add("matrix.autoscalers", "%v", err)
	}
	if n := runCount(len(m.Configs), len(m.Rates), len(m.Autoscalers), len(m.Seeds)); n > MaxMatrixRuns {
		add("matrix", "has %.0f runs, more than %d", n, MaxMatrixRuns)
	}
	names := map[string]bool{}
	for i, c := range m.Configs {
		p := "matrix.configs[" + strconv.Itoa(i) + "]"
		checkMatrixName(p, c.Name, names, add)
		validateGateway(c.Gateway, func(path, format string, args ...any) { add(p+"."+path, format, args...) })
		validateScheduling(p, Variant{SchedulingPolicy: c.SchedulingPolicy}, add)
	}
	names = map[string]bool{}
	for i, r := range s.matrixRates() {
		p := "matrix.rates[" + strconv.Itoa(i) + "]"
		checkMatrixName(p, r.Name, names, add)
		validateRate(p+".rate", r.Rate, add)
		if len(m.Configs) > 0 {
			d := s.Cell(&m.Configs[0], &r)
			if err := collect(d.checkSize); err != nil {
				add(p, "%s", indentErr(err))
			}
		}
	}
}

func (s *Scenario) matrixRates() []MatrixRate {
	if s.Matrix == nil {
		return nil
	}
	return s.Matrix.Rates
}

func checkMatrixName(p, name string, seen map[string]bool, add func(string, string, ...any)) {
	switch {
	case name == "" || strings.ContainsAny(name, ",\n\"|"):
		add(p+".name", "must be a non-empty name without commas, quotes, bars or newlines, got %q", name)
	case seen[name]:
		add(p+".name", "duplicates %q", name)
	}
	seen[name] = true
}

// indentErr writes a joined error on one line.
func indentErr(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
