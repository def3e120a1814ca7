package scenario

import "fmt"

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

// Rules are a behavior with every default filled in.
func (b Behavior) Rules() (up, down ScalingRules) {
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
