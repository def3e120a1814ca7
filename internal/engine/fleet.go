package engine

import (
	"fmt"
	"math"

	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/sim/server"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Capacity models (Config.CapacityModel).
const (
	CapacityQueueing = "queueing"
	CapacityFleet    = "fleet"
)

// FleetKey identifies a variant's capacity curve: its parameters and
// token means on a logarithmic grid (10 % steps: a curve is computed at the
// cell's centre and reused while the learned parameters wander within the
// cell; the queueing model carries the curve to the exact parameters, see
// fleetCapacity), its engine arguments, the SLO and the attainment.
type FleetKey struct {
	ServiceModel                         string
	Alpha, Beta, Gamma, Delta            int32
	Input, Output                        int32
	KVTokens, BlockSize, Batch, BatchTok int
	TTFTMs, ITLMs, P, TokenCV            float64
	// The queueing model's frame (fleetBase): its TTFT attainment and
	// queue size.
	QueueingAttainment float64
	MaxQueue           int
}

// CapacityModel is the engine's cache of fleet capacity curves.
type CapacityModel = capacity.Curves[FleetKey]

// Capacity-model defaults: the curves' search, the cache's size.
const (
	// fleetGrid is the key's relative step, for parameters and token means.
	fleetGrid = 0.1
	// maxFleetScale bounds how far the queueing model may carry a curve
	// from its cell's centre (a factor on the capacity); beyond it the
	// queueing model sizes the variant.
	maxFleetScale   = 1.5
	capacityEntries = 10_000
	// fleetBatchTokens is vLLM's --max-num-batched-tokens when neither the
	// variant nor its pods say (vLLM v1's default for online serving).
	fleetBatchTokens = 2048
	// fleetMaxTokens bounds a drawn prompt or output: 16 times the mean.
	fleetMaxTokens = 16
)

// NewCapacityModel returns a capacity model whose curves are computed by
// workers goroutines in the background (0: synchronously, during the
// cycle — deterministic, for simulations and tests). Its points are
// searched with 20 000 requests per run and 7 bisections: within a few
// per cent of the model's own answer at the 99th percentile
// (docs/queueing.md §7).
func NewCapacityModel(workers int) *CapacityModel {
	set := capacity.DefaultSettings()
	set.Requests, set.Bisections, set.MaxSeconds = 20_000, 7, 1e5
	return capacity.NewCurves[FleetKey](set, workers, capacityEntries)
}

// SetCapacityModel gives the engine its fleet capacity model (used when
// Config.CapacityModel is "fleet"); nil removes it.
func (e *Engine) SetCapacityModel(m *CapacityModel) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fleet = m
}

// grid is x on a logarithmic grid of relative step s (0 for x ≤ 0).
func grid(x, s float64) int32 {
	if !(x > 0) {
		return math.MinInt32
	}
	return int32(math.Round(math.Log(x) / math.Log1p(s)))
}

// ungrid is the grid point's value.
func ungrid(k int32, s float64) float64 {
	if k == math.MinInt32 {
		return 0
	}
	return math.Exp(float64(k) * math.Log1p(s))
}

