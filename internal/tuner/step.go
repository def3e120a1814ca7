package tuner

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/llm-d-incubation/wva/internal/kalman"
)

// Step reports one tuning cycle.
type Step struct {
	Accepted bool
	// Reason says why, in words: "accepted", "accepted: warm-up fit of 3
	// observations (gate off)", "rejected: NIS 12.3 ≥ 7.378", …
	Reason string
	// NIS is yᵀS⁻¹y of this observation at the estimate before the step.
	NIS float64
	// Innovation is observed − predicted (TTFT, ITL) at the prior estimate:
	// in log units (≈ relative error) for the robust strategy, in ms for the
	// seed one. Evaluated says whether it (and NIS) could be computed.
	Innovation      [2]float64
	Evaluated       bool
	ObservedTTFTMs  float64
	ObservedITLMs   float64
	PredictedTTFTMs float64 // at the estimate before this step
	PredictedITLMs  float64
	Params          Params // estimate after the step
	Covariance      Matrix // of Params, in their units, after the step
	Iterations      int    // Gauss–Newton iterations of the update
	// Gated is true when the NIS gate decided the outcome (false during a
	// warm-up, for overload observations, and for the seed strategy's
	// positivity rejections).
	Gated bool
	// Skipped is true when the server gate kept the observation out: the
	// replicas preempted, or the TTFT was mostly queueing wait (Reason
	// says which). A skipped step changes nothing but, after the warm-up,
	// the anchor's uncertainty, which grows by Q as time passes; it counts
	// neither as accepted nor as rejected.
	Skipped bool
}

// DefaultMaxWaitShare is Config.MaxWaitShare's default: an observation
// whose TTFT is more than half queueing wait is skipped.
const DefaultMaxWaitShare = 0.5

// minGatedWaiting is the fewest waiting requests per replica the wait test
// considers a queue.
const minGatedWaiting = 1.0

// gateServer says why obs must not update the estimate, or "" when it may:
// the tuner learns the server, not the queue (issue 30; docs/tuner.md §3,
// item 8). Both tests use what the pods report, not the estimate, so that
// a wrong estimate cannot gate out the observations that would correct it:
//
//   - the replicas preempted: a preempted request is recomputed, so TTFT and
//     ITL carry work the queueing model does not have (it knows no KV
//     limit beyond the batch size), and a server that preempts is at its
//     memory limit, where the modelled batch is wrong;
//   - with the seed strategy, the TTFT is mostly queueing wait (see
//     queueDominated). The robust strategy keeps such a cycle's ITL, which
//     has no queue in it, and drops only its TTFT (see measureOne).
//
// gateServer says what the tests find; Step decides whether the gate
// applies (see gated).
func (t *Tuner) gateServer(obs Observation) string {
	if obs.PreemptionsPerSec > 0 && !t.cfg.KeepPreempting {
		return fmt.Sprintf("skipped: the replicas preempted (%.3g requests/s): recompute is not service", obs.PreemptionsPerSec)
	}
	if t.logSpace() || !t.queueDominated(obs) {
		return ""
	}
	return fmt.Sprintf("skipped: queueing wait %.4g ms (%.3g waiting at %.3g requests/s) is over %.0f %% of the TTFT %.4g ms",
		1000*obs.WaitingRequests/obs.RateRPS, obs.WaitingRequests, obs.RateRPS, 100*t.cfg.MaxWaitShare, obs.TTFTMs)
}

// queueDominated reports whether obs's TTFT is mostly queueing wait: the
// wait by Little's law, W = L_q/λ (WaitingRequests over RateRPS), is more
// than MaxWaitShare of the TTFT. Such a TTFT measures the queue — in an
// overload, a queue that grows with time, which no steady state of the
// model explains — and fitting it reads the queue as slow service. 0.5 is
// "the wait dominates". A wait below one waiting request per replica is a
// request between two engine steps, not a queue: the test needs at least
// one (the emulated and real servers' TTFTs of a few ms would otherwise be
// "mostly wait" at light load).
func (t *Tuner) queueDominated(obs Observation) bool {
	if t.cfg.MaxWaitShare < 0 || obs.WaitingRequests < minGatedWaiting {
		return false
	}
	return 1000*obs.WaitingRequests/obs.RateRPS > t.cfg.MaxWaitShare*obs.TTFTMs
}

// fullBatchShare is the share of the batch limit a queued cycle's replicas
// must report running for its ITL to be read (see loadChanged).
const fullBatchShare = 0.9

