package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// variantB builds a Variant for tests.
type variantB struct{ v Variant }

func variant(name, acc string) *variantB {
	return &variantB{v: Variant{Name: name, Accelerator: acc, Cost: 10}}
}

func (b *variantB) cost(c float64) *variantB { b.v.Cost = c; return b }
func (b *variantB) minMax(lo, hi int) *variantB {
	b.v.MinReplicas, b.v.MaxReplicas = &lo, hi
	return b
}
func (b *variantB) replicas(current, ready int) *variantB {
	b.v.CurrentReplicas, b.v.ReadyReplicas = current, ready
	return b
}
func (b *variantB) params(p tuner.Params) *variantB { b.v.Params = &p; return b }

// pods adds one pod per (kv, queue) pair, marks them ready and counts them
// as the variant's replicas unless replicas() said otherwise.
func (b *variantB) pods(kvQueue ...float64) *variantB {
	for i := 0; i+1 < len(kvQueue); i += 2 {
		b.v.Pods = append(b.v.Pods, Pod{Name: fmt.Sprintf("%s-%d", b.v.Name, len(b.v.Pods)), KVCacheUsage: kvQueue[i], WaitingRequests: kvQueue[i+1]})
	}
	if b.v.CurrentReplicas < len(b.v.Pods) {
		b.v.CurrentReplicas, b.v.ReadyReplicas = len(b.v.Pods), len(b.v.Pods)
	}
	return b
}

// traffic sets every pod's arrival rate, tokens and latencies.
func (b *variantB) traffic(rate, in, out, ttft, itl float64) *variantB {
	for i := range b.v.Pods {
		p := &b.v.Pods[i]
		p.ArrivalRateRPS, p.AvgInputTokens, p.AvgOutputTokens, p.AvgTTFTMs, p.AvgITLMs = rate, in, out, ttft, itl
	}
	return b
}

func (b *variantB) build() Variant { return b.v }

func snapshot(mode Mode, variants ...*variantB) *Snapshot {
	m := Model{ID: "llama", Namespace: "prod"}
	for _, v := range variants {
		m.Variants = append(m.Variants, v.build())
	}
	return &Snapshot{Time: t0, Mode: mode, Models: []Model{m}}
}

func plan(t *testing.T, e *Engine, s *Snapshot) *Plan {
	t.Helper()
	if e == nil {
		e = New(nil)
	}
	p, err := e.Plan(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decision(t *testing.T, p *Plan, name string) VariantDecision {
	t.Helper()
	for _, d := range p.Variants {
		if d.Variant == name {
			return d
		}
	}
	t.Fatalf("no decision for %s in %+v", name, p.Variants)
	return VariantDecision{}
}

func timeMinutes(i int) time.Duration { return time.Duration(i) * time.Minute }

// testParams are the drain and release tests' server parameters.
var testParams = tuner.Params{Alpha: 6, Beta: 0.02, Gamma: 0.0005}

// testAnalyzer sizes testParams at 512 input and 128 output tokens, as
// the engine does by default.
func testAnalyzer(t *testing.T) *queueing.Analyzer {
	t.Helper()
	a, err := queueing.NewAnalyzer(queueing.Config{Model: queueing.Iteration{Alpha: testParams.Alpha, Beta: testParams.Beta, Gamma: testParams.Gamma},
		Workload: queueing.Workload{InputTokens: 512, OutputTokens: 128}, MaxBatchSize: DefaultMaxBatchSize, MaxQueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
