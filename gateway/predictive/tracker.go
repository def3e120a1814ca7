package predictive

import (
	"context"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/requestcontrol"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// The plugin follows each request it lets through from its dispatch
// (PreRequest) to the end of its response (ResponseBody with EndOfStream,
// which the endpoint picker also sends when a request fails or its client
// goes away). From a streamed response it learns three things:
//
//   - until its first chunk, the request waits on its endpoint at its
//     priority: the per-priority queue the model servers do not export;
//   - the time to its first chunk is its TTFT, the calibrator's
//     observation, with the miss, ahead and step it was dispatched with;
//   - the time from its first chunk to its last over its completion tokens
//     is the endpoint's inter-token latency: its step time.
//
// A non-streamed response arrives whole, so it teaches none of them.

// maxEndpoints bounds the endpoints remembered; beyond it, those with no
// request in flight are forgotten (with their learned step time).
const maxEndpoints = 4096

// endpointState is what the plugin learned about one endpoint.
type endpointState struct {
	waiting  map[int]int // streamed requests without a first chunk, by priority
	inFlight int
	step     float64 // learned inter-token latency, seconds; 0: none yet
}

// flight is one request followed from dispatch to the end of its response.
type flight struct {
	endpoint    types.NamespacedName
	priority    int
	stream      bool
	sent        time.Time
	first, last time.Time
	chunks      int
	obs         admission.Observation // miss, ahead and step on dispatch
}

// PreRequest starts following the request on its primary endpoint.
func (e *engine) PreRequest(_ context.Context, req *fwksched.LLMRequest, result *fwksched.SchedulingResult) {
	if req == nil || req.RequestId == "" || result == nil {
		return
	}
	pr := result.ProfileResults[result.PrimaryProfileName]
	if pr == nil || len(pr.TargetEndpoints) == 0 {
		return
	}
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.flights[req.RequestId]; dup || len(e.flights) >= maxInFlight {
		return
	}
	ep := pr.TargetEndpoints[0]
	st := e.state(nameOf(ep))
	r := e.request(req)
	in := instance(0, ep, st.step)
	e.waits = queue{scraped: scrapedWaiting(ep), known: st.waiting}.appendWaiting(e.waits[:0], e.params.PriorityScheduling)
	in.Waiting = e.waits
	step := in.StepTime
	if step <= 0 {
		step = e.stepTime
	}
	f := &flight{endpoint: nameOf(ep), priority: r.Priority, stream: req.Body != nil && req.Body.Stream, sent: now,
		obs: admission.Observation{Miss: max(r.InputTokens-in.Cached, 0), Ahead: in.Ahead(r.Priority), StepTime: step}}
	e.flights[req.RequestId] = f
	st.inFlight++
	if f.stream {
		st.waiting[f.priority]++
	}
}

// ResponseBody learns from each chunk of a followed request's response.
func (e *engine) ResponseBody(_ context.Context, req *fwksched.LLMRequest, resp *requestcontrol.Response, _ *fwkdl.EndpointMetadata) {
	if req == nil || resp == nil {
		return
	}
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.flights[req.RequestId]
	if f == nil {
		return
	}
	st := e.state(f.endpoint)
	if f.chunks == 0 {
		f.first = now
		e.firstChunk(f, st, resp)
	}
	f.chunks++
	f.last = now
	if resp.EndOfStream {
		e.finish(req.RequestId, f, st, resp)
	}
}

// firstChunk ends the request's wait and, with calibration, observes its
// TTFT — unless the response failed or its first chunk was its last (an
// error, or a cancellation before any token).
func (e *engine) firstChunk(f *flight, st *endpointState, resp *requestcontrol.Response) {
	if !f.stream {
		return
	}
	e.unwait(f, st)
	if e.cal == nil || resp.EndOfStream || !succeeded(resp) {
		return
	}
	o := f.obs
	o.TTFT = f.first.Sub(f.sent).Seconds()
	if e.cal.Observe(o) {
		_ = e.pred.SetCoefficients(e.cal.Coefficients()) // a fit within its bounds; otherwise the model in use stays
	}
}

// finish stops following the request, after learning the endpoint's
// inter-token latency from a successful streamed response.
func (e *engine) finish(id string, f *flight, st *endpointState, resp *requestcontrol.Response) {
	if f.stream && succeeded(resp) {
		e.learnStep(f, st, resp.Usage.CompletionTokens)
	}
	delete(e.flights, id)
	st.inFlight--
	if len(e.endpoints) > maxEndpoints {
		e.prune()
	}
}

// maxTokensPerChunk bounds the completion tokens a response's usage may
// report per streamed chunk (speculative decoding sends a few tokens in a
// chunk; 64 is far above that): a usage beyond it is implausible, and the
// chunks are counted instead (a server reporting 10^9 tokens would
// otherwise teach a step time of almost nothing).
const maxTokensPerChunk = 64

// learnStep averages the response's inter-token latency into the
// endpoint's step time: the time from its first chunk to its last over its
// completion tokens (from the usage, else the chunks) less one.
func (e *engine) learnStep(f *flight, st *endpointState, tokens int) {
	intervals := f.chunks - 1
	if tokens > 1 && tokens <= maxTokensPerChunk*max(f.chunks, 1) {
		intervals = tokens - 1
	}
	if intervals <= 0 {
		return
	}
	itl := f.last.Sub(f.first).Seconds() / float64(intervals)
	if !(itl > 0) || math.IsInf(itl, 0) {
		return
	}
	if st.step == 0 {
		st.step = itl
		return
	}
	st.step += e.params.StepWeight * (itl - st.step)
}

func (e *engine) unwait(f *flight, st *endpointState) {
	if st.waiting[f.priority]--; st.waiting[f.priority] <= 0 {
		delete(st.waiting, f.priority)
	}
}

// state returns the endpoint's state, created when new.
func (e *engine) state(name types.NamespacedName) *endpointState {
	st := e.endpoints[name]
	if st == nil {
		st = &endpointState{waiting: map[int]int{}}
		e.endpoints[name] = st
	}
	return st
}

// prune forgets the endpoints with no request in flight.
func (e *engine) prune() {
	for name, st := range e.endpoints {
		if st.inFlight <= 0 {
			delete(e.endpoints, name)
		}
	}
}

// succeeded reports whether the response's status, when the endpoint
// picker passed it on, is a success.
func succeeded(resp *requestcontrol.Response) bool {
	s, ok := resp.Headers[":status"]
	return !ok || strings.HasPrefix(s, "2")
}
