package capacity

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// fixed is a workload of identical requests.
type fixed struct {
	in, out       int
	ttftMs, itlMs float64
}

func (w fixed) Draw(_ *rand.Rand, r *Request) {
	r.Input, r.Output, r.TTFTMs, r.ITLMs, r.Sheddable = w.in, w.out, w.ttftMs, w.itlMs, true
}

// spread is a workload of uniformly spread token counts.
type spread struct {
	in, out       int
	ttftMs, itlMs float64
}

func (w spread) Draw(rng *rand.Rand, r *Request) {
	r.Input, r.Output = w.in/2+rng.IntN(w.in), w.out/2+rng.IntN(w.out)
	r.TTFTMs, r.ITLMs, r.Sheddable = w.ttftMs, w.itlMs, true
}

// linearServer runs one request at a time: a 100-token prompt's prefill
// takes β0 + 100·β1 = 11 ms, each decode β0 + β2 = 10.5 ms.
func linearServer() server.Config {
	return server.Config{KVBlocks: 1000, BlockSize: 16, MaxBatchSize: 1, MaxBatchedTokens: 2048, LatencyModel: server.LatencyLinear,
		Linear: server.LinearModel{Beta0: 10, Beta1: 0.01, Beta2: 0.5}}
}

// kvServer is KV-bound: 1 024 token slots hold two or three of the spread
// workload's requests (≈ 256 + 128 tokens each).
func kvServer() server.Config {
	return server.Config{KVBlocks: 64, BlockSize: 16, MaxBatchSize: 256, MaxBatchedTokens: 2048,
		Iteration: server.IterationModel{Alpha: 2, Beta: 0.001, Gamma: 0.00002}}
}

func quick() Settings {
	s := DefaultSettings()
	s.Requests, s.Bisections = 3000, 7
	return s
}

// TestMaxRateSerialServer: a server that runs one request at a time serves
// each of these in exactly 11 + 9 × 10.5 = 105.5 ms. Under evenly spaced
// arrivals nothing waits below 1/0.1055 = 9.479 requests/s, and above it
// the queue grows without end, so the capacity at 99 % within a 1-s TTFT
// is 9.479 requests/s to within the search's resolution; two replicas
// taking turns carry twice as much.
func TestMaxRateSerialServer(t *testing.T) {
	f := &Fleet{Server: linearServer(), Replicas: 1, Router: DefaultRouter(), Workload: fixed{100, 10, 1000, 1e6},
		Arrivals: Arrivals{Kind: "constant"}}
	got, err := MaxRate(context.Background(), f, 0.99, quick())
	if err != nil {
		t.Fatal(err)
	}
	want := 1 / 0.1055
	if math.Abs(got-want)/want > 0.02 {
		t.Errorf("one replica: %.3f requests/s, want %.3f ± 2 %%", got, want)
	}
	f.Replicas, f.Router.RoundRobin = 2, true
	got2, err := MaxRate(context.Background(), f, 0.99, quick())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got2-2*want)/(2*want) > 0.02 {
		t.Errorf("two replicas: %.3f requests/s, want %.3f ± 2 %%", got2, 2*want)
	}
}

// TestAnalyzeLightLoad: far below capacity no request waits, so every TTFT
// is the 11-ms prefill and every ITL the 10.5-ms decode step.
func TestAnalyzeLightLoad(t *testing.T) {
	f := &Fleet{Server: linearServer(), Replicas: 1, Router: DefaultRouter(), Workload: fixed{100, 10, 1000, 1e6},
		Arrivals: Arrivals{Kind: "constant"}}
	o, err := Analyze(context.Background(), f, 1, quick())
	if err != nil {
		t.Fatal(err)
	}
	if o.Arrived == 0 || o.Completed != o.Arrived || o.WithinSLO != o.Arrived || o.Attainment != 1 {
		t.Fatalf("outcome %+v: want every request completed within the SLO", o)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"TTFT p50", o.TTFT.P50, 11}, {"TTFT p99", o.TTFT.P99, 11}, {"ITL p50", o.ITL.P50, 10.5}, {"ITL max", o.ITL.Max, 10.5}} {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %g ms, want %g", c.name, c.got, c.want)
		}
	}
}

