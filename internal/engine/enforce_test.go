package engine

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestHoldsOnBadMetrics: missing, stale or non-finite metrics hold the last
// good decision and say so.
func TestHoldsOnBadMetrics(t *testing.T) {
	e := New(nil)
	good := snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.75, 2, 0.76, 2))
	if d := decision(t, plan(t, e, good), "v"); d.Desired != 3 {
		t.Fatalf("first cycle: %+v", d)
	}
	for _, tc := range []struct {
		name  string
		spoil func(*Pod)
		want  string
	}{
		{"missing", func(p *Pod) { p.Missing = true }, "missing"},
		{"stale", func(p *Pod) { p.SampledAt = t0.Add(-10 * time.Minute) }, "stale (sampled 600 s ago)"},
		{"future", func(p *Pod) { p.SampledAt = t0.Add(time.Hour) }, "sampled 3600 s in the future (a clock is wrong)"},
		{"NaN", func(p *Pod) { p.KVCacheUsage = math.NaN() }, "kvCacheUsage is NaN"},
		{"negative", func(p *Pod) { p.WaitingRequests = -1 }, "waitingRequests is -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.1, 0, 0.1, 0).replicas(3, 3))
			tc.spoil(&s.Models[0].Variants[0].Pods[0])
			d := decision(t, plan(t, e, s), "v")
			if d.Desired != 3 || d.Reason != ReasonHoldMetrics || !strings.Contains(d.Explanation, tc.want) {
				t.Errorf("%+v", d)
			}
		})
	}
	// No pods at all for ready replicas, and no history: hold the current count.
	s := snapshot(ModeCapacityOnly, variant("w", "H100").replicas(2, 2))
	if d := decision(t, plan(t, nil, s), "w"); d.Desired != 2 || d.Reason != ReasonHoldMetrics {
		t.Errorf("no pods: %+v", d)
	}
}

func TestScaleToZeroAndBack(t *testing.T) {
	idle := func(secs float64) *Snapshot {
		s := snapshot(ModeCapacityOnly, variant("v", "H100").minMax(0, 4).pods(0.0, 0))
		s.Models[0].IdleSeconds = &secs
		return s
	}
	if d := decision(t, plan(t, nil, idle(700)), "v"); d.Desired != 0 || d.Reason != ReasonScaleToZero {
		t.Errorf("idle 700 s: %+v", d)
	}
	if d := decision(t, plan(t, nil, idle(60)), "v"); d.Desired != 1 {
		t.Errorf("idle 60 s (retention 600 s): %+v", d)
	}
	// minReplicas 1: never to zero.
	s := idle(7000)
	one := 1
	s.Models[0].Variants[0].MinReplicas = &one
	if d := decision(t, plan(t, nil, s), "v"); d.Desired != 1 {
		t.Errorf("minReplicas 1: %+v", d)
	}
	// Back from zero: requests waiting at the gateway start the cheapest variant.
	s = snapshot(ModeCapacityOnly, variant("big", "H100").cost(40).minMax(0, 4), variant("small", "L4").cost(8).minMax(0, 4))
	s.Models[0].GatewayWaitingRequests = 3
	p := plan(t, nil, s)
	if b, sm := decision(t, p, "big"), decision(t, p, "small"); b.Desired != 0 || sm.Desired != 1 || sm.Reason != ReasonScaleFromZero {
		t.Errorf("from zero: big %+v, small %+v", b, sm)
	}
}

// TestRetentionAcrossCycles: the engine remembers the last request.
func TestRetentionAcrossCycles(t *testing.T) {
	e := New(nil)
	at := func(minutes int, rate float64) VariantDecision {
		s := snapshot(ModeCapacityOnly, variant("v", "H100").minMax(0, 4).pods(0.1, 0).traffic(rate, 100, 10, 30, 8))
		s.Time = t0.Add(time.Duration(minutes) * time.Minute)
		s.Config.ScaleDownStabilizationSeconds = 1 // keep this test about retention
		return decision(t, plan(t, e, s), "v")
	}
	if d := at(0, 2); d.Desired != 1 {
		t.Fatalf("busy: %+v", d)
	}
	if d := at(5, 0); d.Desired != 1 {
		t.Errorf("idle 5 min: %+v", d)
	}
	if d := at(11, 0); d.Desired != 0 || d.Reason != ReasonScaleToZero {
		t.Errorf("idle 11 min: %+v", d)
	}
}

