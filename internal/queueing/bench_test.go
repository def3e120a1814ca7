package queueing

import "testing"

// The budgets of issue 2, on the 2-core development machine: Analyze ≤ 5 µs
// and Size ≤ 100 µs for N = 256, Q = 100, with no allocation per call.

func BenchmarkAnalyze(b *testing.B) {
	a := mustAnalyzer(b, llama(256))
	rate := 0.8 * a.MaxRate()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Analyze(rate); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSize(b *testing.B) {
	a := mustAnalyzer(b, llama(256))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Size(Targets{TTFTMs: 200, ITLMs: 20}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSizeLinear(b *testing.B) {
	c := llama(256)
	c.Model = Linear{Alpha: 8, Beta: 0.1, Gamma: 20, Delta: 0.002}
	a := mustAnalyzer(b, c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Size(Targets{TTFTMs: 3000, ITLMs: 25}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewAnalyzer is the cost the tuner pays per parameter vector.
func BenchmarkNewAnalyzer(b *testing.B) {
	c := llama(256)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewAnalyzer(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSolveHugeQueue shows that the solver is O(N) whatever Q is.
func BenchmarkSolveHugeQueue(b *testing.B) {
	c := llama(256)
	c.MaxQueueSize = 99_744
	a := mustAnalyzer(b, c)
	rate := 1000 * a.MaxRate()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Analyze(rate); err != nil {
			b.Fatal(err)
		}
	}
}
