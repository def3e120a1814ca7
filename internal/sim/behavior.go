package sim

import (
	"fmt"
	"math"
)

// The HPA's spec.behavior (autoscaling/v2), as the horizontal pod
// autoscaler controller applies it after computing a recommendation from
// the metrics: first the stabilization windows, then the rate policies,
// then the replica bounds. The algorithm follows the controller's
// normalizeDesiredReplicasWithBehaviors and its helpers
// (kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go) and
// https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#configurable-scaling-behavior.

// ScalingPolicy is one rate limit (HPAScalingPolicy): at most Value pods
// (type Pods), or Value percent of the replicas at the period's start
// (type Percent), per PeriodSeconds.
type ScalingPolicy struct {
	Type          string  `json:"type"`
	Value         int     `json:"value"`
	PeriodSeconds float64 `json:"periodSeconds"`
}

// ScalingRules are one direction of a behavior (HPAScalingRules). A nil
// StabilizationWindowSeconds takes the direction's default (0 up, 300
// down); no policies take the direction's default policies.
type ScalingRules struct {
	StabilizationWindowSeconds *float64 `json:"stabilizationWindowSeconds,omitempty"`
	// SelectPolicy is Max (default: the policy allowing the largest
	// change), Min, or Disabled (no change in this direction).
	SelectPolicy string          `json:"selectPolicy,omitempty"`
	Policies     []ScalingPolicy `json:"policies,omitempty"`
}

// Behavior is an HPA's spec.behavior; a nil direction is the default.
type Behavior struct {
	ScaleUp   *ScalingRules `json:"scaleUp,omitempty"`
	ScaleDown *ScalingRules `json:"scaleDown,omitempty"`
}

// Kubernetes' defaults: up, no window and the larger of 100 % or 4 pods per
// 15 s; down, a 300-s window and 100 % per 15 s.
func defaultScaleUp() ScalingRules {
	return ScalingRules{StabilizationWindowSeconds: ptr(0.0), SelectPolicy: "Max",
		Policies: []ScalingPolicy{{Type: "Pods", Value: 4, PeriodSeconds: 15}, {Type: "Percent", Value: 100, PeriodSeconds: 15}}}
}

func defaultScaleDown() ScalingRules {
	return ScalingRules{StabilizationWindowSeconds: ptr(300.0), SelectPolicy: "Max",
		Policies: []ScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}}
}

func ptr[T any](v T) *T { return &v }

// withDefaults fills what a rule leaves unset from def.
func (r *ScalingRules) withDefaults(def ScalingRules) ScalingRules {
	if r == nil {
		return def
	}
	out := *r
	if out.StabilizationWindowSeconds == nil {
		out.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if out.SelectPolicy == "" {
		out.SelectPolicy = "Max"
	}
	if len(out.Policies) == 0 {
		out.Policies = def.Policies
	}
	return out
}

// rules are a behavior with every default filled in.
func (b Behavior) rules() (up, down ScalingRules) {
	return b.ScaleUp.withDefaults(defaultScaleUp()), b.ScaleDown.withDefaults(defaultScaleDown())
}

// validate reports a behavior's problems under path p.
func (b Behavior) validate(p string, add func(string, string, ...any)) {
	for dir, r := range map[string]*ScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
		if r == nil {
			continue
		}
		q := p + "." + dir
		if w := r.StabilizationWindowSeconds; w != nil && !(*w >= 0 && *w <= 3600) {
			add(q+".stabilizationWindowSeconds", "must be between 0 and 3600 seconds (Kubernetes' limit), got %v", *w)
		}
		switch r.SelectPolicy {
		case "", "Max", "Min", "Disabled":
		default:
			add(q+".selectPolicy", "must be Max, Min or Disabled, got %q", r.SelectPolicy)
		}
		for i, pol := range r.Policies {
			pp := fmt.Sprintf("%s.policies[%d]", q, i)
			if pol.Type != "Pods" && pol.Type != "Percent" {
				add(pp+".type", "must be Pods or Percent, got %q", pol.Type)
			}
			if pol.Value < 1 || pol.Value > MaxReplicasPerVariant*100 {
				add(pp+".value", "must be between 1 and %d, got %d", MaxReplicasPerVariant*100, pol.Value)
			}
			if !(pol.PeriodSeconds >= 1 && pol.PeriodSeconds <= 1800) {
				add(pp+".periodSeconds", "must be between 1 and 1800 seconds (Kubernetes' limit), got %v", pol.PeriodSeconds)
			}
		}
	}
}

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
func (h *hpaState) normalize(now float64, b Behavior, current, desired, lo, hi int) int {
	up, down := b.rules()
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
func (h *hpaState) stabilize(now float64, up, down ScalingRules, current, desired int) int {
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
func (h *hpaState) limit(now float64, up, down ScalingRules, current, desired, lo, hi int) int {
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
func (h *hpaState) upLimit(now float64, r ScalingRules, current int) int {
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
func (h *hpaState) downLimit(now float64, r ScalingRules, current int) int {
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
func longestPeriod(r ScalingRules) float64 {
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
