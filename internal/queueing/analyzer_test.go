package queueing

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func mustAnalyzer(t testing.TB, c Config) *Analyzer {
	t.Helper()
	a, err := NewAnalyzer(c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// llama is a typical iteration-model replica: an 8B model on one H100-class
// GPU with 1k-token prompts and 256-token answers.
func llama(n int) Config {
	return Config{
		Model:        Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5},
		Workload:     Workload{InputTokens: 1024, OutputTokens: 256},
		MaxBatchSize: n,
		MaxQueueSize: DefaultMaxQueueSize,
	}
}

func TestModelFormulas(t *testing.T) {
	w := Workload{InputTokens: 100, OutputTokens: 9}
	it := Iteration{Alpha: 2, Beta: 0.5, Gamma: 0.01}
	// δ̄ = 0.5·109/10 + 0.01·(100 + 4.5) = 5.45 + 1.045 = 6.495
	if got := it.Work(w); !closeTo(got, 6.495, 1e-15) {
		t.Errorf("δ̄ = %v, want 6.495", got)
	}
	// prefill(2) = 2 + 2·6.495 + 0.51·100 = 65.99; decode(2) = 14.99 + 0.5 + 0.01·105 = 16.54
	if got := it.Prefill(w, 2); !closeTo(got, 65.99, 1e-14) {
		t.Errorf("prefill(2) = %v, want 65.99", got)
	}
	if got := it.Decode(w, 2); !closeTo(got, 16.54, 1e-14) {
		t.Errorf("decode(2) = %v, want 16.54", got)
	}
	if got := it.ServiceTime(w, 2); !closeTo(got, 65.99+9*16.54, 1e-14) {
		t.Errorf("τ(2) = %v, want %v", got, 65.99+9*16.54)
	}
	lin := Linear{Alpha: 3, Beta: 0.2, Gamma: 10, Delta: 0.001}
	// prefill(4) = 10 + 0.001·100·4 = 10.4; decode(4) = 3.8; τ(4) = 10.4 + 8·3.8
	if got := lin.ServiceTime(w, 4); !closeTo(got, 10.4+8*3.8, 1e-14) {
		t.Errorf("linear τ(4) = %v, want %v", got, 10.4+8*3.8)
	}
	if got := lin.Prefill(Workload{OutputTokens: 5}, 4); got != 0 {
		t.Errorf("linear prefill without input tokens = %v, want 0", got)
	}
	// Linear latencies at S = τ(3): n_eff = 3, so ITL = decode(3), TTFT = W + prefill(3).
	s := State{ServTime: lin.ServiceTime(w, 3), Wait: 1.5, AvgBatch: 2.2}
	ttft, itl := lin.Latencies(w, s, 8)
	if !closeTo(ttft, 1.5+lin.Prefill(w, 3), 1e-12) || !closeTo(itl, lin.Decode(3), 1e-12) {
		t.Errorf("linear latencies = %v, %v; want %v, %v", ttft, itl, 1.5+lin.Prefill(w, 3), lin.Decode(3))
	}
}

func TestValidation(t *testing.T) {
	good := Workload{InputTokens: 10, OutputTokens: 10}
	for _, tc := range []struct {
		name  string
		cfg   Config
		param string
	}{
		{"zero alpha", Config{Model: Iteration{Alpha: 0, Beta: 1}, Workload: good, MaxBatchSize: 1}, "alpha"},
		{"NaN beta", Config{Model: Iteration{Alpha: 1, Beta: math.NaN()}, Workload: good, MaxBatchSize: 1}, "beta"},
		{"negative gamma", Config{Model: Iteration{Alpha: 1, Gamma: -1}, Workload: good, MaxBatchSize: 1}, "gamma"},
		{"infinite delta", Config{Model: Linear{Alpha: 1, Gamma: 1, Delta: math.Inf(1)}, Workload: good, MaxBatchSize: 1}, "delta"},
		{"zero linear gamma", Config{Model: Linear{Alpha: 1, Gamma: 0}, Workload: good, MaxBatchSize: 1}, "gamma"},
		{"no batch", Config{Model: Iteration{Alpha: 1}, Workload: good, MaxBatchSize: 0}, "max-batch-size"},
		{"negative queue", Config{Model: Iteration{Alpha: 1}, Workload: good, MaxBatchSize: 4, MaxQueueSize: -1}, "max-queue-size"},
		{"no output", Config{Model: Iteration{Alpha: 1}, Workload: Workload{InputTokens: 5}, MaxBatchSize: 4}, "output-tokens"},
		{"negative input", Config{Model: Iteration{Alpha: 1}, Workload: Workload{InputTokens: -5, OutputTokens: 2}, MaxBatchSize: 4}, "input-tokens"},
		{"linear with nothing to do", Config{Model: Linear{Alpha: 1, Gamma: 1}, Workload: Workload{OutputTokens: 1}, MaxBatchSize: 4}, "output-tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAnalyzer(tc.cfg)
			if !isParam(err, tc.param) {
				t.Fatalf("got %v, want a ParamError for %s", err, tc.param)
			}
			if !strings.HasPrefix(err.Error(), "queueing: invalid "+tc.param) {
				t.Errorf("message %q does not name %s first", err, tc.param)
			}
		})
	}
	a := mustAnalyzer(t, llama(8))
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := a.Analyze(r); !isParam(err, "rate") {
			t.Errorf("Analyze(%v): %v", r, err)
		}
	}
	if _, err := a.Size(Targets{TTFTMs: -1}); !isParam(err, "target-ttft") {
		t.Errorf("negative TTFT target: %v", err)
	}
	if _, err := a.Size(Targets{ITLMs: math.NaN()}); !isParam(err, "target-itl") {
		t.Errorf("NaN ITL target: %v", err)
	}
}