// TestScaleToZeroNotDeferredByWindow: the retention is the scale to
// zero's own stabilisation. Once the model has been idle for the whole
// scale-down window too, the window's records are the idle cycles' hold
// of the retained replica, and they do not defer the scale to zero by
// another window (before the rule it came at 16 min, not 11). A retention
// shorter than the window still waits for the window.
func TestScaleToZeroNotDeferredByWindow(t *testing.T) {
	for _, tc := range []struct {
		name           string
		retention      float64
		busyUntil      time.Duration // traffic from 0 to here, a cycle every 30 s
		wantZero       time.Duration // the first cycle at zero
		wantStabilized bool          // a cycle before it is deferred by the window
	}{
		{"default retention", 0, time.Minute, 11 * time.Minute, false},
		{"retention below the window", 120, time.Minute, 6 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(nil)
			stabilized := false
			for at := time.Duration(0); at <= 20*time.Minute; at += 30 * time.Second {
				rate := 0.0
				if at <= tc.busyUntil {
					rate = 2
				}
				s := snapshot(ModeCapacityOnly, variant("v", "H100").minMax(0, 4).pods(0.1, 0).traffic(rate, 100, 10, 30, 8))
				s.Time = t0.Add(at)
				s.Config.ScaleToZeroRetentionSeconds = tc.retention
				d := decision(t, plan(t, e, s), "v")
				stabilized = stabilized || d.Reason == ReasonStabilized
				if d.Desired == 0 {
					if at != tc.wantZero || d.Reason != ReasonScaleToZero || stabilized != tc.wantStabilized {
						t.Fatalf("at zero at %v (want %v), deferred by the window before: %v (want %v): %+v", at, tc.wantZero, stabilized, tc.wantStabilized, d)
					}
					return
				}
				if at > tc.busyUntil && d.Desired != 1 {
					t.Fatalf("idle at %v: %+v", at, d)
				}
			}
			t.Fatalf("never at zero")
		})
	}
}

// TestIdleModelKeepsOnlyTheRetained: once no request has arrived, finished
// or waited for a minute and the pods hold nothing, the scale-down
// window's records from the busy cycles stand for one replica, the one the
// retention keeps: two replicas busy until 60 s go to one at 120 s, not
// after the window (360 s); at 90 s (idle for 30 s: maybe a cold start's
// first scrape) the window holds. The pods' KV usage is a maximum over a
// minute, so while it still shows the last requests the window holds.
func TestIdleModelKeepsOnlyTheRetained(t *testing.T) {
	for _, tc := range []struct {
		name   string
		idleKV float64
		want   int
	}{{"empty pods", 0, 1}, {"pods still holding KV", 0.2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(nil)
			var d VariantDecision
			for at := time.Duration(0); at <= 120*time.Second; at += 30 * time.Second {
				kv, rate := 0.7, 2.0
				if at > time.Minute {
					kv, rate = tc.idleKV, 0
				}
				s := snapshot(ModeCapacityOnly, variant("v", "H100").minMax(0, 4).pods(kv, 0, kv, 0).traffic(rate, 100, 10, 30, 8))
				s.Time = t0.Add(at)
				d = decision(t, plan(t, e, s), "v")
				if at <= 90*time.Second && d.Desired != 2 {
					t.Fatalf("busy until 60 s; at %v: %+v", at, d)
				}
			}
			if d.Desired != tc.want {
				t.Errorf("idle at 120 s: desired %d, want %d: %s", d.Desired, tc.want, d.Explanation)
			}
		})
	}
}

