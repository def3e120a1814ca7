package predictive

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	errcommon "sigs.k8s.io/gateway-api-inference-extension/pkg/common/error"
	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"

	"github.com/llm-d-incubation/wva/internal/admission"
)

// With the default coefficients (β0 = 6.91 ms, β1 = 17.67 µs per token,
// one 7 ms step per request ahead), a 1 000-token prompt on an idle
// endpoint is estimated at 24.6 ms, behind 50 waiting requests at 374.6 ms
// — over the sheddable budget (0.3 s), within the standard one (0.5 s) —
// and behind 80 at 584.6 ms, over both. A 20 000-token prompt needs
// 360 ms of prefill alone.

var decisions = []struct {
	name   string
	params Parameters
	req    *fwksched.LLMRequest
	eps    []fwksched.Endpoint
	want   []string // the endpoints kept; none: rejected
}{
	{"admits a standard request that fits everywhere", Parameters{},
		request("r").tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").obj(), endpoint("pod-b").waiting(3).obj()},
		[]string{"pod-a", "pod-b"}},
	{"rejects a sheddable request over its budget everywhere", Parameters{},
		request("r").priority(-1).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(50).obj(), endpoint("pod-b").waiting(60).obj()},
		nil},
	{"admits a standard request where the sheddable one is shed", Parameters{},
		request("r").tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(50).obj(), endpoint("pod-b").waiting(60).obj()},
		[]string{"pod-a", "pod-b"}},
	{"keeps only the endpoints where the request fits", Parameters{},
		request("r").priority(-1).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(10).obj(), endpoint("pod-b").waiting(50).obj(), endpoint("pod-c").obj()},
		[]string{"pod-a", "pod-c"}},
	{"never rejects a critical request, and keeps every endpoint when none fits", Parameters{},
		request("r").priority(1).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(100).obj(), endpoint("pod-b").waiting(200).obj()},
		[]string{"pod-a", "pod-b"}},
	{"criticalPriority moves the critical class up", Parameters{CriticalPriority: 5},
		request("r").priority(4).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(100).obj()},
		nil},
	{"a cached prefix makes a long prompt fit where it is cached", Parameters{},
		request("r").priority(-1).tokens(20000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").obj(), endpoint("pod-b").cached(1200, 16).obj()},
		[]string{"pod-b"}},
	{"a long prompt cached nowhere is shed", Parameters{},
		request("r").priority(-1).tokens(20000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").obj(), endpoint("pod-b").cached(10, 16).obj()},
		nil},
	{"the KV limit skips full endpoints for a non-critical request", Parameters{Predictive: admission.PredictiveConfig{KVLimit: 0.8}},
		request("r").priority(-1).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").kv(0.9).obj(), endpoint("pod-b").kv(0.5).waiting(50).obj()},
		nil},
	{"the KV limit sheds when every endpoint is full", Parameters{Predictive: admission.PredictiveConfig{KVLimit: 0.8}},
		request("r").tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").kv(0.8).obj(), endpoint("pod-b").kv(0.95).obj()},
		nil},
	{"the KV limit keeps the endpoints below it", Parameters{Predictive: admission.PredictiveConfig{KVLimit: 0.8}},
		request("r").tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").kv(0.85).obj(), endpoint("pod-b").kv(0.5).obj()},
		[]string{"pod-b"}},
	{"the KV limit does not apply to a critical request", Parameters{Predictive: admission.PredictiveConfig{KVLimit: 0.8}},
		request("r").priority(2).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").kv(0.85).obj(), endpoint("pod-b").kv(0.9).obj()},
		[]string{"pod-a", "pod-b"}},
	{"the headroom widens every budget", Parameters{Predictive: admission.PredictiveConfig{Headroom: 1.5}},
		request("r").priority(-1).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(50).obj()},
		[]string{"pod-a"}},
	{"the fairness floor admits a new group's first request on every endpoint",
		Parameters{Fairness: &admission.FloorConfig{}},
		request("r").priority(-1).tokens(1000).header(DefaultGroupHeader, "tenant-a").obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(50).obj(), endpoint("pod-b").waiting(60).obj()},
		[]string{"pod-a", "pod-b"}},
}

func TestFilterDecisions(t *testing.T) {
	for _, tt := range decisions {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFilter(t, tt.params, newClock())
			got := names(f.Filter(context.Background(), fwksched.NewCycleState(), tt.req, tt.eps))
			if !slices.Equal(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdmitterDecisions(t *testing.T) {
	for _, tt := range decisions {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewAdmitter("test", tt.params)
			if err != nil {
				t.Fatal(err)
			}
			err = a.AdmitRequest(context.Background(), tt.req, tt.eps)
			if admitted := err == nil; admitted != (len(tt.want) > 0) {
				t.Fatalf("AdmitRequest = %v, want admitted %v", err, len(tt.want) > 0)
			}
			var e errcommon.Error
			if err != nil && (!errors.As(err, &e) || e.Code != errcommon.ResourceExhausted || !strings.HasPrefix(e.Msg, "reject ")) {
				t.Errorf("rejection %#v, want a ResourceExhausted error naming the decision", err)
			}
		})
	}
}

func TestFilterPassesEmptyInput(t *testing.T) {
	f := newTestFilter(t, Parameters{}, newClock())
	if got := f.Filter(context.Background(), nil, request("r").obj(), nil); len(got) != 0 {
		t.Errorf("Filter(no endpoints) = %v", got)
	}
	eps := []fwksched.Endpoint{endpoint("pod-a").obj()}
	if got := f.Filter(context.Background(), nil, nil, eps); len(got) != 1 {
		t.Errorf("Filter(nil request) = %v, want the endpoints unchanged", got)
	}
}

func TestAdmitterRejectionNamesTheDecision(t *testing.T) {
	a, err := NewAdmitter("test", Parameters{})
	if err != nil {
		t.Fatal(err)
	}
	err = a.AdmitRequest(context.Background(), request("r").priority(-1).tokens(1000).obj(),
		[]fwksched.Endpoint{endpoint("pod-a").waiting(50).obj()})
	want := "inference error: ResourceExhausted - reject sheddable: over-budget (estimate 0.3746 s > budget 0.3 s, instance 0)"
	if err == nil || err.Error() != want {
		t.Errorf("AdmitRequest = %v, want %s", err, want)
	}
}
