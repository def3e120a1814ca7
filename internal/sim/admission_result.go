package sim

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/llm-d-incubation/wva/internal/admission"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// AdmissionStats are a run's figures of the gateway's admission control.
type AdmissionStats struct {
	Policy string `json:"policy"`
	// Decided counts the requests the policy decided on (each once), and
	// how: Admitted or Rejected, and by the policy's reason.
	Decided  int64            `json:"decided"`
	Admitted int64            `json:"admitted"`
	Rejected int64            `json:"rejected"`
	ByReason map[string]int64 `json:"byReason"`
	// CacheHitArrived is the share of the decided requests whose prompt
	// had cached blocks on at least one ready replica when the gateway
	// decided; CacheHitAdmitted the same among the admitted ones.
	// CachedTokens… are the shares of their prompt tokens cached on the
	// best such replica.
	CacheHitArrived      float64                    `json:"cacheHitArrived"`
	CacheHitAdmitted     float64                    `json:"cacheHitAdmitted"`
	CachedTokensArrived  float64                    `json:"cachedTokenShareArrived"`
	CachedTokensAdmitted float64                    `json:"cachedTokenShareAdmitted"`
	PrefixLookups        int64                      `json:"prefixLookups"`
	Calibration          *Calibration               `json:"calibration,omitempty"`
	EstimateErrorMs      *EstimateErrors            `json:"estimateErrorMs,omitempty"`
	Groups               map[string]*GroupAdmission `json:"prefixGroups,omitempty"`
	// NewGroups are the prefix groups that appear during the run
	// (workload.newPrefixGroups), together; EstablishedSinceNewGroups the
	// groups there from the start, over the arrivals from the first new
	// group's start on: what the new groups' admission share compares with.
	NewGroups                 *GroupAdmission `json:"newGroups,omitempty"`
	EstablishedSinceNewGroups *GroupAdmission `json:"establishedSinceNewGroups,omitempty"`
}

// ClassAdmission is one SLO class at the admission control.
type ClassAdmission struct {
	Admitted int64 `json:"admitted"`
	Rejected int64 `json:"rejected"`
	// Goodput is the share of the class's arrivals completed within its
	// SLO (withinSlo / arrived).
	Goodput float64 `json:"goodput"`
	// TTFTp50Ms and TTFTp99Ms are over the class's completed requests
	// (TTFTSamples), each with its 95 % bootstrap interval (seeded by the
	// scenario's seed).
	TTFTSamples      int      `json:"ttftSamples"`
	TTFTp50Ms        Interval `json:"ttftP50Ms"`
	TTFTp99Ms        Interval `json:"ttftP99Ms"`
	CacheHitArrived  float64  `json:"cacheHitArrived"`
	CacheHitAdmitted float64  `json:"cacheHitAdmitted"`
}

// GroupAdmission is a prefix group's admission: its arrivals decided,
// those admitted and their share, and when it first arrived.
type GroupAdmission struct {
	Arrived      int64   `json:"arrived"`
	Admitted     int64   `json:"admitted"`
	Share        float64 `json:"admissionShare"`
	FirstSeconds float64 `json:"firstArrivalSeconds"`
}

// Calibration is the calibrator's fit at the end of the run, in ms (Queue:
// steps per request ahead), with standard errors.
type Calibration struct {
	Beta0Ms       float64 `json:"beta0Ms"`
	Beta1Ms       float64 `json:"beta1Ms"`
	Queue         float64 `json:"queue"`
	Beta0StdErrMs float64 `json:"beta0StdErrMs"`
	Beta1StdErrMs float64 `json:"beta1StdErrMs"`
	QueueStdErr   float64 `json:"queueStdErr"`
	ResidualMs    float64 `json:"residualStdMs"`
	Used          int64   `json:"used"`
	Clipped       int64   `json:"clipped"`
	Ignored       int64   `json:"ignored"`
}

// EstimateErrors compare the predictive TTFT estimates with the TTFT each
// admitted request then saw from its dispatch: on the replica it was sent
// to, with the coefficients the policy used (calibrated when calibrate is
// on) and with the configured initial ones, and the decision's best case
// over the fleet.
type EstimateErrors struct {
	InUse    ErrorStats `json:"inUse"`
	Initial  ErrorStats `json:"initial"`
	BestCase ErrorStats `json:"bestCase"`
}