// TestMonotoneInRate checks that waiting time, TTFT and ITL never decrease
// as the arrival rate grows, from light load to twice the capacity.
//
// One exception is inherent in the mean-field ITL of the WVA queueing-model guide §9, = (S − prefill(B̄))/o:
// with N = 1 the service time S is the constant τ(1) while B̄ rises from 0
// to 1, so ITL falls, by δ̄/o at most. TestIterationITLBatchOfOne pins that.
func TestMonotoneInRate(t *testing.T) {
	for _, c := range referenceCases {
		a := mustAnalyzer(t, c.config())
		flatITL := c.model == "iteration" && c.n == 1
		var prev Metrics
		for i := 1; i <= 400; i++ {
			m, err := a.Analyze(float64(i) / 200 * a.MaxRate())
			if err != nil {
				t.Fatal(err)
			}
			if i > 1 {
				for _, ch := range []struct {
					name       string
					prev, this float64
				}{{"wait", prev.WaitMs, m.WaitMs}, {"ttft", prev.TTFTMs, m.TTFTMs}, {"itl", prev.ITLMs, m.ITLMs}} {
					if flatITL && ch.name == "itl" {
						continue
					}
					if ch.this < ch.prev-1e-12*math.Max(ch.prev, 1) {
						t.Errorf("%s N=%d: %s falls from %.12g to %.12g at %.4g rps", c.model, c.n, ch.name, ch.prev, ch.this, m.RateRPS)
					}
				}
			}
			prev = m
		}
	}
}

func TestIterationITLBatchOfOne(t *testing.T) {
	cfg := llama(1)
	a := mustAnalyzer(t, cfg)
	it := cfg.Model.(Iteration)
	w := cfg.Workload
	for _, load := range []float64{1e-6, 0.1, 0.5, 0.999, 5} {
		m, _ := a.Analyze(load * a.MaxRate())
		want := (it.ServiceTime(w, 1) - it.Prefill(w, m.AvgBatchSize)) / w.OutputTokens
		if !closeTo(m.ITLMs, want, 1e-12) {
			t.Errorf("load %v: ITL %v, want (τ(1) − prefill(B̄))/o = %v", load, m.ITLMs, want)
		}
		if drop := it.Decode(w, 1) + it.Work(w)/w.OutputTokens - m.ITLMs; drop < -1e-12 || drop > it.Work(w)/w.OutputTokens+1e-12 {
			t.Errorf("load %v: ITL %v is %v below its light-load value", load, m.ITLMs, drop)
		}
	}
}

// TestClosedFormAtLightLoad compares the closed form with the solver when
// the replica is nearly idle. TTFT agrees to the first order; the solver's
// ITL is the service time of a batch of one, which carries one request's
// own work δ̄·(1 + 1/o) on top of the closed form's decode step.
func TestClosedFormAtLightLoad(t *testing.T) {
	for _, n := range []int{1, 16, 256} {
		cfg := llama(n)
		a := mustAnalyzer(t, cfg)
		it := cfg.Model.(Iteration)
		rate := 1e-5 * a.MaxRate()
		m, err := a.Analyze(rate)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := it.ClosedForm(cfg.Workload, rate)
		if err != nil {
			t.Fatal(err)
		}
		if !closeTo(m.TTFTMs, cf.TTFTMs, 1e-3) {
			t.Errorf("N=%d: TTFT solver %.6g, closed form %.6g", n, m.TTFTMs, cf.TTFTMs)
		}
		own := it.Work(cfg.Workload) * (1 + 1/cfg.Workload.OutputTokens)
		if d := m.ITLMs - cf.ITLMs; math.Abs(d-own) > 1e-3*cf.ITLMs {
			t.Errorf("N=%d: ITL solver %.6g − closed form %.6g = %.4g, want δ̄(1+1/o) = %.4g", n, m.ITLMs, cf.ITLMs, d, own)
		}
	}
}

