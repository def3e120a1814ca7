package snapshot

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// fleet is a small simulated fleet in hybrid mode with tuning and
// forecasting on: each cycle its replicas follow the previous decision
// (ready one cycle later) every other cycle, its load follows a wave with a step, so that the
// engine's carried state (forecasts, provisioning, learned parameters,
// the scale-down window, last good decisions) drives its decisions.
type fleet struct {
	current, ready map[string]int
}

func (f *fleet) snapshot(cycle int) *engine.Snapshot {
	now := t0.Add(time.Duration(cycle) * time.Minute)
	rate := 6 + 4*math.Sin(float64(cycle)/3)
	if cycle >= 12 {
		rate += 10
	}
	s := &engine.Snapshot{Time: now, Mode: engine.ModeHybrid, Config: engine.Config{TuningEnabled: true, ScaleDownStabilizationSeconds: 180}}
	m := engine.Model{ID: "meta/llama", Namespace: "ns", SLO: &engine.SLO{TTFTMs: 400, ITLMs: 30}}
	for _, v := range []struct {
		name, acc string
		cost      float64
		params    *tuner.Params
	}{{"h100", "H100", 40, &tuner.Params{Alpha: 6, Beta: 0.012, Gamma: 0.000035}}, {"a100", "A100", 15, nil}} {
		cur, ready := f.current[v.name], f.ready[v.name]
		if cycle == 22 && v.name == "a100" {
			cur, ready = cur+2, ready+2 // scaled by hand: it holds at its last good decision, not here
		}
		ev := engine.Variant{Name: v.name, Accelerator: v.acc, Cost: v.cost, CurrentReplicas: cur, ReadyReplicas: ready, Params: v.params, MaxReplicas: 20}
		for i := range ready {
			load := rate / 2 / float64(max(ready, 1))
			p := engine.Pod{Name: fmt.Sprintf("%s-%d", v.name, i), SampledAt: now, AgeSeconds: 600, ArrivalRateRPS: load,
				AvgInputTokens: 1024, AvgOutputTokens: 256, AvgTTFTMs: 30 + 6*load, AvgITLMs: 9 + 0.8*load,
				KVCacheUsage: math.Min(0.1*load, 0.99), WaitingRequests: math.Floor(load / 3), KVBlocks: 4000, BlockSize: 16, MaxBatchSize: 128}
			switch {
			case cycle == 22 && v.name == "a100" && i == 0:
				p.KVCacheUsage = math.NaN() // invalid: the variant holds
			case cycle == 16 && v.name == "h100" && i == 0:
				p.Missing = true
			}
			ev.Pods = append(ev.Pods, p)
		}
		m.Variants = append(m.Variants, ev)
	}
	s.Models = []engine.Model{m}
	return s
}

// follow applies a plan the way a slow actuator does: every other cycle.
func (f *fleet) follow(cycle int, p *engine.Plan) {
	if cycle%2 == 1 {
		for v := range f.ready {
			f.ready[v] = f.current[v]
		}
		return
	}
	for _, d := range p.Variants {
		f.ready[d.Variant] = min(f.current[d.Variant], d.Desired)
		f.current[d.Variant] = d.Desired
	}
}