func TestMinMaxClamp(t *testing.T) {
	s := snapshot(ModeCapacityOnly, variant("v", "H100").minMax(1, 2).pods(0.95, 0, 0.95, 0))
	if d := decision(t, plan(t, nil, s), "v"); d.Desired != 2 || !strings.Contains(d.Explanation, "maximum") {
		t.Errorf("max: %+v", d)
	}
	// A target set above the maximum by hand is capped by the enforcer.
	c := &cycle{}
	vs := &variantState{v: &Variant{MaxReplicas: 2}, target: 5}
	if c.clamp(vs); vs.target != 2 || vs.reason != ReasonMaxReplicas {
		t.Errorf("clamp: %d %s", vs.target, vs.reason)
	}
	s = snapshot(ModeCapacityOnly, variant("v", "H100").minMax(4, 0).pods(0.1, 0, 0.1, 0, 0.1, 0))
	if d := decision(t, plan(t, nil, s), "v"); d.Desired != 4 || d.Reason != ReasonMinReplicas {
		t.Errorf("min: %+v", d)
	}
}

// TestStabilization: a scale-down follows the highest recommendation of the
// last 300 s.
func TestStabilization(t *testing.T) {
	e := New(nil)
	run := func(minutes float64, kv float64) VariantDecision {
		s := snapshot(ModeCapacityOnly, variant("v", "H100").pods(kv, 0, kv, 0, kv, 0, kv, 0))
		s.Time = t0.Add(time.Duration(minutes * float64(time.Minute)))
		return decision(t, plan(t, e, s), "v")
	}
	if d := run(0, 0.6); d.Desired != 4 {
		t.Fatalf("steady: %+v", d)
	}
	if d := run(1, 0.1); d.Desired != 4 || d.Reason != ReasonStabilized {
		t.Errorf("one minute later, low load: %+v", d)
	}
	if d := run(6, 0.1); d.Desired >= 4 || d.Reason != ReasonSaturationScaleDown {
		t.Errorf("after the window: %+v", d)
	}
}

// TestStabilizationBounded: the window's record stays bounded whatever the
// cycles' pace. Cycles at one instant keep one record, the highest (the
// same snapshot planned again adds nothing); cycles closer together than
// the window over maxRecommendations fold the oldest into the first kept,
// so the window still holds their highest. Without the bound, a cycle
// repeated at one instant grew the record (and each cycle's work) without
// end.
func TestStabilizationBounded(t *testing.T) {
	e := New(nil)
	key := variantKey("prod", "llama", "v")
	run := func(at time.Duration, kv float64) VariantDecision {
		s := snapshot(ModeCapacityOnly, variant("v", "H100").pods(kv, 0, kv, 0, kv, 0, kv, 0))
		s.Time = t0.Add(at)
		return decision(t, plan(t, e, s), "v")
	}
	if d := run(0, 0.6); d.Desired != 4 {
		t.Fatalf("steady: %+v", d)
	}
	for range 50 {
		run(time.Second, 0.1)
	}
	if recs := e.state.Recommendations[key]; len(recs) != 2 || recs[0].Replica != 4 || recs[1].Replica >= 4 {
		t.Errorf("50 cycles at one instant: %+v, want the first cycle's 4 and one record of the second instant's scale-down", recs)
	}
	for i := range 2 * maxRecommendations {
		run(2*time.Second+time.Duration(i)*100*time.Millisecond, 0.1)
	}
	recs := e.state.Recommendations[key]
	if len(recs) != maxRecommendations || recs[0].Replica != 4 {
		t.Errorf("%d cycles 0.1 s apart: %d records, the oldest %+v; want %d, the oldest holding the first cycle's 4",
			2*maxRecommendations, len(recs), recs[0], maxRecommendations)
	}
	if d := run(2*time.Second+time.Duration(2*maxRecommendations)*100*time.Millisecond, 0.1); d.Desired != 4 || d.Reason != ReasonStabilized {
		t.Errorf("within the window of the first cycle: %+v", d)
	}
}

