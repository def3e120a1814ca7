package controller

import (
	"context"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestSnapshotSettingsTuner: the tuner ConfigMap's period, budget and
// filter settings reach the cycle's snapshot settings.
func TestSnapshotSettingsTuner(t *testing.T) {
	var p planner
	set := settings{
		Tuner:         config.Tuner{Enabled: true, Period: 30 * time.Second, Budget: 123, Config: tuner.Config{MaxNIS: 5}},
		QueueingModel: config.QueueingModel{Present: true, TuningEnabled: true},
	}
	got := p.snapshotSettings(context.Background(), set)
	if !got.Tuning || got.TunerPeriod != 30*time.Second || got.Engine.TunerBudget != 123 || got.Engine.Tuner.MaxNIS != 5 {
		t.Errorf("tuning %v, period %v, budget %d, max NIS %v; want true, 30s, 123, 5",
			got.Tuning, got.TunerPeriod, got.Engine.TunerBudget, got.Engine.Tuner.MaxNIS)
	}
}