// maxLoadChange is the largest factor by which a replica's arrival rate may
// differ from the previous cycle's for the robust strategy to read the
// cycle as a steady state.
const maxLoadChange = 1.2

// batchMoved is the factor by which the requests a replica reports running
// may differ from what Little's law gives its window's averages before the
// robust strategy reads the cycle as a change of load within the window.
const batchMoved = 3.0

// batchContradicts says why the running count, read at the window's end,
// contradicts the window's averages, or "". A replica serving λ requests/s
// for TTFT + o·ITL each holds L = λ·(TTFT + o·ITL) of them (Little's law);
// the count at one instant is about Poisson around the load it reflects. A
// count beyond what a load batchMoved times L would hold (3L + 3√(3L) + 3:
// three Poisson deviations and three requests above it), or, when one is
// reported, below what a load a third of L would hold
// (L/3 − 3√(L/3) − 3), says the load rose (fell) in the window's last
// seconds: the rate, a one-minute average, has not caught up, and the
// latencies are partly the new load's. On step-slow-start seed 4 the cycle
// at the step read 3 requests/s a replica with 155 running (Little's law:
// 11), its TTFT and ITL already raised by the step; the re-anchoring's fit
// took it and put the learned capacity 68 % above the truth for a cycle,
// then 40 % below. On seed 3 a cycle read 4 running where L was 73.
func batchContradicts(obs Observation) string {
	b := obs.RunningRequests // 0: not reported; the rate is positive (Validate)
	if b <= 0 {
		return ""
	}
	l := obs.RateRPS * (obs.TTFTMs + obs.OutputTokens*obs.ITLMs) / 1000
	hi, lo := batchMoved*l, l/batchMoved
	switch {
	case b > hi+3*math.Sqrt(hi)+3:
		return fmt.Sprintf("skipped: the replicas run %.3g requests where the window's rate and latencies hold %.3g (Little's law): the load rose within the window", b, l)
	case b < lo-3*math.Sqrt(lo)-3:
		return fmt.Sprintf("skipped: the replicas run %.3g requests where the window's rate and latencies hold %.3g (Little's law): the load fell within the window", b, l)
	}
	return ""
}

// lastCycle is what the robust strategy remembers of the previous cycle to
// tell whether the current one is a steady state.
type lastCycle struct {
	rate, waiting float64
	// queued and queuedBefore: the previous cycle's and the one before
	// it's TTFT was mostly queueing wait.
	queued, queuedBefore bool
}

// loadChanged says why obs is no steady state, or "". A cycle's figures are
// averages over the metrics window, and when the load changes within it
// they fit no load — the arrival rate is the window's, the latencies those
// of requests that started under the old load. On step-slow-start such
// cycles drew the estimate along the α–γ ridge by 30–50 % and, once
// rejected, made the re-anchoring's F-test refit on them alone
// (docs/tuner.md §7). The robust strategy skips:
//
//   - a cycle whose arrival rate per replica differs from the previous
//     cycle's by more than maxLoadChange (20 %: four standard deviations
//     of a one-minute Poisson count at 8 requests/s, 1.5 at 1 request/s,
//     where a few steady cycles are skipped too);
//   - the first cycle without a queue after one with a queue, and the
//     first two with a queue after one without: they span the queue's end
//     or start (the batch was filling while the running count, read at
//     the window's end, says full). The collector's one-minute window
//     spans two 30-s cycles, so the second queued cycle still averages
//     the first half of the filling: on step-slow-start, after the SLO-miss
//     rule had kept the warm-up's replicas at light load, its ITL put the
//     learned capacity 11 % above the truth for a cycle
//     (TestTunerThroughOverload);
//   - a cycle with a queue whose replicas run fewer than 90 % of their
//     batch limit: the batch is filling (or held by the per-step token
//     budget), every step carries a full budget of queued prefills, and
//     its ITL is no steady state at the running batch — read there, the
//     e2e staircases' filling batches made the ITL target look infeasible
//     (α learned 3–6× too large), and the saturation analyzer scaled to 8
//     replicas where 2–3 serve. A synthetic (Steady) observation is read
//     at whatever batch it reports;
//   - a cycle with a queue that is less than half the previous one's: the
//     queue is draining, and the batch may not have been what the running
//     count, read at the window's end, says throughout.
//
// A cycle whose queue holds or grows is kept whatever the rate did. Nothing
// is skipped during the first warm-up (coldFit): a cold start under a
// changing load — a model's first replicas as the load ramps and more
// start — would otherwise stay unsized, to the saturation analyzer alone
// (the e2e staircases scaled to 7 replicas where 2 serve); the first fit
// is then rough, and the gated steps that follow skip such cycles.
func (t *Tuner) loadChanged(prev lastCycle, obs Observation) string {
	if !t.logSpace() || prev.rate <= 0 || obs.Steady || t.coldFit() {
		return ""
	}
	if t.queueDominated(obs) {
		if !prev.queued || !prev.queuedBefore {
			return "skipped: the replicas did not queue throughout the last two cycles: this cycle's averages span the queue's start"
		}
		if b, n := obs.RunningRequests, float64(obs.MaxBatchSize); b >= 1 && b < fullBatchShare*n {
			return fmt.Sprintf("skipped: the replicas queue behind a batch that is not full (%.3g of %d running): the batch is filling, its steps carry the queue's prefills", b, obs.MaxBatchSize)
		}
		if obs.WaitingRequests < prev.waiting/2 {
			return fmt.Sprintf("skipped: the queue is draining (%.3g waiting per replica, %.3g the cycle before): the batch may not have been full throughout", obs.WaitingRequests, prev.waiting)
		}
		return ""
	}
	if prev.queued {
		return "skipped: the previous cycle's replicas queued: this cycle's averages span the queue's end"
	}
	if f := obs.RateRPS / prev.rate; f > maxLoadChange || f < 1/maxLoadChange {
		return fmt.Sprintf("skipped: the load changed from %.3g to %.3g requests/s per replica: the cycle's averages span the change", prev.rate, obs.RateRPS)
	}
	return batchContradicts(obs)
}

