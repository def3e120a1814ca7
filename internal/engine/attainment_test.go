package engine

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// hist builds a cumulative histogram from (bound, count) pairs.
func hist(pairs ...float64) []Bucket {
	var h []Bucket
	for i := 0; i+1 < len(pairs); i += 2 {
		h = append(h, Bucket{UpperBound: pairs[i], Count: pairs[i+1]})
	}
	return h
}

// TestShareWithin reads histograms by hand: 10 requests within 0.5 s, 30
// within 1 s, 40 within 2.5 s, 50 in all.
func TestShareWithin(t *testing.T) {
	inf := math.Inf(1)
	h := hist(0.5, 10, 1, 30, 2.5, 40, inf, 50)
	for _, c := range []struct {
		x, want float64
	}{
		{1, 30},                  // on a bound
		{1.5, 30 + 10*0.5/1.5},   // a third of the (1, 2.5] bucket
		{0.25, 5},                // half of the first bucket, from 0
		{3, 40},                  // beyond the last finite bound: only its count
		{0, 0},                   // nothing within no time
		{2.5, 40},                // the last finite bound
		{100, 40},                // far beyond
		{math.Inf(1), 50},        // everything
		{0.5 + 0.5*0.2, 10 + 4},  // a fifth of the (0.5, 1] bucket
		{1e-9, 10 * 1e-9 / 0.5},  // a sliver of the first
		{0.75, 10 + 20*0.25/0.5}, // half of (0.5, 1]
	} {
		within, total := shareWithin(h, c.x)
		if math.Abs(within-c.want) > 1e-9 || total != 50 {
			t.Errorf("within %v s: %v of %v, want %v of 50", c.x, within, total, c.want)
		}
	}
	// A count below its predecessor (increase() extrapolates each bucket
	// alone) is read as its predecessor's.
	if w, n := shareWithin(hist(0.5, 10, 1, 9, inf, 12), 0.75); w != 10 || n != 12 {
		t.Errorf("non-monotone: %v of %v, want 10 of 12", w, n)
	}
	// Without a +Inf bucket the last bound's count is the total.
	if w, n := shareWithin(hist(0.5, 10, 1, 20), 2); w != 20 || n != 20 {
		t.Errorf("no +Inf: %v of %v, want 20 of 20", w, n)
	}
}

