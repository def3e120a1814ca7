package tuner

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/llm-d-incubation/wva/internal/kalman"
	"github.com/llm-d-incubation/wva/internal/queueing"
)

// saturatedBlocking is the blocking probability above which the estimate is
// said to put an observation in overload.
const saturatedBlocking = 1e-3

// Tuner learns one variant's parameters. It is not safe for concurrent use.
type Tuner struct {
	cfg Config
	n   int // parameters: 3 (iteration) or 4 (linear)
	// filter is the seed strategy's EKF, which holds its state; nil for
	// the robust strategy, whose estimate x and covariance p (of the
	// log-parameters) live in fixed arrays so that a steady-state cycle
	// allocates nothing.
	filter       *kalman.Filter
	x            vec
	p            square
	lower, upper vec // the state's bounds (log-parameters for the robust strategy)
	// sc holds the evaluation caches, taken from a pool on first use and
	// given back by Release (see scratch).
	sc *scratch
	// anchorX and anchorP are the prior that the observations in window
	// are fitted against jointly: the cold start, or the estimate with an
	// inflated covariance after the parameters changed.
	anchorX vec
	anchorP square
	window  []Observation
	// windowSize is how many observations a (re)start fits jointly, and
	// fitting is true until the window is full.
	windowSize int
	fitting    bool
	// explore: a fit while fitting tries several starts (fitWindow); off
	// for a warm-up's intermediate fits (stepWarmup).
	explore bool
	// queueFit: the current fit's window took a cycle the server gate
	// would have kept out (queueing or preemption): its estimate learned
	// some of the queue, and the gate, which protects an estimate learned
	// from the server, stays off until a fit starts anew.
	queueFit bool
	// pending are the rejected observations since the last accepted one.
	pending    []Observation
	meas       []measured // scratch: the stacked observations of a fit
	updates    int        // accepted updates
	rejections int        // rejected updates
	skips      int        // observations the server gate kept out
	lastNIS    float64    // NIS of the latest observation
	lastRate   float64    // arrival rate per replica of the latest observation
	lastQueued bool       // the latest observation's TTFT was mostly queueing wait
	// queuedBefore: the observation before the latest one's was.
	queuedBefore bool
	lastWaiting  float64 // the latest observation's waiting requests per replica
}

// New returns a tuner that starts from init. With StrategyRobust the
// log-parameters start with standard deviation InitialSpread; with
// StrategySeed the parameters start with 5 % standard deviation (the
// reference tuner's P₀ = diag((c·x₀)²)).
func New(cfg Config, init Params) (*Tuner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := init.Validate(cfg.ServiceModel); err != nil {
		return nil, err
	}
	x0 := init.vector(cfg.ServiceModel)
	n := len(x0)
	t := &Tuner{cfg: cfg, n: n, windowSize: cfg.Window}
	if cfg.Strategy == StrategySeed {
		p0 := mat.NewSymDense(n, nil)
		for i, v := range x0 {
			p0.SetSym(i, i, sq(cfg.PercentChange*v))
		}
		f, err := kalman.New(x0, p0)
		if err != nil {
			return nil, fmt.Errorf("tuner: %w", err)
		}
		t.filter = f
	} else {
		for i := range x0 {
			x0[i] = math.Log(x0[i])
		}
		t.x = vecOf(x0)
		t.p = square{}.plusDiag(sq(cfg.InitialSpread), n)
	}
	t.anchorX, t.anchorP = t.state(), t.cov()
	t.fitting = t.windowSize > 0
	t.explore = true
	t.setBounds()
	return t, nil
}

// NewCold starts a tuner from a bootstrap guess on the first observation
// (the WVA queueing-model guide §9), or from Defaults when the bootstrap fails. It reports
// which it used: "bootstrap" or "default".
func NewCold(cfg Config, first Observation) (*Tuner, string, error) {
	model := cfg.withDefaults().ServiceModel
	if p, ok := Bootstrap(model, first); ok {
		t, err := New(cfg, p)
		return t, "bootstrap", err
	}
	t, err := New(cfg, Defaults(model))
	return t, "default", err
}