// TestReplayReproducesEveryCycle: for every cycle of a live engine, the
// file Replay writes (as YAML, its non-finite metrics made finite) plans,
// through ParseFile and File.Plan as `wva plan -f` does, to the live
// decisions exactly. Without its state, or without any one of the parts
// this fleet exercises, the same files plan differently in some cycles:
// the state is what makes them a replay.
func TestReplayReproducesEveryCycle(t *testing.T) {
	f := &fleet{current: map[string]int{"h100": 1, "a100": 2}, ready: map[string]int{"h100": 1, "a100": 2}}
	e := engine.New(nil)
	var docs [][]byte
	var lives []string
	for cycle := range 30 {
		r := Result{Snapshot: f.snapshot(cycle)}
		r.Seed(e)
		file, err := r.Replay(e)
		if err != nil {
			t.Fatal(err)
		}
		file.Finite()
		doc, err := yaml.Marshal(file)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		live, err := e.Plan(r.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		docs, lives = append(docs, doc), append(lives, decisions(live))
		f.follow(cycle, live)
	}
	if n := replayDiffers(t, docs, lives, func(*File) {}); n != 0 {
		t.Errorf("%d of 30 replayed cycles differ from the live ones", n)
	}
	for _, c := range []struct {
		part string
		drop func(*File)
	}{
		{"the whole state", func(f *File) { f.State, f.Tuner = nil, nil }},
		{"forecast", eachModel(func(m *engine.CarriedModel) { m.Forecast = nil })},
		{"lastGood", eachVariant(func(v *engine.CarriedVariant) { v.LastGood = nil })},
		{"recommendations", eachVariant(func(v *engine.CarriedVariant) { v.Recommendations = nil })},
		{"learned", eachVariant(func(v *engine.CarriedVariant) { v.Learned = nil })},
	} {
		if n := replayDiffers(t, docs, lives, c.drop); n == 0 {
			t.Errorf("without %s every cycle replays the same: the fleet does not exercise it", c.part)
		}
	}
}

// replayDiffers plans each document, changed by drop, and counts the
// cycles whose decisions differ from the live ones.
func replayDiffers(t *testing.T, docs [][]byte, lives []string, drop func(*File)) int {
	t.Helper()
	n := 0
	for cycle, doc := range docs {
		parsed, err := ParseFile(doc)
		if err != nil {
			t.Fatalf("cycle %d: the replay file does not parse: %v\n%s", cycle, err, doc)
		}
		drop(parsed)
		replay, err := parsed.Plan()
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		if decisions(replay) != lives[cycle] {
			n++
		}
	}
	return n
}

func eachModel(fn func(*engine.CarriedModel)) func(*File) {
	return func(f *File) {
		for i := range f.State.Models {
			fn(&f.State.Models[i])
		}
	}
}

func eachVariant(fn func(*engine.CarriedVariant)) func(*File) {
	return eachModel(func(m *engine.CarriedModel) {
		for i := range m.Variants {
			fn(&m.Variants[i])
		}
	})
}

func decisions(p *engine.Plan) string {
	var b strings.Builder
	for _, d := range p.Variants {
		fmt.Fprintf(&b, "%s=%d(%s) ", d.Variant, d.Desired, d.Reason)
	}
	return b.String()
}

// TestReplayNotesNonFinite: a NaN metric is written as -1 with a note, the
// engine's snapshot is left as it was, and the file encodes as JSON.
func TestReplayNotesNonFinite(t *testing.T) {
	f := &fleet{current: map[string]int{"h100": 1, "a100": 2}, ready: map[string]int{"h100": 1, "a100": 2}}
	s := f.snapshot(22)
	file, err := Result{Snapshot: s}.Replay(engine.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	file.Finite()
	if _, err := json.Marshal(file); err != nil {
		t.Fatal(err)
	}
	if len(file.Notes) != 1 || !strings.Contains(file.Notes[0], "pod a100-0 of variant a100") || !strings.Contains(file.Notes[0], "kvCacheUsage") {
		t.Errorf("notes %q", file.Notes)
	}
	if !math.IsNaN(s.Models[0].Variants[1].Pods[0].KVCacheUsage) || file.Models[0].Variants[1].Pods[0].KVCacheUsage != -1 {
		t.Error("the NaN was not replaced in the file only")
	}
}

// TestReplayNotesNonFiniteHistogram: a histogram with a NaN count or a NaN
// bound cannot be written as JSON; the file holds, in its place, one the
// engine refuses as it refused the original (a count of -1), with a note,
// and replays the same decision. The +Inf bound of the last bucket is
// finite enough: it is written as "+Inf" and kept.
func TestReplayNotesNonFiniteHistogram(t *testing.T) {
	f := &fleet{current: map[string]int{"h100": 1, "a100": 2}, ready: map[string]int{"h100": 1, "a100": 2}}
	s := f.snapshot(22)
	s.Models[0].Variants[1].Pods[0].KVCacheUsage = 0.5
	good := []engine.Bucket{{UpperBound: 0.1, Count: 2}, {UpperBound: 0.5, Count: 3}, {UpperBound: math.Inf(1), Count: 4}}
	s.Models[0].Variants[0].Pods[0].TTFTBuckets = good
	s.Models[0].Variants[1].Pods[0].TTFTBuckets = []engine.Bucket{{UpperBound: 0.1, Count: 2}, {UpperBound: 0.5, Count: math.NaN()}, {UpperBound: math.Inf(1), Count: 4}}
	s.Models[0].Variants[1].Pods[1].TPOTBuckets = []engine.Bucket{{UpperBound: math.NaN(), Count: 1}, {UpperBound: math.Inf(1), Count: 4}}
	want, err := engine.New(nil).Plan(s)
	if err != nil {
		t.Fatal(err)
	}
	file, err := Result{Snapshot: s}.Replay(engine.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	file.Finite()
	doc, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Notes) != 2 || !strings.Contains(file.Notes[0], "ttftBuckets (a count or a bound)") || !strings.Contains(file.Notes[1], "tpotBuckets") {
		t.Errorf("notes %q", file.Notes)
	}
	if !math.IsNaN(s.Models[0].Variants[1].Pods[0].TTFTBuckets[1].Count) {
		t.Error("the engine's snapshot was changed")
	}
	back, err := ParseFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if h := back.Models[0].Variants[0].Pods[0].TTFTBuckets; len(h) != 3 || !math.IsInf(h[2].UpperBound, 1) {
		t.Errorf("a good histogram read back as %v", h)
	}
	got, err := back.Plan()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("feedback: replayed %q, live %q", got.Models[0].FeedbackNote, want.Models[0].FeedbackNote)
	if decisions(got) != decisions(want) || !strings.Contains(got.Models[0].FeedbackNote, "pod a100-0: TTFT histogram") ||
		!strings.Contains(want.Models[0].FeedbackNote, "pod a100-0: TTFT histogram") {
		t.Errorf("replayed %s (%q), want %s (%q)", decisions(got), got.Models[0].FeedbackNote, decisions(want), want.Models[0].FeedbackNote)
	}
}

// TestSplitJoin: one file per model, each with its own state, and back.
func TestSplitJoin(t *testing.T) {
	st := engine.Carried{Models: []engine.CarriedModel{{Namespace: "b", Model: "m"}, {Namespace: "a", Model: "m"}}}
	one := []engine.Variant{{Name: "v", Accelerator: "H100"}}
	f := &File{Snapshot: engine.Snapshot{Time: t0, Models: []engine.Model{{ID: "m", Namespace: "a", Variants: one}, {ID: "m", Namespace: "b", Variants: one}}},
		State: &st, Notes: []string{"n"}}
	parts := f.Split()
	if len(parts) != 2 || parts[1].Models[0].Namespace != "b" || parts[1].State.Models[0].Namespace != "b" || parts[0].Notes != nil {
		t.Fatalf("split: %+v", parts)
	}
	j := Join([]*File{parts[1], parts[0]})
	if len(j.Models) != 2 || j.Models[0].Namespace != "a" || j.State.Models[0].Namespace != "a" || j.State.Models[1].Namespace != "b" {
		t.Errorf("join: %+v %+v", j.Models, j.State)
	}
	if Join(nil) != nil {
		t.Error("Join of nothing")
	}
}

// TestParseFileErrors: the additions are checked, each problem named by
// its path.
func TestParseFileErrors(t *testing.T) {
	head := "time: 2026-11-22T10:00:00Z\nmodels:\n- {id: m, namespace: ns, variants: [{name: v, accelerator: H100}]}\n"
	for _, c := range []struct{ name, doc, want string }{
		{"an unknown key", head + "stat: {}\n", `unknown field "stat"`},
		{"state without time", strings.Replace(head, "time: 2026-11-22T10:00:00Z\n", "", 1) + "state: {models: []}\n", "time: must be set with state"},
		{"an unknown model", head + "state: {models: [{namespace: ns, model: x}]}\n", `state.models[0].model: names no model of models (x in namespace "ns")`},
		{"a duplicate model", head + "state: {models: [{namespace: ns, model: m}, {namespace: ns, model: m}]}\n", "state.models[1].model: duplicates state.models[0]"},
		{"an unknown variant", head + "state: {models: [{namespace: ns, model: m, variants: [{name: w}]}]}\n", `state.models[0].variants[0].name: names no variant of the model ("w")`},
		{"a negative last good", head + "state: {models: [{namespace: ns, model: m, variants: [{name: v, lastGood: -1}]}]}\n", "state.models[0].variants[0].lastGood: must be ≥ 0, got -1"},
		{"a recommendation without time", head + "state: {models: [{namespace: ns, model: m, variants: [{name: v, recommendations: [{replicas: 2}]}]}]}\n",
			"state.models[0].variants[0].recommendations[0].time: must be a time"},
		{"too many recommendations", head + "state: {models: [{namespace: ns, model: m, variants: [{name: v, recommendations: [" +
			strings.Repeat("{time: 2026-11-22T09:59:00Z, replicas: 2}, ", 301) + "]}]}]}\n",
			"state.models[0].variants[0].recommendations: must hold at most 300, got 301"},
		{"a negative variance", head + "state: {models: [{namespace: ns, model: m, forecast: {level: 1, variance: -1}}]}\n", "state.models[0].forecast.variance: must be a finite number ≥ 0"},
		{"a demonstrated load beyond the factor's cap", head + "state: {models: [{namespace: ns, model: m, feedback: {demonstrated: 2}}]}\n",
			"state.models[0].feedback.demonstrated: must be in [0, 1.5]"},
		{"a forecast without its time", head + "state: {models: [{namespace: ns, model: m, forecast: {level: 1, updates: 2}}]}\n", "state.models[0].forecast.last: must be the time"},
		{"an unusable learned record", head + "state: {models: [{namespace: ns, model: m, variants: [{name: v, learned: {ServiceModel: iteration, Strategy: robust, " +
			"Params: {Alpha: 6, Beta: 0.01, Gamma: 0.00003}, StateCovariance: [[1]]}}]}]}\n", "state.models[0].variants[0].learned: a tuner cannot resume from it: tuner: record covariance is 1×1, want 3×3"},
		{"bad tuner settings", head + "tuner: {PercentChange: -1}\n", "tuner: percent change must be a positive finite number, got -1"},
	} {
		_, err := ParseFile([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	ok := head + "tuner: {percentChange: 0.1}\nstate: {models: [{namespace: ns, model: m, lastTraffic: 2026-11-22T09:00:00Z, variants: [{name: v, lastGood: 3}]}]}\n"
	f, err := ParseFile([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Plan()
	if err != nil {
		t.Fatal(err)
	}
	// Keys match whatever their case (encoding/json's rule).
	if len(p.Variants) != 1 || f.Tuner.PercentChange != 0.1 {
		t.Errorf("plan %+v, tuner %+v", p.Variants, f.Tuner)
	}
}
