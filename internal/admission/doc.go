// Package admission decides, at the gateway in front of a fleet of LLM
// servers, whether to admit an arriving request or to shed it (HTTP 429),
// so that the requests that are admitted meet their time-to-first-token
// (TTFT) objectives. It is plain Go over plain values: the caller passes
// the time (seconds), the request and a snapshot of the fleet, and gets a
// Decision back; nothing here reads a clock, a random source, Kubernetes
// or Prometheus, so the controller's gateway and the simulator run the
// same code.
//
// # The model
//
// A request of SLO class c (Critical, Standard, Sheddable) with priority
// p and n prompt tokens, arriving at instance i, waits behind the requests
// queued there that will run before it — under priority scheduling those
// of priority ≥ p, not the lower ones, which it overtakes — and is then
// prefilled. Its TTFT is estimated as
//
//	TTFT_i = κ · ahead_i(p) · step_i + β0 + β1 · miss_i
//
// where step_i is the instance's engine step time (the tuner's learned
// iteration time, or the observed inter-token latency), and miss_i = n −
// cached_i the prompt tokens whose KV the instance does not hold. The
// Predictive policy admits the request when the best case over the fleet,
// min_i TTFT_i, is within the class's budget times a headroom; critical
// requests are always admitted. This is the predictive TTFT-budget
// admission of the project's design notes, with its reviewers' fix: the
// queue wait counts only the requests ahead, on each instance's own step
// time, instead of the whole queue at a fixed average step.
//
// β0, β1 and κ are learned online by a Calibrator: recursive least squares
// with forgetting over observed (TTFT, miss, ahead · step), in square-root
// information form, its fit projected exactly onto the coefficients'
// bounds, robust to outliers by clipping, with the coefficients' standard
// errors exposed.
//
// cached_i comes from the prefix Index, the router's estimate of each
// instance's prefix cache after vLLM's automatic prefix caching: prompts
// are cut into blocks, each block named by a hash chained over the blocks
// before it (Hashes), and the index remembers, per instance and with an
// LRU bound, the blocks of the requests routed there, as the Gateway API
// Inference Extension's endpoint picker does in its prefix-cache plugin.
// The hashes are computed once per request and serve both the router's
// prefix scorer and the admission policy. A simulator that knows its
// servers' caches exactly fills Instance.Cached from its own count instead.
//
// The other policies are baselines: AlwaysAdmit, a TokenBucket, and
// SLOGated (shed a class when the fleet's queue depth reaches its
// threshold). Floor wraps any of them with a fairness floor per prefix
// group, so that a group nobody has cached yet is not shed forever.
//
// Decisions do not allocate: a Decision is a small value with a reason
// code, and its String method formats the text only when called.
//
// # References
//
//   - vLLM, Automatic Prefix Caching (design):
//     https://docs.vllm.ai/en/latest/design/prefix_caching.html
//   - Gateway API Inference Extension, the endpoint picker's prefix-cache
//     aware routing (the approximate per-server index, its LRU capacity):
//     https://github.com/kubernetes-sigs/gateway-api-inference-extension/tree/main/docs/proposals/005-prefix-cache-aware-routing-proposal
//     and its configuration guide:
//     https://gateway-api-inference-extension.sigs.k8s.io/guides/epp-configuration/prefix-aware/
//   - S. Haykin, Adaptive Filter Theory, 5th ed., Pearson, 2014, ch. 10
//     (recursive least squares, its Kalman form, forgetting);
//     L. Ljung, T. Söderström, Theory and Practice of Recursive
//     Identification, MIT Press, 1983; G. J. Bierman, Factorization Methods
//     for Discrete Sequential Estimation, Academic Press, 1977 (the
//     square-root information filter); D. Simon, Kalman filtering with
//     state constraints: a survey, IET Control Theory & Applications 4(8),
//     2010 (estimate projection).
//   - P. J. Huber, E. M. Ronchetti, Robust Statistics, 2nd ed., Wiley, 2009
//     (clipped residuals).
//   - J. Heinanen, R. Guerin, A Single Rate Three Color Marker, RFC 2697,
//     1999 (the token bucket): https://www.rfc-editor.org/rfc/rfc2697
//
// docs/admission.md explains the design and its choices.
package admission
