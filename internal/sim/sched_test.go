package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// runOrder replays rows on one replica with the scheduling policy and
// returns the request ids in the order they completed, and each outcome.
func runOrder(t *testing.T, v scenario.Variant, policy string, rows []scenario.TraceRow) ([]int64, map[int64]outcome, *Result) {
	t.Helper()
	v.SchedulingPolicy = policy
	var order []int64
	res, got := runRows(t, v, rows, nil, threeClasses)
	for id := range got {
		order = append(order, id)
	}
	done := func(id int64) float64 { return 1000*rows[id-1].Time + got[id].e2e + float64(id)*1e-9 }
	sort.Slice(order, func(i, j int) bool { return done(order[i]) < done(order[j]) })
	return order, got, res
}

// TestPriorityFCFSOrder: four requests reach a server that runs one at a
// time (max batch 1) at the same instant: sheddable (1), standard (2),
// critical (3), critical (4). fcfs serves them in arrival order;
// priority-fcfs by priority, then arrival: 3, 4, 2, 1.
func TestPriorityFCFSOrder(t *testing.T) {
	v := simtest.LinearVariant()
	v.MaxBatchSize = 1
	rows := []scenario.TraceRow{classRow(0, 100, 3, "sheddable", -1), classRow(0, 100, 3, "standard", -1),
		classRow(0, 100, 3, "critical", -1), classRow(0, 100, 3, "critical", -1)}
	for _, tc := range []struct {
		policy string
		want   []int64
	}{{"", []int64{1, 2, 3, 4}}, {server.PolicyFCFS, []int64{1, 2, 3, 4}}, {server.PolicyPriority, []int64{3, 4, 2, 1}}} {
		if got, _, _ := runOrder(t, v, tc.policy, rows); !slices.Equal(got, tc.want) {
			t.Errorf("%q: completion order %v, want %v", tc.policy, got, tc.want)
		}
	}
}

// TestPriorityDoesNotPreemptRunning: a critical request that arrives while
// a sheddable one runs (max batch 1) waits for it to finish, as in vLLM's
// v1 scheduler: it overtakes waiting requests, not running ones.
func TestPriorityDoesNotPreemptRunning(t *testing.T) {
	v := simtest.LinearVariant()
	v.MaxBatchSize = 1
	rows := []scenario.TraceRow{classRow(0, 100, 10, "sheddable", -1), classRow(0.005, 100, 10, "standard", -1),
		classRow(0.02, 100, 10, "critical", -1)}
	order, got, res := runOrder(t, v, server.PolicyPriority, rows)
	if res.Preemptions != 0 || !slices.Equal(order, []int64{1, 3, 2}) {
		t.Fatalf("order %v, %d preemptions", order, res.Preemptions)
	}
	// The sheddable request: 11 ms of prefill and 9 decodes of 10.5 ms.
	simtest.Near(t, "sheddable E2E", got[1].e2e, 11+9*10.5)
	simtest.Near(t, "critical TTFT", got[3].ttft, 11+9*10.5-20+11)
}

// TestPriorityPreemptionVictim: the KV cache of TestPreemptionAndRecompute
// (16 blocks) and its two requests, the first sheddable and the second
// critical. fcfs preempts the tail of the batch, the critical one;
// priority-fcfs the running request of the lowest priority, the sheddable
// one, although it is the head of the batch (vLLM's max(running,
// key=(priority, arrival))), so the critical one runs through.
func TestPriorityPreemptionVictim(t *testing.T) {
	v := simtest.LinearVariant()
	v.KVBlocks = 16
	rows := []scenario.TraceRow{classRow(0, 96, 40, "sheddable", -1), classRow(0, 96, 100, "critical", -1)}
	_, fcfs, res := runOrder(t, v, server.PolicyFCFS, rows)
	if res.Preemptions != 1 {
		t.Fatalf("fcfs: %d preemptions", res.Preemptions)
	}
	_, prio, res := runOrder(t, v, server.PolicyPriority, rows)
	if res.Preemptions < 1 {
		t.Fatalf("priority-fcfs: %d preemptions", res.Preemptions)
	}
	if !(prio[2].e2e < fcfs[2].e2e && prio[1].e2e > fcfs[1].e2e) {
		t.Errorf("critical E2E %v (fcfs %v), sheddable %v (fcfs %v)", prio[2].e2e, fcfs[2].e2e, prio[1].e2e, fcfs[1].e2e)
	}
	// The critical request decodes without a break: 99 decodes after its
	// prefill, each of at most 11 ms (with the other's decode or chunk).
	if prio[2].e2e > 11.92+99*12 {
		t.Errorf("critical E2E %v ms: it was held up", prio[2].e2e)
	}
}

