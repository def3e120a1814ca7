package controller

import (
	"testing"

	"github.com/go-logr/logr"

	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// TestSurgeRatioReachesTheSnapshot: WVA_SURGE_RATIO and a queueing-model
// entry's surgeRatio reach the engine: the snapshot the cycle planned (what
// /debug/snapshot serves and `wva plan -f` replays) carries the
// configuration's 1.5 and the model's own 2.5, and the model's plan
// covers 2.5 times its demand.
func TestSurgeRatioReachesTheSnapshot(t *testing.T) {
	f := newFixture(t)
	f.planner.Replays = newReplayStore("", 1, logr.Discard())
	f.deployment("surge-h100", 2)
	f.va("surge-h100", "model-surge", nil)
	names := defaultConfigNames()
	if err := f.planner.Config.apply(names.QueueingModel, map[string]string{"default": "sloMultiplier: 3\n",
		"surge": "model_id: model-surge\nsurgeRatio: 2.5\n"}, true); err != nil {
		t.Fatal(err)
	}
	if err := f.planner.Config.apply(names.Main, map[string]string{"WVA_SURGE_RATIO": "1.5"}, true); err != nil {
		t.Fatal(err)
	}
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: "model-surge", Pods: pods("surge-h100", 2, 0.3, 0)}}})
	f.cycle()
	doc, err := f.planner.Replays.model(f.ns, "model-surge")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := snapshot.ParseFile(doc)
	if err != nil {
		t.Fatalf("the snapshot does not parse: %v\n%s", err, doc)
	}
	if len(parsed.Models) != 1 || parsed.Models[0].SurgeRatio != 2.5 || parsed.Config.SurgeRatio != 1.5 {
		t.Fatalf("snapshot surge: config %v, models %+v; want 1.5 and 2.5", parsed.Config.SurgeRatio, parsed.Models)
	}
	p, err := parsed.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Models[0]; m.DemandRPS <= 0 || m.SurgeRatio != 2.5 || m.PlannedRPS < 2.5*m.DemandRPS-1e-9 {
		t.Errorf("the replayed plan: surge %v, planned %v for %v demand; want 2.5 times a demand > 0", m.SurgeRatio, m.PlannedRPS, m.DemandRPS)
	}
}
