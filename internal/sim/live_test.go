package sim

import (
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

func liveScenario() scenario.Scenario {
	return scenario.Scenario{Name: "live", DurationSeconds: 3600, Seed: 3, Models: []scenario.Model{{
		Name: "m", SLO: scenario.SLO{TTFTMs: 1000, ITLMs: 100},
		Workload: scenario.Workload{Rate: scenario.Rate{Pattern: "constant", RPS: 4}, Input: scenario.Tokens{Mean: 256}, Output: scenario.Tokens{Mean: 64}},
		Variants: []scenario.Variant{{Name: "a", Accelerator: "H100", Params: tuner.Params{Alpha: 6, Beta: 0.03, Gamma: 0.0001},
			StartupSeconds: 30, StartupJitterSeconds: 0.001}},
	}}}
}

// liveTally counts a live run's observations.
type liveTally struct {
	firsts, finished int
	ttft, itlSum     float64
}

func (c *liveTally) observe(o Observation) {
	switch o.Kind {
	case FirstToken:
		c.firsts++
		c.ttft += o.TTFTSeconds
	case Finished:
		c.finished++
		c.itlSum += o.ITLSeconds * float64(o.OutputTokens-1)
	}
}

// sumStats adds the counters of replicas and returns the last one's stats.
func sumStats(t *testing.T, l *Live, reps []LiveReplica) (sum, last ReplicaStats) {
	t.Helper()
	for _, r := range reps {
		st, ok := l.Stats(r.ID)
		if !ok {
			t.Fatal("stats of a live replica missing")
		}
		sum.Completed += st.Completed
		sum.GenerationTokens += st.GenerationTokens
		last = st
	}
	return sum, last
}

// TestLiveServesAndConserves: replicas set from outside start after their
// start-up time, serve the workload, and every completion is observed once
// with latencies that add up to the replicas' counters.
func TestLiveServesAndConserves(t *testing.T) {
	var tally liveTally
	l, err := NewLive(liveScenario(), tally.observe)
	if err != nil {
		t.Fatal(err)
	}
	l.Scale(0, 2)
	l.AdvanceTo(20)
	for _, r := range l.Replicas(0) {
		if r.Ready {
			t.Fatalf("replica %d ready before its start-up time", r.ID)
		}
	}
	if w := l.GatewayWaiting(0); w == 0 {
		t.Error("no request held at the gateway without ready replicas")
	}
	l.AdvanceTo(600)
	reps := l.Replicas(0)
	if len(reps) != 2 || !reps[0].Ready || !reps[1].Ready {
		t.Fatalf("replicas: %+v", reps)
	}
	checkTally(t, &tally, l, reps)
}

// checkTally compares the observations with the replicas' counters.
func checkTally(t *testing.T, tally *liveTally, l *Live, reps []LiveReplica) {
	t.Helper()
	c, ts := sumStats(t, l, reps)
	n := tally.finished
	if int(c.Completed) != n || n < 2000 || tally.firsts < n {
		t.Errorf("completed %v, observed %d finished and %d first tokens", c.Completed, n, tally.firsts)
	}
	if ts.KVBlocks == 0 || ts.BlockSize != 16 {
		t.Errorf("cache geometry %d × %d", ts.KVBlocks, ts.BlockSize)
	}
	if got := c.GenerationTokens; got != float64(64*n) {
		t.Errorf("generation tokens %v for %d requests", got, n)
	}
	if m := tally.itlSum / float64(63*n); !(m > 0.006 && m < 0.1) || !(tally.ttft > 0) {
		t.Errorf("mean ITL %v s, TTFT sum %v", m, tally.ttft)
	}
}

// TestLiveScaleDownHonoursDeletionCost: the replica with the lowest
// pod-deletion-cost goes first.
func TestLiveScaleDownHonoursDeletionCost(t *testing.T) {
	l, err := NewLive(liveScenario(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Scale(0, 3)
	l.AdvanceTo(100)
	reps := l.Replicas(0)
	keep := map[int]bool{reps[0].ID: true, reps[2].ID: true}
	for _, r := range reps {
		if !l.SetDeletionCost(r.ID, 10) {
			t.Fatal("SetDeletionCost on a live replica")
		}
	}
	l.SetDeletionCost(reps[1].ID, -5)
	l.Scale(0, 2)
	l.AdvanceTo(101)
	after := l.Replicas(0)
	if len(after) != 2 || !keep[after[0].ID] || !keep[after[1].ID] {
		t.Fatalf("after scale-down: %+v, want %v kept", after, keep)
	}
	if _, ok := l.Stats(reps[1].ID); ok {
		t.Error("the deleted replica still has stats")
	}
}

// TestLiveOutOfRotation: a replica out of the gateway's rotation gets no
// new request but finishes what it holds; put back, it serves again.
func TestLiveOutOfRotation(t *testing.T) {
	l, err := NewLive(liveScenario(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Scale(0, 2)
	l.AdvanceTo(100)
	reps := l.Replicas(0)
	out := reps[1].ID
	if !l.SetInRotation(out, false) {
		t.Fatal("SetInRotation on a live replica")
	}
	before, _ := l.Stats(out)
	l.AdvanceTo(400)
	after, _ := l.Stats(out)
	if after.Arrived != before.Arrived {
		t.Errorf("out of rotation, the replica got %v new request(s)", after.Arrived-before.Arrived)
	}
	if after.Running != 0 || after.Waiting != 0 || after.Completed < before.Arrived-1 {
		t.Errorf("out of rotation, the replica did not finish what it held: before %+v, after %+v", before, after)
	}
	if r := l.Replicas(0)[1]; !r.OutOfRotation {
		t.Errorf("replica %+v not reported out of rotation", r)
	}
	l.SetInRotation(out, true)
	l.AdvanceTo(700)
	if again, _ := l.Stats(out); again.Arrived <= after.Arrived {
		t.Error("back in rotation, the replica got no request")
	}
}
