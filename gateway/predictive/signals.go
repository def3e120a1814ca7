package predictive

import (
	"math"

	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"
	attrprefix "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/attribute/prefix"
	requtil "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/util/request"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// This file maps what the endpoint picker knows about a request and its
// candidate endpoints to internal/admission's Request and Instance.

// unknownPriority is the priority given to waiting requests whose priority
// the plugin does not know: the highest, so that every arrival counts them
// as ahead.
const unknownPriority = math.MaxInt

// classOf maps an InferenceObjective priority to an SLO class: negative is
// sheddable (the endpoint picker's own rule, requtil.IsSheddable), at least
// critical is critical, standard otherwise.
func classOf(priority, critical int) admission.Class {
	switch {
	case requtil.IsSheddable(priority):
		return admission.Sheddable
	case priority >= critical:
		return admission.Critical
	}
	return admission.Standard
}

// maxPromptTokens bounds promptTokens' estimate: 2⁵³, a float64's whole
// numbers, and far beyond any model's context.
const maxPromptTokens = 1 << 53

// promptTokens is the request's prompt length: the tokenizer's count when
// the endpoint picker tokenized the prompt, else its characters (or, without
// a parsed body, the body's bytes) over charsPerToken, rounded up, at most
// maxPromptTokens.
func promptTokens(req *fwksched.LLMRequest, charsPerToken float64) int {
	if req.TokenizedPrompt != nil {
		return len(req.TokenizedPrompt.TokenIDs)
	}
	chars := req.RequestSizeBytes
	if req.Body != nil {
		if text := req.Body.PromptText(); text != "" {
			chars = len(text)
		}
	}
	// A charsPerToken of 1e-300 passes validation, and makes the quotient
	// exceed every int; Go converts such a float to an implementation-
	// defined int — math.MinInt64 on amd64 — and a huge prompt was read
	// as a negative one, estimated at no cache miss at all (FuzzParameters).
	return int(math.Min(math.Ceil(float64(max(chars, 0))/charsPerToken), maxPromptTokens))
}

// cachedTokens is the prefix of the request's prompt that ep is estimated
// to hold, from the endpoint picker's approximate prefix-cache producer
// (approx-prefix-cache-producer, which every prefix-cache-scorer brings
// along); 0 when it is not configured.
func cachedTokens(ep fwksched.Endpoint) int {
	raw, ok := ep.Get(attrprefix.PrefixCacheMatchInfoKey)
	if !ok {
		return 0
	}
	info, ok := raw.(*attrprefix.PrefixCacheMatchInfo)
	if !ok || info == nil {
		return 0
	}
	return info.MatchBlocks() * info.BlockSizeTokens()
}

// queue is one endpoint's waiting requests as the plugin reconstructs them:
// the model server's waiting-queue size (scraped, no priorities), and the
// streamed requests this endpoint picker sent there that have not yet
// produced their first token, by priority.
type queue struct {
	scraped int
	known   map[int]int // priority → requests
}

// appendWaiting appends the queue to dst as admission.Waiting. Without
// priority scheduling on the servers, every waiting request runs first
// whatever its priority: one entry of the unknown priority. With it, the
// known requests keep their priority and the rest of the scraped queue
// (requests of other gateways, or sent since the last scrape the other way
// round) counts as ahead of every arrival.
func (q queue) appendWaiting(dst []admission.Waiting, byPriority bool) []admission.Waiting {
	known := 0
	for _, n := range q.known {
		known += n
	}
	if !byPriority {
		if n := max(q.scraped, known); n > 0 {
			dst = append(dst, admission.Waiting{Priority: unknownPriority, Count: n})
		}
		return dst
	}
	for p, n := range q.known {
		if n > 0 {
			dst = append(dst, admission.Waiting{Priority: p, Count: n})
		}
	}
	if rest := q.scraped - known; rest > 0 {
		dst = append(dst, admission.Waiting{Priority: unknownPriority, Count: rest})
	}
	return dst
}

// instance maps an endpoint to an Instance, without its Waiting (the caller
// fills it from the endpoint's queue). step is the endpoint's learned step
// time, 0 when none.
func instance(id int, ep fwksched.Endpoint, step float64) admission.Instance {
	in := admission.Instance{ID: id, StepTime: step, Cached: cachedTokens(ep)}
	if m := ep.GetMetrics(); m != nil {
		in.Running, in.KVUtil = m.RunningRequestsSize, m.KVCacheUsagePercent
	}
	return in
}

// scrapedWaiting is the endpoint's waiting-queue size from its metrics.
func scrapedWaiting(ep fwksched.Endpoint) int {
	if m := ep.GetMetrics(); m != nil {
		return max(m.WaitingQueueSize, 0)
	}
	return 0
}

// groupOf hashes the header value into a prefix group (FNV-1a, 64 bits);
// "" is no group, and 0 is remapped to 1 since it means none.
func groupOf(value string) uint64 {
	if value == "" {
		return 0
	}
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(value); i++ {
		h ^= uint64(value[i])
		h *= prime
	}
	return max(h, 1)
}