// gated says whether the server gate applies: it protects an estimate
// learned from the server, so not during a fit (a tuner still fitting its
// window has no estimate to protect: a cold start under load, a model's
// first replica overloaded until more start, sees nothing but such
// cycles, and skipping them would leave the model unsized, to the
// saturation analyzer alone, for as long as the load lasts), and not after
// a first fit that took such cycles (queueFit: its estimate learned some
// of the queue, and the gate would keep out the light-load cycles'
// corrections with the rest; the next fit — a restart — starts clean). A
// restart's refit does not mark the tuner: it starts from the rejected
// observations, which contradict an estimate that had been protected.
func (t *Tuner) gated(reason string) bool {
	if reason == "" {
		return false
	}
	if t.fitting {
		if t.coldFit() {
			t.queueFit = true
		}
		return false
	}
	return !t.queueFit
}

// coldFit reports the first warm-up: fitting, with fewer accepted updates
// than the window (a restart's refit comes after Window updates).
func (t *Tuner) coldFit() bool { return t.fitting && t.updates < t.windowSize }

// skip records a step the server gate kept out.
func (t *Tuner) skip(st *Step, reason string) {
	st.Skipped, st.Reason = true, reason
	t.skips++
	if t.logSpace() && !t.fitting {
		t.anchorP = t.anchorP.plusDiag(t.drift(), t.n)
	}
}

// Step runs one cycle on obs. An observation that fails Validate is an
// error and changes nothing; every other outcome, including an update the
// filter cannot compute, is reported in the returned Step. With the robust
// strategy a steady-state cycle does not allocate (BenchmarkStep).
func (t *Tuner) Step(obs Observation) (Step, error) {
	if err := obs.Validate(); err != nil {
		return Step{}, err
	}
	st := Step{ObservedTTFTMs: obs.TTFTMs, ObservedITLMs: obs.ITLMs}
	prior, priorErr := t.Predict(obs)
	if priorErr == nil {
		st.PredictedTTFTMs, st.PredictedITLMs = prior.TTFTMs, prior.ITLMs
	}
	prev := lastCycle{rate: t.lastRate, queued: t.lastQueued, queuedBefore: t.queuedBefore, waiting: t.lastWaiting}
	t.queuedBefore = t.lastQueued
	t.lastRate, t.lastQueued, t.lastWaiting = obs.RateRPS, t.queueDominated(obs), obs.WaitingRequests
	if reason := t.loadChanged(prev, obs); reason != "" {
		t.skip(&st, reason)
		st.Params, st.Covariance = t.Params(), t.covariance()
		return st, nil
	}
	if reason := t.gateServer(obs); t.gated(reason) {
		t.skip(&st, reason)
		st.Params, st.Covariance = t.Params(), t.covariance()
		return st, nil
	}
	switch {
	case t.cfg.Strategy == StrategySeed:
		t.stepSeed(&st, obs)
	case t.fitting:
		t.stepWarmup(&st, obs)
	default:
		saturated := priorErr != nil || prior.Blocking > saturatedBlocking || prior.WaitMs > obs.TTFTMs
		if t.queueDominated(obs) {
			// Read at its running batch, its ITL alone: the gate's
			// premise holds there (see stepGated for what a rejection
			// does).
			saturated = priorErr != nil
		}
		t.stepGated(&st, obs, saturated)
	}
	t.lastNIS = st.NIS
	if st.Accepted {
		t.updates++
		t.pending = t.pending[:0]
	} else {
		t.rejections++
	}
	st.Params, st.Covariance = t.Params(), t.covariance()
	return st, nil
}

