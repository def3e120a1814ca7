package queueing

import "math"

// WaitWithin returns the probability that an arrival at rate lambda is
// admitted and starts service within t (rates and times in the queue's
// unit). Arrivals see the stationary distribution (Poisson arrivals see time
// averages). One that finds n < N requests present starts at once; one that
// finds n ≥ N (n < K) waits, under FCFS, for n − N + 1 completions of a full
// batch, each at rate μ(N): an Erlang(n − N + 1, μ(N)) time. One that finds
// K present is blocked and never starts. So
//
//	P(W ≤ t) = P(n < N) + Σ_{j=0}^{Q−1} p_{N+j} · P(Erlang(j+1, μ(N)) ≤ t),
//
// with p_{N+j} = p_N·r^j, r = λ/μ(N), and P(Erlang(k, μ) ≤ t) = P(Poisson(μt) ≥ k).
// The sum stops once the Erlang terms vanish at double precision, so the
// cost is O(N + μ(N)·t) whatever Q is.
func (q *Queue) WaitWithin(lambda, t float64) (float64, error) {
	if !finite(lambda) || lambda <= 0 {
		return 0, &ParamError{Param: "rate", Value: lambda, Reason: "must be a positive finite number"}
	}
	if math.IsNaN(t) {
		return 0, &ParamError{Param: "time", Value: t, Reason: "must be a number"}
	}
	below, pN := q.admittedMasses(lambda)
	return q.waitWithin(lambda, t, below, pN), nil
}

// admittedMasses returns P(n < N) and p_N at rate lambda.
func (q *Queue) admittedMasses(lambda float64) (below, pN float64) {
	_, m := q.combineMasses(lambda, q.head(lambda))
	return m.below, m.pN
}

// masses are P(n < N) and p_N at one rate: what the waiting-time
// distribution needs from the solve.
type masses struct{ below, pN float64 }

// solution is the queue solved at one rate with its admitted masses.
type solution struct {
	st State
	m  masses
}

// solveMasses is solve and admittedMasses at lambda from one pass over
// the head (the O(N) part both need).
func (q *Queue) solveMasses(lambda float64) solution {
	st, m := q.combineMasses(lambda, q.head(lambda))
	return solution{st: st, m: m}
}

// waitWithin is WaitWithin with the masses already known.
func (q *Queue) waitWithin(lambda, t, below, pN float64) float64 {
	if t < 0 {
		return 0
	}
	if q.maxQueue == 0 || pN == 0 {
		return below
	}
	muN := 1 / q.inv(q.n)
	x := muN * t // expected completions within t
	lr := logRatio(lambda * q.inv(q.n))
	logPN := math.Log(pN)
	if math.IsInf(x, 1) {
		// Every admitted arrival starts eventually: 1 − p_K, with the
		// admitted waiting mass Σ_{j<Q} p_N·r^j in closed form.
		return math.Min(below+math.Exp(logPN+geomLogSum(lr, q.maxQueue)-lr), 1)
	}
	// P(Poisson(x) ≥ j+1) = 1 − F(j), F accumulated from the pmf. Where
	// e^{−x} and p_N are representable the pmf and the weights p_N·r^j
	// follow by recurrence (one multiplication each per term); otherwise
	// each term is computed in log space so that nothing underflows.
	end := q.maxQueue
	// Compared in floating point: x·t for a huge target t would not
	// convert to an int (past 2^63 the conversion is undefined).
	if bound := x + 12*math.Sqrt(x) + 40; x > 0 && bound < float64(end) {
		end = int(bound)
	}
	if x <= 0 {
		return below // no completion can happen in no time
	}
	if r := math.Exp(lr); x < 700 && pN > 1e-290 && r > 0 && !math.IsInf(r, 0) {
		return math.Min(below+waitedMassDirect(x, pN, r, end), 1)
	}
	return math.Min(below+waitedMassLog(x, logPN, lr, end), 1)
}

