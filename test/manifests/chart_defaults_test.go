package manifests

import (
	"reflect"
	"testing"

	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// TestChartDefaultsAreTheCodes: the chart's tuner and saturation
// ConfigMaps say in values.yaml that they hold the defaults; parsed, they
// must be what the controller uses when the keys are absent. The chart
// once shipped the reference tuner's percent-change 0.05 after the tuner's
// default had become 0.01, so every Helm install ran with the old noise.
func TestChartDefaultsAreTheCodes(t *testing.T) {
	ch := loadChart(t)
	r := release{name: "wva", namespace: "wva", caps: withKube(nil, "v1.36.0")}
	objs, _ := r.mustRender(t, ch)

	tu, err := config.ParseTuner(configMapData(t, r, objs, "tuner"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := config.ParseTuner(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tu.Config.Resolved(), def.Config.Resolved(); !reflect.DeepEqual(got, want) {
		t.Errorf("the chart's tuner settings %+v, the tuner's defaults %+v", got, want)
	}
	if tu.Enabled != def.Enabled || tu.Period != def.Period {
		t.Errorf("the chart's tuner: enabled %v, period %v; defaults %v, %v", tu.Enabled, tu.Period, def.Enabled, def.Period)
	}
	if tu.Budget != 0 && tu.Budget != engine.DefaultTunerBudget {
		t.Errorf("the chart's tuning-budget %d, the default %d", tu.Budget, engine.DefaultTunerBudget)
	}

	sat, err := config.ParseSaturation(configMapData(t, r, objs, "saturation"))
	if err != nil {
		t.Fatal(err)
	}
	if sat.Default != engine.DefaultSaturation() || len(sat.Overrides) != 0 {
		t.Errorf("the chart's saturation thresholds %+v (overrides %v), the engine's defaults %+v", sat.Default, sat.Overrides, engine.DefaultSaturation())
	}
}