// TestLimitedInventoryBySaturation: scale-ups beyond the inventory go to
// the variant nearest to saturation first.
func TestLimitedInventoryBySaturation(t *testing.T) {
	s := &Snapshot{Time: t0, Mode: ModeCapacityOnly, Optimizer: OptimizerLimited, Inventory: map[string]int{"H100": 5}}
	for _, m := range []struct {
		id string
		kv float64
	}{{"calm", 0.72}, {"hot", 0.79}} {
		v := variant(m.id, "H100").pods(m.kv, 0, m.kv, 0).build()
		s.Models = append(s.Models, Model{ID: m.id, Variants: []Variant{v}})
	}
	p := plan(t, nil, s)
	hot, calm := decision(t, p, "hot"), decision(t, p, "calm")
	if hot.Desired != 3 || calm.Desired != 2 || calm.Reason != ReasonInventoryLimited {
		t.Errorf("hot %+v\ncalm %+v", hot, calm)
	}
	if u := p.Usage["H100"]; u.Desired != 5 || u.Available != 5 {
		t.Errorf("usage %+v", u)
	}
}

// TestLimitedModelOnly: the global greedy serves the higher priority first
// and a zero-load variant with minReplicas 0 does not break the solve.
func TestLimitedModelOnly(t *testing.T) {
	s := &Snapshot{Time: t0, Mode: ModeModelOnly, Optimizer: OptimizerLimited, Inventory: map[string]int{"H100": 4}}
	mk := func(id string, prio int, rate float64) Model {
		v := variant(id+"-h100", "H100").params(h100Params).pods(0.3, 0).traffic(rate, 1024, 256, 40, 15).build()
		return Model{ID: id, Priority: prio, SLO: &SLO{TTFTMs: 200, ITLMs: 20}, Variants: []Variant{v}}
	}
	s.Models = []Model{mk("batch", 2, 40), mk("chat", 1, 40)}
	zero := 0
	idle := variant("idle-h100", "H100").params(h100Params).build()
	idle.MinReplicas = &zero
	s.Models = append(s.Models, Model{ID: "idle", Priority: 1, SLO: &SLO{TTFTMs: 200, ITLMs: 20}, Variants: []Variant{idle}})
	p := plan(t, nil, s)
	chat, batch := decision(t, p, "chat-h100"), decision(t, p, "batch-h100")
	if chat.Desired != 3 || batch.Desired > 1 {
		t.Errorf("chat %+v\nbatch %+v", chat, batch)
	}
	if d := decision(t, p, "idle-h100"); d.Desired != 0 {
		t.Errorf("idle: %+v", d)
	}
}

