// Package capacity is WVA's capacity model: how much load N replicas of a
// variant carry while a share P of the requests meets the SLO (TTFT and
// ITL, per request).
//
// The queueing package answers the same question in closed form, for one
// replica and for the mean request: its state-dependent M/M/1/K queue has
// no notion of a share of requests within the SLO, no per-request ITL, no
// KV-cache preemption, and models a fleet as N independent queues, while
// the router pools them. Against the simulator's measured capacity it is
// off by +10 % to +28 % for one replica and by −48 % per replica for four
// (docs/queueing.md).
//
// This package computes the answer instead of approximating it: it hosts N
// copies of the server model (internal/sim/server: vLLM v1's scheduler
// with chunked prefill, the paged KV cache with prefix caching and
// recompute preemption, the iteration and BLIS latency models) behind a
// router that scores replicas as llm-d's endpoint picker does, offers them
// Poisson arrivals drawn from the workload's own token, class and prefix
// mix, and reads each request's TTFT and ITL. [Attainment] is the share of
// requests within the SLO at one rate; [MaxRate] searches the largest rate
// at which that share reaches P (common random numbers at every rate, so
// the share falls smoothly as the rate grows); [Analyze] gives the
// latency percentiles at a rate. Everything is deterministic: the seed is
// part of the [Settings].
//
// What the model leaves out, by design: the gateway's holding queue and
// saturation-based admission (a fleet at its capacity is not saturated),
// metric scrape delays, and pods starting or stopping. Its inputs are what
// WVA knows of a variant — the server's parameters (profiled or learned),
// its engine arguments and the workload's token mix — so it predicts the
// capacity of a server model, not of a real vLLM; how well the server
// model matches vLLM is the simulator's fidelity question
// (docs/simulator.md).
//
// The package imports no Kubernetes, no metrics backend and not the
// cluster simulator; a run costs time in proportion to the requests it
// serves, and every loop is bounded by Settings.
package capacity
