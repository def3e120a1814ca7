package sim

import (
	"context"
	"math"
	"testing"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// oneReplica is a single replica with a KV cache big enough not to bind,
// at a constant Poisson rate.
func oneReplica(rate float64, p tuner.Params, n int, seconds float64) scenario.Scenario {
	return scenario.Scenario{Name: "fidelity", DurationSeconds: seconds, Seed: 11, Models: []scenario.Model{{
		Name: "m", SLO: scenario.SLO{TTFTMs: 1e9, ITLMs: 1e9},
		Workload: scenario.Workload{Rate: scenario.Rate{Pattern: "constant", RPS: rate},
			Input: scenario.Tokens{Dist: "constant", Mean: 1024}, Output: scenario.Tokens{Dist: "constant", Mean: 256}},
		Variants: []scenario.Variant{{Name: "v", Accelerator: "H100", Cost: 1, Params: p, MaxBatchSize: n,
			KVBlocks: 1 << 20, MinReplicas: 1, MaxReplicas: 1, InitialReplicas: 1}},
	}}}
}

// serverLatencies runs the scenario and returns the mean server-side TTFT
// and ITL (ms), as vLLM's histograms would report them.
func serverLatencies(t *testing.T, sc scenario.Scenario) (ttft, itl float64) {
	t.Helper()
	s := New(sc, &Static{n: 1})
	s.Run(context.Background(), nil)
	var c server.Counters
	for _, v := range s.variants {
		for _, r := range v.replicas {
			c = r.Counters()
		}
	}
	return 1000 * c.TTFTSum / c.TTFTCount, 1000 * c.ITLSum / c.ITLCount
}

// TestFidelity compares the simulated replica (vLLM-v1 scheduling: the
// prefill iteration yields the first token, o − 1 decode iterations follow,
// prompts chunked under a 2 048-token budget) with queueing.Analyze of the
// same parameters, up to 70 % of λmax. ITL agrees within 10 % (in fact
// within 2 %). TTFT does not, and the difference is explained: in the
// simulator (as in vLLM) a request arriving mid-iteration first waits for
// that iteration to end and then for a whole iteration of its own, while
// the mean-field model counts one iteration in all ("residual wait ≈
// T_iter", plus the prefill work). The simulated TTFT is therefore higher
// by about half an iteration; the test holds it within 10 % plus three
// quarters of the mean iteration time T_iter(B̄) = α + B̄·δ̄
// (docs/evaluation.md, section 2 "Fidelity").
func TestFidelity(t *testing.T) {
	p := tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma},
		Workload: queueing.Workload{InputTokens: 1024, OutputTokens: 256}, MaxBatchSize: 64, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	it := queueing.Iteration{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}
	w := queueing.Workload{InputTokens: 1024, OutputTokens: 256}
	for _, load := range []float64{0.1, 0.3, 0.5, 0.7, 0.85, 0.95} {
		rate := load * a.MaxRate()
		want, _ := a.Analyze(rate)
		ttft, itl := serverLatencies(t, oneReplica(rate, p, 64, 3600))
		et, ei := ttft/want.TTFTMs-1, itl/want.ITLMs-1
		iter := it.IterTime(w, want.AvgBatchSize)
		t.Logf("load %.2f (%.2f rps): TTFT sim %.1f model %.1f (%+.1f %%, %.2f iterations), ITL sim %.2f model %.2f (%+.1f %%)",
			load, rate, ttft, want.TTFTMs, 100*et, (ttft-want.TTFTMs)/iter, itl, want.ITLMs, 100*ei)
		if load > 0.7 {
			continue
		}
		if math.Abs(ei) > 0.1 {
			t.Errorf("load %.2f: ITL differs by %.1f %%", load, 100*ei)
		}
		if d := ttft - want.TTFTMs; d < -0.1*want.TTFTMs || d > 0.1*want.TTFTMs+0.75*iter {
			t.Errorf("load %.2f: TTFT differs by %.1f ms (iteration %.1f ms)", load, d, iter)
		}
	}
}
