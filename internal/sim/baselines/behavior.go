package baselines

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// The HPA's spec.behavior (autoscaling/v2), as the horizontal pod
// autoscaler controller applies it after computing a recommendation from
// the metrics: first the stabilization windows, then the rate policies,
// then the replica bounds. The algorithm follows the controller's
// normalizeDesiredReplicasWithBehaviors and its helpers
// (kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go) and
// https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#configurable-scaling-behavior.

// timedCount is a replica count (a recommendation, or a scale event's
// change) at a time.
type timedCount struct {
	t float64
	n int
}

// hpaState is what the HPA controller remembers of one target: its
// recent recommendations and scale events.
type hpaState struct {
	recs     []timedCount
	up, down []timedCount
}

// normalize turns a metrics recommendation into the replica count the HPA
// sets: stabilized over the windows, limited by the policies, within
// [lo, hi]. It records the recommendation and, when the count changes,
// the scale event.
func (h *hpaState) normalize(now float64, b scenario.Behavior, current, desired, lo, hi int) int {
	up, down := b.Rules()
	stable := h.stabilize(now, up, down, current, desired)
	out := h.limit(now, up, down, current, stable, lo, hi)
	switch {
	case out > current:
		h.up = appendRecent(h.up, timedCount{now, out - current}, now, longestPeriod(up))
	case out < current:
		h.down = appendRecent(h.down, timedCount{now, current - out}, now, longestPeriod(down))
	}
	return out
}

// stabilize is stabilizeRecommendationWithBehaviors: the lowest
// recommendation of the scale-up window and the highest of the scale-down
// window bound the current count.
func (h *hpaState) stabilize(now float64, up, down scenario.ScalingRules, current, desired int) int {
	upWin, downWin := *up.StabilizationWindowSeconds, *down.StabilizationWindowSeconds
	upRec, downRec := desired, desired
	for _, r := range h.recs {
		if r.t > now-upWin {
			upRec = min(upRec, r.n)
		}
		if r.t > now-downWin {
			downRec = max(downRec, r.n)
		}
	}
	h.recs = appendRecent(h.recs, timedCount{now, desired}, now, math.Max(upWin, downWin))
	rec := max(current, upRec)
	return min(rec, downRec)
}

// limit is convertDesiredReplicasWithBehaviorRate: a scale-up is capped by
// the policies' limit and hi, a scale-down floored by theirs and lo.
func (h *hpaState) limit(now float64, up, down scenario.ScalingRules, current, desired, lo, hi int) int {
	switch {
	case desired > current:
		ceiling := min(hi, max(h.upLimit(now, up, current), current))
		return min(desired, ceiling)
	case desired < current:
		floor := max(lo, min(h.downLimit(now, down, current), current))
		return max(desired, floor)
	}
	return desired
}

// upLimit is calculateScaleUpLimitWithScalingRules.
func (h *hpaState) upLimit(now float64, r scenario.ScalingRules, current int) int {
	if r.SelectPolicy == "Disabled" {
		return current
	}
	best, first := 0, true
	for _, p := range r.Policies {
		start := current - changeIn(h.up, now, p.PeriodSeconds) + changeIn(h.down, now, p.PeriodSeconds)
		proposed := start + p.Value
		if p.Type == "Percent" {
			proposed = int(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if first || r.SelectPolicy == "Min" && proposed < best || r.SelectPolicy != "Min" && proposed > best {
			best, first = proposed, false
		}
	}
	return best
}

// downLimit is calculateScaleDownLimitWithBehaviors.
func (h *hpaState) downLimit(now float64, r scenario.ScalingRules, current int) int {
	if r.SelectPolicy == "Disabled" {
		return current
	}
	best, first := 0, true
	for _, p := range r.Policies {
		start := current - changeIn(h.up, now, p.PeriodSeconds) + changeIn(h.down, now, p.PeriodSeconds)
		proposed := start - p.Value
		if p.Type == "Percent" {
			proposed = int(float64(start) * (1 - float64(p.Value)/100))
		}
		if first || r.SelectPolicy == "Min" && proposed > best || r.SelectPolicy != "Min" && proposed < best {
			best, first = proposed, false
		}
	}
	return best
}

// changeIn sums the scale events of the last period seconds
// (getReplicasChangePerPeriod).
func changeIn(events []timedCount, now, period float64) int {
	n := 0
	for _, e := range events {
		if e.t > now-period {
			n += e.n
		}
	}
	return n
}

// longestPeriod is the longest of a rule's policy periods: older events
// no longer count.
func longestPeriod(r scenario.ScalingRules) float64 {
	p := 0.0
	for _, pol := range r.Policies {
		p = math.Max(p, pol.PeriodSeconds)
	}
	return p
}

// appendRecent appends e and drops what is older than keep seconds.
func appendRecent(s []timedCount, e timedCount, now, keep float64) []timedCount {
	out := s[:0]
	for _, x := range s {
		if x.t > now-keep {
			out = append(out, x)
		}
	}
	return append(out, e)
}

// averageValueReplicas is the HPA's count for an external metric with an
// AverageValue target (GetExternalPerPodMetricReplicas): the current
// count while usage / (target × current) is within the tolerance of 1,
// else ceil(usage / target).
func averageValueReplicas(usage, target, tolerance float64, current int) int {
	if current > 0 && math.Abs(usage/(target*float64(current))-1) <= tolerance {
		return current
	}
	if !(usage > 0) {
		return 0
	}
	return int(math.Min(math.Ceil(usage/target), math.MaxInt32))
}
