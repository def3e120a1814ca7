package admission

import (
	"math/rand/v2"
	"testing"
)

// gateway is the admission path of one model's gateway: 8 instances, a
// prefix index (blocks of 16 tokens, the endpoint picker's default
// capacity) warmed with 400 routed requests over 16 system prompts of 512
// tokens, and a predictive policy behind the fairness floor.
type gateway struct {
	index  *Index
	policy Policy
	fleet  []Instance
	hashes []uint64
	req    Request
	prompt []uint32
}

const benchBlock = 16

func newGateway(tb testing.TB) *gateway {
	rng := rand.New(rand.NewPCG(21, 1))
	x, err := NewIndex(0)
	if err != nil {
		tb.Fatal(err)
	}
	systems := make([][]uint32, 16)
	for i := range systems {
		systems[i] = prompt(rng, 512)
	}
	for range 400 {
		p := append(append([]uint32(nil), systems[rng.IntN(len(systems))]...), prompt(rng, 512)...)
		x.Record(rng.IntN(8), Hashes(p, benchBlock, nil))
	}
	fleet := make([]Instance, 8)
	for i := range fleet {
		fleet[i] = Instance{ID: i, StepTime: 0.015 + 0.002*float64(i), Running: 32, KVUtil: 0.6,
			Waiting: []Waiting{{Priority: 1, Count: i}, {Priority: 0, Count: 2 * i}, {Priority: -1, Count: 20}}}
	}
	p, err := NewPredictive(PredictiveConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	floor, err := NewFloor(p, FloorConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	// A 1 024-token request on system prompt 3.
	req := append(append([]uint32(nil), systems[3]...), prompt(rng, 512)...)
	return &gateway{index: x, policy: floor, fleet: fleet, hashes: make([]uint64, 0, 1024/benchBlock), prompt: req,
		req: Request{Class: Sheddable, Priority: -1, Group: 3, InputTokens: len(req)}}
}

// admit is one request's admission: hashes once, the index matched per
// instance, the decision.
func (g *gateway) admit(now float64) Decision {
	g.hashes = Hashes(g.prompt, benchBlock, g.hashes)
	for i := range g.fleet {
		g.fleet[i].Cached = g.index.Match(g.hashes, g.fleet[i].ID) * benchBlock
	}
	return g.policy.Decide(now, g.req, g.fleet)
}

// BenchmarkPredictiveDecision: one predictive decision for 8 instances and
// a 1 024-token request, hashing and matching included. Budget: 20 µs and
// 0 allocs/op (issue 15 §1; docs/admission.md gives the measured figures).
func BenchmarkPredictiveDecision(b *testing.B) {
	g := newGateway(b)
	b.ReportAllocs()
	now := 0.0
	for b.Loop() {
		now += 1e-3
		g.admit(now)
	}
}

// TestPredictiveDecisionAllocatesNothing holds the benchmark's path to its
// allocation budget (its time is measured, not tested: the machine is
// shared).
func TestPredictiveDecisionAllocatesNothing(t *testing.T) {
	g := newGateway(t)
	d := g.admit(0)
	if d.Instance < 0 || g.fleet[d.Instance].Cached < 512 {
		t.Fatalf("the request was decided on instance %d without its system prompt cached: %v", d.Instance, d)
	}
	now := 0.0
	if n := testing.AllocsPerRun(1000, func() { now += 1e-3; g.admit(now) }); n != 0 {
		t.Errorf("a decision allocates %v times", n)
	}
}

// BenchmarkHashes: the chained hashes of a 1 024-token prompt.
func BenchmarkHashes(b *testing.B) {
	tokens := prompt(rand.New(rand.NewPCG(22, 1)), 1024)
	dst := make([]uint64, 0, 64)
	b.ReportAllocs()
	b.SetBytes(4 * 1024)
	for b.Loop() {
		dst = Hashes(tokens, benchBlock, dst)
	}
}

// BenchmarkIndexRecord: recording a routed 1 024-token request in a full
// index (every Record evicts).
func BenchmarkIndexRecord(b *testing.B) {
	rng := rand.New(rand.NewPCG(23, 1))
	x, err := NewIndex(4096)
	if err != nil {
		b.Fatal(err)
	}
	chains := make([][]uint64, 256)
	for i := range chains {
		chains[i] = Hashes(prompt(rng, 1024), benchBlock, nil)
		x.Record(0, chains[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x.Record(0, chains[i%len(chains)])
		i++
	}
}

// BenchmarkCalibratorObserve: one observation.
func BenchmarkCalibratorObserve(b *testing.B) {
	rng := rand.New(rand.NewPCG(24, 1))
	c, err := NewCalibrator(CalibratorConfig{})
	if err != nil {
		b.Fatal(err)
	}
	obs := make([]Observation, 256)
	for i := range obs {
		obs[i] = observation(rng, trueCoef)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Observe(obs[i%len(obs)])
		i++
	}
}

// BenchmarkCalibratorObserveAtBound: one observation where the bounds
// bind — requests that take no time however many tokens miss — so that
// every update projects the fit onto them.
func BenchmarkCalibratorObserveAtBound(b *testing.B) {
	rng := rand.New(rand.NewPCG(25, 1))
	c, err := NewCalibrator(CalibratorConfig{})
	if err != nil {
		b.Fatal(err)
	}
	obs := make([]Observation, 256)
	for i := range obs {
		obs[i] = Observation{TTFT: 1e-3 * rng.Float64(), Miss: rng.IntN(100000), Ahead: rng.IntN(1000), StepTime: 0.01 + 0.02*rng.Float64()}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Observe(obs[i%len(obs)])
		i++
	}
}
