package queueing

import (
	"errors"
	"math"
	"testing"
)

// FuzzQueue solves queues with concave service rates μ(n) = n/(a + b·n) at
// arbitrary loads and checks that every statistic is finite and consistent.
func FuzzQueue(f *testing.F) {
	f.Add(3.0, 0.01, uint16(256), uint32(100), 50.0)
	f.Add(1.0, 0.0, uint16(1), uint32(0), 1.0)
	f.Add(0.001, 5.0, uint16(4), uint32(100_000), 1e6)
	f.Fuzz(func(t *testing.T, a, b float64, n uint16, q uint32, load float64) {
		if !inRange(a, 1e-9, 1e9) || !inRange(b, 0, 1e9) || n == 0 || n > 4096 || q > 100_000 || !inRange(load, 1e-12, 1e12) {
			t.Skip()
		}
		mu := make([]float64, n)
		for i := range mu {
			mu[i] = float64(i+1) / (a + b*float64(i+1))
		}
		queue, err := NewQueue(mu, int(q))
		if err != nil {
			t.Fatal(err)
		}
		lambda := load * queue.Capacity()
		s, err := queue.Solve(lambda)
		if err != nil {
			t.Fatal(err)
		}
		checkState(t, s, queue.Capacity(), int(q))
	})
}

// checkState asserts that a solved state is finite, in range and
// consistent with Little's law.
func checkState(t *testing.T, s State, capacity float64, q int) {
	t.Helper()
	lambda := s.Rate
	vals := []float64{s.Throughput, s.AvgBatch, s.AvgInSystem, s.AvgQueued, s.RespTime, s.ServTime, s.Wait, s.Blocking, s.Idle, s.Utilization}
	for i, v := range vals {
		if !finite(v) || v < 0 {
			t.Fatalf("statistic %d = %v (state %+v)", i, v, s)
		}
	}
	if s.Blocking > 1 || s.Idle > 1 || s.Utilization > 1+1e-12 || s.AvgQueued > float64(q)*(1+1e-12) {
		t.Fatalf("out of range: %+v", s)
	}
	if s.Throughput > lambda*(1+1e-12) || s.Throughput > capacity*(1+1e-9) {
		t.Fatalf("throughput %v above min(λ=%v, μ(N)=%v)", s.Throughput, lambda, capacity)
	}
	if !closeTo(s.Throughput*s.RespTime, s.AvgInSystem, 1e-12) || !closeTo(s.AvgInSystem-s.AvgBatch, s.AvgQueued, 1e-9) {
		t.Fatalf("Little's law fails: %+v", s)
	}
}

// inRange reports whether lo ≤ v ≤ hi (false for NaN).
func inRange(v, lo, hi float64) bool { return v >= lo && v <= hi }

// isParamError reports whether err is set, failing t when it is not a
// ParamError.
func isParamError(t *testing.T, call string, err error) bool {
	t.Helper()
	var pe *ParamError
	if err != nil && !errors.As(err, &pe) {
		t.Fatalf("%s: %v is not a ParamError", call, err)
	}
	return err != nil
}

// FuzzAnalyzer drives both service models with arbitrary parameters and
// rates: valid input gives finite, non-negative results; invalid input gives
// a ParamError, never a panic.
func FuzzAnalyzer(f *testing.F) {
	f.Add(true, 7.0, 0.02, 5e-5, 0.0, 1024.0, 256.0, uint16(256), uint16(100), 10.0, 200.0, 30.0)
	f.Add(false, 8.0, 0.1, 20.0, 0.002, 1024.0, 128.0, uint16(64), uint16(100), 3.0, 5000.0, 20.0)
	f.Add(true, 5.0, 0.05, 5e-5, 0.0, 0.0, 1.0, uint16(1), uint16(0), 1e9, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, iteration bool, alpha, beta, gamma, delta, in, out float64, n, q uint16, rate, ttft, itl float64) {
		var m ServiceModel = Linear{Alpha: alpha, Beta: beta, Gamma: gamma, Delta: delta}
		if iteration {
			m = Iteration{Alpha: alpha, Beta: beta, Gamma: gamma}
		}
		for _, v := range []float64{alpha, beta, gamma, delta, in, out} {
			if math.Abs(v) > 1e12 {
				t.Skip() // outside any physical range; overflow is not the question here
			}
		}
		a, err := NewAnalyzer(Config{Model: m, Workload: Workload{InputTokens: in, OutputTokens: out}, MaxBatchSize: int(n), MaxQueueSize: int(q)})
		if isParamError(t, "NewAnalyzer", err) {
			return
		}
		res, err := a.Analyze(rate)
		if isParamError(t, "Analyze", err) {
			return
		}
		for i, v := range []float64{res.TTFTMs, res.ITLMs, res.ThroughputRPS, res.WaitMs, res.AvgBatchSize, res.Utilization, res.Blocking, res.MaxRateRPS} {
			if !finite(v) || v < -1e-9*math.Max(1, math.Abs(v)) {
				t.Fatalf("metric %d = %v in %+v", i, v, res)
			}
		}
		checkFuzzSize(t, a, ttft, itl)
	})
}

// checkFuzzSize: sizing either fails with a ParamError or ErrInfeasible or
// gives a positive λ* within the stable range and a finite capacity.
func checkFuzzSize(t *testing.T, a *Analyzer, ttft, itl float64) {
	t.Helper()
	s, err := a.Size(Targets{TTFTMs: ttft, ITLMs: itl})
	var pe *ParamError
	if err != nil {
		if !errors.As(err, &pe) && !errors.Is(err, ErrInfeasible) {
			t.Fatalf("Size: unexpected error %v", err)
		}
		return
	}
	if !(s.RateStarRPS > 0) || s.RateStarRPS > a.MaxRate() || !finite(s.CapacityRPS) || s.CapacityRPS <= 0 {
		t.Fatalf("sizing %+v", s)
	}
}
