package scenario

import (
	"strings"
	"testing"
)

// TestBehaviorValidation names each bad field.
func TestBehaviorValidation(t *testing.T) {
	b := Behavior{ScaleUp: &ScalingRules{StabilizationWindowSeconds: ptr(-1.0), SelectPolicy: "Most",
		Policies: []ScalingPolicy{{Type: "Replicas", Value: 0, PeriodSeconds: 0}}}}
	var got []string
	b.validate("autoscalers.x.behavior", func(p, _ string, _ ...any) { got = append(got, p) })
	want := "autoscalers.x.behavior.scaleUp.stabilizationWindowSeconds autoscalers.x.behavior.scaleUp.selectPolicy " +
		"autoscalers.x.behavior.scaleUp.policies[0].type autoscalers.x.behavior.scaleUp.policies[0].value autoscalers.x.behavior.scaleUp.policies[0].periodSeconds"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v", got)
	}
}