// waitedMassDirect is Σ_{j<end} p_N·r^j·P(Poisson(x) ≥ j+1), the pmf and
// the weights by recurrence.
func waitedMassDirect(x, pN, r float64, end int) float64 {
	sum := 0.0
	pmf, w, cdf := math.Exp(-x), pN, 0.0
	for j := range end {
		if j > 0 {
			pmf *= x / float64(j)
			w *= r
		}
		cdf += pmf
		tail := 1 - cdf
		if tail <= 0 {
			break
		}
		sum += w * tail
	}
	return sum
}

// waitedMassLog is waitedMassDirect with every term in log space, for
// where e^{−x} or p_N would underflow.
func waitedMassLog(x, logPN, lr float64, end int) float64 {
	sum := 0.0
	logX := math.Log(x)
	cdf := 0.0
	for j := range end {
		lg, _ := math.Lgamma(float64(j) + 1)
		cdf += math.Exp(-x + float64(j)*logX - lg)
		tail := 1 - cdf
		if tail <= 0 {
			break
		}
		sum += math.Exp(logPN+float64(j)*lr) * tail
	}
	return sum
}

// TTFTAttainment returns the predicted share of requests, of all that
// arrive at rateRPS, whose TTFT is at most targetMs: admitted, and waiting
// at most targetMs minus the prefill time. The prefill time is the model's
// (deterministic given the load); the waiting time has the distribution of
// [Queue.WaitWithin]. Blocked arrivals count as missing the target.
func (a *Analyzer) TTFTAttainment(rateRPS, targetMs float64) (float64, error) {
	if err := checkRate(rateRPS); err != nil {
		return 0, err
	}
	if err := checkNonNegative("target-ttft", targetMs); err != nil {
		return 0, err
	}
	return a.attainment(rateRPS, targetMs, a.queue.solveMasses(rateRPS/1000)), nil
}

// attainment is TTFTAttainment with the queue already solved at rateRPS.
func (a *Analyzer) attainment(rateRPS, targetMs float64, s solution) float64 {
	return a.queue.waitWithin(rateRPS/1000, targetMs-a.prefillMs(s.st), s.m.below, s.m.pN)
}

// prefillMs is the model's TTFT less the mean wait: the prefill time at
// the load of s.
func (a *Analyzer) prefillMs(s State) float64 {
	ttft, _ := a.cfg.Model.Latencies(a.cfg.Workload, s, a.cfg.MaxBatchSize)
	return math.Max(ttft-s.Wait, 0)
}

// TTFTPercentile returns the TTFT in ms that a share p (0 < p < 1) of the
// requests arriving at rateRPS meet: prefill plus the p-quantile of the
// waiting time. It is +Inf when more than 1 − p of the arrivals are
// blocked.
func (a *Analyzer) TTFTPercentile(rateRPS, p float64) (float64, error) {
	if err := checkRate(rateRPS); err != nil {
		return 0, err
	}
	if !(p > 0 && p < 1) {
		return 0, &ParamError{Param: "percentile", Value: p, Reason: "must be between 0 and 1"}
	}
	lambda := rateRPS / 1000
	sol := a.queue.solveMasses(lambda)
	s := sol.st
	pre := a.prefillMs(s)
	at := func(t float64) float64 { return a.queue.waitWithin(lambda, t, sol.m.below, sol.m.pN) }
	if at(0) >= p {
		return pre, nil
	}
	// The wait quantile lies below the time for the whole queue to clear
	// many times over; past that the CDF has converged to 1 − p_K.
	hi := math.Max(s.Wait, a.queue.inv(a.queue.n))
	for at(hi) < p {
		hi *= 2
		if hi > 1e15 {
			return math.Inf(1), nil
		}
	}
	lo := 0.0
	for hi-lo > 1e-9*hi {
		mid := (lo + hi) / 2
		if at(mid) >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return pre + hi, nil
}
