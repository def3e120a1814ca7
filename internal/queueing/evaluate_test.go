package queueing

import (
	"errors"
	"testing"
)

// TestEvaluateMatchesAnalyzer: Evaluate computes bit for bit what
// NewAnalyzer and Analyze compute, for both models, by value and by
// pointer, at light load, near saturation and in overload, and fails where
// they fail.
func TestEvaluateMatchesAnalyzer(t *testing.T) {
	lin := Linear{Alpha: 8, Beta: 0.1, Gamma: 20, Delta: 0.002}
	it := Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	for name, m := range map[string]ServiceModel{"iteration": it, "*iteration": &it, "linear": lin, "*linear": &lin} {
		for _, q := range []int{0, DefaultMaxQueueSize} {
			cfg := Config{Model: m, Workload: Workload{InputTokens: 1024, OutputTokens: 256}, MaxBatchSize: 64, MaxQueueSize: q}
			a := mustAnalyzer(t, cfg)
			for _, load := range []float64{0.01, 0.5, 0.99, 3} {
				want, err := a.Analyze(load * a.MaxRate())
				if err != nil {
					t.Fatal(err)
				}
				got, err := Evaluate(cfg, load*a.MaxRate())
				if err != nil || got != want {
					t.Errorf("%s, Q=%d, load %v: Evaluate = %+v, %v; want %+v", name, q, load, got, err, want)
				}
			}
		}
	}
	bad := llama(0)
	if _, err := Evaluate(bad, 1); err == nil {
		t.Error("Evaluate accepted a batch size of 0")
	}
	var pe *ParamError
	if _, err := Evaluate(llama(8), -1); !errors.As(err, &pe) {
		t.Errorf("Evaluate at a negative rate: %v, want a ParamError", err)
	}
}

// TestEvaluateDoesNotAllocate: with the model held by pointer, Evaluate
// allocates nothing (the tuner calls it hundreds of times per cycle).
func TestEvaluateDoesNotAllocate(t *testing.T) {
	m := &Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	cfg := llama(256)
	cfg.Model = m
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Evaluate(cfg, 1); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Evaluate allocates %v times per call", n)
	}
}

func BenchmarkEvaluate(b *testing.B) {
	cfg := llama(256)
	cfg.Model = &Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	rate := 0.8 * mustAnalyzer(b, cfg).MaxRate()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Evaluate(cfg, rate); err != nil {
			b.Fatal(err)
		}
	}
}