// stepSeed is the reference tuner's cycle as published (the WVA
// queueing-model guide §4):
// stash, predict, update, then reject on a non-positive parameter or an NIS
// at or above the gate, restoring x and P from before the predict step.
func (t *Tuner) stepSeed(st *Step, obs Observation) {
	t.filter.Stash()
	t.filter.Predict(nil, nil, t.seedProcessNoise())
	upd, err := t.seedUpdate(obs)
	st.NIS, st.Iterations = upd.NIS, upd.Iterations
	if len(upd.Innovation) == 2 {
		st.Innovation, st.Evaluated = [2]float64{upd.Innovation[0], upd.Innovation[1]}, true
	}
	invalid := t.Params().Validate(t.cfg.ServiceModel) // before any unstash restores them
	switch {
	case err != nil:
		t.filter.Unstash()
		st.Reason = "rejected: " + err.Error()
	case invalid != nil:
		t.filter.Unstash()
		st.Reason = "rejected: " + invalid.Error()
	case st.NIS >= t.cfg.MaxNIS:
		st.Gated = true
		t.filter.Unstash()
		st.Reason = fmt.Sprintf("rejected: NIS %.4g ≥ %.4g", st.NIS, t.cfg.MaxNIS)
	default:
		st.Accepted, st.Reason, st.Gated = true, "accepted", true
	}
}

// stepWarmup adds obs to the window and fits the whole window against the
// anchor prior, without the gate. A joint fit of the first few observations
// is the maximum a-posteriori estimate from all of them, which one
// linearised update per observation is not: from a start far off, a
// sequential EKF collapses its covariance in directions the first
// observations cannot resolve and then crawls.
//
// The several starts of a warm-up fit (see fitWindow) are tried on the
// first observation and when the window is full — the fit that becomes the
// anchor, and the first the engine sizes with — and from the previous fit
// alone in between: an intermediate fit only seeds the next, and trying
// every start at every step took three quarters of a warm-up's time.
func (t *Tuner) stepWarmup(st *Step, obs Observation) {
	t.evaluate(st, obs, t.p)
	t.window = append(t.window, obs)
	t.explore = len(t.window) <= 1 || len(t.window) >= t.windowSize
	defer func() { t.explore = true }()
	if err := t.fitWindow(st); err != nil {
		t.window = t.window[:len(t.window)-1]
		st.Reason = "rejected: " + err.Error()
		return
	}
	st.Accepted = true
	st.Reason = fmt.Sprintf("accepted: warm-up fit of %d observations (gate off)", len(t.window))
	if d2, ok := t.priorContradicted(); ok {
		// A wrong start, detected: the fit sits where the prior says it
		// almost cannot be, so the prior (a wrong profile, or a re-anchor
		// on a wrong estimate) is dropped for the cold start's spread.
		narrow := t.anchorP
		for i := range t.n {
			t.anchorP[i][i] = math.Max(t.anchorP[i][i], sq(t.cfg.InitialSpread))
		}
		if err := t.fitWindow(st); err != nil {
			t.anchorP = narrow
		} else {
			st.Reason += fmt.Sprintf("; the prior is contradicted (distance² %.3g), widened to the cold start's", d2)
		}
	}
	if len(t.window) >= t.windowSize {
		// Warm-up done: the joint fit becomes the anchor, linearised at its
		// maximum a-posteriori estimate rather than one observation at a time
		// against the cold prior.
		t.fitting = false
		t.anchorX, t.anchorP = t.x, t.p
		t.window = t.window[:0]
	}
}

// priorMaxQuantile is the χ² point beyond which a warm-up fit contradicts
// its prior (see priorContradicted).
const priorMaxQuantile = 0.999

// priorMaxD2 is the χ² quantile priorMaxQuantile with k degrees of
// freedom, for k up to maxDim.
var priorMaxD2 = func() (q [maxDim + 1]float64) {
	for k := 1; k <= maxDim; k++ {
		q[k] = distuv.ChiSquared{K: float64(k)}.Quantile(priorMaxQuantile)
	}
	return q
}()

