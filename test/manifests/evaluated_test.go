package manifests

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llm-d-incubation/wva/internal/config"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// checkEvaluatedConfig: an install's main and queueing-model ConfigMaps
// run what docs/evaluation.md evaluates (the simulator's wva with its
// defaults): hybrid mode (the queueing model's default key on, with
// tuning and SLOs inferred from observed latencies when a model has none)
// on the simulator's cycle.
func checkEvaluatedConfig(t *testing.T, what string, main, queueing map[string]string) {
	t.Helper()
	m, err := config.ParseMain(main)
	if err != nil {
		t.Fatalf("%s: main ConfigMap: %v", what, err)
	}
	q, err := config.ParseQueueingModel(queueing)
	if err != nil {
		t.Fatalf("%s: queueing-model ConfigMap: %v", what, err)
	}
	eval := scenario.DefaultWVAConfig()
	if want := time.Duration(eval.IntervalSeconds * float64(time.Second)); m.Interval != want {
		t.Errorf("%s: GLOBAL_OPT_INTERVAL %v, the evaluation's cycle is %v", what, m.Interval, want)
	}
	if want := time.Duration(*eval.DrainTimeoutSeconds * float64(time.Second)); m.Drain.Timeout != want {
		t.Errorf("%s: WVA_DRAIN_TIMEOUT %v, the evaluation drains for %v", what, m.Drain.Timeout, want)
	}
	if !q.Present || !q.TuningEnabled || q.SLOMultiplier != engine.DefaultSLOMultiplier {
		t.Errorf("%s: the queueing model is %+v: want its default key on, tuning, SLO multiplier %v (hybrid mode, as evaluated)",
			what, q, engine.DefaultSLOMultiplier)
	}
	if m.Mode != "" && string(m.Mode) != eval.Mode || eval.Mode != string(engine.ModeHybrid) {
		t.Errorf("%s: WVA_MODE %q, the evaluation runs %s", what, m.Mode, eval.Mode)
	}
}

// TestKustomizeInstallsEvaluated: `kubectl apply -k config/default`
// installs what docs/evaluation.md evaluates, as the chart does.
func TestKustomizeInstallsEvaluated(t *testing.T) {
	objs := buildOverlay(t, "config/default")
	data := func(name string) map[string]string {
		d, _, _ := unstructured.NestedStringMap(one(t, objs, "ConfigMap", name).u.Object, "data")
		return d
	}
	checkEvaluatedConfig(t, "config/default", data("variantautoscaling-config"), data("wva-queueing-model-config"))
}
