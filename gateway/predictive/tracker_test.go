package predictive

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	fwksched "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/scheduling"

	"github.com/llm-d-incubation/wva/internal/admission"
)

var ctx = context.Background()

// stream sends req to ep and answers it: the first chunk after ttft, then
// tokens-1 more chunks itl apart, the last with the usage.
func stream(f *Filter, c *fakeClock, req *fwksched.LLMRequest, ep fwksched.Endpoint, ttft, itl time.Duration, tokens int) {
	f.PreRequest(ctx, req, scheduled(ep))
	c.advance(ttft)
	f.ResponseBody(ctx, req, chunk(req.RequestId, false, 0), nil)
	for i := 1; i < tokens; i++ {
		c.advance(itl)
		f.ResponseBody(ctx, req, chunk(req.RequestId, i == tokens-1, tokens), nil)
	}
}

func TestLowerPriorityWaitingIsIgnoredWithPriorityScheduling(t *testing.T) {
	for _, byPriority := range []bool{false, true} {
		t.Run(fmt.Sprintf("priorityScheduling=%v", byPriority), func(t *testing.T) {
			c := newClock()
			f := newTestFilter(t, Parameters{PriorityScheduling: byPriority}, c)
			// 80 streamed sheddable requests sent to pod-a, none answered yet:
			// the server reports them waiting.
			for i := range 80 {
				f.PreRequest(ctx, request(fmt.Sprint("shed-", i)).priority(-1).stream().obj(), scheduled(endpoint("pod-a").obj()))
			}
			podA := endpoint("pod-a").waiting(80).obj()
			std := request("std").tokens(1000).obj()
			kept := f.Filter(ctx, nil, std, []fwksched.Endpoint{podA})
			// Behind 80 requests a standard request is estimated at 584.6 ms,
			// over its 0.5 s budget; ahead of them, at 24.6 ms.
			if admitted := len(kept) > 0; admitted != byPriority {
				t.Errorf("standard request behind 80 sheddable ones: admitted %v, want %v", admitted, byPriority)
			}
			// Another sheddable request waits behind them in both modes.
			if kept := f.Filter(ctx, nil, request("shed").priority(-1).tokens(1000).obj(), []fwksched.Endpoint{podA}); len(kept) > 0 {
				t.Error("a sheddable request behind 80 sheddable ones was admitted")
			}
		})
	}
}

func TestWaitEndsAtTheFirstChunk(t *testing.T) {
	c := newClock()
	f := newTestFilter(t, Parameters{PriorityScheduling: true}, c)
	pod := endpoint("pod-a").obj()
	streamed, whole := request("s").priority(2).stream().obj(), request("w").priority(2).obj()
	f.PreRequest(ctx, streamed, scheduled(pod))
	f.PreRequest(ctx, whole, scheduled(pod))
	f.PreRequest(ctx, streamed, scheduled(pod)) // a duplicate is ignored
	if got := f.known("pod-a"); got[2] != 1 || len(f.flights) != 2 {
		t.Fatalf("after dispatch: waiting %v, %d followed; want the streamed request waiting, both followed", got, len(f.flights))
	}
	c.advance(100 * time.Millisecond)
	f.ResponseBody(ctx, streamed, chunk("s", false, 0), nil)
	if got := f.known("pod-a"); len(got) != 0 {
		t.Errorf("after the first chunk: waiting %v, want none", got)
	}
	f.ResponseBody(ctx, streamed, chunk("s", true, 1), nil)
	f.ResponseBody(ctx, whole, chunk("w", true, 100), nil)
	f.ResponseBody(ctx, request("unknown").obj(), chunk("unknown", true, 0), nil)
	if len(f.flights) != 0 || f.endpoints[nameOf(pod)].inFlight != 0 {
		t.Errorf("after the responses: %d followed, %d in flight; want none", len(f.flights), f.endpoints[nameOf(pod)].inFlight)
	}
}