// priorContradicted reports whether the warm-up fit lies where its prior
// says it almost cannot: the squared Mahalanobis distance of the estimate
// from the anchor, under the anchor's covariance plus Q for each cycle of
// the window, beyond the 99.9 % point of χ² with one degree of freedom per
// parameter (16.3 for three). Only a prior narrower than the cold start's
// can be contradicted: the cold start is already as wide as the tuner goes.
func (t *Tuner) priorContradicted() (float64, bool) {
	narrower := false
	for i := range t.n {
		narrower = narrower || t.anchorP[i][i] < sq(t.cfg.InitialSpread)
	}
	if !narrower {
		return 0, false
	}
	l, ok := cholesky(t.anchorP.plusDiag(float64(len(t.window))*t.drift(), t.n), t.n)
	if !ok {
		return 0, false
	}
	var d vec
	for i := range t.n {
		d[i] = t.x[i] - t.anchorX[i]
	}
	w := l.solve(d, t.n)
	d2 := 0.0
	for i := range t.n {
		d2 += d[i] * w[i]
	}
	return d2, d2 > priorMaxD2[t.n]
}

// stepGated is the steady-state cycle. The observation's NIS at the
// predicted estimate is gated; the gate is skipped when the estimate puts
// the observation in overload (its χ² premise fails there, and the
// observation proves the estimate wrong). An accepted observation joins the
// window of the last Window observations, which is fitted jointly against
// the anchor — the estimate from everything older, advanced by one EKF
// update each time an observation leaves the window (a moving-horizon
// estimate with an EKF arrival cost). Fitting a few observations at once
// averages their noise instead of chasing the newest one.
//
// A rejected observation changes nothing but the anchor's uncertainty, which
// grows by the process noise as time passes. After MaxRejections in a row
// the estimate is taken to be wrong: see reanchor.
func (t *Tuner) stepGated(st *Step, obs Observation, saturated bool) {
	t.evaluate(st, obs, t.p.plusDiag(t.drift(), t.n))
	st.Gated = st.Evaluated && !saturated
	if st.Evaluated && (saturated || st.NIS < t.cfg.MaxNIS) {
		t.window = append(t.window, obs)
		for len(t.window) > t.windowSize { // more after a joint refit (reanchor)
			t.advanceAnchor()
		}
		if err := t.fitWindow(st); err != nil {
			t.window = t.window[:len(t.window)-1]
			st.Reason = "rejected: " + err.Error()
			return
		}
		st.Accepted, st.Reason = true, "accepted"
		if saturated {
			st.Reason = "accepted: the estimate puts this load in overload (gate off)"
		}
		return
	}
	t.anchorP = t.anchorP.plusDiag(t.drift(), t.n)
	t.pending = append(t.pending, obs)
	if !st.Evaluated {
		st.Reason = "rejected: the queueing model cannot be evaluated at this observation"
	} else {
		st.Reason = fmt.Sprintf("rejected: NIS %.4g ≥ %.4g", st.NIS, t.cfg.MaxNIS)
	}
	// A queued cycle the estimate cannot explain re-anchors at once: its
	// ITL at the running batch is the cleanest figure a server gives (no
	// queue in it, and no lag: the batch holds however the arrivals move),
	// and while the replicas queue, every cycle spent on a wrong estimate
	// is a cycle of undersizing.
	if len(t.pending) < t.cfg.MaxRejections && (!st.Evaluated || !t.queueDominated(obs)) {
		return
	}
	t.reanchor(st)
}

