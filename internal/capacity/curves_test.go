package capacity

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCurvesSync: a synchronous curve computes the powers of two it needs,
// answers them as MaxRate does, interpolates between them and computes
// each once.
func TestCurvesSync(t *testing.T) {
	set := quick()
	c := NewCurves[string](set, 0, 8)
	defer c.Close()
	fleet := func(n int) *Fleet {
		return &Fleet{Server: kvServer(), Replicas: n, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	}
	r2, ok, err := c.At("kv", fleet, 0.95, 2)
	if err != nil || !ok {
		t.Fatalf("At(2): %v, %v", ok, err)
	}
	want2, _ := MaxRate(context.Background(), fleet(2), 0.95, set)
	if r2 != want2 {
		t.Errorf("At(2) = %g, MaxRate of two replicas = %g", r2, want2)
	}
	r3, _, _ := c.At("kv", fleet, 0.95, 3)
	r4, _, _ := c.At("kv", fleet, 0.95, 4)
	if want := (r2 + r4) / 2; math.Abs(r3-want) > 1e-12 {
		t.Errorf("At(3) = %g, want the chord's %g", r3, want)
	}
	if got := c.Computed(); got != 2 {
		t.Errorf("%d points computed, want 2 (n = 2 and 4)", got)
	}
	n, r, ok, err := c.Fewest("kv", fleet, 0.95, r3*0.99, 16)
	if err != nil || !ok || n != 3 || r != r3 {
		t.Errorf("Fewest for %g: %d replicas (%g), %v, %v; want 3 (%g)", r3*0.99, n, r, ok, err, r3)
	}
	if n, r, ok, _ := c.Fewest("kv", fleet, 0.95, 1e6, 8); !ok || n != 8 || r >= 1e6 {
		t.Errorf("an impossible demand: %d replicas (%g), %v; want 8 without covering it", n, r, ok)
	}
}

// TestCurvesAsync: an asynchronous lookup never blocks; the answer comes
// once a worker computed it.
func TestCurvesAsync(t *testing.T) {
	c := NewCurves[int](quick(), 1, 8)
	defer c.Close()
	fleet := func(n int) *Fleet {
		return &Fleet{Server: kvServer(), Replicas: n, Router: DefaultRouter(), Workload: spread{256, 128, 1000, 50}}
	}
	if _, ok, err := c.At(1, fleet, 0.9, 1); ok || err != nil {
		t.Fatalf("first lookup: ok %v, %v; want no answer yet", ok, err)
	}
	for c.Computed() == 0 {
		time.Sleep(time.Millisecond) // waits for the worker; asserts no duration
	}
	r, ok, err := c.At(1, fleet, 0.9, 1)
	want, _ := MaxRate(context.Background(), fleet(1), 0.9, quick())
	if !ok || err != nil || r != want {
		t.Errorf("after the worker: %g, %v, %v; want %g", r, ok, err, want)
	}
}

// TestCurvesError: a fleet the model cannot run reports its error, once
// and for every lookup, and is not retried.
func TestCurvesError(t *testing.T) {
	c := NewCurves[int](quick(), 0, 8)
	defer c.Close()
	bad := func(n int) *Fleet { return &Fleet{Server: kvServer(), Replicas: n} } // no workload
	for range 2 {
		if _, ok, err := c.At(1, bad, 0.9, 1); ok || err == nil {
			t.Errorf("a fleet without workload: ok %v, err %v", ok, err)
		}
	}
	if c.Computed() != 0 {
		t.Error("a failed point counted as computed")
	}
}

// TestCurvesEviction: the cache keeps at most its size, dropping the
// least recently used curve.
func TestCurvesEviction(t *testing.T) {
	c := NewCurves[int](quick(), 0, 2)
	defer c.Close()
	fleet := func(n int) *Fleet {
		return &Fleet{Server: linearServer(), Replicas: n, Router: DefaultRouter(), Workload: fixed{100, 10, 1000, 1e6}}
	}
	for _, k := range []int{1, 2, 1, 3} {
		if _, _, err := c.At(k, fleet, 0.9, 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.entries) != 2 || c.entries[2] != nil || c.entries[1] == nil {
		t.Errorf("entries after 1, 2, 1, 3 with room for 2: %v; want 1 and 3", c.entries)
	}
}

// TestLognormal: the draws' mean and spread are the ones asked for.
func TestLognormal(t *testing.T) {
	w := &Lognormal{InputMean: 1000, InputCV: 0.5, OutputMean: 200, OutputCV: 1, MaxInput: 1 << 20, MaxOutput: 1 << 20}
	rng := rand.New(rand.NewPCG(1, 2))
	var sum, sum2, out float64
	const n = 200_000
	for range n {
		var r Request
		w.Draw(rng, &r)
		x := float64(r.Input)
		sum, sum2, out = sum+x, sum2+x*x, out+float64(r.Output)
	}
	mean := sum / n
	cv := math.Sqrt(sum2/n-mean*mean) / mean
	if math.Abs(mean-1000) > 5 || math.Abs(cv-0.5) > 0.01 || math.Abs(out/n-200) > 3 {
		t.Errorf("input mean %.1f cv %.3f, output mean %.1f; want 1000, 0.5, 200", mean, cv, out/n)
	}
}