// DefaultProfileSpread is Config.ProfileSpread's default: a profile is
// taken to be right to a log-standard deviation of 0.25 per parameter.
const DefaultProfileSpread = 0.25

// NewProfiled starts a tuner from a profile (a variant's measured or
// published parameters) as a prior with a variance: the log-parameters
// start at the profile with standard deviation ProfileSpread, not the cold
// start's InitialSpread. The warm-up is a cold start's (the first Window
// observations fitted jointly, gate off), so the observations still
// decide; when they contradict the profile the warm-up drops it (see
// stepWarmup). The seed strategy has no such prior and starts as New.
func NewProfiled(cfg Config, profile Params) (*Tuner, error) {
	t, err := New(cfg, profile)
	if err != nil || !t.logSpace() {
		return t, err
	}
	t.p = square{}.plusDiag(sq(t.cfg.ProfileSpread), t.n)
	t.anchorP = t.p
	return t, nil
}

// bounds in parameter units: wide enough for any GPU and model, tight
// enough to keep the queueing model finite.
var (
	lowerBounds = map[string][]float64{ModelIteration: {1e-3, 1e-9, 1e-12}, ModelLinear: {1e-3, 1e-9, 1e-3, 1e-12}}
	upperBounds = map[string][]float64{ModelIteration: {1e5, 1e3, 1e2}, ModelLinear: {1e5, 1e3, 1e5, 1e2}}
)

func (t *Tuner) setBounds() {
	lo := append([]float64(nil), lowerBounds[t.cfg.ServiceModel]...)
	hi := append([]float64(nil), upperBounds[t.cfg.ServiceModel]...)
	bounds := t.cfg.Bounds
	if t.cfg.ServiceModel == ModelIteration {
		bounds = t.cfg.IterationBounds
	}
	for i, name := range []string{"alpha", "beta", "gamma", "delta"}[:len(lo)] {
		if b, ok := bounds[name]; ok {
			lo[i], hi[i] = b[0], b[1]
		}
	}
	if t.logSpace() {
		for i := range lo {
			lo[i], hi[i] = math.Log(lo[i]), math.Log(hi[i])
		}
	}
	t.lower, t.upper = vecOf(lo), vecOf(hi)
	if t.filter != nil {
		t.filter.Lower, t.filter.Upper = lo, hi
	}
}

// state returns the estimate (log-parameters for the robust strategy).
func (t *Tuner) state() vec {
	if t.filter != nil {
		return vecOf(t.filter.State())
	}
	return t.x
}

// cov returns the estimate's covariance.
func (t *Tuner) cov() square {
	if t.filter == nil {
		return t.p
	}
	var c square
	p := t.filter.Covariance()
	for i := range t.n {
		for j := range t.n {
			c[i][j] = p.At(i, j)
		}
	}
	return c
}

// setState replaces the estimate and, unless p is nil, its covariance;
// the estimate is clamped to the bounds.
func (t *Tuner) setState(x vec, p *square) {
	if t.filter != nil {
		sym := (*mat.SymDense)(nil)
		if p != nil {
			sym = symOfSquare(*p, t.n)
		}
		t.filter.SetState(x[:t.n], sym)
		return
	}
	t.x = t.clamp(x)
	if p != nil {
		t.p = *p
	}
}

// clamp returns x within the bounds.
func (t *Tuner) clamp(x vec) vec {
	for i := range t.n {
		x[i] = math.Min(math.Max(x[i], t.lower[i]), t.upper[i])
	}
	return x
}

func symOfSquare(a square, n int) *mat.SymDense {
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, a[i][j])
		}
	}
	return s
}

func (t *Tuner) logSpace() bool { return t.cfg.Strategy == StrategyRobust }

