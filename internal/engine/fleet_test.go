package engine

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/capacity"
	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// fleetSnapshot: one variant with a known KV cache (8 192 blocks of 16
// tokens), 2 pods at 6 requests/s each, explicit SLO, model-only mode,
// no forecast: the demand is 12 requests/s.
func fleetSnapshot() *Snapshot {
	v := variant("h100", "H100").params(h100Params).minMax(1, 64).pods(0.3, 0, 0.3, 0).traffic(6, 1024, 256, 40, 15)
	for i := range v.v.Pods {
		v.v.Pods[i].KVBlocks, v.v.Pods[i].BlockSize = 8192, 16
	}
	s := snapshot(ModeModelOnly, v)
	s.Models[0].SLO = &SLO{TTFTMs: 500, ITLMs: 30}
	s.Config.CapacityModel, s.Config.DisableForecast = CapacityFleet, true
	return s
}

// TestFleetCapacitySizes: with the fleet model the engine orders the fewest
// replicas whose capacity — the capacity model's MaxRate for that fleet,
// as computed here by hand from the same inputs — covers the demand.
func TestFleetCapacitySizes(t *testing.T) {
	s := fleetSnapshot()
	e := New(nil)
	cm := NewCapacityModel(0)
	defer cm.Close()
	e.SetCapacityModel(cm)
	d := decision(t, plan(t, e, s), "h100")
	q := d.Queueing
	if q == nil || q.CapacityModel != CapacityFleet || q.FleetReplicas < 1 {
		t.Fatalf("detail %+v: want the fleet model's sizing", q)
	}
	// The same by hand: the curve at the centre of the parameters' grid
	// cell (its points at the powers of two around the answer,
	// interpolated), scaled by the queueing model's capacity at the exact
	// parameters over that at the centre.
	set := capacity.DefaultSettings()
	set.Requests, set.Bisections, set.MaxSeconds = 20_000, 7, 1e5
	centre := gridded(h100Params)
	in, out := ungrid(grid(1024, fleetGrid), fleetGrid), ungrid(grid(256, fleetGrid), fleetGrid)
	slo := queueing.Targets{TTFTMs: 500, ITLMs: 30}
	kv := 8192 * 16
	scale := capacityOf(t, h100Params, 1024, 256, kv/(1024+256), slo) / capacityOf(t, centre, in, out, int(float64(kv)/(in+out)), slo)
	fleet := func(n int) *capacity.Fleet {
		return &capacity.Fleet{Replicas: n, Router: capacity.DefaultRouter(),
			Server: serverOf(centre, 8192, 16, DefaultMaxBatchSize, fleetBatchTokens),
			Workload: &capacity.Lognormal{InputMean: in, InputCV: 1, OutputMean: out, OutputCV: 1,
				MaxInput: int(math.Ceil(16 * in)), MaxOutput: int(math.Ceil(16 * out)), TTFTMs: 500, ITLMs: 30}}
	}
	at := func(n int) float64 {
		lo := 1
		for lo*2 <= n {
			lo *= 2
		}
		rlo, err := capacity.MaxRate(context.Background(), fleet(lo), 0.99, set)
		if err != nil {
			t.Fatal(err)
		}
		if lo == n {
			return scale * rlo
		}
		rhi, err := capacity.MaxRate(context.Background(), fleet(2*lo), 0.99, set)
		if err != nil {
			t.Fatal(err)
		}
		return scale * (rlo + (rhi-rlo)*float64(n-lo)/float64(lo))
	}
	n := q.FleetReplicas
	if got := at(n); math.Abs(got-q.FleetRateRPS) > 1e-9*got || got < 12 {
		t.Errorf("%d replicas: the engine says %g requests/s, by hand %g; want equal and ≥ the demand 12", n, q.FleetRateRPS, got)
	}
	if n > 1 && at(n-1) >= 12 {
		t.Errorf("%d replicas ordered, but %d already carry %g ≥ 12 requests/s", n, n-1, at(n-1))
	}
	if math.Abs(q.CapacityPerReplicaRPS-q.FleetRateRPS/float64(n)) > 1e-9 || d.Desired != n {
		t.Errorf("desired %d, capacity per replica %g; want %d and %g", d.Desired, q.CapacityPerReplicaRPS, n, q.FleetRateRPS/float64(n))
	}
}

// TestFleetCapacityAsync: while the curve is computed in the background the
// queueing model sizes the variant, and the plan says so.
func TestFleetCapacityAsync(t *testing.T) {
	s := fleetSnapshot()
	e := New(nil)
	cm := capacity.NewCurves[FleetKey](capacity.DefaultSettings(), -1, 16) // nothing computes
	defer cm.Close()
	e.SetCapacityModel(cm)
	q := decision(t, plan(t, e, s), "h100").Queueing
	if q.CapacityModel != CapacityQueueing || !strings.Contains(q.FleetNote, "computing") {
		t.Errorf("detail %+v: want the queueing model's sizing while the curve is computed", q)
	}
	if len(cm.Missing()) == 0 {
		t.Error("no point queued")
	}
	// Without a capacity model, or with the queueing model, nothing is said.
	s.Config.CapacityModel = CapacityQueueing
	if q := decision(t, plan(t, e, s), "h100").Queueing; q.CapacityModel != "" || q.FleetNote != "" {
		t.Errorf("queueing model: detail %+v", q)
	}
}

// gridded is p at the centre of its grid cell, as the engine's fleets see
// it.
func gridded(p tuner.Params) tuner.Params {
	g := func(x float64) float64 { return ungrid(grid(x, fleetGrid), fleetGrid) }
	return tuner.Params{Alpha: g(p.Alpha), Beta: g(p.Beta), Gamma: g(p.Gamma), Delta: g(p.Delta)}
}

// TestFleetKeyGrid: parameters within 0.5 % of a grid point share its
// curve; 5 % apart do not.
func TestFleetKeyGrid(t *testing.T) {
	x := ungrid(grid(7, 0.02), 0.02)
	if grid(x*1.005, 0.02) != grid(x/1.005, 0.02) || grid(x, 0.02) == grid(x*1.05, 0.02) {
		t.Errorf("grid around %g: %d, %d, %d", x, grid(x/1.005, 0.02), grid(x*1.005, 0.02), grid(x*1.05, 0.02))
	}
	if x := ungrid(grid(7, 0.02), 0.02); math.Abs(x/7-1) > 0.011 {
		t.Errorf("ungrid(grid(7)) = %g", x)
	}
	if grid(0, 0.02) != math.MinInt32 || ungrid(math.MinInt32, 0.02) != 0 {
		t.Error("zero does not round-trip")
	}
}

func TestFleetConfigValidation(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.CapacityModel = "magic" }, "config.capacityModel"},
		{func(c *Config) { c.Attainment = 1 }, "config.attainment"},
		{func(c *Config) { c.Attainment = math.NaN() }, "config.attainment"},
		{func(c *Config) { c.TokenCV = -1 }, "config.tokenCV"},
	} {
		s := fleetSnapshot()
		c.edit(&s.Config)
		if _, err := New(nil).Plan(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one about %s", err, c.want)
		}
	}
}