func TestClosedForm(t *testing.T) {
	it := Iteration{Alpha: 6, Beta: 0.01, Gamma: 1e-4}
	w := Workload{InputTokens: 500, OutputTokens: 99}
	// δ̄ = 0.01·599/100 + 1e-4·(500 + 49.5) = 0.0599 + 0.05495 = 0.11485 ms;
	// at 40 rps, ρ = 0.04 · 100 · 0.11485 = 0.4594 and T_iter = 6/0.5406.
	cf, err := it.ClosedForm(w, 40)
	if err != nil {
		t.Fatal(err)
	}
	iter := 6 / (1 - 0.4594)
	if !closeTo(cf.Rho, 0.4594, 1e-12) || !closeTo(cf.IterTimeMs, iter, 1e-12) ||
		!closeTo(cf.TTFTMs, iter+0.0101*500, 1e-12) || !closeTo(cf.ITLMs, iter+0.01+1e-4*550, 1e-12) {
		t.Errorf("closed form = %+v", cf)
	}
	if _, err := it.ClosedForm(w, 100); !isParam(err, "rate") || !strings.Contains(err.Error(), "87.07") {
		t.Errorf("overload: %v", err)
	}
	// k = 3: T_iter = 3α at ρ = 2/3.
	ttft, itl, err := it.SLOForMultiplier(w, 3)
	if err != nil || !closeTo(ttft, 18+0.0101*500, 1e-12) || !closeTo(itl, 18+0.01+1e-4*550, 1e-12) {
		t.Errorf("SLO for k=3: %v, %v, %v", ttft, itl, err)
	}
	if _, _, err := it.SLOForMultiplier(w, 1); !isParam(err, "slo-multiplier") {
		t.Errorf("k=1: %v", err)
	}
}

func TestSize(t *testing.T) {
	a := mustAnalyzer(t, llama(256))
	s, err := a.Size(Targets{TTFTMs: 200, ITLMs: 30})
	if err != nil {
		t.Fatal(err)
	}
	if s.RateStarRPS != math.Min(s.RateTTFTRPS, s.RateITLRPS) {
		t.Errorf("λ* = %v is not min(%v, %v)", s.RateStarRPS, s.RateTTFTRPS, s.RateITLRPS)
	}
	if s.AtStar.TTFTMs > 200 || s.AtStar.ITLMs > 30 {
		t.Errorf("targets missed at λ*: %+v", s.AtStar)
	}
	// Just above λ* the binding target is missed.
	above, _ := a.Analyze(s.RateStarRPS * (1 + 1e-5))
	if s.Binding == TargetTTFT && above.TTFTMs <= 200 || s.Binding == TargetITL && above.ITLMs <= 30 || s.Binding == "" {
		t.Errorf("binding %q but %+v still meets the targets", s.Binding, above)
	}
	if s.CapacityRPS != s.AtStar.ThroughputRPS || s.CapacityRPS > s.RateStarRPS {
		t.Errorf("capacity %v, throughput at λ* %v, λ* %v", s.CapacityRPS, s.AtStar.ThroughputRPS, s.RateStarRPS)
	}
	checkReplicas(t, s)
}

// checkReplicas: the replicas for a demand are ⌈demand / capacity⌉, and a
// negative demand is a ParamError.
func checkReplicas(t *testing.T, s Sizing) {
	t.Helper()
	for _, tc := range []struct{ demand, want float64 }{{0, 0}, {1e-9, 1}, {s.CapacityRPS, 1}, {s.CapacityRPS * 1.0001, 2}, {10 * s.CapacityRPS, 10}} {
		if got, err := s.Replicas(tc.demand); err != nil || float64(got) != tc.want {
			t.Errorf("Replicas(%v) = %v, %v; want %v", tc.demand, got, err, tc.want)
		}
	}
	if _, err := s.Replicas(-1); !isParam(err, "demand") {
		t.Errorf("negative demand: %v", err)
	}
}