// Config returns the configuration with defaults filled in.
func (t *Tuner) Config() Config { return t.cfg }

// Params returns the current estimate.
func (t *Tuner) Params() Params { return t.toParams(t.state()) }

func (t *Tuner) toParams(x vec) Params {
	if t.logSpace() {
		for i := range t.n {
			x[i] = math.Exp(x[i])
		}
	}
	p := Params{Alpha: x[0], Beta: x[1], Gamma: x[2]}
	if t.n == 4 {
		p.Delta = x[3]
	}
	return p
}

// Covariance returns the covariance of the parameters in their own units
// (ms²). For the log-parameter filter it is the first-order transform
// D·P·D with D = diag(x).
func (t *Tuner) Covariance() [][]float64 { return t.covariance().Rows() }

// RelativeStdDev returns each parameter's standard deviation divided by its
// value: how sure the tuner is, 0.05 meaning ±5 %.
func (t *Tuner) RelativeStdDev() []float64 {
	cov := t.Covariance()
	x := t.Params().vector(t.cfg.ServiceModel)
	out := make([]float64, len(x))
	for i := range out {
		out[i] = math.Sqrt(cov[i][i]) / x[i]
	}
	return out
}

// Updates returns the numbers of accepted and rejected updates so far.
func (t *Tuner) Updates() (accepted, rejected int) { return t.updates, t.rejections }

// Skips returns how many observations the server gate kept out.
func (t *Tuner) Skips() int { return t.skips }

// Predict returns the TTFT and ITL that the current estimate predicts for
// an observation's load, tokens and batch limit.
func (t *Tuner) Predict(obs Observation) (queueing.Metrics, error) {
	return t.analyze(t.Params(), obs)
}

func (t *Tuner) analyze(p Params, obs Observation) (queueing.Metrics, error) {
	return t.caches().eval.analyze(p, obs)
}

func sq(v float64) float64 { return v * v }

// scratch is a tuner's evaluation caches: the queueing model's recent
// results (evaluator) and recent observations' Jacobians (linCache),
// about 23 KB of the tuner's 24. The model is a pure function of what the
// caches are keyed by, but the engine rebuilds every variant's tuner from
// its record each cycle (1 000 models × 4 variants: 96 MB a cycle), so the
// caches come from a pool, emptied, and go back to it with Release.
type scratch struct {
	eval evaluator
	lins linCache
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// caches returns the tuner's caches, taking them from the pool (emptied,
// set up for this tuner's service model, queue and strategy) on first use
// or after Release.
func (t *Tuner) caches() *scratch {
	if t.sc == nil {
		sc := scratchPool.Get().(*scratch)
		sc.reset(t.cfg.ServiceModel, t.cfg.MaxQueueSize)
		if t.logSpace() {
			sc.eval.saturated = t.queueDominated
		}
		t.sc = sc
	}
	return t.sc
}

// reset empties the caches (no entry in use, nothing they referred to
// kept) for a tuner of the given service model and queue size.
func (sc *scratch) reset(model string, maxQueue int) {
	for i := range sc.eval.cache {
		sc.eval.cache[i] = evalEntry{}
	}
	sc.eval.clock, sc.eval.saturated = 0, nil
	sc.eval.linear, sc.eval.maxQueue = model == ModelLinear, max(maxQueue, 0)
	for i := range sc.lins.slots {
		sc.lins.slots[i].used = 0
	}
	sc.lins.clock = 0
}

// Release gives the tuner's evaluation caches back for the next tuner to
// be built: call it when done with a tuner that is rebuilt from its
// Record every cycle. The tuner stays usable; its next evaluation starts
// with empty caches.
func (t *Tuner) Release() {
	if t.sc != nil {
		t.sc.eval.saturated = nil // not to keep this tuner reachable from the pool
		scratchPool.Put(t.sc)
		t.sc = nil
	}
}
