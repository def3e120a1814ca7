// Package queueing models a continuous-batching LLM inference server as a
// state-dependent M/M/1/K queue and sizes it against latency targets.
//
// The package has three layers:
//
//   - [Queue] is a birth–death solver for a single queue whose service rate
//     μ(n) depends on the number n of requests in service (Kleinrock,
//     Queueing Systems vol. 1, ch. 3; docs/queueing.md). It is exact, allocation-free per solve,
//     and stays finite for K up to 10⁵ and arrival rates far above capacity.
//   - A [ServiceModel] turns per-request work into the service time τ(n) of a
//     batch of n requests and maps a solved queue to TTFT and ITL. Two models
//     are provided: [Linear] (α, β, γ, δ) and [Iteration]
//     (α, β, γ; the WVA queueing-model guide §9); docs/queueing.md explains
//     both.
//   - [Analyzer] combines the two for one replica: [Analyzer.Analyze] gives
//     the latencies at an arrival rate, [Analyzer.Size] the largest rate that
//     meets TTFT/ITL targets and the replica count for a demand.
//
// Units are fixed across the project: times in milliseconds, rates in
// requests per second, token counts per request. All arithmetic is float64.
//
// The package imports nothing from Kubernetes or Prometheus; it never logs and
// reports bad input as typed errors ([ParamError], [InfeasibleError]).
package queueing
