package queueing

import (
	"errors"
	"math"
	"testing"
)

// differenced returns the central difference of Evaluate's TTFT and ITL
// in parameter j with relative step h, the whole solve repeated.
func differenced(t *testing.T, cfg Config, rate float64, j int, h float64) (dTTFT, dITL float64) {
	t.Helper()
	at := func(v float64) Metrics {
		c := cfg
		switch m := cfg.Model.(type) {
		case Iteration:
			c.Model = m.withParam(j, v)
		case Linear:
			c.Model = m.withParam(j, v)
		}
		met, err := Evaluate(c, rate)
		if err != nil {
			t.Fatal(err)
		}
		return met
	}
	var theta [MaxParams]float64
	switch m := cfg.Model.(type) {
	case Iteration:
		theta, _ = m.paramVector()
	case Linear:
		theta, _ = m.paramVector()
	}
	eps := h * theta[j]
	hi, lo := at(theta[j]+eps), at(theta[j]-eps)
	return (hi.TTFTMs - lo.TTFTMs) / (2 * eps), (hi.ITLMs - lo.ITLMs) / (2 * eps)
}

// TestEvaluateGradient: the metrics are exactly Evaluate's, and every
// derivative agrees with differencing the whole solve (relative step 10⁻⁵:
// near saturation a step of 10⁻⁴ is itself 10⁻⁶ off) — at light load, near saturation,
// in overload with a long queue, with a batch beyond the reciprocal table,
// and for both service models.
func TestEvaluateGradient(t *testing.T) {
	linear := Config{
		Model:    Linear{Alpha: 9, Beta: 0.05, Gamma: 30, Delta: 0.002},
		Workload: Workload{InputTokens: 800, OutputTokens: 200}, MaxBatchSize: 64, MaxQueueSize: 50,
	}
	big := llama(6000)
	big.MaxQueueSize = 1000
	for _, c := range []struct {
		name string
		cfg  Config
		load float64 // fraction of λmax
	}{
		{"iteration light", llama(256), 0.05},
		{"iteration busy", llama(256), 0.8},
		{"iteration saturated", llama(256), 0.995},
		{"iteration overload", llama(256), 3},
		{"iteration no queue", Config{Model: Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}, Workload: Workload{InputTokens: 1024, OutputTokens: 256}, MaxBatchSize: 32}, 0.9},
		{"iteration large batch", big, 0.9},
		{"linear busy", linear, 0.7},
		{"linear overload", linear, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			maxRate, err := MaxRateOf(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			rate := c.load * maxRate
			want, err := Evaluate(c.cfg, rate)
			if err != nil {
				t.Fatal(err)
			}
			got, g, err := EvaluateGradient(c.cfg, rate)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("metrics %+v, Evaluate gives %+v", got, want)
			}
			_, k := c.cfg.Model.(interface {
				paramVector() ([MaxParams]float64, int)
			}).paramVector()
			if g.Params != k {
				t.Fatalf("Params %d, want %d", g.Params, k)
			}
			for j := range k {
				dT, dI := differenced(t, c.cfg, rate, j, 1e-5)
				for _, d := range []struct {
					what      string
					got, want float64
					scale     float64
				}{{"TTFT", g.TTFT[j], dT, want.TTFTMs}, {"ITL", g.ITL[j], dI, want.ITLMs}} {
					// Within 10⁻⁶ of the derivative, or, for one that is
					// nearly zero, within 10⁻⁸ in the elasticity
					// ∂log latency/∂log θ the tuner uses.
					theta := math.Abs(paramOf(c.cfg.Model, j))
					diff := math.Abs(d.got - d.want)
					if diff > 1e-6*math.Abs(d.want) && diff*theta/d.scale > 1e-8 {
						t.Errorf("∂%s/∂θ%d = %.10g, differencing gives %.10g", d.what, j, d.got, d.want)
					}
				}
			}
		})
	}
}

func paramOf(m ServiceModel, j int) float64 {
	v, _ := m.(interface {
		paramVector() ([MaxParams]float64, int)
	}).paramVector()
	return v[j]
}

// TestEvaluateGradientHandMade checks one derivative by hand: with a single
// batch slot and no queue the replica is an M/M/1/1 loss system, no wait,
// B̄ = ρ/(1+ρ) with ρ = λτ(1), and TTFT = α + B̄δ̄ + (β+γ)i.
func TestEvaluateGradientHandMade(t *testing.T) {
	m := Iteration{Alpha: 10, Beta: 0.1, Gamma: 0}
	w := Workload{InputTokens: 10, OutputTokens: 4}
	cfg := Config{Model: m, Workload: w, MaxBatchSize: 1}
	// δ̄ = 0.1·14/5 = 0.28; τ(1) = 5·(10 + 0.28) + 1 + 4·0.1 = 52.8 ms
	// (prefill 10.28 + 1, four decodes of 10.28 + 0.1).
	tau := m.ServiceTime(w, 1)
	if math.Abs(tau-52.8) > 1e-9 {
		t.Fatalf("τ(1) = %v, want 52.8", tau)
	}
	lambda := 0.01 // per ms: ρ = 0.528
	rho := lambda * tau
	// ∂τ/∂α = 5 (one α per iteration, o+1 of them); ∂B̄/∂α = λ·5/(1+ρ)²;
	// ∂TTFT/∂α = 1 + δ̄·∂B̄/∂α.
	wantAlpha := 1 + 0.28*lambda*5/sq(1+rho)
	_, g, err := EvaluateGradient(cfg, 1000*lambda)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(g.TTFT[0]-wantAlpha) > 1e-8 {
		t.Errorf("∂TTFT/∂α = %.12g, want %.12g", g.TTFT[0], wantAlpha)
	}
}

func sq(v float64) float64 { return v * v }

func TestEvaluateGradientErrors(t *testing.T) {
	if _, _, err := EvaluateGradient(llama(8), -1); err == nil {
		t.Error("accepted a negative rate")
	}
	bad := llama(8)
	bad.Model = Iteration{Alpha: -1}
	var pe *ParamError
	if _, _, err := EvaluateGradient(bad, 1); !errors.As(err, &pe) {
		t.Errorf("negative α: %v", err)
	}
	other := llama(8)
	other.Model = customModel{Iteration{Alpha: 1, Beta: 0.01}}
	if _, _, err := EvaluateGradient(other, 1); err == nil {
		t.Error("accepted a model it cannot differentiate")
	}
}

type customModel struct{ Iteration }

func (customModel) Name() string { return "custom" }

// TestEvaluateGradientDoesNotAllocate: the tuner calls it for every
// observation of every Gauss–Newton iteration.
func TestEvaluateGradientDoesNotAllocate(t *testing.T) {
	cfg := llama(256)
	cfg.Model = &Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	if n := testing.AllocsPerRun(100, func() {
		if _, _, err := EvaluateGradient(cfg, 5); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("EvaluateGradient allocates %v times per call", n)
	}
}

func BenchmarkEvaluateGradient(b *testing.B) {
	cfg := llama(256)
	cfg.Model = &Iteration{Alpha: 7, Beta: 0.02, Gamma: 5e-5}
	rate := 0.8 * mustAnalyzer(b, cfg).MaxRate()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := EvaluateGradient(cfg, rate); err != nil {
			b.Fatal(err)
		}
	}
}
