package snapshot

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// byLabel owns the pods whose "v" label names the variant.
func byLabel(name string) func(collector.PodMetrics) (bool, PodTimes) {
	return func(pm collector.PodMetrics) (bool, PodTimes) { return pm.Labels["v"] == name, PodTimes{} }
}

func pod(name, variant string, rate float64) collector.PodMetrics {
	return collector.PodMetrics{Labels: map[string]string{"v": variant}, Pod: engine.Pod{Name: name, SampledAt: t0, ArrivalRateRPS: rate,
		AvgInputTokens: 512, AvgOutputTokens: 128, AvgTTFTMs: 80, AvgITLMs: 20, KVCacheUsage: 0.3, KVBlocks: 1000, BlockSize: 16, MaxBatchSize: 64}}
}

func intp(n int) *int { return &n }

func TestBuildVariantRules(t *testing.T) {
	m := Model{
		Model:  engine.Model{ID: "m", Namespace: "ns"},
		Report: collector.Report{Time: t0, Pods: []collector.PodMetrics{pod("a-1", "a", 2), pod("a-2", "a", 3), pod("x-1", "other", 9)}},
		Variants: []Variant{
			// 4 desired, 5 ready (one terminating), 2 scraped: 2 ready, 2 starting.
			{Variant: engine.Variant{Name: "a", Accelerator: "H100", CurrentReplicas: 4, ReadyReplicas: 5, MinReplicas: intp(0)}, Owns: byLabel("a"), LastGood: 3},
			// 1 ready, none scraped: the ready count stands (the engine holds it).
			{Variant: engine.Variant{Name: "b", Accelerator: "L40S", CurrentReplicas: 1, ReadyReplicas: 1, MinReplicas: intp(2)}, Owns: byLabel("b"), LastGood: -1},
		},
	}
	var b Builder
	for _, scaleToZero := range []bool{false, true} {
		r := b.Build(t0, Settings{ScaleToZero: scaleToZero}, []Model{m})
		if len(r.Held) != 0 || len(r.Snapshot.Models) != 1 {
			t.Fatalf("held %v, models %d", r.Held, len(r.Snapshot.Models))
		}
		a, bv := r.Snapshot.Models[0].Variants[0], r.Snapshot.Models[0].Variants[1]
		if a.ReadyReplicas != 2 || len(a.Pods) != 2 || a.Pods[0].Name != "a-1" || a.Pods[1].Name != "a-2" {
			t.Errorf("variant a: ready %d, pods %v", a.ReadyReplicas, a.Pods)
		}
		if bv.ReadyReplicas != 1 || len(bv.Pods) != 0 {
			t.Errorf("variant b: ready %d, pods %v", bv.ReadyReplicas, bv.Pods)
		}
		if want := map[bool]int{false: 1, true: 0}[scaleToZero]; *a.MinReplicas != want {
			t.Errorf("scale to zero %v: minReplicas %d, want %d", scaleToZero, *a.MinReplicas, want)
		}
		if *bv.MinReplicas != 2 {
			t.Errorf("minReplicas 2 changed to %d", *bv.MinReplicas)
		}
	}
	if *m.Variants[0].Variant.MinReplicas != 0 {
		t.Error("Build changed its input")
	}
	if r := b.Build(t0, Settings{}, []Model{m}); len(r.lastGood) != 1 || r.lastGood[0] != (seed{"ns", "m", "a", 3}) {
		t.Errorf("last good seeds %v", r.lastGood)
	}
}

// TestBuildPodAge: a pod's age counts from its ready time, and its
// start-up is the time from its creation to Ready, when the source gave
// neither; a source's own age and start-up stand. A pod whose creation is
// unknown has no start-up.
func TestBuildPodAge(t *testing.T) {
	aged := pod("p-2", "a", 1)
	aged.Pod.AgeSeconds, aged.Pod.StartupSeconds = 999, 45
	times := map[string]PodTimes{
		"p-1": {Created: t0.Add(-330 * time.Second), Ready: t0.Add(-90 * time.Second)},
		"p-2": {Created: t0.Add(-330 * time.Second), Ready: t0.Add(-90 * time.Second)},
		"p-3": {Ready: t0.Add(-90 * time.Second)},
	}
	m := Model{Model: engine.Model{ID: "m"}, Report: collector.Report{Time: t0, Pods: []collector.PodMetrics{pod("p-1", "a", 1), aged, pod("p-3", "a", 1)}},
		Variants: []Variant{{Variant: engine.Variant{Name: "a", Accelerator: "H100", CurrentReplicas: 3, ReadyReplicas: 3}, LastGood: -1,
			Owns: func(pm collector.PodMetrics) (bool, PodTimes) { return true, times[pm.Pod.Name] }}}}
	var b Builder
	pods := b.Build(t0, Settings{}, []Model{m}).Snapshot.Models[0].Variants[0].Pods
	if pods[0].AgeSeconds != 90 || pods[1].AgeSeconds != 999 || pods[2].AgeSeconds != 90 {
		t.Errorf("ages %g, %g, %g; want 90, 999, 90", pods[0].AgeSeconds, pods[1].AgeSeconds, pods[2].AgeSeconds)
	}
	if pods[0].StartupSeconds != 240 || pods[1].StartupSeconds != 45 || pods[2].StartupSeconds != 0 {
		t.Errorf("start-ups %g, %g, %g; want 240, 45, 0", pods[0].StartupSeconds, pods[1].StartupSeconds, pods[2].StartupSeconds)
	}
}

