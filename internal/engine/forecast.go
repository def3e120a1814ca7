package engine

import (
	"math"
	"time"
)

// Forecast is a model's arrival-rate forecaster: Holt's linear method in
// its innovations (state-space) form ETS(A,A,N), one step per cycle, with
// the variance of the one-step errors tracked as an exponentially weighted
// mean (Hyndman & Athanasopoulos, "Forecasting: Principles and Practice",
// 3rd ed., §8.2 and §8.7, https://otexts.com/fpp3/), a drop's error
// counted at most at 2σ (varianceError).
//
//	e_t = y_t − (ℓ + b)        one-step error
//	ℓ  ← ℓ + b + α·e_t
//	b  ← b + β·e_t
//	ŷ(h) = ℓ + h·b,  Var(h) = σ²·[1 + (h−1)·(α² + αβh + β²h(2h−1)/6)]
//
// It is exported so that the engine's State can be persisted.
type Forecast struct {
	Level float64 `json:"level"`
	Trend float64 `json:"trend"`
	// Variance σ² of the one-step errors (requests/s squared).
	Variance float64 `json:"variance"`
	// StepSeconds is the mean time between updates.
	StepSeconds float64   `json:"stepSeconds"`
	Updates     int       `json:"updates"`
	Last        time.Time `json:"last"`
}

// Holt's smoothing parameters and the weight of a new squared error. α is
// high so that the level follows a step within two or three cycles; β is
// low so that one noisy sample does not set a steep trend.
const (
	holtAlpha      = 0.5
	holtBeta       = 0.1
	varianceWeight = 0.2
)

// observe adds one sample of the arrival rate (requests/s) at time now.
// A second sample at the same instant is ignored.
func (f *Forecast) observe(now time.Time, y float64) {
	if f.Updates == 0 {
		f.Level, f.Trend, f.Variance, f.Updates, f.Last = y, 0, 0, 1, now
		return
	}
	dt := now.Sub(f.Last).Seconds()
	if dt <= 0 {
		return
	}
	if f.StepSeconds == 0 {
		f.StepSeconds = dt
	} else {
		f.StepSeconds += 0.2 * (dt - f.StepSeconds)
	}
	e := y - (f.Level + f.Trend)
	f.Level += f.Trend + holtAlpha*e
	f.Trend += holtBeta * e
	if f.Level < 0 {
		f.Level, f.Trend = 0, math.Max(f.Trend, 0)
	}
	ev := varianceError(e, f.Variance, f.Updates)
	f.Variance += varianceWeight * (ev*ev - f.Variance)
	f.Updates++
	f.Last = now
}

// A drop's error enters the variance at most at dropClipSigmas standard
// deviations, once the forecaster has dropClipAfter updates (a variance
// to measure against: five minutes at 30-s cycles).
const (
	dropClipSigmas = 2.0
	dropClipAfter  = 10
)

// varianceError is the one-step error e as the variance counts it. The
// variance sizes the spare, which covers demand above the forecast: a
// rise's error counts whole, a drop's (demand below the forecast) at most
// dropClipSigmas σ. Counted whole, a step down held the spare of a step
// up of its size for ten minutes after it (long-outputs seed 1 at 690 s:
// 8.98 requests/s measured, 17.4 planned; docs/engine.md §3 item 9).
func varianceError(e, variance float64, updates int) float64 {
	if updates < dropClipAfter || !(variance > 0) {
		return e
	}
	return math.Max(e, -dropClipSigmas*math.Sqrt(variance))
}

// quantile returns the q-quantile of the rate forecast aheadSeconds from
// the last sample, under normal errors; never below 0.
func (f *Forecast) quantile(aheadSeconds, q float64) (mean, upper float64) {
	if f.Updates < 2 || f.StepSeconds <= 0 {
		return f.Level, f.Level
	}
	h := math.Max(aheadSeconds/f.StepSeconds, 1)
	mean = math.Max(f.Level+h*f.Trend, 0)
	a, b := holtAlpha, holtBeta
	v := f.Variance * (1 + (h-1)*(a*a+a*b*h+b*b*h*(2*h-1)/6))
	return mean, math.Max(mean+normalQuantile(q)*math.Sqrt(v), 0)
}

// SpareRiskFactor is k in SpareQuantileFor.
const SpareRiskFactor = 5.0