func TestSizeNonBindingAndTPS(t *testing.T) {
	a := mustAnalyzer(t, llama(64))
	s, err := a.Size(Targets{TTFTMs: 1e6, ITLMs: 1e6, TPS: 25600})
	if err != nil {
		t.Fatal(err)
	}
	if s.RateTTFTRPS != a.MaxRate() || s.RateITLRPS != a.MaxRate() || s.Binding != "" {
		t.Errorf("generous targets bind: %+v", s)
	}
	// TPS 25600 tokens/s at 256 tokens per request is a floor of 100 rps.
	if s.DemandFloorRPS != 100 {
		t.Errorf("demand floor %v, want 100", s.DemandFloorRPS)
	}
	r1, _ := s.Replicas(1)
	r100, _ := s.Replicas(100)
	if r1 != r100 || r1 != int(math.Ceil(100/s.CapacityRPS)) {
		t.Errorf("replicas with TPS floor: %d for 1 rps, %d for 100 rps", r1, r100)
	}
}

// TestSizeBatchOfOne covers N = 1, where ITL does not change with the rate at
// all: a flat curve must not confuse the search.
func TestSizeBatchOfOne(t *testing.T) {
	for _, model := range []ServiceModel{Linear{Alpha: 10, Beta: 0.5, Gamma: 30, Delta: 0.01}, Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}} {
		cfg := llama(1)
		cfg.Model = model
		a := mustAnalyzer(t, cfg)
		light, _ := a.Analyze(0.01 * a.MaxRate())
		heavy, _ := a.Analyze(a.MaxRate())
		if model.Name() == "linear" && light.ITLMs != heavy.ITLMs {
			t.Errorf("linear N=1: ITL varies from %v to %v", light.ITLMs, heavy.ITLMs)
		}
		s, err := a.Size(Targets{ITLMs: heavy.ITLMs * 1.001})
		if err != nil || s.RateITLRPS != a.MaxRate() {
			t.Errorf("%s N=1 ITL target met everywhere: %+v, %v", model.Name(), s, err)
		}
		target := (light.TTFTMs + heavy.TTFTMs) / 2
		s, err = a.Size(Targets{TTFTMs: target})
		if err != nil || s.Binding != TargetTTFT || s.AtStar.TTFTMs > target || s.RateTTFTRPS >= a.MaxRate() {
			t.Errorf("%s N=1 TTFT target %v: %+v, %v", model.Name(), target, s, err)
		}
	}
}

func TestSizeInfeasible(t *testing.T) {
	a := mustAnalyzer(t, llama(32))
	_, err := a.Size(Targets{TTFTMs: 500, ITLMs: 2})
	var ie *InfeasibleError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInfeasible) {
		t.Fatalf("got %v, want an InfeasibleError", err)
	}
	if ie.Target != TargetITL || ie.TargetMs != 2 || ie.BestITLMs < 7 || ie.BestTTFTMs < 7 {
		t.Errorf("error %+v", ie)
	}
	for _, want := range []string{"infeasible SLO", "target ITL 2 ms", "best achievable", "TTFT", "ITL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

// TestMaxRateOf: λmax without building the analyzer is the analyzer's,
// bit for bit, and invalid configurations fail alike.
func TestMaxRateOf(t *testing.T) {
	for _, n := range []int{1, 12, 256, 4096} {
		for _, m := range []ServiceModel{Iteration{Alpha: 6, Beta: 0.0003, Gamma: 0.00001}, Linear{Alpha: 8, Beta: 0.1, Gamma: 20, Delta: 0.002}} {
			cfg := Config{Model: m, Workload: Workload{InputTokens: 1024, OutputTokens: 256}, MaxBatchSize: n, MaxQueueSize: 100}
			a, err := NewAnalyzer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := MaxRateOf(cfg); err != nil || got != a.MaxRate() {
				t.Errorf("%T, N=%d: %v (%v), analyzer %v", m, n, got, err, a.MaxRate())
			}
		}
	}
	if _, err := MaxRateOf(Config{Model: Iteration{Alpha: -1}, Workload: Workload{InputTokens: 1, OutputTokens: 1}, MaxBatchSize: 1}); err == nil {
		t.Error("accepted a negative α")
	}
}

// TestOverflowingParameters: parameters that overflow a single request's
// service time are named as such, not blamed on the batch size ("service
// times NaN ms … are not positive and finite, got 8").
func TestOverflowingParameters(t *testing.T) {
	_, err := NewAnalyzer(Config{Model: Iteration{Alpha: 1e308, Beta: 1e308, Gamma: 1e-3}, Workload: Workload{InputTokens: 100, OutputTokens: 100}, MaxBatchSize: 8})
	if err == nil || isParam(err, "max-batch-size") || !strings.Contains(err.Error(), "too large to compute (parameters are in ms)") {
		t.Errorf("got %v", err)
	}
}
