// Command randscen writes random single-model scenarios for `wva
// simulate -f`: a check of the autoscalers on loads nobody tuned them for
// (docs/evaluation.md, "Scenarios nobody tuned for"). Each scenario takes
// one server, workload and SLO from a shipped scenario — the
// KV-bound H100 of staircase, phi-4 on A100 of production-chat, Llama-3.1-8B
// on H100 of step-slow-start, Llama-3.1-70B on four H100 of flash-crowd —
// and draws the rest: the rate pattern (a staircase, a ramp, a sine or
// spikes) at 1 to 5.5 times the server's rough per-replica rate, Poisson or
// Gamma arrivals, the replicas' start-up time (45–300 s) and how many run
// at the start (1–3). The same -seed writes the same files.
//
//	go run ./hack/randscen -n 24 -seed 100 -out /tmp/rnd
//	for f in /tmp/rnd/*.yaml; do wva simulate -f $f --repeat 3 --no-files -o json \
//	    --autoscalers wva,hpa,keda,keda-queue,keda-tokens,keda-slo,clairvoyant > ${f%.yaml}.json; done
//	go run ./hack/randscen -summarize /tmp/rnd > /tmp/rnd/summary.md
//
// `make random-scenarios` does all three into docs/evaluation/random/.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	_ "github.com/llm-d-incubation/wva/internal/sim/baselines" // registers the autoscalers Validate checks names against
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// server is a shipped scenario's model whose variant, workload tokens and
// SLO a random scenario reuses; unit is a rough per-replica rate
// (requests/s) that scales the drawn loads.
type server struct {
	scenario, model string
	unit            float64
}

var servers = []server{
	{"staircase", "llama", 1.6},
	{"production-chat", "phi-4", 1.5},
	{"step-slow-start", "llama-8b", 8},
	{"flash-crowd", "llama-70b", 2.5},
}

// Limits of the drawn scenarios.
const (
	durationSeconds = 2400
	maxReplicas     = 12
	maxScenarios    = 10000
)

func main() {
	n := flag.Int("n", 24, "how many scenarios to write")
	seed := flag.Uint64("seed", 100, "the first scenario's seed; scenario i uses seed+i")
	out := flag.String("out", "", "folder for the scenario files (created if missing)")
	sum := flag.String("summarize", "", "instead: summarize the `wva simulate --repeat N -o json` results (NAME.json beside NAME.yaml) in this folder as a Markdown table on stdout")
	flag.Parse()
	var err error
	if *sum != "" {
		err = summarize(os.Stdout, *sum)
	} else {
		err = run(*n, *seed, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "randscen:", err)
		os.Exit(2)
	}
}

func run(n int, seed uint64, out string) error {
	if out == "" {
		return errors.New("-out is required")
	}
	if n < 1 || n > maxScenarios {
		return fmt.Errorf("-n must be in [1, %d], got %d", maxScenarios, n)
	}
	if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // a folder of repository files, read by everyone
		return err
	}
	for i := range n {
		sc, err := Generate(seed + uint64(i))
		if err != nil {
			return err
		}
		data, err := yaml.Marshal(sc)
		if err != nil {
			return err
		}
		path := filepath.Join(out, sc.Name+".yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil { //nolint:gosec // a repository file, read by everyone
			return err
		}
		fmt.Printf("%s: %s\n", path, sc.Description)
	}
	return nil
}

