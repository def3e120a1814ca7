// Package predictive runs WVA's predictive TTFT-budget admission policy
// (internal/admission) inside the Gateway API Inference Extension's
// endpoint picker (EPP), v1.5.0, as two plugin types:
//
//   - wva-predictive-filter, a scheduling Filter: a request the policy
//     rejects loses every endpoint and the endpoint picker answers 429; an
//     admitted one keeps the endpoints where it meets its budget;
//   - wva-predictive-admitter, an AdmissionPlugin: the same decision at the
//     admission extension point, which the endpoint picker v1.5.0 answers
//     with 500 when it rejects.
//
// Both follow the requests they let through (PreRequest, ResponseBody) to
// learn what the endpoint picker's metrics lack: the per-priority wait on
// each endpoint, each endpoint's inter-token latency (its step time), and,
// with calibration on, the TTFT coefficients from the streamed responses'
// time to first chunk.
//
// The mapping: the InferenceObjective priority gives the class (negative
// sheddable, criticalPriority and above critical, standard between) and
// the priority; the tokenized prompt, or the prompt's characters over
// charsPerToken, the prompt length; the approximate prefix-cache producer's
// PrefixCacheMatchInfo the cached prefix; the scraped metrics the waiting
// queue, running batch and KV utilisation. docs/gateway.md explains the
// configuration and the approximations.
package predictive