// TestBuildModeAndTuning: the mode resolves from the queueing-model
// configuration; the tuner runs only in a mode that uses the model, and at
// most once per period — between periods the learned parameters are still
// used (tuning stays on, only its step is idle).
func TestBuildModeAndTuning(t *testing.T) {
	var b Builder
	cases := []struct {
		at           time.Duration
		set          Settings
		mode         engine.Mode
		tuning, idle bool
		whyChecked   string
	}{
		{0, Settings{Tuning: true}, engine.ModeCapacityOnly, false, false, "capacity-only never tunes"},
		{0, Settings{QueueingModel: true, Tuning: true, TunerPeriod: time.Minute}, engine.ModeHybrid, true, false, "first tuning cycle"},
		{30 * time.Second, Settings{QueueingModel: true, Tuning: true, TunerPeriod: time.Minute}, engine.ModeHybrid, true, true, "within the period"},
		{60 * time.Second, Settings{Mode: engine.ModeModelOnly, Tuning: true, TunerPeriod: time.Minute}, engine.ModeModelOnly, true, false, "period over"},
		{61 * time.Second, Settings{QueueingModel: true, Tuning: true}, engine.ModeHybrid, true, false, "no period: every cycle"},
		{62 * time.Second, Settings{QueueingModel: true}, engine.ModeHybrid, false, false, "tuning off"},
	}
	for _, c := range cases {
		s := b.Build(t0.Add(c.at), c.set, nil).Snapshot
		if s.Mode != c.mode || s.Config.TuningEnabled != c.tuning || s.Config.TunerIdle != c.idle {
			t.Errorf("%s: mode %s tuning %v idle %v, want %s %v %v", c.whyChecked, s.Mode, s.Config.TuningEnabled, s.Config.TunerIdle, c.mode, c.tuning, c.idle)
		}
	}
}

// TestBuildHolds: a model whose metrics could not be read, or whose input
// alone is invalid, is left out with why; the others are planned. A
// problem that is not one model's (the configuration) isolates nothing.
func TestBuildHolds(t *testing.T) {
	good := Model{Model: engine.Model{ID: "a", Namespace: "ns"}, Report: collector.Report{Time: t0, Pods: []collector.PodMetrics{pod("p", "a-h100", 1)}},
		Variants: []Variant{{Variant: engine.Variant{Name: "a-h100", Accelerator: "H100", CurrentReplicas: 1, ReadyReplicas: 1}, Owns: byLabel("a-h100"), LastGood: -1}}}
	dup := Model{Model: engine.Model{ID: "b", Namespace: "ns"}, Report: collector.Report{Time: t0, Pods: []collector.PodMetrics{pod("q", "b-h100", 1), pod("q", "b-h100", 1)}},
		Variants: []Variant{{Variant: engine.Variant{Name: "b-h100", Accelerator: "H100", CurrentReplicas: 2, ReadyReplicas: 2}, Owns: byLabel("b-h100"), LastGood: -1}}}
	down := Model{Model: engine.Model{ID: "c", Namespace: "ns"}, Err: errors.New("prometheus: connection refused")}
	var b Builder
	r := b.Build(t0, Settings{}, []Model{dup, down, good})
	if len(r.Snapshot.Models) != 1 || r.Snapshot.Models[0].ID != "a" || len(r.Held) != 2 {
		t.Fatalf("planned %v, held %v", r.Snapshot.Models, r.Held)
	}
	if err := r.Held[collector.Target{Namespace: "ns", Model: "b"}]; err == nil || !strings.Contains(err.Error(), `duplicates pod "q"`) {
		t.Errorf("duplicate pods: %v", err)
	}
	if err := r.Held[collector.Target{Namespace: "ns", Model: "c"}]; err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("collection error: %v", err)
	}
	if _, err := r.Plan(engine.New(nil)); err != nil {
		t.Errorf("the remaining snapshot does not plan: %v", err)
	}
	bad := b.Build(t0, Settings{Engine: engine.Config{SLOMultiplier: 0.5}}, []Model{good})
	if len(bad.Held) != 0 || len(bad.Snapshot.Models) != 1 {
		t.Errorf("a configuration problem was isolated: %v", bad.Held)
	}
	if _, err := bad.Plan(engine.New(nil)); err == nil || !strings.Contains(err.Error(), "sloMultiplier") {
		t.Errorf("Plan: %v, want the configuration's error", err)
	}
}