// Generate draws the scenario of one seed. It is valid and runnable
// (TestGenerateValid).
func Generate(seed uint64) (scenario.Scenario, error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	srv := servers[r.IntN(len(servers))]
	base, err := scenario.Builtin(scenarios.FS, srv.scenario)
	if err != nil {
		return scenario.Scenario{}, err
	}
	var m *scenario.Model
	for i := range base.Models {
		if base.Models[i].Name == srv.model {
			m = &base.Models[i]
		}
	}
	if m == nil || len(m.Variants) == 0 {
		return scenario.Scenario{}, fmt.Errorf("scenario %s has no model %s with a variant", srv.scenario, srv.model)
	}
	v := m.Variants[0]
	startup := []float64{45, 90, 120, 180, 240, 300}[r.IntN(6)]
	v.MinReplicas, v.MaxReplicas, v.InitialReplicas = 1, maxReplicas, 1+r.IntN(3)
	v.StartupSeconds, v.StartupJitterSeconds = startup, startup/5
	rate, pattern := drawRate(r, srv.unit)
	wl := scenario.Workload{Arrival: "poisson", Rate: rate, Input: m.Workload.Input, Output: m.Workload.Output}
	if r.Float64() < 0.4 {
		wl.Arrival, wl.CV = "gamma", round2(1.5+1.5*r.Float64())
	}
	name := fmt.Sprintf("random-%d", seed)
	sc := scenario.Scenario{
		Name: name,
		Description: fmt.Sprintf("%s's %s (%s): %s, %s arrivals, %.0f-s start-up, %d initial replica(s)",
			srv.scenario, srv.model, v.Accelerator, pattern, wl.Arrival, startup, v.InitialReplicas),
		DurationSeconds: durationSeconds,
		Seed:            1,
		Models:          []scenario.Model{{Name: srv.model, SLO: m.SLO, Workload: wl, Variants: []scenario.Variant{v}}},
		Gateway:         scenario.Gateway{Router: "least-loaded", TimeoutSeconds: 120},
	}
	if err := sc.Validate(); err != nil {
		return scenario.Scenario{}, fmt.Errorf("seed %d: %w", seed, err)
	}
	return sc, nil
}

// drawRate draws a rate pattern at 1 to 5.5 units (the sine's mean 2 to 4,
// the spikes' base 1 to 3 with spikes of 1.5 to 3 times it).
func drawRate(r *rand.Rand, unit float64) (scenario.Rate, string) {
	level := func() float64 { return round2(unit * (1 + 4.5*r.Float64())) }
	pick := func(xs ...float64) float64 { return xs[r.IntN(len(xs))] }
	switch r.IntN(4) {
	case 0:
		steps := []scenario.Step{{AtSeconds: 0, RPS: level()}}
		t := 0.0
		for range 2 + r.IntN(3) {
			t += pick(300, 450, 600, 750, 900)
			if t >= durationSeconds-200 {
				break
			}
			steps = append(steps, scenario.Step{AtSeconds: t, RPS: level()})
		}
		return scenario.Rate{Pattern: "staircase", Steps: steps}, fmt.Sprintf("a staircase of %d steps", len(steps))
	case 1:
		start := pick(0, 300, 600)
		end := math.Min(start+pick(600, 1200, 1800), durationSeconds)
		rt := scenario.Rate{Pattern: "ramp", From: level(), To: level(), StartSeconds: start, EndSeconds: end}
		return rt, fmt.Sprintf("a ramp %g → %g requests/s", rt.From, rt.To)
	case 2:
		mean := round2(unit * (2 + 2*r.Float64()))
		rt := scenario.Rate{Pattern: "diurnal", Mean: mean, Amplitude: round2(mean * (0.3 + 0.5*r.Float64())), PeriodSeconds: pick(1200, 1800, 2400, 3600)}
		return rt, fmt.Sprintf("a sine %g ± %g requests/s over %g s", rt.Mean, rt.Amplitude, rt.PeriodSeconds)
	default:
		baseRPS := round2(unit * (1 + 2*r.Float64()))
		rt := scenario.Rate{Pattern: "spikes", RPS: baseRPS}
		t := 0.0
		for range 2 + r.IntN(2) {
			t += pick(300, 500, 700)
			rt.Spikes = append(rt.Spikes, scenario.Spike{AtSeconds: t, DurationSeconds: pick(60, 120, 240, 400), RPS: round2(baseRPS * (1.5 + 1.5*r.Float64()))})
		}
		return rt, fmt.Sprintf("%d spikes on %g requests/s", len(rt.Spikes), baseRPS)
	}
}

func round2(x float64) float64 { return math.Round(100*x) / 100 }
