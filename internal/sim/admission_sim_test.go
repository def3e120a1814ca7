package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// The tests in this file pin gateway.admission in the simulator on cases
// small enough to work out by hand (the linear step model of
// semantics_test.go: 10 ms + 0.01 ms per prompt token + 0.5 ms per decode).

// threeClasses gives the hand scenarios the seed's classes: critical
// (priority 1), standard (0) and sheddable (−1), with SLOs no request
// misses.
func threeClasses(s *scenario.Scenario) {
	loose := scenario.SLO{TTFTMs: 1e6, ITLMs: 1e6}
	s.Models[0].Workload.Classes = []scenario.Class{
		{Name: "critical", Share: 0.33, SLO: loose, Criticality: "critical", Priority: 1},
		{Name: "standard", Share: 0.34, SLO: loose},
		{Name: "sheddable", Share: 0.33, SLO: loose, Sheddable: true},
	}
}

func classRow(at float64, in, out int, class string, prefix int) scenario.TraceRow {
	return scenario.TraceRow{Time: at, Input: in, Output: out, Class: class, Prefix: prefix}
}

// withAdmission sets the classes and the admission policy.
func withAdmission(a *scenario.Admission) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		threeClasses(s)
		s.Gateway.Admission = a
	}
}

// TestRejectedUseNoCapacity: requests rejected at the gateway never reach a
// server. Critical requests interleaved with sheddable ones that the
// predictive policy rejects (a 1 µs budget) see exactly the latencies they
// see when the sheddable ones never arrive, on the same GPU-hours; admitted
// instead, the sheddable ones slow them down.
func TestRejectedUseNoCapacity(t *testing.T) {
	var mixed, alone []scenario.TraceRow
	for i := range 40 {
		at := float64(i) * 0.02
		mixed = append(mixed, classRow(at, 300, 30, "critical", -1), classRow(at+0.005, 300, 30, "sheddable", -1))
		alone = append(alone, classRow(at, 300, 30, "critical", -1))
	}
	reject := &scenario.Admission{Policy: scenario.PolicyPredictive, BudgetsMs: scenario.Budgets{Sheddable: 0.001}}
	res, got := runRows(t, simtest.LinearVariant(), mixed, nil, withAdmission(reject))
	base, want := runRows(t, simtest.LinearVariant(), alone, nil, threeClasses)
	if res.FailedBy.Admission != 40 || res.Failed != 40 || res.Completed != 40 {
		t.Fatalf("failed %d (admission %d), completed %d; want 40 rejected, 40 completed", res.Failed, res.FailedBy.Admission, res.Completed)
	}
	for k := int64(1); k <= 40; k++ {
		if got[2*k-1] != want[k] {
			t.Errorf("critical request %d: %+v with rejected neighbours, %+v alone", k, got[2*k-1], want[k])
		}
	}
	if res.GPUHours != base.GPUHours || res.PrefixCacheQueries != base.PrefixCacheQueries {
		t.Errorf("GPU-hours %v vs %v, prompt tokens looked up %d vs %d", res.GPUHours, base.GPUHours, res.PrefixCacheQueries, base.PrefixCacheQueries)
	}
	c := res.Classes["m/sheddable"].Admission
	if c.Admitted != 0 || c.Rejected != 40 || c.Goodput != 0 {
		t.Errorf("sheddable: %+v", c)
	}
	_, slowed := runRows(t, simtest.LinearVariant(), mixed, nil, withAdmission(&scenario.Admission{Policy: scenario.PolicyAlways}))
	if slowed[39].ttft <= want[20].ttft {
		t.Errorf("admitted, the sheddable requests did not slow the critical ones: %v vs %v ms", slowed[39].ttft, want[20].ttft)
	}
}

// TestAdmissionFigures: a token bucket of 1 request/s (burst 1) decides on
// five requests: standard at 0 s (the bucket's token: admitted), standard
// at 0.1 s (0.1 token: rejected), critical at 0.2 s (admitted, with no
// token to take), standard at 1.5 s (full again: admitted), sheddable at
// 1.6 s (rejected). The figures per class, per reason and per prefix group
// follow; a request is a cache hit when a ready replica holds blocks of
// its prompt: the last standard one, whose group the first brought in.
func TestAdmissionFigures(t *testing.T) {
	rows := []scenario.TraceRow{classRow(0, 100, 2, "standard", 3), classRow(0.1, 100, 2, "standard", 4),
		classRow(0.2, 100, 2, "critical", -1), classRow(1.5, 100, 2, "standard", 3), classRow(1.6, 100, 2, "sheddable", 4)}
	res, _ := runRows(t, simtest.LinearVariant(), rows, nil,
		withAdmission(&scenario.Admission{Policy: scenario.PolicyTokenBucket, TokenBucket: &scenario.TokenBucket{Rate: 1, Burst: 1}}))
	a := res.Admission
	if a == nil || a.Decided != 5 || a.Admitted != 3 || a.Rejected != 2 || res.FailedBy.Admission != 2 {
		t.Fatalf("admission %+v, failed by admission %d", a, res.FailedBy.Admission)
	}
	if a.ByReason["token"] != 2 || a.ByReason["no-token"] != 2 || a.ByReason["critical"] != 1 {
		t.Errorf("by reason %v", a.ByReason)
	}
	for name, want := range map[string][3]int64{"m/standard": {2, 1, 3}, "m/critical": {1, 0, 1}, "m/sheddable": {0, 1, 1}} {
		c := res.Classes[name]
		if c.Admission.Admitted != want[0] || c.Admission.Rejected != want[1] || c.Arrived != want[2] {
			t.Errorf("%s: %+v, arrived %d; want admitted, rejected, arrived %v", name, c.Admission, c.Arrived, want)
		}
		simtest.Near(t, name+" goodput", c.Admission.Goodput, float64(want[0])/float64(want[2]))
	}
	checkFigureGroups(t, res)
}

