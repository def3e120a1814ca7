package queueing

import (
	"fmt"
	"math"
)

// MaxStates bounds K = N + Q, the largest number of requests a queue holds.
// It keeps [Queue.Distribution] from allocating absurd amounts of memory; the
// solver itself is O(N) whatever Q is.
const MaxStates = 10_000_000

// Queue is a state-dependent M/M/1/K queue: arrivals at rate λ, up to N
// requests in service with total service rate μ(n) when n are in service,
// and up to Q more waiting (K = N + Q). With n > N requests present the
// server works at μ(N). Arrivals that find K requests present are blocked.
//
// The stationary distribution is the birth–death product form
// p_{n} = p_{n-1}·λ/μ(min(n, N)), normalised (Kleinrock, Queueing Systems vol. 1, ch. 3).
// Rates may be in any time unit; every time in [State] is in its inverse.
type Queue struct {
	// 1/μ(n) for n = 1..N: invMu[n-1] when the rates were given as a table,
	// else the affine form invSlope + invBase/n of a service time
	// τ(n) = invBase + invSlope·n, which needs no table at all.
	invMu             []float64
	invBase, invSlope float64
	n                 int     // N
	maxQueue          int     // Q
	maxInvMu          float64 // max over n of 1/μ(n)
	// nonDecreasing is true when μ(n) never decreases in n, so that the
	// product-form terms fall monotonically once they start to fall.
	nonDecreasing bool
}

// State is the steady state of a [Queue] at one arrival rate.
type State struct {
	Rate        float64 // λ, offered arrival rate
	Throughput  float64 // X = λ(1 − p_K), rate of admitted (and completed) requests
	AvgBatch    float64 // B̄ = E[min(n, N)], average number in service
	AvgInSystem float64 // L = E[n]
	AvgQueued   float64 // Lq = E[max(n − N, 0)], average number waiting
	RespTime    float64 // T = L/X, time in system (Little's law)
	ServTime    float64 // S = B̄/X, time in service (Little's law on the service stage)
	Wait        float64 // W = Lq/X = T − S, time waiting for a batch slot
	Blocking    float64 // p_K, probability that an arrival is turned away
	Idle        float64 // p_0, probability that the server is empty
	Utilization float64 // B̄/N, fraction of batch slots in use
}

// NewQueue returns a queue with service rates mu[n-1] = μ(n) for n = 1..N
// (so N = len(mu)) and room for maxQueue waiting requests.
func NewQueue(mu []float64, maxQueue int) (*Queue, error) {
	inv := make([]float64, len(mu))
	for i, m := range mu {
		if err := checkPositive(fmt.Sprintf("service rate mu(%d)", i+1), m); err != nil {
			return nil, err
		}
		inv[i] = 1 / m
	}
	return newQueueInv(inv, maxQueue)
}

// newQueueInv takes ownership of inv = 1/μ(n), already checked to be
// positive and finite.
func newQueueInv(inv []float64, maxQueue int) (*Queue, error) {
	if len(inv) < 1 {
		return nil, &ParamError{Param: "max-batch-size", Value: float64(len(inv)), Reason: "must be at least 1"}
	}
	if maxQueue < 0 {
		return nil, &ParamError{Param: "max-queue-size", Value: float64(maxQueue), Reason: "must be ≥ 0"}
	}
	if maxQueue > MaxStates-len(inv) { // not len+maxQueue: that sum can wrap
		return nil, &ParamError{Param: "max-queue-size", Value: float64(maxQueue),
			Reason: fmt.Sprintf("max batch size + max queue size must be at most %d", MaxStates)}
	}
	q := &Queue{invMu: inv, n: len(inv), maxQueue: maxQueue, nonDecreasing: true}
	for i, v := range inv {
		if v > q.maxInvMu {
			q.maxInvMu = v
		}
		if i > 0 && v > inv[i-1] {
			q.nonDecreasing = false
		}
	}
	return q, nil
}

// newAffineQueue is a queue whose service time is τ(n) = base + slope·n
// (base, slope ≥ 0, τ(1) > 0), so 1/μ(n) = slope + base/n. Building it
// costs nothing per batch size.
func newAffineQueue(base, slope float64, n, maxQueue int) (*Queue, error) {
	if err := checkAffineQueue(n, maxQueue); err != nil {
		return nil, err
	}
	q := affineQueue(base, slope, n, maxQueue)
	return &q, nil
}