func TestCheckHistogram(t *testing.T) {
	inf := math.Inf(1)
	for name, c := range map[string]struct {
		h    []Bucket
		want string
	}{
		"valid":          {hist(0.5, 1, 1, 2, inf, 3), ""},
		"empty":          {nil, ""},
		"NaN bound":      {hist(math.NaN(), 1), "bound NaN"},
		"-Inf bound":     {hist(math.Inf(-1), 1), "bound -Inf"},
		"bounds repeat":  {hist(0.5, 1, 0.5, 2), "not above"},
		"bounds fall":    {hist(1, 1, 0.5, 2), "not above"},
		"negative count": {hist(0.5, -1), "count -1"},
		"NaN count":      {hist(0.5, math.NaN()), "count NaN"},
		"Inf count":      {hist(0.5, inf), "count +Inf"},
		"too many":       {make([]Bucket, MaxBuckets+1), "more than"},
	} {
		err := checkHistogram(c.h)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// histograms gives every pod a window of requests of which ttftIn are
// within 200 ms (half of them within 100 ms) and itlIn within 20 ms a
// token.
func (b *variantB) histograms(ttftIn, itlIn, requests float64) *variantB {
	for i := range b.v.Pods {
		b.v.Pods[i].TTFTBuckets = hist(0.1, ttftIn/2, 0.2, ttftIn, 0.5, requests, math.Inf(1), requests)
		b.v.Pods[i].TPOTBuckets = hist(0.01, 0, 0.02, itlIn, math.Inf(1), requests)
	}
	return b
}

// feedbackSnapshot is one H100 variant of two pods at rate r each, whose
// histograms hold 100 requests each: ttftIn within the TTFT target
// (200 ms) and itlIn within the ITL target (20 ms).
func feedbackSnapshot(at time.Time, current int, r, ttftIn, itlIn, requests float64) *Snapshot {
	v := variant("h100", "H100").params(h100Params).pods(0.3, 0, 0.3, 0).traffic(r, 1024, 256, 40, 15)
	if current > 0 {
		v.replicas(current, 2)
	}
	s := snapshot(ModeModelOnly, v.histograms(ttftIn, itlIn, requests))
	s.Time = at
	s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
	s.Config.DisableForecast = true
	return s
}

// TestAttainmentFeedback: one step of the integral by hand. The factor's
// logarithm moves by 0.05 × (b − miss)/b, the error floored at −2, with
// b = 1 − 0.99; the capacity the plan sizes with is the queueing model's
// times the new factor.
func TestAttainmentFeedback(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	for _, tc := range []struct {
		name            string
		current         int
		rate, ttft, itl float64
		requests        float64
		wantLog         float64
		note            string
	}{
		{"no misses at 80 % of capacity: up by the gain", 0, 0.8 * c, 100, 100, 100, 0.05, ""},
		{"3 % misses: down by twice the gain", 0, 0.8 * c, 97, 100, 100, -0.1, ""},
		{"1 % of TTFT and 1 % of ITL misses: their product", 0, 0.8 * c, 99, 99, 100, 0.05 * (0.01 - (1 - 0.99*0.99)) / 0.01, ""},
		{"exactly the budget: no move", 0, 0.8 * c, 99, 100, 100, 0, ""},
		{"a replica starting", 3, 0.8 * c, 100, 100, 100, 0, "short (replicas starting)"},
		{"demand at 30 % of capacity", 0, 0.3 * c, 100, 100, 100, 0, "says nothing"},
		// Misses below the capacity the model claims are its error.
		{"3 % misses at 30 % of capacity: down by twice the gain", 0, 0.3 * c, 97, 100, 100, -0.1, ""},
		{"demand beyond capacity", 0, 1.1 * c, 50, 100, 100, 0, "short (demand at 110 %"},
		{"too few requests", 0, 0.8 * c, 40, 40, 40, 0, "fewer than 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(nil)
			p := plan(t, e, feedbackSnapshot(t0, tc.current, tc.rate, tc.ttft, tc.itl, tc.requests))
			m, d := p.Models[0], decision(t, p, "h100")
			if got := math.Log(m.CapacityFactor); math.Abs(got-tc.wantLog) > 1e-12 {
				t.Errorf("log factor %v, want %v (note %q)", got, tc.wantLog, m.FeedbackNote)
			}
			if !strings.Contains(m.FeedbackNote, tc.note) || (tc.note == "") != (m.FeedbackNote == "") {
				t.Errorf("note %q, want %q", m.FeedbackNote, tc.note)
			}
			if want := c * math.Exp(tc.wantLog); math.Abs(d.Queueing.CapacityPerReplicaRPS-want) > 1e-9*want {
				t.Errorf("capacity per replica %v, want %v", d.Queueing.CapacityPerReplicaRPS, want)
			}
			if want := (tc.ttft / tc.requests) * (tc.itl / tc.requests); math.Abs(m.ObservedAttainment-want) > 1e-12 {
				t.Errorf("observed %v, want %v", m.ObservedAttainment, want)
			}
		})
	}
}

// TestAttainmentTargetPerModel: the feedback steers to the model's own
// target, else its service class's, else the configuration's. 3 % misses
// at 80 % of capacity: against 0.99 the error is (0.01 − 0.03)/0.01 = −2,
// a step of −0.1; against 0.95 it is (0.05 − 0.03)/0.05 = 0.4, a step of
// +0.02; against 0.9, (0.1 − 0.03)/0.1 = 0.7, +0.035.
func TestAttainmentTargetPerModel(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	for _, tc := range []struct {
		name                 string
		config, class, model float64
		wantTarget, wantLog  float64
	}{
		{"the configuration's default", 0, 0, 0, 0.99, -0.1},
		{"the configuration's", 0.95, 0, 0, 0.95, 0.02},
		{"the class's over the configuration's", 0.95, 0.9, 0, 0.9, 0.035},
		{"the model's over the class's", 0.99, 0.9, 0.95, 0.95, 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := feedbackSnapshot(t0, 0, 0.8*c, 97, 100, 100)
			s.Config.Attainment = tc.config
			s.ServiceClasses = map[string]ServiceClass{"gold": {Priority: 1, TTFTMs: 200, ITLMs: 20, Attainment: tc.class}}
			s.Models[0].ServiceClass, s.Models[0].Attainment = "gold", tc.model
			m := plan(t, New(nil), s).Models[0]
			if m.AttainmentTarget != tc.wantTarget {
				t.Errorf("target %v, want %v", m.AttainmentTarget, tc.wantTarget)
			}
			if got := math.Log(m.CapacityFactor); math.Abs(got-tc.wantLog) > 1e-12 {
				t.Errorf("log factor %v, want %v (note %q)", got, tc.wantLog, m.FeedbackNote)
			}
		})
	}
}