func TestCancelledStreamStopsWaiting(t *testing.T) {
	c := newClock()
	f := newTestFilter(t, Parameters{Calibrate: true}, c)
	req := request("s").stream().obj()
	f.PreRequest(ctx, req, scheduled(endpoint("pod-a").obj()))
	c.advance(30 * time.Second)
	// The endpoint picker's cleanup when the client goes away: one call,
	// end of stream, no body.
	f.ResponseBody(ctx, req, chunk("s", true, 0), nil)
	if len(f.known("pod-a")) != 0 || len(f.flights) != 0 {
		t.Errorf("waiting %v, %d followed; want none", f.known("pod-a"), len(f.flights))
	}
	if fit := f.cal.Fit(); fit.Used != 0 {
		t.Errorf("a cancelled request was observed: %+v", fit)
	}
	if st := f.endpoints[nameOf(endpoint("pod-a").obj())]; st.step != 0 {
		t.Errorf("a cancelled request taught the step time %v", st.step)
	}
}

func TestStepTimeIsLearnedFromStreamedResponses(t *testing.T) {
	c := newClock()
	f := newTestFilter(t, Parameters{}, c)
	pod := endpoint("pod-a")
	stream(f, c, request("r1").stream().obj(), pod.obj(), 100*time.Millisecond, 20*time.Millisecond, 50)
	if got := f.endpoints[nameOf(pod.obj())].step; math.Abs(got-0.020) > 1e-9 {
		t.Fatalf("step after one response = %v, want 0.020", got)
	}
	// Behind 14 requests, a sheddable request is estimated at 122.6 ms on
	// the default 7 ms step, at 304.6 ms on the learned 20 ms one: shed.
	shed := request("shed").priority(-1).tokens(1000).obj()
	if kept := f.Filter(ctx, nil, shed, []fwksched.Endpoint{pod.waiting(14).obj()}); len(kept) != 0 {
		t.Error("admitted behind 14 requests of a 20 ms step")
	}
	if kept := f.Filter(ctx, nil, shed, []fwksched.Endpoint{endpoint("pod-b").waiting(14).obj()}); len(kept) != 1 {
		t.Error("shed behind 14 requests of the default step")
	}
	// The next response moves it by stepWeight (0.2) towards its own.
	stream(f, c, request("r2").stream().obj(), pod.obj(), 100*time.Millisecond, 30*time.Millisecond, 11)
	if got := f.endpoints[nameOf(pod.obj())].step; math.Abs(got-0.022) > 1e-9 {
		t.Errorf("step after two responses = %v, want 0.022", got)
	}
	// Without usage, the chunks are counted; a failed response teaches nothing.
	failed := request("r3").stream().obj()
	f.PreRequest(ctx, failed, scheduled(pod.obj()))
	f.ResponseBody(ctx, failed, chunk("r3", false, 0), nil)
	c.advance(time.Second)
	resp := chunk("r3", true, 0)
	resp.Headers[":status"] = "503"
	f.ResponseBody(ctx, failed, resp, nil)
	if got := f.endpoints[nameOf(pod.obj())].step; math.Abs(got-0.022) > 1e-9 {
		t.Errorf("step after a failed response = %v, want 0.022", got)
	}
}

// TestImplausibleUsageIgnored: a usage of far more completion tokens than
// the chunks could carry is not believed; the chunks are counted.
func TestImplausibleUsageIgnored(t *testing.T) {
	c := newClock()
	f := newTestFilter(t, Parameters{}, c)
	pod := endpoint("pod-a")
	req := request("r").stream().obj()
	f.PreRequest(ctx, req, scheduled(pod.obj()))
	c.advance(100 * time.Millisecond)
	f.ResponseBody(ctx, req, chunk("r", false, 0), nil)
	for i := 1; i < 11; i++ {
		c.advance(30 * time.Millisecond)
		f.ResponseBody(ctx, req, chunk("r", i == 10, 1_000_000_000), nil)
	}
	if got := f.endpoints[nameOf(pod.obj())].step; math.Abs(got-0.030) > 1e-9 {
		t.Errorf("step = %v, want the chunks' 0.030", got)
	}
}

