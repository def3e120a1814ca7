package capmodel_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/llm-d-incubation/wva/examples/scenarios"
	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/sim/capmodel"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"

	// The shipped scenarios name the baselines, which register themselves.
	_ "github.com/llm-d-incubation/wva/internal/sim/baselines"
)

// validationCase is one variant of a shipped scenario.
type validationCase struct {
	scenario string
	m, j     int
	what     string
}

var validationCases = []validationCase{
	{"staircase", 0, 0, "KV-bound (16 384-token cache, 4 096 + 1 024-token requests), iteration model"},
	{"production-chat", 0, 0, "phi-4 on A100, BLIS linear coefficients, lognormal chat tokens"},
	{"compute-bound", 0, 0, "Qwen3-14B on H100, BLIS linear coefficients, 2 048-token chunks"},
	{"compute-bound", 1, 0, "Llama-3.1-8B on H100, iteration model from BLIS's fit"},
	{"long-outputs", 0, 0, "3 000-token outputs on a TP-2 H100 pair, BLIS linear coefficients"},
}

// measurementFor is the validation's truth at attainment p: the
// simulator's static fleet, with enough requests that about 1 500 miss
// at the target, in each of three seeds.
func measurementFor(p float64) capmodel.Measurement {
	ms := capmodel.DefaultMeasurement()
	ms.Requests = math.Min(math.Max(math.Ceil(1500/(1-p)), 3000), 200_000)
	ms.MaxSeconds = 1e6
	ms.Bisections = 8
	return ms
}

// validationSeeds are the measurement's seeds, 1 to 3: the truth is their
// mean.
const validationSeeds = 3

type validationRow struct {
	c               validationCase
	n               int
	p               float64
	measured, model float64
	seeds           []float64
	err             error
}

// TestCapacityValidation compares WVA's capacity model with the
// simulator's measured capacity. WVA_VALIDATE=1 runs the whole table
// (every case, N ∈ {1, 2, 4, 8}, P ∈ {0.9, 0.95, 0.99}; about an hour on
// two cores: make validate-capacity); otherwise a sample of it, at
// P = 0.9 where runs are shortest: the KV-bound and the chat variant at
// N = 2 and 4 (under the race detector, the chat variant at N = 4).
func TestCapacityValidation(t *testing.T) {
	ns, ps := []int{2, 4}, []float64{0.9}
	cases := validationCases[:2]
	if raceBuild {
		ns, cases = []int{4}, validationCases[1:2]
	}
	progress := os.Getenv("WVA_VALIDATE") != ""
	if progress {
		ns, ps, cases = []int{1, 2, 4, 8}, []float64{0.9, 0.95, 0.99}, validationCases
	} else if testing.Short() {
		t.Skip("the validation runs minutes of simulation")
	}
	var rows []*validationRow
	for _, c := range cases {
		for _, n := range ns {
			for _, p := range ps {
				rows = append(rows, &validationRow{c: c, n: n, p: p})
			}
		}
	}
	runValidation(rows, progress)
	reportValidation(t, rows)
}

// runValidation measures and predicts every row, on two workers.
func runValidation(rows []*validationRow, progress bool) {
	work := make(chan *validationRow)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				validate(r)
				if progress {
					fmt.Fprintf(os.Stderr, "%s %d/%d N=%d P=%.2f: measured %.3f, model %.3f (%+.1f %%)\n", r.c.scenario, r.c.m, r.c.j, r.n, r.p,
						r.measured, r.model, 100*(r.model/r.measured-1))
				}
			}
		}()
	}
	for _, r := range rows {
		work <- r
	}
	close(work)
	wg.Wait()
}

// reportValidation checks every row against the 5 % bound and logs the
// table (and writes it to WVA_VALIDATE_OUT when set).
func reportValidation(t *testing.T, rows []*validationRow) {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | model/variant | N | P | measured (req/s) | seeds | WVA's model | error |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.err != nil {
			t.Errorf("%s/%d/%d N=%d P=%g: %v", r.c.scenario, r.c.m, r.c.j, r.n, r.p, r.err)
			continue
		}
		e := r.model/r.measured - 1
		fmt.Fprintf(&b, "| %s | %d/%d | %d | %.2f | %.3f | %.3f, %.3f, %.3f | %.3f | %+.1f %% |\n", r.c.scenario, r.c.m, r.c.j, r.n, r.p, r.measured, r.seeds[0], r.seeds[1], r.seeds[2], r.model, 100*e)
		if math.Abs(e) > 0.05 {
			t.Errorf("%s model %d variant %d, N=%d, P=%.2f: WVA's model %.3f requests/s, measured %.3f (%+.1f %%)", r.c.scenario, r.c.m, r.c.j, r.n, r.p, r.model, r.measured, 100*e)
		}
	}
	t.Log("\n" + b.String())
	if out := os.Getenv("WVA_VALIDATE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func validate(r *validationRow) {
	sc, err := scenario.Builtin(scenarios.FS, r.c.scenario)
	if err != nil {
		r.err = err
		return
	}
	d := sc.WithDefaults()
	ctx := context.Background()
	r.model, r.err = capmodel.Predicted(ctx, &d, r.c.m, r.c.j, r.n, r.p, capacity.SettingsFor(r.p))
	for seed := uint64(1); seed <= validationSeeds; seed++ {
		ms := measurementFor(r.p)
		ms.Seed = seed
		r.seeds = append(r.seeds, capmodel.MeasuredWith(ctx, &d, r.c.m, r.c.j, r.n, r.p, ms))
		r.measured += r.seeds[len(r.seeds)-1] / validationSeeds
	}
}