// fleetSpec is a variant's curve key and the fleets it describes, from
// its parameters p, the model's token means and the variant's engine
// arguments; ok is false when the variant's KV cache is unknown.
func (c *cycle) fleetSpec(ms *modelState, vs *variantState, p *tuner.Params) (FleetKey, func(n int) *capacity.Fleet, bool) {
	kvBlocks, bs, batchTok := 0, 0, vs.v.MaxBatchTokens
	for _, pod := range vs.pods {
		if invalidCache(pod) == nil && pod.KVBlocks*pod.BlockSize > kvBlocks*max(bs, 1) {
			kvBlocks, bs = pod.KVBlocks, pod.BlockSize
		}
		if batchTok == 0 {
			batchTok = pod.MaxBatchTokens
		}
	}
	if kvBlocks == 0 {
		return FleetKey{}, nil, false
	}
	if batchTok <= 0 {
		batchTok = fleetBatchTokens
	}
	k := FleetKey{ServiceModel: vs.v.serviceModel(), Alpha: grid(p.Alpha, fleetGrid), Beta: grid(p.Beta, fleetGrid), Gamma: grid(p.Gamma, fleetGrid),
		Delta: grid(p.Delta, fleetGrid), Input: grid(ms.inTok, fleetGrid), Output: grid(math.Max(ms.outTok, 1), fleetGrid),
		KVTokens: kvBlocks * bs, BlockSize: bs, Batch: c.maxBatch(vs, 0), BatchTok: batchTok,
		TTFTMs: ms.sum.SLOTTFTMs, ITLMs: ms.sum.SLOITLMs, P: ms.attainment, TokenCV: c.cfg.TokenCV,
		QueueingAttainment: ms.slo.TTFTAttainment, MaxQueue: c.cfg.MaxQueueSize}
	q := k.params()
	cfg := serverOf(q, kvBlocks, bs, k.Batch, batchTok)
	if k.ServiceModel == tuner.ModelLinear {
		cfg = linearServerOf(q, kvBlocks, bs, k.Batch, batchTok)
	}
	in, out := ungrid(k.Input, fleetGrid), ungrid(k.Output, fleetGrid)
	w := &capacity.Lognormal{InputMean: in, InputCV: k.TokenCV, OutputMean: out, OutputCV: k.TokenCV,
		MaxInput: int(math.Ceil(in * fleetMaxTokens)), MaxOutput: int(math.Ceil(out * fleetMaxTokens)), TTFTMs: k.TTFTMs, ITLMs: k.ITLMs}
	ttft, itl := k.TTFTMs, k.ITLMs
	if ttft <= 0 {
		w.TTFTMs = math.Inf(1)
	}
	if itl <= 0 {
		w.ITLMs = math.Inf(1)
	}
	fleet := func(n int) *capacity.Fleet {
		return &capacity.Fleet{Server: cfg, Replicas: n, Router: capacity.DefaultRouter(), Workload: w}
	}
	return k, fleet, true
}

// params are the parameters at the centre of the key's cell.
func (k FleetKey) params() tuner.Params {
	return tuner.Params{Alpha: ungrid(k.Alpha, fleetGrid), Beta: ungrid(k.Beta, fleetGrid), Gamma: ungrid(k.Gamma, fleetGrid),
		Delta: ungrid(k.Delta, fleetGrid)}
}

// fleetBase is the queueing model's capacity per replica at the centre of
// the key's cell (its parameters and token means), remembered per key:
// the curve's frame of reference.
func (c *cycle) fleetBase(ms *modelState, vs *variantState, k FleetKey) (float64, error) {
	c.e.baseMu.Lock()
	b, ok := c.e.fleetBase[k]
	c.e.baseMu.Unlock()
	if ok {
		return b, nil
	}
	p := k.params()
	a, err := queueing.NewAnalyzer(c.analyzerConfigAt(vs, &p, ungrid(k.Input, fleetGrid), ungrid(k.Output, fleetGrid)))
	if err != nil {
		return 0, err
	}
	sz, err := a.Size(ms.slo)
	if err != nil {
		return 0, err
	}
	c.e.baseMu.Lock()
	if len(c.e.fleetBase) >= capacityEntries {
		clear(c.e.fleetBase)
	}
	c.e.fleetBase[k] = sz.CapacityRPS
	c.e.baseMu.Unlock()
	return sz.CapacityRPS, nil
}

// serverOf is the server model of a variant with iteration-model
// parameters p and the given engine arguments.
func serverOf(p tuner.Params, kvBlocks, blockSize, batch, batchTokens int) server.Config {
	return server.Config{KVBlocks: kvBlocks, BlockSize: blockSize, MaxBatchSize: batch, MaxBatchedTokens: batchTokens,
		Iteration: server.IterationModel{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma}}
}