// TestTTFTAttainmentAliasesTheTarget: the configuration's ttftAttainment
// is the attainment target where the configuration sets none (issue 31:
// it stays as an alias of attainment); an explicit attainment, a service
// class's or a model's overrides it. The target's spare follows it: at
// 0.95 the forecast's 1 − 5 × 0.05 = 75 % quantile (TestSpareFromAttainmentTarget).
func TestTTFTAttainmentAliasesTheTarget(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		ttft, config, class, model float64
		want, wantQ                float64
	}{
		{"ttftAttainment alone", 0.95, 0, 0, 0, 0.95, 0.75},
		{"neither: the default", 0, 0, 0, 0, 0.99, 0.95},
		{"the configuration's attainment over it", 0.95, 0.99, 0, 0, 0.99, 0.95},
		{"the class's over it", 0.95, 0, 0.9, 0, 0.9, 0.5},
		{"the model's over it", 0.9, 0, 0, 0.99, 0.99, 0.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := rampTo16(t, tc.model, 0, func(s *Snapshot) {
				s.Config.TTFTAttainment, s.Config.Attainment = tc.ttft, tc.config
				s.ServiceClasses = map[string]ServiceClass{"gold": {Priority: 1, TTFTMs: 1000, ITLMs: 50, Attainment: tc.class}}
				s.Models[0].ServiceClass = "gold"
			})
			m := p.Models[0]
			if m.AttainmentTarget != tc.want || math.Abs(m.SpareQuantile-tc.wantQ) > 1e-12 {
				t.Errorf("target %v at quantile %v, want %v at %v", m.AttainmentTarget, m.SpareQuantile, tc.want, tc.wantQ)
			}
		})
	}
}

// ttftBound is feedbackSnapshot's SLO with a 60-ms ITL target, under which
// the TTFT target sets the model's capacity (at 20 ms the ITL target does,
// and itlBound bounds the factor's rise). The histograms still put itlIn
// requests within it (beyond their last finite bound, 20 ms).
var ttftBound = queueing.Targets{TTFTMs: 200, ITLMs: 60}

// ttftBoundSnapshot is feedbackSnapshot under ttftBound.
func ttftBoundSnapshot(at time.Time, current int, r, ttftIn, itlIn, requests float64) *Snapshot {
	s := feedbackSnapshot(at, current, r, ttftIn, itlIn, requests)
	s.Models[0].SLO = &SLO{TTFTMs: ttftBound.TTFTMs, ITLMs: ttftBound.ITLMs}
	return s
}

// TestFeedbackStopsWhereTheEvidenceEnds: with no misses the factor climbs
// by 0.05 a cycle only while the demand stays at 60 % or more of the
// capacity it implies. At 80 % of the model's capacity that is six steps:
// e^0.30 = 1.35 puts the demand at 0.8/1.35 = 59 %. At 95 % it climbs to
// the cap, 1.5, and stays. Disabled, it never moves. The TTFT target sets
// the capacity here (TestFeedbackBoundedByDemonstratedLoad: the ITL).
func TestFeedbackStopsWhereTheEvidenceEnds(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, ttftBound)
	for _, tc := range []struct {
		share, wantLog float64
		disabled       bool
	}{{0.8, 0.30, false}, {0.95, feedbackMaxLog, false}, {0.95, 0, true}} {
		e := New(nil)
		var m ModelSummary
		for i := range 20 {
			s := ttftBoundSnapshot(t0.Add(time.Duration(i)*30*time.Second), 0, tc.share*c, 100, 100, 100)
			s.Config.DisableFeedback = tc.disabled
			m = plan(t, e, s).Models[0]
		}
		got := 0.0
		if m.CapacityFactor > 0 {
			got = math.Log(m.CapacityFactor)
		}
		if math.Abs(got-tc.wantLog) > 1e-9 {
			t.Errorf("at %v of capacity (disabled %v): log factor %v, want %v (%q)", tc.share, tc.disabled, got, tc.wantLog, m.FeedbackNote)
		}
		if f := e.State().Feedback["prod/llama"]; !tc.disabled && (f == nil || math.Abs(f.LogFactor-tc.wantLog) > 1e-9) {
			t.Errorf("state %+v", f)
		}
	}
}