func TestValidationNamesFields(t *testing.T) {
	lo, hi := 3, 1
	s := &Snapshot{Mode: "turbo", ServiceClasses: map[string]ServiceClass{"silver": {Priority: 1, TTFTMs: 500, Attainment: math.NaN()}}, Models: []Model{{ID: "m", ServiceClass: "gold", Attainment: 1, Variants: []Variant{
		{Name: "v", Accelerator: "H100", MinReplicas: &lo, MaxReplicas: hi, CurrentReplicas: 1, ReadyReplicas: 2, ScaleUpLimitFactor: 0.5},
		{Name: "v", Accelerator: "", ScaleUpLimitReplicas: -1},
	}}}}
	s.Config = Config{MaxQueueSize: 100_000_000, MaxReplicasDefault: -1, ScaleUpLimitFactor: math.Inf(1), MaxPodArrivalRPS: -5,
		ScaleDownStabilizationSeconds: 1e11, ScaleToZeroRetentionSeconds: 8 * 24 * 3600, ProvisioningSeconds: math.Inf(1)}
	s.Saturation = &SaturationConfig{KVScaleUpThreshold: 1.5}
	err := s.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{
		`mode: must be "capacity-only", "model-only" or "hybrid", got "turbo"`,
		`models[0].serviceClass: names no entry of serviceClasses ("gold")`,
		"models[0].attainment: must be in (0, 1), or 0 to inherit, got 1",
		"serviceClasses.silver.attainment: must be in (0, 1), or 0 to inherit, got NaN",
		"models[0].variants[0].maxReplicas: must be between minReplicas (3) and 1048576, got 1",
		"models[0].variants[0].readyReplicas: must be between 0 and currentReplicas (1), got 2",
		`models[0].variants[1].name: duplicates variants[0] ("v")`,
		"models[0].variants[1].accelerator: must not be empty",
		"models[0].variants[0].scaleUpLimitFactor: must be between 1 and 1048576 (0 means the default 4), got 0.5",
		"models[0].variants[1].scaleUpLimitReplicas: must be between 1 and 1048576 (0 means the default 8), got -1",
		"config.maxQueueSize: must be between 0 and 1000000, got 100000000",
		"config.maxReplicasDefault: must be between 1 and 1048576 (0 means the default 1000), got -1",
		"config.scaleUpLimitFactor: must be between 1 and 1048576 (0 means the default 4), got +Inf",
		"config.maxPodArrivalRPS: must be a positive number of requests/s (0 means the default 10000), got -5",
		"config.scaleDownStabilizationSeconds: must be between 0 and 3600 s (0 means the default 300), got 1e+11",
		"config.scaleToZeroRetentionSeconds: must be between 0 and 604800 s (0 means the default 600), got 691200",
		"config.provisioningSeconds: must be between 0 and 3600 s (0 means the default 120), got +Inf",
		"saturation.kvScaleUpThreshold: must be in (0, 1], got 1.5",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if _, err := New(nil).Plan(s); err == nil {
		t.Error("Plan accepted an invalid snapshot")
	}
}

func TestSeedScaleDownWindow(t *testing.T) {
	idle := func(now time.Time) *Snapshot {
		min1 := 1
		return &Snapshot{Time: now, Models: []Model{{ID: "m", Namespace: "ns", Variants: []Variant{{Name: "v", Accelerator: "H100", MinReplicas: &min1,
			CurrentReplicas: 4, ReadyReplicas: 4, Pods: []Pod{{Name: "p0", SampledAt: now, KVCacheUsage: 0.05}, {Name: "p1", SampledAt: now, KVCacheUsage: 0.05},
				{Name: "p2", SampledAt: now, KVCacheUsage: 0.05}, {Name: "p3", SampledAt: now, KVCacheUsage: 0.05}}}}}}}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fresh := New(nil)
	p, err := fresh.Plan(idle(t0))
	if err != nil {
		t.Fatal(err)
	}
	if p.Variants[0].Desired >= 4 {
		t.Fatalf("an idle fleet is not scaled down without seeding: %+v", p.Variants[0])
	}
	seeded := New(nil)
	seeded.SeedScaleDownWindow("ns", "m", "v", t0, 4)
	seeded.SeedScaleDownWindow("ns", "m", "v", t0, 9) // a second seed does nothing
	for _, c := range []struct {
		at   time.Duration
		want bool // still 4
	}{{0, true}, {299 * time.Second, true}, {301 * time.Second, false}} {
		p, err := seeded.Plan(idle(t0.Add(c.at)))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Variants[0].Desired == 4; got != c.want {
			t.Errorf("at %v: desired %d (%s)", c.at, p.Variants[0].Desired, p.Variants[0].Reason)
		}
	}
}

func TestSeedLastGood(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	min1 := 1
	s := &Snapshot{Time: t0, Models: []Model{{ID: "m", Namespace: "ns", Variants: []Variant{{Name: "v", Accelerator: "H100", MinReplicas: &min1,
		CurrentReplicas: 2, ReadyReplicas: 2, Pods: []Pod{{Name: "p0", SampledAt: t0, Missing: true}, {Name: "p1", SampledAt: t0, Missing: true}}}}}}}
	e := New(nil)
	e.SeedLastGood("ns", "m", "v", 5)
	e.SeedLastGood("ns", "m", "v", 9) // a second seed does nothing
	p, err := e.Plan(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Variants[0]; d.Reason != ReasonHoldMetrics || d.Desired != 5 {
		t.Fatalf("held at %d (%s), want the seeded 5", d.Desired, d.Reason)
	}
}

// TestHoldCause: a held variant's decision says why, the most severe of
// its pods' causes (invalid, then stale, then missing).
func TestHoldCause(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := t0.Add(-400 * time.Second)
	for name, c := range map[string]struct {
		ready int
		pods  []Pod
		want  HoldCause
	}{
		"no pods":          {3, nil, HoldMissing},
		"a missing pod":    {1, []Pod{{Name: "p0", SampledAt: t0, Missing: true}}, HoldMissing},
		"a stale pod":      {1, []Pod{{Name: "p0", SampledAt: old}}, HoldStale},
		"stale and NaN":    {2, []Pod{{Name: "p0", SampledAt: old}, {Name: "p1", SampledAt: t0, KVCacheUsage: math.NaN()}}, HoldInvalid},
		"missing and 2":    {2, []Pod{{Name: "p0", SampledAt: t0, Missing: true}, {Name: "p1", SampledAt: t0, KVCacheUsage: 2}}, HoldInvalid},
		"good is not held": {1, []Pod{{Name: "p0", SampledAt: t0, KVCacheUsage: 0.4}}, ""},
		// A cache read as −1 × −1 tokens, or a product beyond any GPU's,
		// must hold, never size a 1-token cache (which scales up).
		"negative cache":  {1, []Pod{{Name: "p0", SampledAt: t0, KVBlocks: -1, BlockSize: -1}}, HoldInvalid},
		"oversized cache": {1, []Pod{{Name: "p0", SampledAt: t0, KVBlocks: 1 << 40, BlockSize: 1 << 30}}, HoldInvalid},
		"a known cache":   {1, []Pod{{Name: "p0", SampledAt: t0, KVBlocks: 27512, BlockSize: 16}}, ""},
	} {
		s := &Snapshot{Time: t0, Models: []Model{{ID: "m", Variants: []Variant{{Name: "v", Accelerator: "H100",
			CurrentReplicas: c.ready, ReadyReplicas: c.ready, Pods: c.pods}}}}}
		p, err := New(nil).Plan(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Variants[0].Hold; got != c.want {
			t.Errorf("%s: hold %q (%s), want %q", name, got, p.Variants[0].Explanation, c.want)
		}
	}
}

// TestColdStartBacklogReleased: before the model can size, a backlog's
// scale-up is transient, and the cycles that wait for its replicas to
// start do not record it in the scale-down window either, so the fleet
// shrinks as soon as the backlog is gone.
func TestColdStartBacklogReleased(t *testing.T) {
	e := New(nil)
	at := func(minutes int, b *variantB) VariantDecision {
		s := snapshot(ModeHybrid, b)
		s.Time = t0.Add(timeMinutes(minutes))
		s.Config.ScaleUpLimitReplicas = 9 // the backlog's 1 → 10 in one cycle
		d := decision(t, plan(t, e, s), "v")
		if d.ModelTarget >= 0 {
			t.Fatalf("minute %d: the model sized (%d) without parameters", minutes, d.ModelTarget)
		}
		return d
	}
	// One saturated replica with a backlog of 20: each replica supplies
	// 5 − 3 = 2 of queue, so the deficit 20 − 2 asks for 9 more; the KV in
	// use needs ⌈1.0/(0.8−0.1)⌉ = 2.
	up := at(0, variant("v", "H100").pods(1.0, 20).traffic(2, 512, 128, 900, 15))
	if up.Desired != 10 || up.Reason != ReasonSaturationScaleUp {
		t.Fatalf("backlog: %+v", up)
	}
	// A minute later one replica is ready and the queue has drained; nine
	// are starting: the group holds.
	hold := at(1, variant("v", "H100").replicas(10, 1).pods(0.3, 0).traffic(2, 512, 128, 900, 15))
	if hold.Desired != 10 {
		t.Fatalf("while starting: %+v", hold)
	}
	// All are ready and idle: the transient part goes at once, down to the
	// 2 the KV load needed (the window's record), not held for 300 s at 10.
	var kvq []float64
	for range 10 {
		kvq = append(kvq, 0.05, 0)
	}
	down := at(2, variant("v", "H100").pods(kvq...).traffic(0.2, 512, 128, 50, 15))
	if down.Desired != 2 {
		t.Fatalf("after the backlog: %+v (%s)", down, down.Explanation)
	}
}

// TestWake: the fast loop's rule wakes the cheapest variant allowed a
// replica, to max(1, minReplicas), only when the whole model is at zero
// and requests wait.
func TestWake(t *testing.T) {
	three, zero := 3, 0
	m := Model{ID: "llama", Namespace: "prod", GatewayWaitingRequests: 2, Variants: []Variant{
		{Name: "h100", Accelerator: "H100", Cost: 40},
		{Name: "l40s", Accelerator: "L40S", Cost: 10, MaxReplicas: 0, MinReplicas: &three},
		{Name: "a10", Accelerator: "A10", Cost: 10, MinReplicas: &zero},
	}}
	d, ok := New(nil).Wake(&m)
	// a10 and l40s cost the same; a10 comes first by name; minReplicas 0 → 1.
	if !ok || d.Variant != "a10" || d.Desired != 1 || d.Reason != ReasonScaleFromZero || d.Action != ActionScaleUp {
		t.Fatalf("wake: %+v %v", d, ok)
	}
	m.Variants[2].Cost = 20
	if d, _ := New(nil).Wake(&m); d.Variant != "l40s" || d.Desired != 3 {
		t.Errorf("minReplicas 3: %+v", d)
	}
	m.Variants[1].MaxReplicas = 1
	m.Variants[1].Cost = 5
	if d, _ := New(nil).Wake(&m); d.Variant != "l40s" || d.Desired != 1 {
		t.Errorf("maxReplicas 1 caps minReplicas 3: %+v", d)
	}
	m.GatewayWaitingRequests = 0
	if _, ok := New(nil).Wake(&m); ok {
		t.Error("woke with nothing waiting")
	}
	m.GatewayWaitingRequests = 1
	m.Variants[0].CurrentReplicas = 1
	if _, ok := New(nil).Wake(&m); ok {
		t.Error("woke a model that has a replica")
	}
}

// TestLongestWindowHolds: the scale-down window at its bound (an hour)
// still holds a scale-down, and seconds beyond what a time.Duration can
// count, or NaN, convert without overflow. A window of 10¹¹ s was accepted
// before the bound (TestValidationNamesFields now refuses it) and converted
// to a negative duration: 3 replicas went to 1 at once.
func TestLongestWindowHolds(t *testing.T) {
	e := New(nil)
	for i, rate := range []float64{40, 5} {
		v := variant("h100", "H100").params(h100Params).pods(0.3, 0, 0.3, 0, 0.3, 0).traffic(rate, 1024, 256, 40, 15).replicas(3, 3)
		s := snapshot(ModeModelOnly, v)
		s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		s.Config.DisableForecast = true
		s.Config.ScaleDownStabilizationSeconds = MaxStabilizationSeconds
		d := decision(t, plan(t, e, s), "h100")
		if i == 1 && (d.Desired != 3 || d.Reason != ReasonStabilized || d.ModelTarget != 1) {
			t.Errorf("desired %d (%s), model target %d; want 3 held by the window over 1", d.Desired, d.Reason, d.ModelTarget)
		}
	}
	if got := secondsDuration(1e300); got != time.Duration(maxDurationSeconds)*time.Second {
		t.Errorf("1e300 s is %v", got)
	}
	if got := secondsDuration(math.NaN()); got != 0 {
		t.Errorf("NaN s is %v", got)
	}
}
