package queueing_test

import (
	"fmt"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// A replica of an 8B model on one GPU, described by the iteration model,
// analysed at 10 requests/s.
func ExampleAnalyzer_Analyze() {
	a, err := queueing.NewAnalyzer(queueing.Config{
		Model:        queueing.Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5},
		Workload:     queueing.Workload{InputTokens: 1024, OutputTokens: 256},
		MaxBatchSize: 256,
		MaxQueueSize: queueing.DefaultMaxQueueSize,
	})
	if err != nil {
		panic(err)
	}
	m, err := a.Analyze(10)
	if err != nil {
		panic(err)
	}
	fmt.Printf("TTFT %.1f ms, ITL %.2f ms, batch %.1f, max rate %.2f rps\n", m.TTFTMs, m.ITLMs, m.AvgBatchSize, m.MaxRateRPS)
	// Output: TTFT 32.5 ms, ITL 12.19 ms, batch 31.5, max rate 20.99 rps
}

// Sizing the same replica for a 200 ms TTFT and 20 ms ITL, and counting the
// replicas that serve 100 requests/s.
func ExampleAnalyzer_Size() {
	a, err := queueing.NewAnalyzer(queueing.Config{
		Model:        queueing.Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5},
		Workload:     queueing.Workload{InputTokens: 1024, OutputTokens: 256},
		MaxBatchSize: 256,
		MaxQueueSize: queueing.DefaultMaxQueueSize,
	})
	if err != nil {
		panic(err)
	}
	s, err := a.Size(queueing.Targets{TTFTMs: 200, ITLMs: 20})
	if err != nil {
		panic(err)
	}
	replicas, _ := s.Replicas(100)
	fmt.Printf("λ* %.2f rps (binding: %s), capacity %.2f rps, %d replicas\n", s.RateStarRPS, s.Binding, s.CapacityRPS, replicas)
	// Output: λ* 15.73 rps (binding: itl), capacity 15.73 rps, 7 replicas
}

// The closed form of the WVA queueing-model guide §9, and the SLO it implies at k = 3.
func ExampleIteration_ClosedForm() {
	m := queueing.Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	w := queueing.Workload{InputTokens: 1024, OutputTokens: 256}
	cf, err := m.ClosedForm(w, 10)
	if err != nil {
		panic(err)
	}
	ttft, itl, _ := m.SLOForMultiplier(w, 3)
	fmt.Printf("ρ %.3f, T_iter %.2f ms, TTFT %.1f ms, ITL %.2f ms; SLO at k=3: TTFT %.1f ms, ITL %.2f ms\n",
		cf.Rho, cf.IterTimeMs, cf.TTFTMs, cf.ITLMs, ttft, itl)
	// Output: ρ 0.404, T_iter 11.75 ms, TTFT 32.3 ms, ITL 11.82 ms; SLO at k=3: TTFT 41.5 ms, ITL 21.08 ms
}

// The textbook M/M/1/K queue is the special case N = 1.
func ExampleQueue_Solve() {
	q, err := queueing.NewQueue([]float64{1}, 9) // μ = 1, K = 10
	if err != nil {
		panic(err)
	}
	s, err := q.Solve(0.8)
	if err != nil {
		panic(err)
	}
	fmt.Printf("L %.4f, X %.4f, T %.4f, p_K %.4f\n", s.AvgInSystem, s.Throughput, s.RespTime, s.Blocking)
	// Output: L 2.9663, X 0.7812, T 3.7971, p_K 0.0235
}