// TestPlanSeeds: a new engine starts its scale-down window from the
// current replicas (an idle model is not scaled down at once) and holds a
// variant with bad metrics at the published decision, not at its current
// count; seeds never override what the engine decided itself.
func TestPlanSeeds(t *testing.T) {
	idle := func(at time.Time, lastGood int, missing bool) Model {
		rep := collector.Report{Time: at}
		for i := range 6 {
			p := pod("p-"+string(rune('0'+i)), "a", 0.1)
			p.Pod.SampledAt, p.Pod.Missing, p.Pod.KVCacheUsage = at, missing, 0.01
			rep.Pods = append(rep.Pods, p)
		}
		return Model{Model: engine.Model{ID: "m", Namespace: "ns"}, Report: rep,
			Variants: []Variant{{Variant: engine.Variant{Name: "a", Accelerator: "H100", CurrentReplicas: 6, ReadyReplicas: 6, MinReplicas: intp(1)},
				Owns: byLabel("a"), LastGood: lastGood}}}
	}
	var b Builder
	e := engine.New(nil)
	plan, err := b.Build(t0, Settings{}, []Model{idle(t0, 4, false)}).Plan(e)
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Variants[0]; d.Desired != 6 {
		t.Errorf("first cycle of a new engine: desired %d, want 6 (the current replicas seed the scale-down window): %s", d.Desired, d.Explanation)
	}
	later := t0.Add(10 * time.Minute)
	plan, _ = b.Build(later, Settings{}, []Model{idle(later, 4, false)}).Plan(e)
	if d := plan.Variants[0]; d.Desired >= 6 {
		t.Errorf("after the window: desired %d, want a scale-down", d.Desired)
	}
	own := plan.Variants[0].Desired

	// A new leader's engine, metrics missing: hold at the published 4.
	plan, _ = b.Build(later, Settings{}, []Model{idle(later, 4, true)}).Plan(engine.New(nil))
	if d := plan.Variants[0]; d.Desired != 4 || d.Reason != engine.ReasonHoldMetrics {
		t.Errorf("new engine, bad metrics: desired %d (%s), want held at 4", d.Desired, d.Reason)
	}
	// The engine that decided itself keeps its own last good decision.
	plan, _ = b.Build(later.Add(time.Minute), Settings{}, []Model{idle(later.Add(time.Minute), 4, true)}).Plan(e)
	if d := plan.Variants[0]; d.Desired != own {
		t.Errorf("engine's own last good %d overridden: desired %d", own, d.Desired)
	}
}

// TestGroupsAreReplicas: the pods of one group (a LeaderWorkerSet's leader
// and workers, each a server) are one replica to the engine: rates,
// queues and cache sizes add up, latencies are arrival-weighted, the KV
// usage is the fuller server's; a pod without a group stays a replica.
func TestGroupsAreReplicas(t *testing.T) {
	leader, worker, lone := pod("g0-0", "a", 3), pod("g0-1", "a", 1), pod("g1-0", "a", 2)
	worker.Pod.AvgTTFTMs, worker.Pod.KVCacheUsage, worker.Pod.WaitingRequests, leader.Pod.WaitingRequests = 200, 0.9, 4, 1
	group := map[string]string{"g0-0": "0", "g0-1": "0", "g1-0": ""}
	v := Variant{Variant: engine.Variant{Name: "a", Accelerator: "H100", CurrentReplicas: 2, ReadyReplicas: 2}, Owns: byLabel("a"),
		Group: func(pm collector.PodMetrics) string { return group[pm.Pod.Name] }}
	ev := variant(&v, collector.Report{Time: t0, Pods: []collector.PodMetrics{leader, worker, lone}}, false)
	if len(ev.Pods) != 2 || ev.ReadyReplicas != 2 {
		t.Fatalf("%d pods, %d ready: want the group as one replica beside the lone pod", len(ev.Pods), ev.ReadyReplicas)
	}
	g := ev.Pods[0]
	for name, c := range map[string][2]float64{"rate": {g.ArrivalRateRPS, 4}, "TTFT (3×80+1×200)/4": {g.AvgTTFTMs, 110}, "KV": {g.KVCacheUsage, 0.9},
		"waiting": {g.WaitingRequests, 5}, "cache tokens": {float64(g.KVBlocks * g.BlockSize), 32000}, "batch": {float64(g.MaxBatchSize), 128}} {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if ev.Pods[1].Name != "g1-0" || ev.Pods[1].ArrivalRateRPS != 2 {
		t.Errorf("the lone pod: %+v", ev.Pods[1])
	}
}