// ErrorStats summarise estimate − observed, in ms.
type ErrorStats struct {
	N          int     `json:"n"`
	MedianAbs  float64 `json:"medianAbs"`
	P90Abs     float64 `json:"p90Abs"`
	MeanSigned float64 `json:"meanSigned"`
}

// admissionTally collects a run's admission figures.
type admissionTally struct {
	st      AdmissionStats
	classes []classTally // as Result.classKeys
	groups  map[int64]*GroupAdmission
	// per model: its prefix groups from the start, and when the first new
	// one starts (+Inf: never)
	base    []int
	newFrom []float64
	est     GroupAdmission
	newg    GroupAdmission
	tokens  [4]float64 // cached and prompt tokens, arrived; the same, admitted
	hits    [2]int64   // arrived, admitted
	errs    [3][]float64
	seed    uint64
}

type classTally struct {
	admitted, rejected, hitArrived, hitAdmitted int64
}

func newAdmissionTally(sc *scenario.Scenario, res *Result) *admissionTally {
	t := &admissionTally{classes: make([]classTally, len(res.classKeys)), groups: map[int64]*GroupAdmission{},
		seed: sc.Seed, st: AdmissionStats{Policy: sc.Gateway.Admission.Policy, ByReason: map[string]int64{}}}
	t.est.FirstSeconds = math.Inf(1)
	t.newg.FirstSeconds = math.Inf(1)
	for _, m := range sc.Models {
		from := math.Inf(1)
		for _, g := range m.Workload.NewPrefixGroups {
			from = math.Min(from, g.AtSeconds)
		}
		base := math.MaxInt // no new groups (a trace's groups are all there from the start)
		if len(m.Workload.NewPrefixGroups) > 0 {
			base = m.Workload.PrefixGroups
		}
		t.base = append(t.base, base)
		t.newFrom = append(t.newFrom, from)
	}
	return t
}

// class is q's class tally, or nil when its model has no classes.
func (t *admissionTally) class(res *Result, q *request) *classTally {
	if res.classBase[q.model] < 0 {
		return nil
	}
	return &t.classes[res.classBase[q.model]+q.class]
}

// decision tallies the policy's decision d on q, with the fleet it saw.
func (t *admissionTally) decision(s *Sim, q *request, req admission.Request, d admission.Decision, fleet []admission.Instance) {
	cached := 0
	for i := range fleet {
		cached = max(cached, fleet[i].Cached)
	}
	hit := cached > 0
	t.st.Decided++
	t.st.ByReason[d.Reason.String()]++
	t.tokens[0] += float64(cached)
	t.tokens[1] += float64(req.InputTokens)
	if hit {
		t.hits[0]++
	}
	c := t.class(s.res, q)
	if c != nil && hit {
		c.hitArrived++
	}
	if d.Admit {
		t.st.Admitted++
		t.tokens[2] += float64(cached)
		t.tokens[3] += float64(req.InputTokens)
		if hit {
			t.hits[1]++
		}
	} else {
		t.st.Rejected++
	}
	if c != nil {
		c.count(d.Admit, hit)
	}
	t.group(s, q, d.Admit)
}

func (c *classTally) count(admit, hit bool) {
	if !admit {
		c.rejected++
		return
	}
	c.admitted++
	if hit {
		c.hitAdmitted++
	}
}

// group tallies q's prefix group, and the established groups once a new
// one has started.
func (t *admissionTally) group(s *Sim, q *request, admit bool) {
	if q.Prefix < 0 {
		return
	}
	key := int64(q.model)<<32 | int64(q.Prefix)
	g := t.groups[key]
	if g == nil {
		g = &GroupAdmission{FirstSeconds: s.now}
		t.groups[key] = g
	}
	g.add(admit)
	switch {
	case q.Prefix >= t.base[q.model]:
		t.newg.add(admit)
		t.newg.FirstSeconds = math.Min(t.newg.FirstSeconds, s.now)
	case s.now >= t.newFrom[q.model]:
		t.est.add(admit)
		t.est.FirstSeconds = math.Min(t.est.FirstSeconds, s.now)
	}
}

func (g *GroupAdmission) add(admit bool) {
	g.Arrived++
	if admit {
		g.Admitted++
	}
}