// TestFeedbackAfterAShortage: a window that still holds a shortage's
// misses does not count. A replica starting is a shortage; so, for the
// next 90 s (the one-minute window and a cycle), is any cycle after one.
// A backlog the ready fleet needs longer than the TTFT target (200 ms) to
// clear is one too when the window meets the target; when it misses, the
// backlog is the model's error and counts (TestFeedbackCountsMissesBelowCapacity).
func TestFeedbackAfterAShortage(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, ttftBound)
	e := New(nil)
	backlog := func(s *Snapshot, b float64) *Snapshot {
		for i := range s.Models[0].Variants[0].Pods {
			s.Models[0].Variants[0].Pods[i].WaitingRequests = b / 2
		}
		return s
	}
	// Two replicas clear 2c requests/s: a backlog of 0.41c takes 0.205 s.
	for i, step := range []struct {
		at      time.Duration
		backlog float64
		ttft    float64
		note    string
		wantLog float64
	}{
		{0, 0, 20, "replicas starting", 0},
		{30 * time.Second, 0, 60, "short 30 s ago", 0},
		{60 * time.Second, 0, 90, "short 60 s ago", 0},
		{90 * time.Second, 0, 100, "", 0.05},
		{120 * time.Second, 0.39 * c, 100, "", 0.10}, // a backlog cleared within the target
	} {
		current := 0
		if i == 0 {
			current = 3 // a third replica starting
		}
		p := plan(t, e, backlog(ttftBoundSnapshot(t0.Add(step.at), current, 0.8*c, step.ttft, 100, 100), step.backlog))
		m := p.Models[0]
		if !strings.Contains(m.FeedbackNote, step.note) || (step.note == "") != (m.FeedbackNote == "") || math.Abs(math.Log(m.CapacityFactor)-step.wantLog) > 1e-12 {
			t.Errorf("step %d: note %q (want %q), log factor %v (want %v)", i, m.FeedbackNote, step.note, math.Log(m.CapacityFactor), step.wantLog)
		}
	}
}

// TestFeedbackIgnoresBadHistograms: a histogram no server can report is
// not read (the note says which pod), and holds nothing.
func TestFeedbackIgnoresBadHistograms(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	s := feedbackSnapshot(t0, 0, 0.8*c, 100, 100, 100)
	s.Models[0].Variants[0].Pods[1].TTFTBuckets[1].Count = math.NaN()
	p := plan(t, nil, s)
	m, d := p.Models[0], decision(t, p, "h100")
	if m.CapacityFactor != 1 || !strings.Contains(m.FeedbackNote, "h100-1: TTFT histogram") || d.Reason == ReasonHoldMetrics {
		t.Errorf("factor %v, note %q, reason %s", m.CapacityFactor, m.FeedbackNote, d.Reason)
	}
}

// TestFeedbackNeedsReadableTargets: a target inside a histogram's first
// bucket cannot be read (vLLM's time-per-output-token buckets start at
// 10 ms): with an ITL target of 5 ms the feedback does not run, where it
// would read half of every request's ITL bucket as a miss. The e2e world,
// time-compressed to an ITL target of 2 ms, read 19 % and cut the capacity
// by a third before this check.
func TestFeedbackNeedsReadableTargets(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	for _, tc := range []struct {
		name      string
		ttft, itl float64
		note      string
	}{
		{"ITL target inside the first bucket", 200, 5, "the ITL target: 0.005 s is inside the histogram's first bucket (le 0.01 s)"},
		{"TTFT target inside the first bucket", 50, 20, "the TTFT target: 0.05 s is inside the histogram's first bucket (le 0.1 s)"},
		{"both on or above the first bound", 200, 10, ""},
	} {
		e := New(nil)
		for i := range 3 {
			s := feedbackSnapshot(t0.Add(time.Duration(i)*30*time.Second), 0, 0.8*c, 100, 0, 100)
			s.Models[0].SLO = &SLO{TTFTMs: tc.ttft, ITLMs: tc.itl}
			m := plan(t, e, s).Models[0]
			if tc.note == "" {
				if m.ObservedRequests != 200 {
					t.Errorf("%s: observed %v requests (%q), want 200", tc.name, m.ObservedRequests, m.FeedbackNote)
				}
				continue
			}
			if m.CapacityFactor != 1 || m.ObservedRequests != 0 || !strings.Contains(m.FeedbackNote, tc.note) {
				t.Errorf("%s, cycle %d: factor %v, %v requests, note %q; want 1, 0, %q", tc.name, i, m.CapacityFactor, m.ObservedRequests, m.FeedbackNote, tc.note)
			}
		}
	}
}

