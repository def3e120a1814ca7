package engine

import (
	"strings"
	"testing"
	"time"
)

// TestWakeIsLastGood: a woken variant's decision is its last good one, so
// a cycle that finds the new replica ready but not yet scraped holds it at
// one instead of returning it to zero.
func TestWakeIsLastGood(t *testing.T) {
	e := New(nil)
	zero := 0
	s := snapshot(ModeCapacityOnly, variant("v", "H100").minMax(0, 4))
	s.Models[0].Variants[0].MinReplicas = &zero
	if d := decision(t, plan(t, e, s), "v"); d.Desired != 0 {
		t.Fatalf("idle at zero: %+v", d)
	}
	m := s.Models[0]
	m.GatewayWaitingRequests = 3
	if d, ok := e.Wake(&m); !ok || d.Desired != 1 {
		t.Fatalf("wake: %+v %v", d, ok)
	}
	// Ready, not scraped yet: the engine holds at its last good decision.
	s.Time = t0.Add(3 * time.Minute)
	s.Models[0].Variants[0].CurrentReplicas, s.Models[0].Variants[0].ReadyReplicas = 1, 1
	s.Models[0].GatewayWaitingRequests = 0
	if d := decision(t, plan(t, e, s), "v"); d.Desired != 1 || d.Reason != ReasonHoldMetrics {
		t.Errorf("after the wake: %+v, want held at 1", d)
	}
}

// TestSurge: the fast loop asks for a cycle when the gateway's queue or
// arrival rate outruns what the model's last cycle planned for, not before
// the engine has planned the model, not within SurgeMinGapSeconds of its
// last cycle, and never for a model at zero.
func TestSurge(t *testing.T) {
	e := New(nil)
	s := snapshot(ModeCapacityOnly, variant("v", "H100").pods(0.3, 0, 0.3, 0).traffic(2, 512, 128, 80, 15))
	m := s.Models[0] // 2 ready replicas; the cycle plans for 2 × 2 = 4 rps
	m.Variants = append([]Variant(nil), m.Variants...)
	m.Variants[0].Pods = nil // the fast loop reads no pod metrics
	m.GatewayWaitingRequests = 10
	if _, ok := e.Surge(&m, t0); ok {
		t.Error("surge before the model was ever planned")
	}
	plan(t, e, s)
	at := func(sec float64, waiting, rate float64) (string, bool) {
		mm := m
		mm.GatewayWaitingRequests, mm.ArrivalRateRPS = waiting, rate
		return e.Surge(&mm, t0.Add(time.Duration(sec*float64(time.Second))))
	}
	cases := []struct {
		sec, waiting, rate float64
		want               bool
		what               string
	}{
		{10, 10, 20, false, "within 15 s of the cycle"},
		{15, 2, 0, true, "2 waiting for 2 ready replicas"},
		{15, 1, 0, false, "1 waiting for 2 ready replicas"},
		{15, 0, 6, true, "6 rps = 1.5 × 4"},
		{15, 0, 5.9, false, "5.9 rps < 1.5 × 4"},
	}
	for _, c := range cases {
		why, ok := at(c.sec, c.waiting, c.rate)
		if ok != c.want {
			t.Errorf("%s: surge %v (%q), want %v", c.what, ok, why, c.want)
		}
	}
	if why, _ := at(20, 0, 8); !strings.Contains(why, "2× the 4 rps") {
		t.Errorf("explanation %q", why)
	}
	// A queue the last cycle already saw (and planned a drain for) is no
	// surge until it grows.
	s.Time = t0.Add(time.Minute)
	s.Models[0].GatewayWaitingRequests = 5
	plan(t, e, s)
	if _, ok := at(80, 5, 0); ok {
		t.Error("surge on the queue the last cycle saw")
	}
	if _, ok := at(80, 6, 0); !ok {
		t.Error("no surge on a growing queue")
	}
	zero := m
	zero.Variants = []Variant{{Name: "v", Accelerator: "H100"}}
	zero.GatewayWaitingRequests = 50
	if _, ok := e.Surge(&zero, t0.Add(time.Hour)); ok {
		t.Error("surge for a model at zero (the wake rule's case)")
	}
}