// reanchor is the recovery after MaxRejections in a row: the estimate is
// wrong. The tuner re-anchors at the current estimate with every
// log-parameter's variance increased by InflationSpread², and refits. Two
// causes are told apart by the observations themselves:
//
//   - the parameters changed (a new engine version, a slower node): the
//     recent accepted window fits the old estimate and the rejected
//     observations fit parameters of their own. The rejected observations
//     alone are refitted and warmed up from;
//   - the estimate was wrong all along (α and γ trade off at one load: a
//     split that explains one load contradicts another): one parameter set
//     explains the recent window and the rejected observations together.
//     Their joint fit is the estimate — it spans the old and the new
//     operating points, which identify what one of them cannot — and the
//     anchor moves to it.
//
// The choice is an F-test of the nested models: the joint fit (k
// parameters) against the two separate fits (2k), on the sum of squared
// normalised residuals of the 2m stacked log-TTFT and log-ITL values. The
// F statistic scales out the observations' real noise, which on a real
// server (and the simulator) is several times the 2.55 % R assumes, so an
// absolute χ² test would reject every joint fit. The joint fit wins unless
// F exceeds its 99 % point. Refitting the rejected observations alone
// whatever the cause (as the tuner once did) read a lighter load's split
// into the capacity: on step-slow-start it halved the learned capacity
// (docs/tuner.md §3 item 5, §7).
func (t *Tuner) reanchor(st *Step) {
	// The gate rejected this observation; what the re-anchoring decides
	// is not the gate's (a study's mean NIS of gate-accepted updates would
	// otherwise count the rejected NIS).
	st.Gated = false
	n, last, recent := len(t.pending), st.NIS, len(t.window)
	estimate, estimateP := t.x, t.p
	oldAnchorX, oldAnchorP := t.anchorX, t.anchorP
	oldMisfit := t.misfit(t.window)
	joint := make([]Observation, 0, recent+n)
	joint = append(append(joint, t.window...), t.pending...)
	t.anchorX = estimate
	t.anchorP = t.p.plusDiag(sq(t.cfg.InflationSpread), t.n)
	anchorP := t.anchorP

	// The parameters changed: the rejected observations alone — unless
	// they have no more values than there are parameters (a queued cycle's
	// ITL alone): those fit any change exactly and identify none, the
	// F-test has no power, and a refit on them alone put the estimate
	// anywhere on their ridge (on compute-bound, one queued cycle's ITL put
	// the next cycles' predicted ITL at 6× the observed). The joint fit is
	// then the re-anchoring, however few values the window holds — none,
	// right after a warm-up: the inflated prior centred on the estimate
	// is then what the rejected observations are fitted against.
	values := t.values(t.pending)
	identifiable := values > t.n
	t.window = append(t.window[:0:0], t.pending...)
	t.fitting, t.queueFit = true, false
	var changedErr error
	var changedX vec
	var changedP square
	changedMisfit := 0.0
	if identifiable {
		changedErr = t.fitWindow(st)
		changedX, changedP, changedMisfit = t.x, t.p, t.misfit(t.pending)
	} else {
		changedErr = fmt.Errorf("%d observed values cannot identify %d parameters", values, t.n)
	}

	// The estimate was wrong: the recent window and the rejected ones.
	if k := t.n; !identifiable || recent > 0 && t.values(joint) > 2*k {
		t.setState(estimate, &estimateP)
		t.window = joint
		if err := t.fitWindow(st); err == nil {
			f, dof := math.NaN(), float64(t.values(joint)-2*k)
			if identifiable {
				separate := oldMisfit + changedMisfit
				f = (t.misfit(joint) - separate) / float64(k) / (separate / dof)
			}
			if changedErr != nil || !(f > distuv.F{D1: float64(k), D2: dof}.Quantile(explainQuantile)) {
				// The old anchor is what was wrong: centre the (inflated)
				// prior on the joint fit, so that the observations that
				// later leave the window are folded into an anchor
				// linearised near the truth, not on the tangent of a
				// far-off split — extrapolated along the α–γ ridge, that
				// tangent drew the estimate away again once the window
				// held the new load only.
				t.anchorX = t.x
				if err := t.fitWindow(st); err != nil {
					t.setState(t.anchorX, nil)
				}
				t.fitting = false
				st.Accepted = true
				st.Reason = fmt.Sprintf("accepted: %d rejections in a row (last NIS %.4g); estimate wrong, covariance inflated, refitted with the %d recent observations they contradict (F %.3g)",
					n, last, recent, f)
				if !identifiable {
					st.Reason = fmt.Sprintf("accepted: %d rejections in a row (last NIS %.4g); estimate wrong, covariance inflated, refitted with the %d recent observations they contradict (%v alone)",
						n, last, recent, changedErr)
				}
				return
			}
		}
		t.anchorX, t.anchorP = estimate, anchorP
		t.window = append(t.window[:0:0], t.pending...)
	}
	if changedErr != nil {
		if !identifiable {
			// Nothing to refit on: the rejection stands, and the window
			// and the anchor are what they were.
			t.anchorX, t.anchorP = oldAnchorX, oldAnchorP
			t.window = append(t.window[:0:0], joint[:recent]...)
		}
		t.setState(estimate, &estimateP)
		t.fitting = false
		st.Reason += "; refit after covariance inflation failed: " + changedErr.Error()
		return
	}
	t.setState(changedX, &changedP)
	st.Accepted = true
	t.fitting = len(t.window) < t.windowSize
	st.Reason = fmt.Sprintf("accepted: %d rejections in a row (last NIS %.4g); parameters assumed changed, covariance inflated, refitted", n, last)
}