// TestFeedbackCountsMissesBelowCapacity: misses where the model says the
// fleet has room are the model's error, whatever the demand and even with
// a backlog (heavy-tailed outputs fill a replica's KV cache well below the
// rate its mean predicts: docs/evaluation.md, mismatch-heavy-tail). Two
// replicas clear 2c requests/s, so a backlog of 0.41c takes 0.205 s, more
// than the TTFT target. With no misses a backlog is still a shortage.
// Misses at 30 % of capacity take the factor down by 0.1 a window (the
// error's floor, −2, times the gain); at ln ½ it stops, and the plan says
// the target may be out of reach — the seventh window, as 7 × 0.1 > ln 2.
func TestFeedbackCountsMissesBelowCapacity(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	withBacklog := func(s *Snapshot, b float64) *Snapshot {
		for i := range s.Models[0].Variants[0].Pods {
			s.Models[0].Variants[0].Pods[i].WaitingRequests = b / 2
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		rate     float64
		ttftIn   float64
		backlog  float64
		arrival  float64 // at the gateway; 0: none reported
		wantLog  float64
		wantNote string
	}{
		{"a backlog with misses counts", 0.8 * c, 20, 0.41 * c, 0, -0.1, ""},
		{"a backlog without misses is a shortage", 0.8 * c, 100, 0.41 * c, 0, 0, "a backlog of"},
		{"misses at 30 % of capacity count", 0.3 * c, 90, 0, 0, -0.1, ""},
		// The pods finish 1.6c requests/s while 0.5c arrive: they clear a
		// backlog. Its misses count as well.
		{"a backlog clearing with misses counts", 0.8 * c, 20, 0.41 * c, 0.5 * c, -0.1, ""},
	} {
		s := withBacklog(feedbackSnapshot(t0, 0, tc.rate, tc.ttftIn, 100, 100), tc.backlog)
		s.Models[0].ArrivalRateRPS = tc.arrival
		p := plan(t, New(nil), s)
		m := p.Models[0]
		if math.Abs(math.Log(m.CapacityFactor)-tc.wantLog) > 1e-12 || !strings.Contains(m.FeedbackNote, tc.wantNote) || (tc.wantNote == "") != (m.FeedbackNote == "") {
			t.Errorf("%s: log factor %v (want %v), note %q (want %q)", tc.name, math.Log(m.CapacityFactor), tc.wantLog, m.FeedbackNote, tc.wantNote)
		}
	}
	e := New(nil)
	for i := range 8 {
		m := plan(t, e, feedbackSnapshot(t0.Add(time.Duration(i)*30*time.Second), 0, 0.3*c, 90, 100, 100)).Models[0]
		wantLog := math.Max(-0.1*float64(i+1), feedbackMinLog)
		if math.Abs(math.Log(m.CapacityFactor)-wantLog) > 1e-9 {
			t.Errorf("window %d: log factor %v, want %v", i+1, math.Log(m.CapacityFactor), wantLog)
		}
		if out := i+1 >= 7; m.AttainmentOutOfReach != out || strings.Contains(m.FeedbackNote, "out of reach") != out {
			t.Errorf("window %d: out of reach %v (%q), want %v", i+1, m.AttainmentOutOfReach, m.FeedbackNote, out)
		}
	}
	// The same misses while the pods clear a backlog (they finish 0.6c
	// requests/s, 0.1c arrive) take the factor to its floor as well, but
	// say nothing of reach: the fleet serves more than arrives, and the
	// misses are an earlier shortage's. Nor does a window that misses
	// within 90 s (feedbackSettleSeconds) of the last that cleared one: it
	// still holds the backlog's misses. The first after that says it.
	e = New(nil)
	for i, at := range []int{0, 30, 60, 90, 120, 150, 180, 210, 240, 299, 300} {
		clearing := at <= 210
		s := feedbackSnapshot(t0.Add(time.Duration(at)*time.Second), 0, 0.3*c, 90, 100, 100)
		if clearing {
			s = withBacklog(s, 0.1*c)
			s.Models[0].ArrivalRateRPS = 0.1 * c
		}
		m := plan(t, e, s).Models[0]
		if wantLog := math.Max(-0.1*float64(i+1), feedbackMinLog); math.Abs(math.Log(m.CapacityFactor)-wantLog) > 1e-9 {
			t.Errorf("%d s: log factor %v, want %v", at, math.Log(m.CapacityFactor), wantLog)
		}
		if out := at >= 300; m.AttainmentOutOfReach != out || strings.Contains(m.FeedbackNote, "out of reach") != out {
			t.Errorf("%d s (clearing %v): out of reach %v (%q), want %v", at, clearing, m.AttainmentOutOfReach, m.FeedbackNote, out)
		}
	}
}

// TestFeedbackSkipsHeldFleet: a window that meets the target while the
// last decision held replicas above the model's target tested a larger
// fleet than the model sized, and does not raise the factor. Three pods,
// each at 0.9c, then at 0.67c (c a replica's capacity, no misses):
//   - cycle 1: u = 0.9, the factor rises by 5 % (log +0.05); target 3;
//   - cycle 2: the model sizes 2.01c / 1.05c → 2 replicas, the window
//     keeps 3 (scale-down-stabilized); this window still counts (the last
//     decision held nothing): u = 2.01 / 3.15 = 0.64, log +0.10;
//   - cycle 3: the same, but the last decision held a replica: the factor
//     stays at log 0.10, and the note says why.
func TestFeedbackSkipsHeldFleet(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	e := New(nil)
	for i, step := range []struct {
		rate, wantLog float64
		wantNote      string
	}{{0.9 * c, 0.05, ""}, {0.67 * c, 0.10, ""}, {0.67 * c, 0.10, "held replicas above the model's target"}} {
		v := variant("h100", "H100").params(h100Params).pods(0.3, 0, 0.3, 0, 0.3, 0).traffic(step.rate, 1024, 256, 40, 15).replicas(3, 3)
		s := snapshot(ModeModelOnly, v.histograms(100, 100, 100))
		s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
		s.Config.DisableForecast = true
		p := plan(t, e, s)
		m := p.Models[0]
		if math.Abs(math.Log(m.CapacityFactor)-step.wantLog) > 1e-9 || !strings.Contains(m.FeedbackNote, step.wantNote) {
			t.Errorf("cycle %d: log factor %v (want %v), note %q (want %q)", i+1, math.Log(m.CapacityFactor), step.wantLog, m.FeedbackNote, step.wantNote)
		}
		if d := decision(t, p, "h100"); i > 0 && (d.Desired != 3 || d.Reason != ReasonStabilized || d.ModelTarget != 2) {
			t.Errorf("cycle %d: desired %d (%s), model target %d; want 3 held by the window over 2", i+1, d.Desired, d.Reason, d.ModelTarget)
		}
	}
}

// TestFeedbackBoundedByDemonstratedLoad: where the ITL target sets the
// capacity (20 ms here) of parameters the tuner fitted, a window that meets
// the target raises the factor to at most 4/3 of the highest load per
// replica a window has met it at, as a share of the model's capacity
// (Feedback.Demonstrated), which a window that misses resets. Two ready
// replicas, no misses but in cycle 5 (3 %: a step of −0.1), each cycle's
// demand a share of the model's capacity c:
//   - 0.8: +0.05 (the bound is ln(0.8 × 4/3) = 0.06454);
//   - 0.8, 0.8: +0.05 would pass the bound: held at 0.06454, with a note;
//   - 0.95: the bound rises to ln(1.2667) = 0.23639: +0.05, 0.11454;
//   - 0.95 with 3 % misses: 0.01454, and nothing demonstrated;
//   - 0.7: the bound, ln(0.9333) < 0, is below the factor, which a met
//     window never lowers: 0.01454.
//
// Where the TTFT target sets it (a 60-ms ITL target), or the parameters
// are the profile's (no tuner record), the same windows move the factor by
// the gain alone: 0.05, 0.10, 0.15, 0.20, 0.10, 0.15 (the demand stays
// above 60 % of the capacity the factor implies).
func TestFeedbackBoundedByDemonstratedLoad(t *testing.T) {
	bound := math.Log(0.8 * demonstratedProbe)
	steps := []struct {
		share, ttftIn       float64
		wantBound, wantGain float64
		demonstrated        float64
		note                string
	}{
		{0.8, 100, 0.05, 0.05, 0.8, ""},
		{0.8, 100, bound, 0.10, 0.8, "rises to at most 1.07"},
		{0.8, 100, bound, 0.15, 0.8, "rises to at most 1.07"},
		{0.95, 100, bound + 0.05, 0.20, 0.95, ""},
		{0.95, 97, bound + 0.05 - 0.1, 0.10, 0, ""},
		{0.7, 100, bound + 0.05 - 0.1, 0.15, 0.7, "rises to at most 1.01"},
	}
	itl := queueing.Targets{TTFTMs: 200, ITLMs: 20}
	for _, tc := range []struct {
		name    string
		slo     queueing.Targets
		learned bool
		binding string
	}{
		{"ITL-bound, learned", itl, true, queueing.TargetITL},
		{"ITL-bound, profiled", itl, false, queueing.TargetITL},
		{"TTFT-bound, learned", ttftBound, true, queueing.TargetTTFT},
	} {
		c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, tc.slo)
		store, source := tuner.NewMemoryStore(), "profiled"
		if tc.learned {
			key := tuner.Key{Namespace: "prod", Model: "llama", Variant: "h100"}
			if err := store.Put(key, tuner.Record{ServiceModel: tuner.ModelIteration, Params: h100Params, Updates: tuneWindow}); err != nil {
				t.Fatal(err)
			}
			source = "learned"
		}
		e := New(store)
		capped := tc.learned && tc.binding == queueing.TargetITL
		for i, st := range steps {
			s := feedbackSnapshot(t0.Add(time.Duration(i)*30*time.Second), 0, st.share*c, st.ttftIn, 100, 100)
			s.Models[0].SLO = &SLO{TTFTMs: tc.slo.TTFTMs, ITLMs: tc.slo.ITLMs}
			s.Config.TuningEnabled, s.Config.TunerIdle = true, true
			p := plan(t, e, s)
			m, d := p.Models[0], decision(t, p, "h100")
			if d.Queueing.Binding != tc.binding || d.Queueing.ParamsSource != source {
				t.Fatalf("%s: binding %q with %s parameters", tc.name, d.Queueing.Binding, d.Queueing.ParamsSource)
			}
			want, note := st.wantGain, ""
			if capped {
				want, note = st.wantBound, st.note
			}
			if got := math.Log(m.CapacityFactor); math.Abs(got-want) > 1e-9 {
				t.Errorf("%s, cycle %d: log factor %v, want %v (%q)", tc.name, i+1, got, want, m.FeedbackNote)
			}
			if !strings.Contains(m.FeedbackNote, note) || (note == "") != (m.FeedbackNote == "") {
				t.Errorf("%s, cycle %d: note %q, want %q", tc.name, i+1, m.FeedbackNote, note)
			}
			if got := e.State().Feedback["prod/llama"].Demonstrated; math.Abs(got-st.demonstrated) > 1e-9 {
				t.Errorf("%s, cycle %d: demonstrated %v, want %v", tc.name, i+1, got, st.demonstrated)
			}
		}
	}
}

