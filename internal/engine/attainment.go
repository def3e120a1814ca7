package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// Bucket is one bucket of a latency histogram over the metrics window, as
// Prometheus keeps it: Count is how many requests the window observed at
// or below UpperBound seconds (cumulative; the last bucket's bound is
// +Inf). The collector reads increase(<histogram>_bucket[window]) by le.
type Bucket struct {
	UpperBound float64 `json:"le"`
	Count      float64 `json:"count"`
}

// MarshalJSON writes the bound as a number, or as the string "+Inf" (how
// Prometheus writes the label le) when it is infinite: JSON has no
// infinity, and the last bucket of every histogram has that bound.
func (b Bucket) MarshalJSON() ([]byte, error) {
	if !b.Encodable() {
		return nil, fmt.Errorf("histogram bucket (le %v, count %v) cannot be written as JSON", b.UpperBound, b.Count)
	}
	le := strconv.FormatFloat(b.UpperBound, 'g', -1, 64)
	if math.IsInf(b.UpperBound, 1) {
		le = `"+Inf"`
	}
	return []byte(`{"le":` + le + `,"count":` + strconv.FormatFloat(b.Count, 'g', -1, 64) + `}`), nil
}

// Encodable says whether MarshalJSON can write b: a finite count and a
// bound that is a number or +Inf.
func (b Bucket) Encodable() bool {
	return !math.IsNaN(b.Count) && !math.IsInf(b.Count, 0) && !math.IsNaN(b.UpperBound) && !math.IsInf(b.UpperBound, -1)
}