// checkAffineQueue checks the sizes of an affine queue.
func checkAffineQueue(n, maxQueue int) error {
	if n < 1 {
		return &ParamError{Param: "max-batch-size", Value: float64(n), Reason: "must be at least 1"}
	}
	if maxQueue < 0 {
		return &ParamError{Param: "max-queue-size", Value: float64(maxQueue), Reason: "must be ≥ 0"}
	}
	if n > MaxStates || maxQueue > MaxStates-n { // not n+maxQueue: that sum can wrap
		return &ParamError{Param: "max-queue-size", Value: float64(maxQueue),
			Reason: fmt.Sprintf("max batch size + max queue size must be at most %d", MaxStates)}
	}
	return nil
}

// affineQueue is newAffineQueue without the checks, by value.
func affineQueue(base, slope float64, n, maxQueue int) Queue {
	// With base ≥ 0, 1/μ(n) falls with n: μ is non-decreasing.
	return Queue{invBase: base, invSlope: slope, n: n, maxQueue: maxQueue, maxInvMu: base + slope, nonDecreasing: true}
}

// inv returns 1/μ(n) for n = 1..N.
func (q *Queue) inv(n int) float64 {
	if q.invMu != nil {
		return q.invMu[n-1]
	}
	return q.invSlope + q.invBase/float64(n)
}

// MaxBatch returns N.
func (q *Queue) MaxBatch() int { return q.n }

// MaxQueue returns Q.
func (q *Queue) MaxQueue() int { return q.maxQueue }

// Capacity returns μ(N), the throughput of a full batch.
func (q *Queue) Capacity() float64 { return 1 / q.inv(q.n) }

// Solve returns the steady state at arrival rate lambda. It runs in O(N)
// time whatever Q is (the states above N form a geometric tail summed in
// closed form) and does not allocate.
func (q *Queue) Solve(lambda float64) (State, error) {
	if !finite(lambda) || lambda <= 0 {
		return State{}, &ParamError{Param: "rate", Value: lambda, Reason: "must be a positive finite number"}
	}
	return q.solve(lambda), nil
}

// solve is Solve without the argument check.
//
// The head (n ≤ N) comes from [Queue.head]; the tail (N < n ≤ K) is the
// geometric series t_N·r^j, j = 1..Q, with r = λ/μ(N), summed in closed form.
// Head and tail are combined through their log-ratio u, and every ratio of
// tail sums is taken in closed form, so no result is a difference of two
// large logarithms: K = 10⁵ at 1000× overload keeps full precision.
func (q *Queue) solve(lambda float64) State {
	return q.combine(lambda, q.head(lambda))
}

// combine is solve's O(1) part: the steady state from the head's sums.
func (q *Queue) combine(lambda float64, h headSums) State {
	s, _ := q.combineMasses(lambda, h)
	return s
}

// combineMasses is combine with the admitted masses P(n < N) and p_N that
// the waiting-time distribution needs, from the same split of the mass
// between the head and the tail.
func (q *Queue) combineMasses(lambda float64, h headSums) (State, masses) {
	n := q.n
	pHead, pTail, tailMean := 1.0, 0.0, 0.0
	// blocking = p_K; below = 1 − p_K = P(n < K).
	blocking, below := h.last/h.sum, h.sumBelowN/h.sum
	logSum := math.Log(h.sum)
	if q.maxQueue > 0 {
		blocking, below = 0, 1
		if h.last > 0 {
			lr := logRatio(lambda * q.inv(n))
			u := logSum - math.Log(h.last) - geomLogSum(lr, q.maxQueue)
			pHead, pTail = splitOdds(u)
			below = pHead + pTail*geomRatio(lr, q.maxQueue)
			blocking = pTail * geomLast(lr, q.maxQueue)
			tailMean = geomMean(lr, q.maxQueue)
		}
	}
	var s State
	s.Rate = lambda
	s.Blocking = blocking
	s.Idle = math.Exp(math.Log(pHead) - logSum - h.logScale)
	s.Throughput = lambda * below
	s.AvgQueued = pTail * tailMean
	s.AvgBatch = pHead*(h.weighted/h.sum) + float64(n)*pTail
	s.AvgInSystem = s.AvgBatch + s.AvgQueued
	s.RespTime = s.AvgInSystem / s.Throughput
	s.ServTime = s.AvgBatch / s.Throughput
	s.Wait = s.AvgQueued / s.Throughput
	s.Utilization = s.AvgBatch / float64(n)
	return s, masses{below: pHead * h.sumBelowN / h.sum, pN: pHead * h.last / h.sum}
}