// TestBucketJSON: a histogram's last bound, +Inf, survives JSON (which has
// no infinity) as Prometheus writes it, "+Inf".
func TestBucketJSON(t *testing.T) {
	h := []Bucket{{UpperBound: 0.5, Count: 3}, {UpperBound: math.Inf(1), Count: 4.5}}
	doc, err := json.Marshal(h)
	if want := `[{"le":0.5,"count":3},{"le":"+Inf","count":4.5}]`; err != nil || string(doc) != want {
		t.Fatalf("marshal: %s %v, want %s", doc, err, want)
	}
	var back []Bucket
	if err := json.Unmarshal(doc, &back); err != nil || len(back) != 2 || back[0] != h[0] || !math.IsInf(back[1].UpperBound, 1) || back[1].Count != 4.5 {
		t.Fatalf("unmarshal: %v %v", back, err)
	}
}

// TestBucketJSONReads: bounds in strings are read, bad ones and unknown
// keys are errors, and a non-finite figure is refused rather than written.
func TestBucketJSONReads(t *testing.T) {
	var b Bucket
	if err := json.Unmarshal([]byte(`{"le":" 0.25","count":1}`), &b); err != nil || b != (Bucket{UpperBound: 0.25, Count: 1}) {
		t.Errorf("a bound in a string: %v %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"count":2}`), &b); err != nil || b != (Bucket{Count: 2}) {
		t.Errorf("no bound: %v %v", b, err)
	}
	for _, bad := range []string{`{"le":"x","count":1}`, `{"le":true,"count":1}`, `{"le":1,"count":1,"extra":2}`, `{"le":1,"count":"1"}`} {
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for _, bad := range []Bucket{{UpperBound: math.NaN()}, {UpperBound: math.Inf(-1)}, {UpperBound: 1, Count: math.Inf(1)}} {
		if doc, err := json.Marshal(bad); err == nil {
			t.Errorf("%v written as %s", bad, doc)
		}
	}
}

// TestOutOfReachAtMaxReplicas: a model whose only variant has been at its
// maxReplicas (2), both Ready for more than a rate window, at twice what
// they serve, and whose window missed the target (80 % within the SLO):
// the plan says the target is out of reach at the maximum. Not while a
// replica is younger than the window or still starting, not below the
// maximum, not while a backlog clears, and not when the window met the
// target.
func TestOutOfReachAtMaxReplicas(t *testing.T) {
	c := capacityOf(t, h100Params, 1024, 256, DefaultMaxBatchSize, queueing.Targets{TTFTMs: 200, ITLMs: 20})
	build := func(maxReplicas, current, ready int, age, ttftIn float64) *Snapshot {
		v := variant("h100", "H100").params(h100Params).pods(0.3, 0, 0.3, 0).traffic(2*c, 1024, 256, 40, 15).
			minMax(1, maxReplicas).replicas(current, ready)
		for i := range v.v.Pods {
			v.v.Pods[i].AgeSeconds = age
		}
		s := snapshot(ModeModelOnly, v.histograms(ttftIn, 100, 100))
		s.Models[0].SLO = &SLO{TTFTMs: 200, ITLMs: 20}
		s.Config.DisableForecast = true
		return s
	}
	// The pods finish 4c requests/s while c arrive and 10 wait.
	clearing := func(s *Snapshot) *Snapshot {
		s.Models[0].ArrivalRateRPS = c
		for i := range s.Models[0].Variants[0].Pods {
			s.Models[0].Variants[0].Pods[i].WaitingRequests = 5
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    *Snapshot
		want bool
	}{
		{"at the maximum, all Ready for 10 minutes, 80 % within", build(2, 2, 2, 600, 80), true},
		{"a replica Ready for 30 s only", build(2, 2, 2, 30, 80), false},
		{"a replica still starting", build(2, 2, 1, 600, 80), false},
		{"room for one more", build(3, 2, 2, 600, 80), false},
		{"the window met the target", build(2, 2, 2, 600, 100), false},
		{"a backlog clearing", clearing(build(2, 2, 2, 600, 80)), false},
	} {
		m := plan(t, New(nil), tc.s).Models[0]
		note := "out of reach at the variants' maxReplicas: 0.8 of 200 requests within the SLO in the last window, with every variant at its maximum (2 replicas, all Ready)"
		if m.AttainmentOutOfReach != tc.want || strings.Contains(m.FeedbackNote, note) != tc.want {
			t.Errorf("%s: out of reach %v, note %q; want %v", tc.name, m.AttainmentOutOfReach, m.FeedbackNote, tc.want)
		}
		if tc.want && (m.ObservedAttainment != 0.8 || m.ObservedRequests != 200 || m.AttainmentTarget != DefaultAttainment) {
			t.Errorf("%s: observed %v of %v against %v, want 0.8 of 200 against %v", tc.name, m.ObservedAttainment, m.ObservedRequests, m.AttainmentTarget, DefaultAttainment)
		}
	}
	// After a backlog cleared, the window still holds its misses for
	// feedbackSettleSeconds (90 s): 30 s after the last cycle that
	// cleared one, the target is not out of reach; 90 s after, it is.
	// The feedback's integral is off, so that only reach keeps the record.
	e := New(nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		at       float64
		clearing bool
		want     bool
	}{{0, true, false}, {30, false, false}, {89, false, false}, {90, false, true}} {
		s := build(2, 2, 2, 600, 80)
		if step.clearing {
			s = clearing(s)
		}
		s.Config.DisableFeedback = true
		s.Time = t0.Add(time.Duration(step.at * float64(time.Second)))
		if m := plan(t, e, s).Models[0]; m.AttainmentOutOfReach != step.want {
			t.Errorf("%.0f s after a backlog cleared: out of reach %v (%q), want %v", step.at, m.AttainmentOutOfReach, m.FeedbackNote, step.want)
		}
	}
}