// SpareQuantileFor is the forecast quantile a model with attainment target
// a plans for when Config.SpareQuantile is unset: the demand at the
// horizon may exceed the planned rate with a probability of k times the
// error budget 1 − a,
//
//	q = max(½, 1 − k·(1 − a)),  k = SpareRiskFactor = 5,
//
// so 0.95 at the default target 0.99, 0.75 at 0.95, and the forecast's
// mean at 0.9 or below. A demand above the planned rate costs only part
// of the horizon's requests (the fleet is sized with slack below its
// saturation, and the saturation analyzer and the drain planner react
// within the horizon), hence k > 1; k = 5 keeps the quantile the
// evaluation was tuned with at the default target (docs/engine.md §3
// item 9 and docs/evaluation.md give the measurements).
func SpareQuantileFor(a float64) float64 {
	if !(a > 0 && a < 1) {
		a = DefaultAttainment
	}
	return math.Max(0.5, 1-SpareRiskFactor*(1-a))
}

// SpareHeldAbove is the attainment target above which a model's forecast
// spare is recorded in the scale-down stabilisation window like the rest
// of its target (SpareHeld). At or below it the spare leaves as soon as
// the forecast drops, which the evaluation measured as cheaper at the
// default target for the same attainment.
const SpareHeldAbove = DefaultAttainment

// SpareHeld says whether the stabilisation window keeps the forecast's
// spare of a model with attainment target a. Released at once, a large
// spare left at the first dip of the forecast after a step, just as the
// replicas it had started became ready, and a higher target bought less
// attainment than the default on the warm step scenarios
// (docs/engine.md §3 item 9; measured in docs/evaluation.md).
func SpareHeld(a float64) bool { return a > SpareHeldAbove && a < 1 }

// normalQuantile is the standard normal distribution's q-quantile.
func normalQuantile(q float64) float64 { return math.Sqrt2 * math.Erfinv(2*q-1) }

// Provisioning learns how long a variant's new replicas take to become
// ready, from scale-up to Ready as the engine observes it (the cycles on
// which the replica count rises and, later, the ready count rises).
type Provisioning struct {
	// Seconds is the learned time; 0 until the first replica is seen
	// becoming ready.
	Seconds float64 `json:"seconds"`
	Samples int     `json:"samples"`
	// Starts are the times of the replicas still starting, oldest first.
	Starts []time.Time `json:"starts,omitempty"`
	// Current and Ready are the counts of the last cycle.
	Current int       `json:"current"`
	Ready   int       `json:"ready"`
	Last    time.Time `json:"last"`
}

// maxStarts bounds the starts remembered per variant.
const maxStarts = 1024

// MaxStartupSeconds bounds a pod's start-up time the provisioning learner
// takes from its pods (Pod.StartupSeconds): an hour, the most
// WVA_PROVISIONING_TIME may assume. A longer one is a pod that failed and
// restarted, or a clock that is wrong.
const MaxStartupSeconds = 3600

// seed sets the learner's time from the pods' start-ups (creation to
// Ready), their mean, while it has measured no scale-up of its own; it
// counts as one sample, so that the first scale-up the engine sees
// through moves it as any later one does. It says whether it seeded.
func (p *Provisioning) seed(pods []Pod) bool {
	if p.Samples > 0 {
		return false
	}
	sum, n := 0.0, 0
	for i := range pods {
		if s := pods[i].StartupSeconds; s > 0 && s <= MaxStartupSeconds {
			sum += s
			n++
		}
	}
	if n == 0 {
		return false
	}
	p.Seconds, p.Samples = sum/float64(n), 1
	return true
}

// observe updates the learner with this cycle's counts.
func (p *Provisioning) observe(now time.Time, current, ready int) {
	if p.Last.IsZero() {
		p.Current, p.Ready, p.Last = current, ready, now
		return
	}
	// New replicas appeared after the last cycle's decision: they started
	// at that cycle.
	for range min(max(current-p.Current, 0), maxStarts-len(p.Starts)) {
		p.Starts = append(p.Starts, p.Last)
	}
	for range max(ready-p.Ready, 0) {
		if len(p.Starts) == 0 {
			break
		}
		took := now.Sub(p.Starts[0]).Seconds()
		p.Starts = p.Starts[1:]
		if p.Samples == 0 {
			p.Seconds = took
		} else {
			p.Seconds += 0.3 * (took - p.Seconds)
		}
		p.Samples++
	}
	// Starting replicas removed by a scale-down: forget the newest.
	if pending := max(current-ready, 0); len(p.Starts) > pending {
		p.Starts = p.Starts[:pending]
	}
	p.Current, p.Ready, p.Last = current, ready, now
}