// TestCalibrationLearnsTheServersCoefficients runs the plugin against a
// server whose TTFT follows the model with coefficients 2–3× the defaults
// and 2 ms of noise: the calibrated coefficients end within 5 % of them,
// and the plugin's decisions follow.
func TestCalibrationLearnsTheServersCoefficients(t *testing.T) {
	truth := admission.Coefficients{Beta0: 0.02, Beta1: 40e-6, Queue: 1.5}
	const step = 7 * time.Millisecond
	c := newClock()
	f := newTestFilter(t, Parameters{Calibrate: true}, c)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		n, w := rng.IntN(4000), rng.IntN(20)
		req := request(fmt.Sprint("r", i)).tokens(n).stream().obj()
		ttft := truth.TTFT(n, w, step.Seconds()) + 0.002*rng.NormFloat64()
		stream(f, c, req, endpoint("pod-a").waiting(w).obj(), seconds(max(ttft, 0)), step, 2)
	}
	got := f.Coefficients()
	for _, p := range []struct {
		name      string
		got, want float64
	}{{"beta0", got.Beta0, truth.Beta0}, {"beta1", got.Beta1, truth.Beta1}, {"queue", got.Queue, truth.Queue}} {
		if math.Abs(p.got/p.want-1) > 0.05 {
			t.Errorf("%s = %v, want %v within 5 %%", p.name, p.got, p.want)
		}
	}
	if fit := f.cal.Fit(); fit.Used != 3000 {
		t.Errorf("observations used: %+v, want 3000", fit)
	}
	// A 3 000-token sheddable request behind 18 requests is now estimated
	// at 0.02 + 0.12 + 1.5·18·0.007 = 0.329 s, over its 0.3 s budget (by the
	// defaults, 0.186 s); behind 13, at 0.2765 s, within it.
	shed := request("shed").priority(-1).tokens(3000).obj()
	if kept := f.Filter(ctx, nil, shed, []fwksched.Endpoint{endpoint("pod-a").waiting(13).obj()}); len(kept) != 1 {
		t.Error("shed behind 13 requests")
	}
	if kept := f.Filter(ctx, nil, shed, []fwksched.Endpoint{endpoint("pod-a").waiting(18).obj()}); len(kept) != 0 {
		t.Error("admitted behind 18 requests")
	}
}

func TestNoCalibrationKeepsTheCoefficients(t *testing.T) {
	c := newClock()
	f := newTestFilter(t, Parameters{}, c)
	stream(f, c, request("r").tokens(1000).stream().obj(), endpoint("pod-a").obj(), time.Second, 10*time.Millisecond, 3)
	if got := f.Coefficients(); got != admission.DefaultCoefficients {
		t.Errorf("coefficients = %+v, want the defaults", got)
	}
}

// known is the plugin's per-priority wait on the pod.
func (e *engine) known(pod string) map[int]int {
	if st := e.endpoints[nameOf(endpoint(pod).obj())]; st != nil {
		return st.waiting
	}
	return nil
}

// TestConcurrentRequests drives the plugin from many goroutines, as the
// endpoint picker does (run with -race): every request is decided,
// followed and forgotten, and every streamed one observed once.
func TestConcurrentRequests(t *testing.T) {
	f, err := NewFilter("test", Parameters{Calibrate: true, PriorityScheduling: true})
	if err != nil {
		t.Fatal(err)
	}
	eps := []fwksched.Endpoint{endpoint("pod-a").waiting(2).obj(), endpoint("pod-b").obj()}
	const workers, each = 8, 100
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				req := request(fmt.Sprint("w", w, "-", i)).priority(i%3 - 1).tokens(100).stream().obj()
				kept := f.Filter(ctx, nil, req, eps)
				f.PreRequest(ctx, req, scheduled(kept[i%len(kept)]))
				for j := range 3 {
					f.ResponseBody(ctx, req, chunk(req.RequestId, j == 2, 3), nil)
				}
			}
		}()
	}
	for range workers {
		<-done
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.flights) != 0 || len(f.known("pod-a")) != 0 || len(f.known("pod-b")) != 0 {
		t.Errorf("%d requests still followed, waiting %v and %v", len(f.flights), f.known("pod-a"), f.known("pod-b"))
	}
	if fit := f.cal.Fit(); fit.Used+fit.Ignored != workers*each {
		t.Errorf("calibrator saw %d observations, want %d", fit.Used+fit.Ignored, workers*each)
	}
}
