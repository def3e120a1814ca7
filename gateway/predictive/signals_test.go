package predictive

import (
	"testing"

	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"

	"github.com/llm-d-incubation/wva/internal/admission"
)

func TestClassOf(t *testing.T) {
	tests := []struct {
		priority, critical int
		want               admission.Class
	}{
		{-1, 1, admission.Sheddable},
		{-100, 1, admission.Sheddable},
		{0, 1, admission.Standard},
		{1, 1, admission.Critical},
		{7, 1, admission.Critical},
		{4, 5, admission.Standard},
		{5, 5, admission.Critical},
	}
	for _, tt := range tests {
		if got := classOf(tt.priority, tt.critical); got != tt.want {
			t.Errorf("classOf(%d, critical %d) = %v, want %v", tt.priority, tt.critical, got, tt.want)
		}
	}
}

func TestPromptTokens(t *testing.T) {
	chat := &fwksched.LLMRequestBody{ChatCompletions: &fwksched.ChatCompletionsRequest{Messages: []fwksched.Message{
		{Role: "system", Content: fwksched.Content{Raw: "0123456789"}},
		{Role: "user", Content: fwksched.Content{Raw: "01234"}},
	}}}
	tests := []struct {
		name          string
		req           fwksched.LLMRequest
		charsPerToken float64
		want          int
	}{
		{"the tokenizer's count first", fwksched.LLMRequest{TokenizedPrompt: &fwksched.TokenizedPrompt{TokenIDs: make([]uint32, 37)},
			Body: request("r").tokens(1000).obj().Body}, 4, 37},
		{"a completion's characters over 4", *request("r").tokens(250).obj(), 4, 250},
		{"a chat's messages, rounded up", fwksched.LLMRequest{Body: chat}, 4, 5}, // "0123456789 01234 " is 17 characters
		{"another characters-per-token", *request("r").tokens(300).obj(), 3, 400},
		{"the body's size without a prompt", fwksched.LLMRequest{RequestSizeBytes: 4000}, 4, 1000},
		{"nothing", fwksched.LLMRequest{}, 4, 0},
		{"a vanishing characters-per-token", *request("r").tokens(1000).obj(), 1e-300, maxPromptTokens},
		{"the smallest characters-per-token", fwksched.LLMRequest{RequestSizeBytes: 1}, 5e-324, maxPromptTokens},
	}
	for _, tt := range tests {
		if got := promptTokens(&tt.req, tt.charsPerToken); got != tt.want {
			t.Errorf("%s: promptTokens = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestQueueAhead(t *testing.T) {
	tests := []struct {
		name       string
		q          queue
		byPriority bool
		priority   int
		want       int
	}{
		{"first come first served: everything waiting is ahead", queue{scraped: 5, known: map[int]int{-1: 3}}, false, 0, 5},
		{"first come first served: the known requests the scrape has not seen yet", queue{scraped: 2, known: map[int]int{0: 4}}, false, 0, 4},
		{"by priority: lower priorities are overtaken, the unknown rest is ahead",
			queue{scraped: 10, known: map[int]int{-1: 6, 2: 1}}, true, 0, 4},
		{"by priority: the same priority is ahead", queue{scraped: 10, known: map[int]int{-1: 6, 2: 1}}, true, -1, 10},
		{"by priority: a high priority overtakes every known request", queue{scraped: 10, known: map[int]int{-1: 6, 2: 1}}, true, 5, 3},
		{"by priority: a stale scrape", queue{scraped: 0, known: map[int]int{1: 2, -1: 4}}, true, 0, 2},
		{"nothing waiting", queue{}, true, 0, 0},
	}
	for _, tt := range tests {
		in := admission.Instance{Waiting: tt.q.appendWaiting(nil, tt.byPriority)}
		if got := in.Ahead(tt.priority); got != tt.want {
			t.Errorf("%s: ahead = %d, want %d (waiting %v)", tt.name, got, tt.want, in.Waiting)
		}
	}
}

func TestGroupOf(t *testing.T) {
	if groupOf("") != 0 {
		t.Error("an absent header must be no group")
	}
	a, b := groupOf("tenant-a"), groupOf("tenant-b")
	if a == 0 || b == 0 || a == b || a != groupOf("tenant-a") {
		t.Errorf("groups %d, %d: want distinct, stable and non-zero", a, b)
	}
}

func TestInstanceMapsTheEndpointsMetrics(t *testing.T) {
	ep := endpoint("pod-a").waiting(7).running(12).kv(0.42).cached(30, 16).obj()
	got := instance(3, ep, 0.025)
	want := admission.Instance{ID: 3, Running: 12, KVUtil: 0.42, StepTime: 0.025, Cached: 480}
	if got.ID != want.ID || got.Running != want.Running || got.KVUtil != want.KVUtil || got.StepTime != want.StepTime ||
		got.Cached != want.Cached || got.Waiting != nil {
		t.Errorf("instance = %+v, want %+v", got, want)
	}
	if n := scrapedWaiting(ep); n != 7 {
		t.Errorf("scraped waiting = %d, want 7", n)
	}
	bare := fwksched.NewEndpoint(&fwkdl.EndpointMetadata{}, nil, nil)
	if in := instance(0, bare, 0); in.Running != 0 || in.Cached != 0 || scrapedWaiting(bare) != 0 {
		t.Errorf("an endpoint without metrics or attributes: %+v", in)
	}
}