// linearServerOf is the server model of a variant with the queueing
// package's linear parameters — a decode step of n requests α + β·n, a
// prefill γ + δ·i·n — as the server's step model: β0 = α for the step's
// fixed cost (γ is the same cost as a prefill sees it), β1 = δ per prefill
// token, β2 = β per decode.
func linearServerOf(p tuner.Params, kvBlocks, blockSize, batch, batchTokens int) server.Config {
	return server.Config{KVBlocks: kvBlocks, BlockSize: blockSize, MaxBatchSize: batch, MaxBatchedTokens: batchTokens,
		LatencyModel: server.LatencyLinear, Linear: server.LinearModel{Beta0: p.Alpha, Beta1: p.Delta, Beta2: p.Beta}}
}

// fleetCapacity sizes the model's variants with the fleet capacity model
// (Config.CapacityModel "fleet"), once the queueing model sized them and
// the forecast set the demand: the fewest replicas of each variant alone
// whose capacity covers the demand, and their capacity per replica at that
// size — the allocator's linear view of a curve that pools, taken where it
// will be used. The curve is the one at the centre of the parameters'
// grid cell, carried to the exact parameters by the queueing model's ratio
// s = capacity(exact) / capacity(centre): the variant's capacity at n
// replicas is s·curve(n) (a first-order correction within the cell; a
// ratio beyond maxFleetScale leaves the sizing to the queueing model). A
// variant whose curve is not known yet keeps the queueing model's capacity
// (detail.CapacityModel says which sized it).
func (c *cycle) fleetCapacity(ms *modelState) {
	if c.cfg.CapacityModel != CapacityFleet || c.e.fleet == nil || ms.demand == 0 {
		return
	}
	demand := ms.demandOf()
	for _, vs := range ms.variants {
		d := vs.detail
		if d == nil || d.Error != "" || d.Params == nil || vs.capacity <= 0 {
			continue
		}
		d.CapacityModel = CapacityQueueing
		n, rate, note := c.fleetSize(ms, vs, demand)
		if note != "" {
			d.FleetNote = note
			continue
		}
		d.CapacityModel, vs.capacity = CapacityFleet, rate/float64(n)
		d.CapacityPerReplicaRPS, d.FleetReplicas, d.FleetRateRPS = vs.capacity, n, rate
		d.SupplyRPS = float64(vs.v.ReadyReplicas) * vs.capacity
	}
}

// fleetSize is the fewest replicas of the variant whose capacity (its
// curve, carried to its exact parameters) covers demand, with that
// capacity; or, when the fleet model cannot size it, why.
func (c *cycle) fleetSize(ms *modelState, vs *variantState, demand float64) (n int, rate float64, note string) {
	key, fleet, ok := c.fleetSpec(ms, vs, vs.detail.Params)
	if !ok {
		return 0, 0, "the KV cache's size is unknown"
	}
	base, err := c.fleetBase(ms, vs, key)
	if err != nil || !(base > 0) {
		return 0, 0, fmt.Sprintf("fleet model: the queueing model cannot size the grid cell's centre (%v)", err)
	}
	scale := vs.capacity / base
	if scale > maxFleetScale || scale < 1/maxFleetScale {
		return 0, 0, fmt.Sprintf("fleet model: the grid cell's centre sizes %.3g requests/s per replica against %.3g", base, vs.capacity)
	}
	maxN := vs.v.MaxReplicas
	if maxN <= 0 {
		maxN = capacity.MaxReplicas
	}
	n, rate, known, err := c.e.fleet.Fewest(key, fleet, ms.attainment, demand/scale, maxN)
	switch {
	case err != nil:
		return 0, 0, "fleet model: " + err.Error()
	case !known:
		return 0, 0, "fleet model: computing the capacity curve"
	case rate <= 0:
		// Out of reach even for one replica at the lightest load: the
		// queueing model's sizing stands (docs/queueing.md §7).
		return 0, 0, "fleet model: no rate meets the attainment; sized by the queueing model"
	}
	return n, rate * scale, ""
}