// observed compares q's estimates with its observed TTFT (seconds).
func (t *admissionTally) observed(q *request, ttft float64) {
	t.errs[0] = append(t.errs[0], q.obs.estimate-ttft)
	t.errs[1] = append(t.errs[1], q.obs.initial-ttft)
	if q.obs.best >= 0 {
		t.errs[2] = append(t.errs[2], q.obs.best-ttft)
	}
}

// finish computes the figures into the result.
func (t *admissionTally) finish(s *Sim) {
	r, st := s.res, &t.st
	st.PrefixLookups = s.prefixLookups
	st.CacheHitArrived = ratio(float64(t.hits[0]), float64(st.Decided))
	st.CacheHitAdmitted = ratio(float64(t.hits[1]), float64(st.Admitted))
	st.CachedTokensArrived = ratio(t.tokens[0], t.tokens[1])
	st.CachedTokensAdmitted = ratio(t.tokens[2], t.tokens[3])
	t.finishGroups(s)
	if g := s.gate; g.cal != nil {
		st.Calibration = calibrationOf(g.cal.Fit())
	}
	if s.gate.pred != nil {
		st.EstimateErrorMs = &EstimateErrors{InUse: errorStats(t.errs[0]), Initial: errorStats(t.errs[1]), BestCase: errorStats(t.errs[2])}
	}
	for i, cs := range r.classKeys {
		c, ttfts := &t.classes[i], r.classTTFTs[i]
		ca := &ClassAdmission{Admitted: c.admitted, Rejected: c.rejected, TTFTSamples: len(ttfts),
			Goodput:          ratio(float64(cs.WithinSLO), float64(cs.Arrived)),
			CacheHitArrived:  ratio(float64(c.hitArrived), float64(c.admitted+c.rejected)),
			CacheHitAdmitted: ratio(float64(c.hitAdmitted), float64(c.admitted))}
		sort.Float64s(ttfts)
		ci := BootstrapQuantiles(ttfts, []float64{0.5, 0.99}, 1000, rand.New(rand.NewPCG(t.seed, 0xb0075+uint64(i))))
		ca.TTFTp50Ms, ca.TTFTp99Ms = ci[0], ci[1]
		cs.Admission = ca
	}
	r.Admission = st
}

// finishGroups names the prefix groups ("model/group-N") with their shares.
func (t *admissionTally) finishGroups(s *Sim) {
	st := &t.st
	if len(t.groups) > 0 {
		st.Groups = map[string]*GroupAdmission{}
	}
	for key, g := range t.groups {
		g.Share = ratio(float64(g.Admitted), float64(g.Arrived))
		st.Groups[s.sc.Models[key>>32].Name+"/group-"+strconv.FormatInt(key&(1<<32-1), 10)] = g
	}
	if t.newg.Arrived > 0 {
		st.NewGroups, st.EstablishedSinceNewGroups = t.newg.withShare(), t.est.withShare()
	}
}

// withShare returns a copy with its admission share.
func (g GroupAdmission) withShare() *GroupAdmission {
	g.Share = ratio(float64(g.Admitted), float64(g.Arrived))
	if math.IsInf(g.FirstSeconds, 1) {
		g.FirstSeconds = 0
	}
	return &g
}

func calibrationOf(f admission.Fit) *Calibration {
	c, e := f.Coefficients, f.StdErr
	return &Calibration{Beta0Ms: 1000 * c.Beta0, Beta1Ms: 1000 * c.Beta1, Queue: c.Queue,
		Beta0StdErrMs: 1000 * e.Beta0, Beta1StdErrMs: 1000 * e.Beta1, QueueStdErr: e.Queue,
		ResidualMs: 1000 * f.ResidualStd, Used: f.Used, Clipped: f.Clipped, Ignored: f.Ignored}
}

// errorStats summarises signed errors in seconds (sorted in place) in ms.
func errorStats(errs []float64) ErrorStats {
	if len(errs) == 0 {
		return ErrorStats{}
	}
	sum := 0.0
	abs := make([]float64, len(errs))
	for i, e := range errs {
		sum += e
		abs[i] = math.Abs(e)
	}
	sort.Float64s(abs)
	return ErrorStats{N: len(errs), MedianAbs: 1000 * QuantileSorted(abs, 0.5), P90Abs: 1000 * QuantileSorted(abs, 0.9),
		MeanSigned: 1000 * sum / float64(len(errs))}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
