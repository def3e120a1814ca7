package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/capacity"
)

// fleet builds models × variants × pods with random load, profiled
// parameters and explicit SLOs.
func fleet(models, variants, pods int, accTypes int, seed uint64) *Snapshot {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &Snapshot{Time: t0, Mode: ModeHybrid, Inventory: map[string]int{}}
	for a := range accTypes {
		s.Inventory[fmt.Sprintf("acc-%d", a)] = models * variants / accTypes * 3
	}
	for m := range models {
		mod := Model{ID: fmt.Sprintf("model-%d", m), Namespace: "bench", SLO: &SLO{TTFTMs: 500, ITLMs: 30}, Priority: 1 + rng.IntN(3)}
		for v := range variants {
			va := Variant{Name: fmt.Sprintf("m%d-v%d", m, v), Accelerator: fmt.Sprintf("acc-%d", rng.IntN(accTypes)),
				Cost: float64(5 + rng.IntN(40)), CurrentReplicas: pods, ReadyReplicas: pods,
				Params: &h100Params, MaxBatchSize: 128 + 64*rng.IntN(3)}
			for p := range pods {
				va.Pods = append(va.Pods, Pod{Name: fmt.Sprintf("p%d", p), ArrivalRateRPS: 1 + 10*rng.Float64(),
					AvgInputTokens: 500 + 1000*rng.Float64(), AvgOutputTokens: 100 + 300*rng.Float64(),
					AvgTTFTMs: 40, AvgITLMs: 15, KVCacheUsage: 0.8 * rng.Float64(), WaitingRequests: float64(rng.IntN(5))})
			}
			mod.Variants = append(mod.Variants, va)
		}
		s.Models = append(s.Models, mod)
	}
	return s
}

// BenchmarkCycleUnlimited: one hybrid cycle over 1 000 models × 4 variants
// × 8 pods (budget: 50 ms).
func BenchmarkCycleUnlimited(b *testing.B) {
	s := fleet(1000, 4, 8, 4, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(nil).Plan(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycleLimited: one model-only cycle in limited mode over 2 500
// models × 4 variants (10 000 variants) on 20 accelerator types (budget:
// 200 ms).
func BenchmarkCycleLimited(b *testing.B) {
	s := fleet(2500, 4, 1, 20, 2)
	s.Mode, s.Optimizer = ModeModelOnly, OptimizerLimited
	s.Config.SaturationPolicy = "PriorityRoundRobin"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(nil).Plan(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycleUnlimitedSteady is the same cycle on an engine that ran it
// before: the sizing searches start from the previous answers.
func BenchmarkCycleUnlimitedSteady(b *testing.B) {
	s := fleet(1000, 4, 8, 4, 1)
	e := New(nil)
	if _, err := e.Plan(s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Plan(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycleForecastAttainment is the steady cycle with the issue's
// full sizing on: each cycle 30 s after the last (so every model's
// arrival-rate forecaster updates and the spare is sized for its 0.95
// quantile over the provisioning horizon) and replicas sized for 99 %
// TTFT attainment instead of the mean (budget: 50 ms).
func BenchmarkCycleForecastAttainment(b *testing.B) {
	s := fleet(1000, 4, 8, 4, 1)
	s.Config.TTFTAttainment = 0.99
	benchAdvancing(b, New(nil), s, 3)
}

// benchAdvancing plans s on one engine, each cycle 30 s after the last:
// warm cycles first, then the measured ones.
func benchAdvancing(b *testing.B, e *Engine, s *Snapshot, warm int) {
	plan := func() {
		if _, err := e.Plan(s); err != nil {
			b.Fatal(err)
		}
		s.Time = s.Time.Add(30 * time.Second)
	}
	for range warm {
		plan()
	}
	b.ReportAllocs()
	for b.Loop() {
		plan()
	}
}

// BenchmarkCycleFleetFirst is a first cycle with the fleet capacity model
// in use over 1 000 models × 4 variants × 8 pods: every curve is unknown,
// so each variant's points are queued and the queueing model sizes it
// (budget: 100 ms).
func BenchmarkCycleFleetFirst(b *testing.B) {
	s := fleetBench()
	b.ReportAllocs()
	for b.Loop() {
		e := New(nil)
		cm := capacity.NewCurves[FleetKey](capacity.DefaultSettings(), -1, capacityEntries)
		e.SetCapacityModel(cm)
		if _, err := e.Plan(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycleFleetSteady is the same cycle once every curve point it
// needs is known: each variant sized by the fleet model from the cache
// (budget: 50 ms). The points are preset (their values do not change the
// cycle's work), not computed: 4 000 curves take hours of CPU.
func BenchmarkCycleFleetSteady(b *testing.B) {
	s := fleetBench()
	e := New(nil)
	cm := capacity.NewCurves[FleetKey](capacity.DefaultSettings(), -1, capacityEntries)
	e.SetCapacityModel(cm)
	for range 64 {
		if _, err := e.Plan(s); err != nil {
			b.Fatal(err)
		}
		missing := cm.Missing()
		if len(missing) == 0 {
			break
		}
		for _, p := range missing {
			cm.Preset(p.Key, nil, 0.99, p.N, 4*float64(p.N))
		}
	}
	if len(cm.Missing()) != 0 {
		b.Fatal("points still missing")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Plan(s); err != nil {
			b.Fatal(err)
		}
	}
}

// fleetBench is the 1 000 × 4 × 8 fleet with known KV caches and the
// fleet capacity model on.
func fleetBench() *Snapshot {
	s := fleet(1000, 4, 8, 4, 1)
	for m := range s.Models {
		for v := range s.Models[m].Variants {
			for p := range s.Models[m].Variants[v].Pods {
				pod := &s.Models[m].Variants[v].Pods[p]
				pod.KVBlocks, pod.BlockSize = 8192, 16
			}
		}
	}
	s.Config.CapacityModel = CapacityFleet
	return s
}

// BenchmarkCycleTuning is the steady cycle with online learning on and no
// profiles (the controller's default): tuners rebuilt from their records,
// stepped on their pods' observations, stored, and the learned parameters
// sizing every variant; 40 cycles first with every tuner stepping, so
// that all are past their warm-up, each cycle 30 s after the last. Then
// the default tuning budget (500 of the 4 000 variants step a cycle) is
// in force.
func BenchmarkCycleTuning(b *testing.B) { benchTuning(b, 0) }

// BenchmarkCycleTuningEveryVariant is BenchmarkCycleTuning with every
// tuner stepping every cycle (no budget).
func BenchmarkCycleTuningEveryVariant(b *testing.B) { benchTuning(b, MaxTunerBudget) }

func benchTuning(b *testing.B, budget int) {
	s := fleet(1000, 4, 8, 4, 1)
	s.Config.TuningEnabled = true
	for m := range s.Models {
		for v := range s.Models[m].Variants {
			s.Models[m].Variants[v].Params = nil
		}
	}
	s.Config.TunerBudget = MaxTunerBudget
	e := New(nil)
	for range 40 {
		if _, err := e.Plan(s); err != nil {
			b.Fatal(err)
		}
		s.Time = s.Time.Add(30 * time.Second)
	}
	s.Config.TunerBudget = budget
	benchAdvancing(b, e, s, 0)
}