// TestPooling: behind a router, replicas share one queue's worth of
// luck — a request that would have waited behind a long one on its own
// replica goes to an idle one — so four replicas carry more than four
// times what one carries at the same attainment. (The queueing model, one
// queue per replica, said exactly four times.)
func TestPooling(t *testing.T) {
	f := &Fleet{Server: kvServer(), Replicas: 1, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	one, err := MaxRate(context.Background(), f, 0.95, quick())
	if err != nil {
		t.Fatal(err)
	}
	f.Replicas = 4
	four, err := MaxRate(context.Background(), f, 0.95, quick())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one replica %.3f requests/s, four %.3f (%.2f×)", one, four, four/one)
	if one <= 0 || four < 4.4*one {
		t.Errorf("one replica %.3f requests/s, four %.3f: want more than 4.4× (pooling)", one, four)
	}
}

// TestAttainmentBounds: light load meets the SLO for every request; far
// beyond capacity a run with a target stops early.
func TestAttainmentBounds(t *testing.T) {
	f := &Fleet{Server: kvServer(), Replicas: 2, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	o, err := Attainment(context.Background(), f, 0.05, 0, quick())
	if err != nil || o.Attainment != 1 || o.Stopped {
		t.Errorf("light load: %+v, %v; want attainment 1", o, err)
	}
	o, err = Attainment(context.Background(), f, 500, 0.9, quick())
	if err != nil || !o.Stopped || o.Attainment != 0 {
		t.Errorf("overload: %+v, %v; want a stopped run", o, err)
	}
}

// TestDeterministic: the seed decides a run; the same seed gives the same
// outcome.
func TestDeterministic(t *testing.T) {
	f := &Fleet{Server: kvServer(), Replicas: 3, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	set := quick()
	a, _ := Attainment(context.Background(), f, 8, 0, set)
	b, _ := Attainment(context.Background(), f, 8, 0, set)
	if a != b {
		t.Errorf("same seed, different outcomes: %+v and %+v", a, b)
	}
	set.Seed++
	c, _ := Attainment(context.Background(), f, 8, 0, set)
	if c.Arrived == a.Arrived && c.WithinSLO == a.WithinSLO {
		t.Errorf("another seed gave the same outcome %+v", c)
	}
}

// TestUnservable: requests longer than a replica's KV cache can hold fail
// at any rate, so the capacity is 0.
func TestUnservable(t *testing.T) {
	cfg := kvServer()
	cfg.KVBlocks = 8 // 128 slots
	f := &Fleet{Server: cfg, Replicas: 2, Router: DefaultRouter(), Workload: fixed{200, 10, 1000, 50}}
	got, err := MaxRate(context.Background(), f, 0.5, quick())
	if err != nil || got != 0 {
		t.Errorf("MaxRate = %g, %v; want 0", got, err)
	}
}

// TestSaturationHold: with the endpoint picker's saturation detector on,
// an overloaded fleet holds requests at the gateway, where those that wait
// past the timeout fail; without it nothing fails (requests queue on the
// replicas instead).
func TestSaturationHold(t *testing.T) {
	f := &Fleet{Server: kvServer(), Replicas: 1, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	set := quick()
	set.Requests = 500
	o, err := Attainment(context.Background(), f, 100, 0, set)
	if err != nil || o.Failed != 0 {
		t.Fatalf("without saturation: %+v, %v; want no failure", o, err)
	}
	f.Router.Saturation = &Saturation{QueueThreshold: 5, KVThreshold: 0.8}
	f.Router.TimeoutSeconds = 5
	o, err = Attainment(context.Background(), f, 100, 0, set)
	if err != nil || o.Failed == 0 || o.Completed+o.Failed != o.Arrived {
		t.Errorf("with saturation: %+v, %v; want timeouts at the gateway and every request accounted for", o, err)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &Fleet{Server: kvServer(), Replicas: 4, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	set := quick()
	set.Requests = 200_000
	if _, err := MaxRate(ctx, f, 0.99, set); !errors.Is(err, context.Canceled) {
		t.Errorf("MaxRate on a cancelled context: %v, want context.Canceled", err)
	}
}

func TestValidate(t *testing.T) {
	good := func() *Fleet {
		return &Fleet{Server: kvServer(), Replicas: 1, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	}
	for _, c := range []struct {
		name string
		edit func(f *Fleet, s *Settings)
		want string
	}{
		{"no workload", func(f *Fleet, _ *Settings) { f.Workload = nil }, "no workload"},
		{"no replicas", func(f *Fleet, _ *Settings) { f.Replicas = 0 }, "replicas"},
		{"too many replicas", func(f *Fleet, _ *Settings) { f.Replicas = MaxReplicas + 1 }, "replicas"},
		{"no KV", func(f *Fleet, _ *Settings) { f.Server.KVBlocks = 0 }, "kvBlocks"},
		{"no batch", func(f *Fleet, _ *Settings) { f.Server.MaxBatchSize = 0 }, "maxBatchSize"},
		{"no token budget", func(f *Fleet, _ *Settings) { f.Server.MaxBatchedTokens = 0 }, "maxBatchedTokens"},
		{"NaN alpha", func(f *Fleet, _ *Settings) { f.Server.Iteration.Alpha = math.NaN() }, "fixed cost"},
		{"free iterations", func(f *Fleet, _ *Settings) { f.Server.Iteration.Alpha = 0 }, "fixed cost"},
		{"negative gamma", func(f *Fleet, _ *Settings) { f.Server.Iteration.Gamma = -1 }, "coefficients"},
		{"infinite linear", func(f *Fleet, _ *Settings) {
			f.Server.LatencyModel, f.Server.Linear = server.LatencyLinear, server.LinearModel{Beta0: 1, Beta1: math.Inf(1)}
		}, "coefficients"},
		{"NaN weight", func(f *Fleet, _ *Settings) { f.Router.KV = math.NaN() }, "finite"},
		{"unknown arrivals", func(f *Fleet, _ *Settings) { f.Arrivals.Kind = "bursty" }, "arrivals"},
		{"gamma without CV", func(f *Fleet, _ *Settings) { f.Arrivals.Kind = "gamma" }, "coefficient of variation"},
		{"no requests", func(_ *Fleet, s *Settings) { s.Requests = 0 }, "requests"},
		{"endless runs", func(_ *Fleet, s *Settings) { s.MaxSeconds = math.Inf(1) }, "run length"},
		{"NaN drain", func(_ *Fleet, s *Settings) { s.DrainSeconds = math.NaN() }, "drainSeconds"},
		{"many bisections", func(_ *Fleet, s *Settings) { s.Bisections = 1000 }, "bisections"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, s := good(), quick()
			c.edit(f, &s)
			_, err := MaxRate(context.Background(), f, 0.9, s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one about %q", err, c.want)
			}
		})
	}
	for _, p := range []float64{0, -1, 1.5, math.NaN()} {
		if _, err := MaxRate(context.Background(), good(), p, quick()); err == nil {
			t.Errorf("attainment %g accepted", p)
		}
	}
	for _, r := range []float64{0, -1, math.Inf(1), math.NaN(), 1e9} {
		if _, err := Attainment(context.Background(), good(), r, 0, quick()); err == nil {
			t.Errorf("rate %g accepted", r)
		}
	}
}

// TestSettingsFor: runs long enough for about 1 500 misses at the target.
func TestSettingsFor(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want int
	}{{0.99, 150_000}, {0.95, 30_000}, {0.9, 15_000}, {0.5, 4000}, {0.99999, 200_000}, {1, 200_000}, {0, 4000}} {
		if got := SettingsFor(c.p).Requests; got != c.want {
			t.Errorf("SettingsFor(%g).Requests = %d, want %d", c.p, got, c.want)
		}
	}
}

// BenchmarkMaxRate is one search on a small KV-bound fleet.
func BenchmarkMaxRate(b *testing.B) {
	f := &Fleet{Server: kvServer(), Replicas: 4, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	for b.Loop() {
		if _, err := MaxRate(context.Background(), f, 0.95, quick()); err != nil {
			b.Fatal(err)
		}
	}
}