// splitOdds returns (e^u, 1)/(e^u + 1) without overflow: the shares of two
// masses whose log-ratio is u.
func splitOdds(u float64) (first, second float64) {
	if u <= 0 {
		e := math.Exp(u)
		return e / (1 + e), 1 / (1 + e)
	}
	e := math.Exp(-u)
	return 1 / (1 + e), e / (1 + e)
}

// headSums are the unnormalised masses t_n of states n = 0..N, scaled so
// that the true mass is t_n·e^{logScale}.
type headSums struct {
	sum       float64 // Σ_{n=0..N} t_n
	sumBelowN float64 // Σ_{n=0..N−1} t_n
	weighted  float64 // Σ_{n=0..N} n·t_n
	last      float64 // t_N (0 if the terms underflowed before N)
	logScale  float64
}

const (
	rescaleAt = 1e200 // rescale the running terms above this
	// tailCut is the relative size below which the remaining terms are
	// dropped (see head).
	tailCut = 1e-18
	// maxStepRatio is the largest λ/μ(n) that the scaled linear recursion
	// handles; beyond it the recursion runs in log space.
	maxStepRatio = 1e100
)

// head computes the product-form terms t_0 = 1, t_n = t_{n−1}·λ/μ(n) for
// n = 1..N in linear space with rescaling, which costs one multiply-add per
// state. When μ(n) is non-decreasing, the terms fall monotonically once they
// fall, so the loop stops as soon as everything left is below 10⁻¹⁸ of the
// running sum: it cannot change any result at double precision.
func (q *Queue) head(lambda float64) headSums {
	if lambda*q.maxInvMu > maxStepRatio {
		return q.headLog(lambda)
	}
	// The ratio λ/μ(n) is a + b·v[n−1]: λ times the table of 1/μ(n), or
	// the affine form λ·invSlope + λ·invBase·(1/n) with 1/n from the
	// reciprocals table (a multiplication instead of a division) up to its
	// end.
	if q.invMu != nil {
		return q.headLinear(0, lambda, q.invMu[:q.n])
	}
	return q.headLinear(lambda*q.invSlope, lambda*q.invBase, reciprocals[:min(q.n, len(reciprocals))])
}

// headLinear is head with the ratio of state n a + b·v[n−1] for n ≤
// len(v) and a + b/n beyond (the affine form past the reciprocals table).
//
// Each step multiplies the term by its ratio and rescales the running sums
// when it grows past rescaleAt. When μ is non-decreasing and the terms are
// past their mode, every later ratio is at most r < 1, so the rest of the
// head and the whole tail add at most t·r/(1 − r) to the mass (and N times
// that to the weighted sum): the loop stops once that bound is below 10⁻¹⁸
// of the sum, nothing at double precision, and the last term counts as 0.
// prev, the sum before the last term was added, is Σ_{n<N} t_n when the
// loop runs to N. The running sums are locals so that they stay in
// registers (a struct stepped by a method was half as fast).
func (q *Queue) headLinear(a, b float64, v []float64) headSums {
	monotone := q.nonDecreasing
	sum, weighted, t, prev, logScale, fn := 1.0, 0.0, 1.0, 0.0, 0.0, 0.0
	m := len(v)
	for i := range q.n {
		fn++
		var r float64
		if i < m {
			r = a + b*v[i]
		} else {
			r = a + b/fn
		}
		t *= r
		if t > rescaleAt {
			t /= rescaleAt
			sum /= rescaleAt
			weighted /= rescaleAt
			logScale += math.Log(rescaleAt)
		} else if t < tailCut*sum && r < 1 && monotone && t*r/(1-r) < tailCut*sum {
			return headSums{sum: sum, sumBelowN: sum, weighted: weighted, logScale: logScale}
		}
		prev = sum
		sum += t
		weighted += fn * t
	}
	return headSums{sum: sum, sumBelowN: prev, weighted: weighted, last: t, logScale: logScale}
}

// reciprocals[i] = 1/(i+1): the affine head loop multiplies by it instead
// of dividing, which roughly halves the loop's cost.
var reciprocals = func() []float64 {
	r := make([]float64, 4096)
	for i := range r {
		r[i] = 1 / float64(i+1)
	}
	return r
}()

