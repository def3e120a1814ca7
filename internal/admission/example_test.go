package admission_test

import (
	"fmt"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// A gateway's admission path: the prompt's block hashes are computed once,
// matched against the prefix index for each instance, and the predictive
// policy decides on the best case; the request is then recorded on the
// instance the router picks, and its TTFT, once observed, calibrates the
// model.
func Example() {
	index, _ := admission.NewIndex(0)
	policy, _ := admission.NewPredictive(admission.PredictiveConfig{SheddableBudget: 0.1})
	calibrator, _ := admission.NewCalibrator(admission.CalibratorConfig{})

	system := make([]uint32, 512) // a 512-token system prompt, cached on instance 1
	for i := range system {
		system[i] = uint32(1000 + i)
	}
	index.Record(1, admission.Hashes(system, 16, nil))

	// Instance 0 has the shorter queue; instance 1 has the cache, and its
	// 30 batch requests (priority −2) would be overtaken.
	fleet := []admission.Instance{
		{ID: 0, StepTime: 0.015, Waiting: []admission.Waiting{{Priority: 0, Count: 5}}},
		{ID: 1, StepTime: 0.015, Waiting: []admission.Waiting{{Priority: 0, Count: 4}, {Priority: -2, Count: 30}}},
	}
	prompt := append(append([]uint32(nil), system...), 7, 8, 9, 10) // 516 tokens
	hashes := admission.Hashes(prompt, 16, nil)
	for i := range fleet {
		fleet[i].Cached = index.Match(hashes, fleet[i].ID) * 16
	}
	req := admission.Request{Class: admission.Sheddable, Priority: -1, InputTokens: len(prompt)}
	d := policy.Decide(0, req, fleet)
	fmt.Println(d)

	// The router sends it to instance 1; its TTFT comes back.
	index.Record(fleet[d.Instance].ID, hashes)
	calibrator.Observe(admission.Observation{TTFT: 0.081, Miss: 4, Ahead: 4, StepTime: 0.015})
	if err := policy.SetCoefficients(calibrator.Coefficients()); err != nil {
		panic(err)
	}
	// Output:
	// admit sheddable: within-budget (estimate 0.06698 s ≤ budget 0.1 s, instance 1)
}