// checkFigureGroups: TestAdmissionFigures' cache hits, prefix groups and
// percentiles.
func checkFigureGroups(t *testing.T, res *Result) {
	t.Helper()
	a := res.Admission
	std := res.Classes["m/standard"].Admission
	simtest.Near(t, "standard cache hits among arrived", std.CacheHitArrived, 1.0/3)
	simtest.Near(t, "standard cache hits among admitted", std.CacheHitAdmitted, 1.0/2)
	simtest.Near(t, "cache hits among arrived", a.CacheHitArrived, 1.0/5)
	simtest.Near(t, "prompt tokens cached, admitted", a.CachedTokensAdmitted, 64.0/300)
	g3, g4 := a.Groups["m/group-3"], a.Groups["m/group-4"]
	if g3 == nil || g4 == nil || g3.Arrived != 2 || g3.Admitted != 2 || g4.Arrived != 2 || g4.Admitted != 0 || g4.FirstSeconds != 0.1 {
		t.Errorf("groups %+v %+v", g3, g4)
	}
	if std.TTFTSamples != 2 || std.TTFTp50Ms.Low > std.TTFTp50Ms.Value || std.TTFTp50Ms.High < std.TTFTp50Ms.Value {
		t.Errorf("standard TTFT p50 %+v of %d samples", std.TTFTp50Ms, std.TTFTSamples)
	}
}

// TestPrefixMatchedOnce: on a fixed fleet of three replicas, where no
// request waits at the gateway, the prefix match is computed once per
// request and replica, for the router's prefix scorer and the admission
// policy together; and it is the run of blocks the server's own lookup
// finds.
func TestPrefixMatchedOnce(t *testing.T) {
	var rows []scenario.TraceRow
	for i := range 300 {
		rows = append(rows, classRow(float64(i)*0.01, 200+i%50, 20, []string{"critical", "standard", "sheddable"}[i%3], i%7))
	}
	v := simtest.LinearVariant()
	v.InitialReplicas = 3
	sc := scenario.Scenario{Name: "once", DurationSeconds: 600, DrainSeconds: 600, Models: []scenario.Model{{Name: "m", SLO: scenario.SLO{TTFTMs: 1e6, ITLMs: 1e6},
		Workload: scenario.Workload{Rows: rows, PrefixTokens: 64}, Variants: []scenario.Variant{v}}},
		Gateway: scenario.Gateway{Admission: &scenario.Admission{Policy: scenario.PolicyPredictive, Calibrate: true}}}
	threeClasses(&sc)
	s := New(sc, &Static{n: 3})
	s.check = func(s *Sim, _ *event) {
		for _, r := range s.variants[0].replicas {
			for g := range 7 {
				probe := &server.Request{ID: 1 << 40, Input: 300, Prefix: g, PrefixTokens: 64}
				if blocks, _ := r.PrefixMatch(probe); blocks != r.CachedBlocks(probe) {
					t.Fatalf("replica %d group %d: prefix match %d blocks, the server finds %d", r.id, g, blocks, r.CachedBlocks(probe))
				}
			}
		}
	}
	res := s.Run(context.Background(), nil)
	if res.Admission.PrefixLookups != 3*300 {
		t.Errorf("%d prefix matches for 300 requests on 3 replicas", res.Admission.PrefixLookups)
	}
	// Without admission, the prefix scorer alone computes it as often.
	sc.Gateway.Admission = nil
	s = New(sc, &Static{n: 3})
	s.Run(context.Background(), nil)
	if s.prefixLookups != 3*300 {
		t.Errorf("router alone: %d prefix matches", s.prefixLookups)
	}
}