// values counts the observed values of batch the fit uses: an ITL each,
// and a TTFT where it is not queueing wait.
func (t *Tuner) values(batch []Observation) int {
	n := 0
	for _, o := range batch {
		n++
		if !t.queueDominated(o) {
			n++
		}
	}
	return n
}

// explainQuantile is the point of the F distribution above which the
// rejected observations are taken to come from changed parameters (see
// reanchor).
const explainQuantile = 0.99

// misfit is Σ((z − h(x))²/r) over the stacked log-TTFT and log-ITL values
// of batch at the current estimate x: the data part of the MAP cost.
func (t *Tuner) misfit(batch []Observation) float64 {
	if len(batch) == 0 {
		return 0
	}
	return t.dataCost(t.x, batch, t.measure(batch, t.x))
}

// advanceAnchor moves the oldest observation out of the window and into the
// anchor, with one iterated EKF update linearised at the current estimate.
// The window shifts in place, so that the steady state reuses its array.
func (t *Tuner) advanceAnchor() {
	oldest := t.window[:1]
	p := t.anchorP.plusDiag(t.drift(), t.n)
	if res, err := t.gaussNewton(t.anchorX, p, oldest, t.measure(oldest, t.anchorX), t.x); err == nil {
		t.anchorX, t.anchorP = res.x, res.p
	} else {
		t.anchorP = p
	}
	t.p = t.anchorP
	copy(t.window, t.window[1:])
	t.window = t.window[:len(t.window)-1]
}

// evaluate fills the NIS and innovation of obs at the current estimate,
// whose covariance is p.
func (t *Tuner) evaluate(st *Step, obs Observation, p square) {
	m := t.measureOne(obs, t.x)
	h, jac, ok := t.linearise(t.x, t.x, obs)
	if !ok {
		return
	}
	var s [2][2]float64
	for a := range 2 {
		for b := range 2 {
			for i := range t.n {
				for j := range t.n {
					s[a][b] += jac[a][i] * p[i][j] * jac[b][j]
				}
			}
		}
		s[a][a] += m.r[a]
	}
	y := [2]float64{m.z[0] - h[0], m.z[1] - h[1]}
	if math.IsInf(m.r[0], 1) {
		// The TTFT is queueing wait: the ITL alone, its NIS put on the
		// scale of two degrees of freedom (see itlOnlyNIS).
		if !(s[1][1] > 0) || math.IsInf(s[1][1], 0) {
			return
		}
		st.NIS = itlOnlyNIS(y[1] * y[1] / s[1][1])
		st.Innovation, st.Evaluated = [2]float64{0, y[1]}, true
		return
	}
	s[0][1] = (s[0][1] + s[1][0]) / 2
	det := s[0][0]*s[1][1] - s[0][1]*s[0][1]
	tr := s[0][0] + s[1][1]
	// The eigenvalues of S are tr/2 ± √(tr²/4 − det); their ratio is its
	// condition number.
	disc := math.Sqrt(math.Max(tr*tr/4-det, 0))
	if !(det > 0) || math.IsInf(det, 0) || (tr/2+disc)/(tr/2-disc) > maxCondition {
		return
	}
	st.NIS = (y[0]*y[0]*s[1][1] - 2*y[0]*y[1]*s[0][1] + y[1]*y[1]*s[0][0]) / det
	st.Innovation, st.Evaluated = y, true
}

// itlOnlyNIS maps the NIS of one value (χ² with one degree of freedom) to
// the χ² value with two that has the same tail probability, so that one
// gate serves observations with and without their TTFT:
// F₂⁻¹(F₁(x)) = −2·ln(1 − erf(√(x/2))).
func itlOnlyNIS(x float64) float64 {
	tail := math.Erfc(math.Sqrt(x / 2)) // 1 − F₁(x)
	if tail <= 0 {
		return math.Inf(1)
	}
	return -2 * math.Log(tail)
}