// TestWaitCounts: a replica's waiting requests by priority add up to its
// queue after every event of a busy priority-fcfs run.
func TestWaitCounts(t *testing.T) {
	sc := simtest.Builtin(t, "admission-matrix", 10)
	sc.Models[0].Workload.Rate.RPS = 1100
	sc.Models[0].Variants[0].SchedulingPolicy = server.PolicyPriority
	sc.Models[0].Variants[0].KVBlocks = 3000
	s := New(sc, &Static{n: 8})
	checked := 0
	s.check = func(s *Sim, _ *event) {
		for _, r := range s.variants[0].replicas {
			if err := r.CheckWaiting(); err != nil {
				t.Fatalf("replica %d: %v", r.id, err)
			}
			checked += r.QueueLen()
		}
	}
	res := s.Run(context.Background(), nil)
	if res.Preemptions == 0 || checked == 0 {
		t.Errorf("%d preemptions, %d queued requests checked: the run was not busy", res.Preemptions, checked)
	}
}

// TestBootstrapQuantiles: the intervals drawn from the order statistics
// agree with a naive resampling bootstrap; they cover the estimate; a
// constant sample has a point interval; the same seed gives the same
// interval.
func TestBootstrapQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sample := make([]float64, 400)
	for i := range sample {
		sample[i] = math.Exp(rng.NormFloat64())
	}
	sort.Float64s(sample)
	got := BootstrapQuantiles(sample, []float64{0.5, 0.99}, 1, rand.New(rand.NewPCG(7, 7)))
	for k, p := range []float64{0.5, 0.99} {
		naive := make([]float64, 20000)
		re := make([]float64, len(sample))
		for b := range naive {
			for i := range re {
				re[i] = sample[rng.IntN(len(sample))]
			}
			sort.Float64s(re)
			naive[b] = QuantileSorted(re, p)
		}
		sort.Float64s(naive)
		lo, hi := QuantileSorted(naive, 0.025), QuantileSorted(naive, 0.975)
		width := hi - lo
		if math.Abs(got[k].Low-lo) > 0.15*width || math.Abs(got[k].High-hi) > 0.15*width {
			t.Errorf("p%v: interval [%v, %v], naive resampling [%v, %v]", 100*p, got[k].Low, got[k].High, lo, hi)
		}
		if !(got[k].Low <= got[k].Value && got[k].Value <= got[k].High) || got[k].Value != QuantileSorted(sample, p) {
			t.Errorf("p%v: %+v", 100*p, got[k])
		}
	}
	again := BootstrapQuantiles(sample, []float64{0.5, 0.99}, 1, rand.New(rand.NewPCG(7, 7)))
	if !slices.Equal(got, again) {
		t.Errorf("same seed: %v, then %v", got, again)
	}
	flat := BootstrapQuantiles([]float64{3, 3, 3}, []float64{0.99}, 1000, rand.New(rand.NewPCG(1, 1)))
	if flat[0] != (Interval{3000, 3000, 3000}) {
		t.Errorf("constant sample: %+v", flat[0])
	}
}
