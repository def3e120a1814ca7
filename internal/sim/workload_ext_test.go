package sim_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim"
	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestTraceRoundTrip: replaying the trace WriteTrace records of a
// synthetic workload (with classes and prefixes) gives the very same run.
func TestTraceRoundTrip(t *testing.T) {
	sc := simtest.Builtin(t, "bursty", 900)
	w := &sc.Models[0].Workload
	w.Classes = []scenario.Class{
		{Name: "chat", Share: 0.7, SLO: sc.Models[0].SLO},
		{Name: "batch", Share: 0.3, SLO: scenario.SLO{TTFTMs: 30000, ITLMs: 200}, Sheddable: true},
	}
	w.PrefixGroups, w.PrefixTokens = 5, 512
	sc.Gateway.QueueThreshold = 6
	var buf strings.Builder
	if err := sim.WriteTrace(&buf, sc, 0); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "bursty.csv")
	if err := os.WriteFile(p, []byte(buf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := scenario.ReadTrace(p)
	if err != nil {
		t.Fatal(err)
	}
	replay := sc
	replay.Models = append([]scenario.Model(nil), sc.Models...)
	rw := &replay.Models[0].Workload
	rw.Trace = "bursty.csv"
	if err := scenario.UseTrace(rw, rows); err != nil {
		t.Fatal(err)
	}
	var out [2][]byte
	for i, s := range []scenario.Scenario{sc, replay} {
		rs, err := sim.Compare(context.Background(), s, []string{"hpa"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = sim.ResultsJSON(t, rs...)
		if i == 0 && (rs[0].Arrived != int64(len(rows)) || rs[0].Failed == 0 || rs[0].PrefixHits == 0) {
			t.Fatalf("synthetic run: %d arrived, %d rows, %d failed, %d prefix hits", rs[0].Arrived, len(rows), rs[0].Failed, rs[0].PrefixHits)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("the replayed trace gives a different run from the synthetic workload")
	}
	if err := sim.WriteTrace(&buf, sc, 3); err == nil {
		t.Error("wrote a trace of a model the scenario lacks")
	}
}

// TestShippedTrace: examples/traces/chat.csv is what its generator
// scenario writes, and replaying it under WVA gives the generator's run.
func TestShippedTrace(t *testing.T) {
	gen, err := scenario.LoadFile("../../examples/traces/chat-synthetic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := sim.WriteTrace(&buf, gen, 0); err != nil {
		t.Fatal(err)
	}
	if string(sim.MustRead(t, "../../examples/traces/chat.csv")) != buf.String() {
		t.Fatal("examples/traces/chat.csv is out of date: regenerate it as chat-synthetic.yaml says")
	}
	replay, err := scenario.LoadFile("../../examples/traces/chat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rs [2]*sim.Result
	for i, sc := range []scenario.Scenario{gen, replay} {
		out, err := sim.Compare(context.Background(), sc, []string{"wva"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = out[0]
	}
	a, b := rs[0], rs[1]
	if a.Arrived != b.Arrived || a.WithinSLO != b.WithinSLO || a.Cost != b.Cost || a.ScalingActions != b.ScalingActions {
		t.Errorf("replay differs: arrived %d/%d, within SLO %d/%d, cost %v/%v, actions %d/%d",
			a.Arrived, b.Arrived, a.WithinSLO, b.WithinSLO, a.Cost, b.Cost, a.ScalingActions, b.ScalingActions)
	}
}