// UnmarshalJSON reads what MarshalJSON writes; the bound may also be a
// number in a string ("0.5", "+Inf", "Inf"), as in Prometheus' le label.
// Unknown keys are errors, as everywhere in a snapshot file.
func (b *Bucket) UnmarshalJSON(data []byte) error {
	var raw struct {
		Le    json.RawMessage `json:"le"`
		Count float64         `json:"count"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	out := Bucket{Count: raw.Count}
	if len(raw.Le) > 0 && string(raw.Le) != "null" {
		var s string
		if err := json.Unmarshal(raw.Le, &s); err != nil {
			if err := json.Unmarshal(raw.Le, &out.UpperBound); err != nil {
				return fmt.Errorf("le: %s is neither a number nor a number in a string", raw.Le)
			}
		} else if out.UpperBound, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return fmt.Errorf("le: %q is not a number (a bound is seconds, or \"+Inf\")", s)
		}
	}
	*b = out
	return nil
}

// MaxBuckets bounds a histogram's buckets (vLLM's have 20 to 23).
const MaxBuckets = 256

// checkHistogram is the validity rule for a histogram: at most MaxBuckets
// buckets, bounds strictly increasing (the last may be +Inf), counts
// finite and ≥ 0. A count below its predecessor is allowed: increase()
// extrapolates each bucket alone, and shareWithin makes the counts
// monotone as histogram_quantile does.
func checkHistogram(h []Bucket) error {
	if len(h) > MaxBuckets {
		return fmt.Errorf("%d buckets, more than %d", len(h), MaxBuckets)
	}
	for i, b := range h {
		switch {
		case math.IsNaN(b.UpperBound) || math.IsInf(b.UpperBound, -1):
			return fmt.Errorf("bucket %d: bound %v", i, b.UpperBound)
		case i > 0 && !(b.UpperBound > h[i-1].UpperBound):
			return fmt.Errorf("bucket %d: bound %v not above %v", i, b.UpperBound, h[i-1].UpperBound)
		case math.IsNaN(b.Count) || math.IsInf(b.Count, 0) || b.Count < 0:
			return fmt.Errorf("bucket %d (le %v): count %v", i, b.UpperBound, b.Count)
		}
	}
	return nil
}

// readable says whether a target x (seconds) can be read off a histogram:
// not when it falls inside the first bucket, whose requests could lie
// anywhere below its bound — vLLM's time-per-output-token buckets start at
// 10 ms, so an ITL target of 2 ms would be read as a fifth of that bucket,
// whatever the servers did. A target of 0 (none) or an empty histogram is
// fine: the share is not read.
func readable(h []Bucket, x float64) error {
	if x > 0 && len(h) > 0 && x < h[0].UpperBound {
		return fmt.Errorf("%g s is inside the histogram's first bucket (le %g s): its share cannot be read", x, h[0].UpperBound)
	}
	return nil
}

// shareWithin reads how many of a histogram's requests took at most x
// seconds, and how many it holds: the inverse of Prometheus'
// histogram_quantile. Counts are made monotone (a running maximum); within
// a bucket requests are taken as spread evenly (linear interpolation from
// the previous bound, or from 0 for the first bucket); beyond the last
// finite bound only that bound's count is known to be within. The total is
// the last bucket's count. A valid histogram is assumed (checkHistogram).
func shareWithin(h []Bucket, x float64) (within, total float64) {
	prevBound, prevCount, running := 0.0, 0.0, 0.0
	within = math.NaN()
	for _, b := range h {
		running = math.Max(running, b.Count)
		if math.IsNaN(within) {
			switch {
			case x >= b.UpperBound:
			case math.IsInf(b.UpperBound, 1):
				within = prevCount
			default:
				lo := math.Max(prevBound, 0)
				frac := 0.0
				if b.UpperBound > lo {
					frac = math.Max(x-lo, 0) / (b.UpperBound - lo)
				}
				within = prevCount + (running-prevCount)*frac
			}
		}
		prevBound, prevCount = b.UpperBound, running
	}
	if math.IsNaN(within) {
		within = running
	}
	return within, running
}

// Feedback is a model's attainment feedback (docs/engine.md §3 item 11): the
// logarithm of a factor on its variants' capacity per replica, a bounded
// integral of the observed attainment's error against the target. It is
// exported so that the engine's State can be persisted.
type Feedback struct {
	LogFactor float64 `json:"logFactor"`
	Updates   int     `json:"updates"`
	// Observed is the attainment last observed, Requests how many
	// requests it counted.
	Observed float64   `json:"observed"`
	Requests float64   `json:"requests"`
	Last     time.Time `json:"last"`
	// ObservedClearing: the pods were clearing a backlog in that window,
	// or had been within feedbackSettleSeconds (they finished well above
	// the arrival rate while requests waited).
	// Its misses count against the capacity, as any miss the model's
	// capacity leaves room for, but they are no evidence that the target
	// is out of reach: the fleet was serving more than arrived.
	ObservedClearing bool `json:"observedClearing,omitempty"`
	// LastShort is the last cycle on which the model's fleet was short:
	// a replica starting, a demand beyond its capacity, or a backlog it
	// cannot clear within the TTFT target. The windows that still hold
	// that time's misses do not count.
	LastShort time.Time `json:"lastShort,omitempty"`
	// LastClearing is the last cycle on which the model's pods were
	// clearing a backlog (they finished well above the arrival rate while
	// requests waited): until the window no longer holds that backlog's
	// misses, neither rule says the target is out of reach.
	LastClearing time.Time `json:"lastClearing,omitempty"`
	// HeldAbove: the last cycle's decision kept a variant of the model
	// above the model's own target (the scale-down window deferred its
	// scale-down, or the safety block refused it). A window that then
	// meets the target tested a fleet larger than the model sized, and
	// does not raise the factor.
	HeldAbove bool `json:"heldAbove,omitempty"`
	// Demonstrated is the highest demand per ready replica, as a share of
	// the model's own capacity per replica (before the factor), at which a
	// window that counted met the target since the last one that counted
	// and missed it; 0 when none has. Where the ITL target sets a
	// variant's capacity, the factor rises to at most demonstratedProbe
	// times it (itlBound).
	Demonstrated float64 `json:"demonstrated,omitempty"`
}

// Attainment feedback's settings. The gain moves the factor by at most 5 %
// a cycle up (no misses at all) and 10 % down (misses at three times the
// budget or more); the factor stays within [½, 1.5] — the capacity model's
// errors measured on the shipped scenarios are 10–48 % (docs/queueing.md
// §7). Only a window with enough requests, a fleet that has not been
// short for feedbackSettleSeconds, and a demand within the capacity the
// model gave the ready replicas counts: misses while replicas start or
// beyond that capacity are not the model's error. A window that meets the
// target counts only from feedbackMinUtilization up (a fleet far below its
// capacity says nothing about where it ends), and one with a backlog
// does not count; a window that misses it counts at any demand and with a
// backlog: misses below the capacity the model claims are its error.
const (
	feedbackGain           = 0.05
	feedbackMinLog         = -0.6931471805599453 // ln ½
	feedbackMaxLog         = 0.4054651081081644  // ln 1.5
	feedbackMinRequests    = 100
	feedbackMinUtilization = 0.6
	// demonstratedProbe bounds the factor of a model whose capacity the
	// ITL target sets: at most this multiple of the highest load a window
	// has met the target at (Feedback.Demonstrated). A third: the next
	// fleet so sized runs at most a third beyond what was seen to work.
	demonstratedProbe = 4.0 / 3
	// feedbackSettleSeconds is how long after the fleet was last short a
	// window counts again: the collector's one-minute window and a cycle.
	feedbackSettleSeconds = 90
)

// observed is a model's attainment over the metrics window, from its pods'
// histograms: the shares of requests within the TTFT target (TTFT
// histogram) and within the ITL target (the per-request time per output
// token histogram), and their product — the share within both, were the
// two misses independent (misses that come together, as under a queue,
// make the true share higher: the product errs towards capacity).
type observed struct {
	Attainment, TTFT, ITL, Requests float64
}

// errNoHistograms: no pod reports the latency histograms.
var errNoHistograms = errors.New("no pod reports the TTFT histogram")

// observation is observeAttainment's result, kept for the cycle.
type observation struct {
	o   observed
	err error
}

// observed reads the model's attainment once a cycle (observeAttainment).
// A model is handled by one goroutine at a time, so the cache needs no
// lock.
func (c *cycle) observed(ms *modelState) (observed, error) {
	if ms.observation == nil {
		o, err := c.observeAttainment(ms)
		ms.observation = &observation{o, err}
	}
	return ms.observation.o, ms.observation.err
}

// observeAttainment reads the model's attainment from the histograms of
// its variants' usable pods (held variants left out).
func (c *cycle) observeAttainment(ms *modelState) (observed, error) {
	ttftS, itlS := ms.sum.SLOTTFTMs/1000, ms.sum.SLOITLMs/1000
	var inT, nT, inI, nI float64
	for _, vs := range ms.variants {
		if vs.held {
			continue
		}
		for _, p := range vs.pods {
			if len(p.TTFTBuckets) == 0 {
				continue
			}
			if err := checkHistogram(p.TTFTBuckets); err != nil {
				return observed{}, fmt.Errorf("pod %s: TTFT histogram: %w", p.Name, err)
			}
			if err := checkHistogram(p.TPOTBuckets); err != nil {
				return observed{}, fmt.Errorf("pod %s: time-per-output-token histogram: %w", p.Name, err)
			}
			if err := readable(p.TTFTBuckets, ttftS); err != nil {
				return observed{}, fmt.Errorf("the TTFT target: %w", err)
			}
			if err := readable(p.TPOTBuckets, itlS); err != nil {
				return observed{}, fmt.Errorf("the ITL target: %w", err)
			}
			w, n := shareWithin(p.TTFTBuckets, ttftS)
			inT, nT = inT+w, nT+n
			if len(p.TPOTBuckets) > 0 {
				w, n = shareWithin(p.TPOTBuckets, itlS)
				inI, nI = inI+w, nI+n
			}
		}
	}
	if nT == 0 {
		return observed{}, errNoHistograms
	}
	o := observed{TTFT: 1, ITL: 1, Requests: nT}
	if ttftS > 0 {
		o.TTFT = inT / nT
	}
	if itlS > 0 && nI > 0 {
		o.ITL = inI / nI
	}
	o.Attainment = o.TTFT * o.ITL
	return o, nil
}

// reach says in the plan when the variants' maximum puts the model's
// attainment target out of reach (docs/engine.md §3 item 11): every
// variant that may run is at its maxReplicas with all its replicas Ready
// for a whole rate window (youngPodSeconds), so that the window's
// histograms are the capped fleet's, no backlog has been clearing for
// feedbackSettleSeconds (the window would hold its misses: the fleet may
// yet meet the target), and that window missed the target.
// More replicas are what the target needs, and the configuration allows
// none: the fleet delivers what its maximum can, and the status says so.
// It runs after enforcement, on the decided targets.
func (c *cycle) reach(ms *modelState) {
	if ms.sum.AttainmentOutOfReach || ms.demand == 0 || ms.sum.SLOTTFTMs <= 0 || ms.attainment <= 0 || c.e == nil {
		return
	}
	if fb := c.e.state.Feedback[ms.key]; fb == nil || fb.clearing(c.now) {
		return // the window holds a backlog's misses
	}
	total := ms.atMaximum()
	if total == 0 {
		return
	}
	o, err := c.observed(ms)
	if err != nil || o.Requests < feedbackMinRequests || o.Attainment >= ms.attainment {
		return
	}
	ms.sum.AttainmentTarget = ms.attainment
	ms.sum.ObservedAttainment, ms.sum.ObservedRequests = o.Attainment, o.Requests
	ms.outOfReach(fmt.Sprintf(
		"attainment target %g out of reach at the variants' maxReplicas: %.4g of %.0f requests within the SLO in the last window, with every variant at its maximum (%d replicas, all Ready)",
		ms.attainment, o.Attainment, o.Requests, total))
}

// recordHeld keeps, for the next cycle's feedback, whether this cycle's
// decision held a variant of the model above the model's target: the
// scale-down window or the safety block (Feedback.HeldAbove). It runs with
// the decision's account, after every rule has set its reason.
func (c *cycle) recordHeld(ms *modelState) {
	if c.e == nil {
		return
	}
	fb := c.e.state.Feedback[ms.key]
	if fb == nil {
		return
	}
	fb.HeldAbove = false
	for _, vs := range ms.variants {
		if vs.reason == ReasonStabilized || vs.reason == ReasonSafetyBlock {
			fb.HeldAbove = true
		}
	}
}

// outOfReach marks the model's target out of reach in its plan summary,
// the reason after the feedback's note.
func (ms *modelState) outOfReach(why string) {
	ms.sum.AttainmentOutOfReach = true
	ms.sum.FeedbackNote = strings.TrimPrefix(ms.sum.FeedbackNote+"; ", "; ") + why
}

// atMaximum is the replicas of the model's variants when every variant
// that may run is held at its maxReplicas by this cycle's decision, with
// all of them Ready for a rate window (youngPodSeconds; an unknown age
// counts as old); else 0.
func (ms *modelState) atMaximum() int {
	total := 0
	for _, vs := range ms.variants {
		hi := vs.v.maxReplicas()
		if hi < 1 {
			continue // a variant that may not run
		}
		if vs.held || vs.target < hi || vs.v.CurrentReplicas != hi || vs.v.ReadyReplicas != hi {
			return 0
		}
		for _, p := range vs.pods {
			if p.AgeSeconds > 0 && p.AgeSeconds < youngPodSeconds {
				return 0
			}
		}
		total += hi
	}
	return total
}

// clearing says whether the model's pods cleared a backlog within the
// last feedbackSettleSeconds: the metrics window still holds its misses.
func (f *Feedback) clearing(now time.Time) bool {
	return !f.LastClearing.IsZero() && now.Sub(f.LastClearing).Seconds() < feedbackSettleSeconds
}

// feedback updates the model's attainment feedback from this window and
// applies its factor to the capacity per replica of every variant the
// model sized (docs/engine.md §3 item 11).
func (c *cycle) feedback(ms *modelState) {
	if c.cfg.DisableFeedback || ms.demand == 0 || ms.sum.SLOTTFTMs <= 0 {
		return
	}
	fb := c.e.state.Feedback[ms.key] // made by learn, before the parallel analyses
	if fb == nil {
		return
	}
	ms.sum.AttainmentTarget = ms.attainment
	if why := c.updateFeedback(ms, fb); why != "" {
		ms.sum.FeedbackNote = why
	}
	// The last window that counted missed the target with the factor at
	// its floor: more capacity has not helped — unless the pods were
	// clearing a backlog then, whose misses an earlier shortage left.
	if fb.Updates > 0 && fb.LogFactor <= feedbackMinLog && fb.Observed < ms.attainment && !fb.ObservedClearing {
		ms.outOfReach(fmt.Sprintf(
			"attainment target %g may be out of reach: %.4g of requests within the SLO in the last window that counted, with the capacity factor at its floor (½)",
			ms.attainment, fb.Observed))
	}
	factor := math.Exp(fb.LogFactor)
	ms.sum.CapacityFactor = factor
	if fb.LogFactor == 0 {
		return
	}
	for _, vs := range ms.variants {
		d := vs.detail
		if d == nil || d.Error != "" || vs.capacity <= 0 {
			continue
		}
		vs.capacity *= factor
		d.CapacityPerReplicaRPS, d.FeedbackFactor = vs.capacity, factor
		d.SupplyRPS = float64(vs.v.ReadyReplicas) * vs.capacity
	}
}

// shortage says why the model's fleet is short now, or "": a replica
// starting, a demand beyond the ready capacity (u > 1), or a backlog that
// capacity needs longer than the TTFT target to clear (backlog true: the
// fleet is short only by the model's own account, which misses may
// contradict).
func shortage(ms *modelState, u, supply float64) (why string, backlog bool) {
	starting, waiting := false, ms.m.GatewayWaitingRequests
	for _, vs := range ms.variants {
		starting = starting || vs.v.CurrentReplicas > vs.v.ReadyReplicas
		for _, p := range vs.pods {
			waiting += p.WaitingRequests
		}
	}
	switch {
	case starting:
		return "replicas starting", false
	case u > 1:
		return fmt.Sprintf("demand at %.0f %% of the ready capacity", 100*u), false
	case waiting/supply > ms.sum.SLOTTFTMs/1000:
		return fmt.Sprintf("a backlog of %.0f requests takes %.3g s to clear", waiting, waiting/supply), true
	}
	return "", false
}

// notEvidence says why a window of the model's fleet, whose ready
// replicas supply requests/s at the model's capacity (times the factor),
// is no evidence about that capacity, or "" when it is: a shortage now or
// within feedbackSettleSeconds; for a window that met the target, a last
// decision that held replicas above the model's target, or a demand below
// feedbackMinUtilization of the supply.
func (c *cycle) notEvidence(ms *modelState, fb *Feedback, supply float64, missed bool) string {
	u := ms.demand / supply
	if short, backlog := shortage(ms, u, supply); short != "" && (!backlog || !missed) {
		fb.LastShort = c.now
		return "the fleet is short (" + short + "): its misses are not the model's error"
	}
	if since := c.now.Sub(fb.LastShort).Seconds(); !fb.LastShort.IsZero() && since < feedbackSettleSeconds {
		return fmt.Sprintf("the fleet was short %.0f s ago (the window still holds its misses)", since)
	}
	if fb.HeldAbove && !missed {
		return "the last decision held replicas above the model's target (the scale-down window or the safety block): the window tested a larger fleet than the model sized"
	}
	if u < feedbackMinUtilization && !missed {
		return fmt.Sprintf("demand at %.0f %% of the ready capacity (says nothing of where it ends)", 100*u)
	}
	return ""
}

// updateFeedback takes one step of the integral, or says why this window
// does not count.
func (c *cycle) updateFeedback(ms *modelState, fb *Feedback) string {
	o, err := c.observed(ms)
	if err != nil {
		return "attainment feedback: " + err.Error()
	}
	ms.sum.ObservedAttainment, ms.sum.ObservedRequests = o.Attainment, o.Requests
	if o.Requests < feedbackMinRequests {
		return fmt.Sprintf("attainment feedback: %.0f requests in the window, fewer than %d", o.Requests, feedbackMinRequests)
	}
	// raw is the ready replicas' capacity by the model alone, supply the
	// same times the factor.
	raw := 0.0
	for _, vs := range ms.variants {
		if vs.detail != nil && vs.detail.Error == "" {
			raw += float64(vs.v.ReadyReplicas) * vs.capacity
		}
	}
	supply := raw * math.Exp(fb.LogFactor)
	if !(supply > 0) {
		return "attainment feedback: no sized capacity"
	}
	missed := o.Attainment < ms.attainment
	if why := c.notEvidence(ms, fb, supply, missed); why != "" {
		return "attainment feedback: " + why
	}
	budget := 1 - ms.attainment
	e := math.Max((budget-(1-o.Attainment))/budget, -2)
	next, note := fb.LogFactor+feedbackGain*e, ""
	if missed {
		fb.Demonstrated = 0
	} else {
		// The demand per ready replica as a share of the model's
		// capacity before the factor: what this window tested.
		fb.Demonstrated = math.Max(fb.Demonstrated, ms.demand/raw)
		if limit := math.Log(demonstratedProbe * fb.Demonstrated); next > limit && itlBound(ms) {
			next = math.Max(fb.LogFactor, limit)
			note = fmt.Sprintf("attainment feedback: the ITL target sets this model's capacity, whose attainment falls off a cliff past it: the factor rises to at most %.3g, %.3g × the highest load met (%.0f %% of the model's capacity)",
				math.Exp(next), demonstratedProbe, 100*fb.Demonstrated)
		}
	}
	fb.LogFactor = math.Min(math.Max(next, feedbackMinLog), feedbackMaxLog)
	fb.Updates++
	fb.Observed, fb.Requests, fb.Last = o.Attainment, o.Requests, c.now
	fb.ObservedClearing = fb.clearing(c.now)
	return note
}

// itlBound says whether the ITL target sets the capacity of any variant
// the model sized with parameters the tuner fitted to its pods. Per-request
// ITL grows with the batch for every request at once, so past that
// capacity the attainment falls off a cliff: the 8B's 99 % and 90 % rates
// on H100 are 4–6 % apart (`wva model capacity`), where a KV-bound
// server's are 10–37 % apart. A factor raised beyond the load a window has
// shown to work then costs whole windows when the demand climbs to it.
// With fitted parameters a window below capacity that meets the target
// tells nothing the fit has not used: what the model can still be wrong
// about is the spread of per-request ITL near its capacity, which only a
// window there shows. Profiled parameters (tuning off, or before the
// tuner has warmed up) may misstate the latency curve itself, either way,
// and the feedback's rise is then the correction a pessimistic one gets.
func itlBound(ms *modelState) bool {
	for _, vs := range ms.variants {
		d := vs.detail
		if d != nil && d.Error == "" && d.Binding == queueing.TargetITL && (d.ParamsSource == "learned" || d.ParamsSource == "provisional") {
			return true
		}
	}
	return false
}
