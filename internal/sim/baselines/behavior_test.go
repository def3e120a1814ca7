package baselines

import (
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// TestBehaviorDefaults: Kubernetes' default behavior, by hand. Up: the
// larger of +4 pods or +100 % per 15 s, counted from the replicas at the
// period's start. Down: the highest recommendation of the last 300 s.
func TestBehaviorDefaults(t *testing.T) {
	var h hpaState
	steps := []struct {
		now              float64
		current, desired int
		want             int
	}{
		{0, 2, 20, 6},      // max(2 + 4, 2 × 2)
		{10, 6, 20, 6},     // the same period: it started at 2
		{15.5, 6, 20, 12},  // a new period: max(6 + 4, 6 × 2)
		{30.5, 12, 20, 20}, // max(16, 24), capped by the recommendation
		{40, 20, 3, 20},    // down: 20 was recommended within 300 s
		{331, 20, 3, 3},    // the 20s are older than 300 s
	}
	for _, s := range steps {
		if got := h.normalize(s.now, scenario.Behavior{}, s.current, s.desired, 1, 100); got != s.want {
			t.Errorf("t=%v: %d → %d: got %d, want %d", s.now, s.current, s.desired, got, s.want)
		}
	}
}

// TestBehaviorGuides: the llm-d token-aware guide's behavior (up: no window,
// 1 pod per 180 s; down: a 300-s window, 1 pod per 300 s), the replica
// bounds, and a disabled direction.
func TestBehaviorGuides(t *testing.T) {
	slow := scenario.Behavior{
		ScaleUp:   &scenario.ScalingRules{StabilizationWindowSeconds: ptr(0.0), Policies: []scenario.ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 180}}},
		ScaleDown: &scenario.ScalingRules{StabilizationWindowSeconds: ptr(300.0), Policies: []scenario.ScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 300}}},
	}
	var h hpaState
	for _, s := range []struct {
		now              float64
		current, desired int
		want             int
	}{
		{0, 1, 5, 2}, {60, 2, 5, 2}, {181, 2, 5, 3}, {362, 3, 9, 4},
		{700, 4, 1, 3}, // the 9 is older than 300 s: down one pod
		{800, 3, 1, 3}, // one pod per 300 s
		{1001, 3, 1, 2},
	} {
		if got := h.normalize(s.now, slow, s.current, s.desired, 1, 10); got != s.want {
			t.Errorf("t=%v: %d → %d: got %d, want %d", s.now, s.current, s.desired, got, s.want)
		}
	}
	var b hpaState
	if got := b.normalize(0, scenario.Behavior{}, 3, 50, 1, 8); got != 7 { // max(3+4, 6) = 7 < 8
		t.Errorf("up within max: %d", got)
	}
	if got := b.normalize(20, scenario.Behavior{}, 7, 50, 1, 8); got != 8 {
		t.Errorf("capped at maxReplicaCount: %d", got)
	}
	var floor hpaState
	if got := floor.normalize(400, scenario.Behavior{}, 6, 1, 3, 8); got != 3 { // minReplicaCount 3
		t.Errorf("scale-down below minReplicaCount: %d", got)
	}
	off := scenario.Behavior{ScaleDown: &scenario.ScalingRules{SelectPolicy: "Disabled"}}
	var c hpaState
	if got := c.normalize(0, off, 5, 1, 1, 8); got != 5 {
		t.Errorf("scale-down disabled: %d", got)
	}
	minSel := scenario.Behavior{ScaleUp: &scenario.ScalingRules{SelectPolicy: "Min"}}
	var d hpaState
	if got := d.normalize(0, minSel, 10, 50, 1, 100); got != 14 { // min(10 + 4, 20)
		t.Errorf("select Min: %d", got)
	}
}

// TestAverageValueReplicas: an AverageValue target, with the 10 %
// tolerance around the current count.
func TestAverageValueReplicas(t *testing.T) {
	for _, c := range []struct {
		usage, target float64
		current, want int
	}{
		{33, 16, 2, 2}, // 33 / 32 is within 10 % of 1
		{40, 16, 2, 3}, // ceil(2.5)
		{0, 16, 3, 0},
		{5, 16, 0, 1},
		{1e300, 1, 2, 2147483647},
	} {
		if got := averageValueReplicas(c.usage, c.target, 0.1, c.current); got != c.want {
			t.Errorf("%v / %v at %d: %d, want %d", c.usage, c.target, c.current, got, c.want)
		}
	}
}
func ptr[T any](v T) *T { return &v }