// fitWindow resets the estimate to the anchor and fits every observation in
// the window at once. The parameters may have drifted by the process noise
// in each cycle since the anchor, so the prior is the anchor's covariance
// plus that much. In the steady state the iterations start at the current
// estimate. While warming up, when a start far off can lead Gauss–Newton
// into the wrong one of several local fits (α and γ trade off), they also
// start at the anchor, the defaults and a bootstrap from the newest
// observation, and the fit with the lowest MAP cost wins.
func (t *Tuner) fitWindow(st *Step) error {
	var starts [4]vec
	starts[0] = t.x
	ns := 1
	if t.fitting && t.explore {
		starts[1], starts[2] = t.anchorX, t.stateOf(Defaults(t.cfg.ServiceModel))
		ns = 3
		if p, ok := Bootstrap(t.cfg.ServiceModel, t.window[len(t.window)-1]); ok {
			starts[3] = t.stateOf(p)
			ns = 4
		}
	}
	prior := t.anchorP.plusDiag(float64(len(t.window))*t.drift(), t.n)
	meas := t.measure(t.window, t.x)
	best := fitResult{cost: math.Inf(1)}
	found := false
	var lastErr error
	for k, s := range starts[:ns] {
		if t.repeated(starts[:k], s) {
			continue // the same start gives the same fit
		}
		res, err := t.gaussNewton(t.anchorX, prior, t.window, meas, s)
		st.Iterations += res.iters
		if err != nil {
			lastErr = err
			continue
		}
		if res.cost < best.cost {
			best, found = res, true
		}
	}
	if !found {
		return lastErr
	}
	t.setState(best.x, &best.p)
	return nil
}

// repeated reports whether s is one of earlier.
func (t *Tuner) repeated(earlier []vec, s vec) bool {
	for _, e := range earlier {
		if e == s {
			return true
		}
	}
	return false
}

// stateOf maps parameters to the filter state (log-parameters).
func (t *Tuner) stateOf(p Params) vec {
	x := vec{p.Alpha, p.Beta, p.Gamma, p.Delta}
	for i := range t.n {
		x[i] = math.Log(x[i])
	}
	return x
}

// drift is the robust strategy's process noise per cycle: Q = diag(c²) on
// the log-parameters, the same relative drift as the seed's diag((c·x)²)
// (docs/tuner.md §1).
func (t *Tuner) drift() float64 { return sq(t.cfg.PercentChange) }

// seedProcessNoise is the seed strategy's Q = diag((c·x)²).
func (t *Tuner) seedProcessNoise() *mat.SymDense {
	x := t.filter.State()
	q := mat.NewSymDense(len(x), nil)
	for i, v := range x {
		q.SetSym(i, i, sq(t.cfg.PercentChange*v))
	}
	return q
}

// seedUpdate runs the seed strategy's measurement update for one
// observation: TTFT and ITL in ms, relative noise σ = (ε/t)/√g of the
// observed value (docs/tuner.md §1), the filter's own numerical Jacobian.
func (t *Tuner) seedUpdate(obs Observation) (kalman.Update, error) {
	noise := t.cfg.relNoise()
	z := []float64{obs.TTFTMs, obs.ITLMs}
	r := mat.NewSymDense(2, []float64{sq(noise * obs.TTFTMs), 0, 0, sq(noise * obs.ITLMs)})
	return t.filter.Update(z, t.seedObserve(obs), nil, r)
}

// seedObserve returns h(x) for the seed strategy: the TTFT and ITL
// predicted at obs's load. Where the model cannot be evaluated it returns
// NaN, which the filter reports as a non-finite update.
func (t *Tuner) seedObserve(obs Observation) kalman.Func {
	return func(x []float64) []float64 {
		m, err := t.analyze(t.toParams(vecOf(x)), obs)
		if err != nil || !(m.TTFTMs > 0) || !(m.ITLMs > 0) {
			return []float64{math.NaN(), math.NaN()}
		}
		return []float64{m.TTFTMs, m.ITLMs}
	}
}

// waitShare is the part of an observation's TTFT that is queueing wait,
// by the estimate at: the larger of the predicted wait's share of the
// predicted TTFT and the share of the observed TTFT beyond the predicted
// prefill. The wait is what the queueing model knows least well (it assumes
// exponential service and a hard batch limit, where a KV-bound server admits
// a varying number of requests of varying size and preempts), and a
// one-minute average of waits is noisy; so the log-TTFT of an observation
// carries an extra log-standard deviation of half that share (κ = 0.5:
// κ = 1 cut `wva tune study` runs within 5 % at 5 % noise from 73 to 53 %), and a
// wait-dominated TTFT no longer fails the gate on every
// cycle nor pulls α, β, γ away from what the ITL and unloaded TTFT show.
func (t *Tuner) waitShare(o Observation, at vec) float64 {
	m, err := t.analyze(t.toParams(at), o)
	if err != nil || !(m.TTFTMs > 0) {
		return 1
	}
	prefill := m.TTFTMs - m.WaitMs
	return math.Min(1, math.Max(m.WaitMs/m.TTFTMs, 1-prefill/o.TTFTMs))
}
