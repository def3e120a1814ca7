package predictive

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/requestcontrol"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"
	attrprefix "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/attribute/prefix"
)

// Builders of the endpoint picker's own types, for the tests.

type endpointBuilder struct {
	meta    fwkdl.EndpointMetadata
	metrics fwkdl.Metrics
	attrs   fwkdl.AttributeMap
}

func endpoint(pod string) *endpointBuilder {
	return &endpointBuilder{meta: fwkdl.EndpointMetadata{NamespacedName: types.NamespacedName{Namespace: "ns", Name: pod},
		PodName: pod, Address: "10.0.0." + pod[len(pod)-1:], Port: "8000"}, attrs: fwkdl.NewAttributes()}
}

func (b *endpointBuilder) waiting(n int) *endpointBuilder { b.metrics.WaitingQueueSize = n; return b }
func (b *endpointBuilder) running(n int) *endpointBuilder {
	b.metrics.RunningRequestsSize = n
	return b
}
func (b *endpointBuilder) kv(u float64) *endpointBuilder { b.metrics.KVCacheUsagePercent = u; return b }

// cached puts the approximate prefix producer's match on the endpoint.
func (b *endpointBuilder) cached(blocks, blockSize int) *endpointBuilder {
	b.attrs.Put(attrprefix.PrefixCacheMatchInfoKey, attrprefix.NewPrefixCacheMatchInfo(blocks, blocks, blockSize))
	return b
}

func (b *endpointBuilder) obj() fwksched.Endpoint {
	m := b.metrics
	m.UpdateTime = time.Now()
	return fwksched.NewEndpoint(&b.meta, &m, b.attrs)
}

func (b *endpointBuilder) server() *fwkdl.ModelServer {
	m := b.metrics
	m.UpdateTime = time.Now()
	return fwkdl.NewEndpoint(&b.meta, &m)
}

type requestBuilder struct{ r fwksched.LLMRequest }

func request(id string) *requestBuilder {
	return &requestBuilder{r: fwksched.LLMRequest{RequestId: id, TargetModel: "m", Headers: map[string]string{}}}
}

func (b *requestBuilder) priority(p int) *requestBuilder { b.r.Objectives.Priority = p; return b }

// tokens gives the request a completions prompt of n tokens at the
// default 4 characters per token.
func (b *requestBuilder) tokens(n int) *requestBuilder {
	if b.r.Body == nil {
		b.r.Body = &fwksched.LLMRequestBody{}
	}
	b.r.Body.Completions = &fwksched.CompletionsRequest{Prompt: fwksched.Prompt{Raw: strings.Repeat("abcd", n)}}
	return b
}

func (b *requestBuilder) stream() *requestBuilder {
	if b.r.Body == nil {
		b.r.Body = &fwksched.LLMRequestBody{}
	}
	b.r.Body.Stream = true
	return b
}

func (b *requestBuilder) header(k, v string) *requestBuilder { b.r.Headers[k] = v; return b }

func (b *requestBuilder) obj() *fwksched.LLMRequest { r := b.r; return &r }

// scheduled is a scheduling result that sends the request to ep.
func scheduled(ep fwksched.Endpoint) *fwksched.SchedulingResult {
	return &fwksched.SchedulingResult{PrimaryProfileName: "default",
		ProfileResults: map[string]*fwksched.ProfileRunResult{"default": {TargetEndpoints: []fwksched.Endpoint{ep}}}}
}

// chunk is a response body chunk; usage is the completion tokens reported
// with the last one (0: none).
func chunk(id string, last bool, usage int) *requestcontrol.Response {
	return &requestcontrol.Response{RequestId: id, Headers: map[string]string{":status": "200"}, EndOfStream: last,
		Usage: requestcontrol.Usage{CompletionTokens: usage}}
}

// fakeClock is a settable clock for the engine.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock                   { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func seconds(s float64) time.Duration        { return time.Duration(s * float64(time.Second)) }

// names are the endpoints' pods, in order.
func names(eps []fwksched.Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, e := range eps {
		out = append(out, e.GetMetadata().PodName)
	}
	return out
}

// newTestFilter is a filter on the fake clock.
func newTestFilter(t *testing.T, p Parameters, c *fakeClock) *Filter {
	t.Helper()
	f, err := NewFilter("test", p)
	if err != nil {
		t.Fatalf("NewFilter: %v", err)
	}
	f.now, f.start = c.now, c.now()
	return f
}