// headLog is head for arrival rates so far above μ(1) that a single step of
// the linear recursion could overflow. It makes two passes in log space.
func (q *Queue) headLog(lambda float64) headSums {
	logLambda := math.Log(lambda)
	lt, peak := 0.0, 0.0
	for i := 1; i <= q.n; i++ {
		lt += logLambda + math.Log(q.inv(i))
		peak = math.Max(peak, lt)
	}
	h := headSums{logScale: peak, sum: math.Exp(-peak)}
	lt = 0
	for i := range q.n {
		lt += logLambda + math.Log(q.inv(i+1))
		t := math.Exp(lt - peak)
		if i == q.n-1 {
			h.sumBelowN = h.sum
			h.last = t
		}
		h.sum += t
		h.weighted += float64(i+1) * t
	}
	return h
}

// Distribution returns the stationary probabilities p_0..p_K. It allocates
// K+1 values and runs in O(K); [Queue.Solve] gives every summary statistic
// without it.
func (q *Queue) Distribution(lambda float64) ([]float64, error) {
	if !finite(lambda) || lambda <= 0 {
		return nil, &ParamError{Param: "rate", Value: lambda, Reason: "must be a positive finite number"}
	}
	n := q.n
	k := n + q.maxQueue
	p := make([]float64, k+1)
	logLambda := math.Log(lambda)
	peak := 0.0
	for i := 1; i <= k; i++ {
		p[i] = p[i-1] + logLambda + math.Log(q.inv(min(i, n)))
		peak = math.Max(peak, p[i])
	}
	sum := 0.0
	for i := range p {
		p[i] = math.Exp(p[i] - peak)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p, nil
}

// logRatio returns log r, accurately when r is close to 1.
func logRatio(r float64) float64 {
	if r > 0.5 && r < 2 {
		return math.Log1p(r - 1)
	}
	return math.Log(r)
}

// geomLogSum returns log Σ_{j=1..m} e^{j·lr} for m ≥ 1 without overflow:
// e^{lr}·(e^{m·lr} − 1)/(e^{lr} − 1), with expm1 keeping it exact near lr = 0.
func geomLogSum(lr float64, m int) float64 {
	fm := float64(m)
	switch {
	case lr == 0:
		return math.Log(fm)
	case lr > 0:
		return lr + fm*lr + math.Log(-math.Expm1(-fm*lr)) - math.Log(math.Expm1(lr))
	default:
		return lr + math.Log(-math.Expm1(fm*lr)) - math.Log(-math.Expm1(lr))
	}
}

// geomRatio returns G(m−1)/G(m) where G(m) = Σ_{j=1..m} e^{j·lr}: the share
// of a geometric tail that is not its last term.
func geomRatio(lr float64, m int) float64 {
	fm := float64(m)
	switch {
	case m == 1:
		return 0
	case lr == 0:
		return (fm - 1) / fm
	case lr > 0:
		return math.Exp(-lr) * math.Expm1(-(fm-1)*lr) / math.Expm1(-fm*lr)
	default:
		return math.Expm1((fm-1)*lr) / math.Expm1(fm*lr)
	}
}

// geomLast returns e^{m·lr}/G(m): the share of a geometric tail in its last
// term. It is computed on its own rather than as 1 − geomRatio, which would
// cancel when the tail falls steeply.
func geomLast(lr float64, m int) float64 {
	fm := float64(m)
	switch {
	case lr == 0:
		return 1 / fm
	case lr > 0:
		return math.Expm1(-lr) / math.Expm1(-fm*lr)
	default:
		return math.Exp((fm-1)*lr) * math.Expm1(lr) / math.Expm1(fm*lr)
	}
}

// geomMean returns the mean of j over j = 1..m with weights e^{j·lr} (a
// truncated geometric distribution). Close to lr = 0 the closed form
// −1/expm1(lr) − m/expm1(−m·lr) cancels, so a second-order expansion in lr
// is used there; its error is below 10⁻¹¹ relative when |lr|·m < 10⁻³ (the
// third cumulant of the uniform distribution is zero, the fourth is
// −(m⁴−1)/120).
func geomMean(lr float64, m int) float64 {
	fm := float64(m)
	if math.Abs(lr)*fm < 1e-3 {
		return (fm+1)/2 + lr*(fm*fm-1)/12
	}
	return -1/math.Expm1(lr) - fm/math.Expm1(-fm*lr)
}