// TestAlwaysAdmitChangesNothing: the always-admit policy leaves the
// simulation as it is without admission (it adds figures only), and a
// scenario without admission writes no admission keys.
func TestAlwaysAdmitChangesNothing(t *testing.T) {
	sc := simtest.Builtin(t, "admission-matrix", 20)
	sc.Gateway.Admission = &scenario.Admission{Policy: scenario.PolicyAlways}
	with := New(sc, &Static{n: 8}).Run(context.Background(), nil)
	sc.Gateway.Admission = nil
	without := New(sc, &Static{n: 8}).Run(context.Background(), nil)
	if with.Admission == nil || with.Admission.Rejected != 0 || without.Admission != nil {
		t.Fatalf("admission figures: %+v / %+v", with.Admission, without.Admission)
	}
	with.Admission = nil
	for _, c := range with.Classes {
		c.Admission = nil
	}
	if a, b := resultsJSON(t, with), resultsJSON(t, without); string(a) != string(b) {
		t.Errorf("always-admit changed the run at byte %d", firstDifference(a, b))
	}
	if strings.Contains(string(resultsJSON(t, without)), `"admission"`) {
		t.Error("a run without admission writes admission keys")
	}
}

// TestCalibrationLearns: started from a β0 ten times too large, the
// calibrated policy's estimates of the admitted requests' TTFT are far
// closer than the initial coefficients', and it learned from every
// admitted request.
func TestCalibrationLearns(t *testing.T) {
	sc := simtest.Builtin(t, "admission-matrix", 30)
	sc.Gateway.Admission = &scenario.Admission{Policy: scenario.PolicyPredictive, Calibrate: true, Coefficients: scenario.Coefficients{Beta0Ms: 70}}
	res := New(sc, &Static{n: 8}).Run(context.Background(), nil)
	e, c := res.Admission.EstimateErrorMs, res.Admission.Calibration
	if e.InUse.MedianAbs*3 > e.Initial.MedianAbs || c.Used != res.Admission.Admitted || c.Beta0Ms > 35 {
		t.Errorf("estimate error in use %+v, initial %+v; fit %+v", e.InUse, e.Initial, c)
	}
	sc.Gateway.Admission.Calibrate = false
	res = New(sc, &Static{n: 8}).Run(context.Background(), nil)
	if e := res.Admission.EstimateErrorMs; e.InUse != e.Initial || res.Admission.Calibration != nil {
		t.Errorf("uncalibrated: in use %+v, initial %+v", e.InUse, e.Initial)
	}
}

// TestNewPrefixGroups: the new group takes its share of the arrivals from
// its start on, and none before.
func TestNewPrefixGroups(t *testing.T) {
	sc := simtest.Builtin(t, "admission-matrix", 60)
	sc.Models[0].Workload.NewPrefixGroups = []scenario.NewPrefixGroup{{AtSeconds: 30, Share: 0.1}}
	sc.Gateway.Admission = &scenario.Admission{Policy: scenario.PolicyAlways}
	res := New(sc, &Static{n: 8}).Run(context.Background(), nil)
	g := res.Admission.Groups["llama/group-256"]
	if g == nil || g.FirstSeconds < 30 || g.FirstSeconds > 30.1 {
		t.Fatalf("new group %+v", g)
	}
	if share := float64(g.Arrived) / float64(res.Arrived/2); share < 0.09 || share > 0.11 {
		t.Errorf("new group: %d of about %d arrivals after 30 s", g.Arrived, res.Arrived/2)
	}
	if n, e := res.Admission.NewGroups, res.Admission.EstablishedSinceNewGroups; n.Arrived != g.Arrived || e.FirstSeconds < 30 {
		t.Errorf("new groups %+v, established since %+v", n, e)
	}
}

// TestCalibrationFromDispatch: requests that wait at the gateway for a
// replica to start (5 s) teach the calibrator and the estimate errors their
// TTFT from dispatch, the time the estimate is made for, as the endpoint
// picker's plugin measures it; not the gateway's hold, which no regressor
// of the TTFT model carries. Their TTFT as the client sees it keeps the
// hold.
func TestCalibrationFromDispatch(t *testing.T) {
	v := simtest.LinearVariant()
	v.InitialReplicas, v.MinReplicas, v.StartupSeconds = 0, 0, 5
	var rows []scenario.TraceRow
	for i := range 20 {
		rows = append(rows, classRow(float64(i)*0.05, 300, 5, "standard", -1))
	}
	res, got := runRows(t, v, rows, &Static{n: 1},
		withAdmission(&scenario.Admission{Policy: scenario.PolicyPredictive, Calibrate: true}))
	if res.Completed != 20 || got[1].ttft < 5000 {
		t.Fatalf("completed %d, first TTFT %v ms: the requests did not wait for the replica", res.Completed, got[1].ttft)
	}
	e, c := res.Admission.EstimateErrorMs, res.Admission.Calibration
	if e.Initial.N != 20 || e.Initial.MedianAbs > 100 || c.Beta0Ms > 100 {
		t.Errorf("estimate error with the initial coefficients %+v, calibrated β0 %v ms: the hold at the gateway was taken for TTFT", e.Initial, c.Beta0Ms)
	}
}
