// Tests of the tuner: convergence from a cold start, drift, overload,
// bad observations, the linear model, the bootstrap, persistence and
// restore, and its configuration. Over 400 lines because each scenario
// builds its own synthetic trace and checks the estimate against the truth.

package tuner

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var h100 = Truth{Name: "8B-H100", ServiceModel: ModelIteration, Params: Params{Alpha: 6, Beta: 0.012, Gamma: 3.5e-5},
	InputTokens: 1024, OutputTokens: 256, MaxBatchSize: 256}

// heldOut is the worst relative error of the tuner's TTFT and ITL at 20 %,
// 50 % and 75 % of the truth's capacity.
func heldOut(t *testing.T, tr Truth, tu *Tuner) float64 {
	t.Helper()
	lmax, err := tr.MaxRate(100)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for _, load := range []float64{0.2, 0.5, 0.75} {
		want, err := tr.Observe(tr.Params, load*lmax, tr.InputTokens, tr.OutputTokens, 100)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tu.Predict(want)
		if err != nil {
			return math.Inf(1)
		}
		worst = math.Max(worst, math.Max(math.Abs(got.TTFTMs/want.TTFTMs-1), math.Abs(got.ITLMs/want.ITLMs-1)))
	}
	return worst
}

func trace(t *testing.T, tr Truth, spec TraceSpec) []Observation {
	t.Helper()
	if spec.MaxQueueSize == 0 {
		spec.MaxQueueSize = 100
	}
	obs, err := Synthesize(tr, spec)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func TestColdStartConverges(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 10, Noise: 0.02, Seed: 3})
	for name, init := range map[string]Params{
		"defaults": Defaults(ModelIteration), "2x": scale(ModelIteration, h100.Params, 2), "0.5x": scale(ModelIteration, h100.Params, 0.5),
	} {
		tu, err := New(Config{}, init)
		if err != nil {
			t.Fatal(err)
		}
		before := heldOut(t, h100, tu)
		for _, o := range obs {
			if _, err := tu.Step(o); err != nil {
				t.Fatal(err)
			}
		}
		if e := heldOut(t, h100, tu); e > 0.05 {
			t.Errorf("%s: held-out error %.1f %% after 10 cycles (%.0f %% at the start)", name, 100*e, 100*before)
		}
		if acc, _ := tu.Updates(); acc < 8 {
			t.Errorf("%s: only %d of 10 updates accepted", name, acc)
		}
	}
	tu, how, err := NewCold(Config{}, obs[0])
	if err != nil || how != "bootstrap" {
		t.Fatalf("cold start: %v, %s", err, how)
	}
	for _, o := range obs {
		if _, err := tu.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	if e := heldOut(t, h100, tu); e > 0.05 {
		t.Errorf("bootstrap: held-out error %.1f %% after 10 cycles", 100*e)
	}
	for i, sd := range tu.RelativeStdDev() {
		if !(sd > 0 && sd < 0.5) {
			t.Errorf("parameter %d: relative standard deviation %v after 10 cycles", i, sd)
		}
	}
}

// TestSeedStrategyNeverLeavesAWrongStart reproduces the reference tuner's
// failure (docs/tuner.md §2): configured as published, it rejects
// every update from 1.2× the truth, even on exact observations.
func TestSeedStrategyNeverLeavesAWrongStart(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 20, Seed: 1})
	start := scale(ModelIteration, h100.Params, 1.2)
	tu, err := New(Config{Strategy: StrategySeed}, start)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		if st.Accepted || !strings.HasPrefix(st.Reason, "rejected: NIS") || st.NIS < 7.378 {
			t.Fatalf("seed strategy accepted or misreported: %+v", st)
		}
	}
	if tu.Params() != start {
		t.Errorf("seed strategy moved: %+v", tu.Params())
	}
	robust, _ := New(Config{}, start)
	for _, o := range obs {
		if _, err := robust.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	if e := heldOut(t, h100, robust); e > 0.02 {
		t.Errorf("robust tuner from the same start: held-out error %.1f %%", 100*e)
	}
}

// TestTracksDrift jumps every parameter by 30 % and expects the tuner to
// notice (rejections), re-anchor and re-converge within 6 cycles.
func TestTracksDrift(t *testing.T) {
	spec := TraceSpec{Cycles: 36, Noise: 0.01, JumpAt: 30, JumpFactor: 1.3, Seed: 2}
	obs := trace(t, h100, spec)
	tu, err := New(Config{}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	reasons := make([]string, 0, len(obs))
	for _, o := range obs {
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, st.Reason)
	}
	after := h100
	after.Params = h100.ParamsAt(30, spec)
	if e := heldOut(t, after, tu); e > 0.05 {
		t.Errorf("held-out error %.1f %% six cycles after the jump; reasons %q", 100*e, reasons[28:])
	}
	if !strings.Contains(strings.Join(reasons[30:], "\n"), "parameters assumed changed") {
		t.Errorf("no re-anchoring after the jump: %q", reasons[30:])
	}
}

// TestOverloadObservationTeaches feeds an observation at a load that the
// estimate says is far above capacity: the step must not fail, and the
// estimate must move towards the truth.
func TestOverloadObservationTeaches(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 8, Seed: 5})
	tu, err := New(Config{}, h100.Params)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if _, err := tu.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	// The hardware got 3× faster than the estimate: the load below is 1.5×
	// the capacity the estimate implies, but the truth serves it easily.
	fast := h100
	fast.Params = scale(ModelIteration, h100.Params, 1/3.0)
	lmaxEst, _ := h100.MaxRate(100)
	o, err := fast.Observe(fast.Params, 1.5*lmaxEst, 1024, 256, 100)
	if err != nil {
		t.Fatal(err)
	}
	pred, _ := tu.Predict(o)
	if pred.Blocking < 0.01 {
		t.Fatalf("test setup: the estimate does not see overload (blocking %v)", pred.Blocking)
	}
	before := heldOut(t, fast, tu)
	for i := range 6 {
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		if !finiteAll(st.Params.Alpha, st.Params.Beta, st.Params.Gamma) {
			t.Fatalf("overload step %d: %+v", i, st)
		}
		if i == 0 && (!st.Accepted || !strings.Contains(st.Reason, "overload")) {
			t.Errorf("first overload observation: %q", st.Reason)
		}
	}
	if after := heldOut(t, fast, tu); after > before/2 {
		t.Errorf("held-out error vs the faster truth went from %.0f %% to %.0f %%", 100*before, 100*after)
	}
}

// sameParams compares up to the rounding of a trip through log space.
// closeParams: equal within a relative tolerance (a restored estimate
// goes through its log-parameters once more, so it may differ in the last
// digits).
func closeParams(a, b Params, tol float64) bool {
	av, bv := a.vector(ModelLinear), b.vector(ModelLinear)
	for i := range av {
		if math.Abs(av[i]-bv[i]) > tol*math.Abs(bv[i]) {
			return false
		}
	}
	return true
}

func sameParams(a, b Params) bool {
	av, bv := a.vector(ModelLinear), b.vector(ModelLinear)
	for i := range av {
		if math.Abs(av[i]-bv[i]) > 1e-12*math.Abs(bv[i]) {
			return false
		}
	}
	return true
}

func finiteAll(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func TestBadObservationChangesNothing(t *testing.T) {
	tu, _ := New(Config{}, Defaults(ModelIteration))
	good := Observation{RateRPS: 5, InputTokens: 100, OutputTokens: 50, MaxBatchSize: 64, TTFTMs: 40, ITLMs: 8}
	for _, bad := range []Observation{
		{RateRPS: 0, InputTokens: 100, OutputTokens: 50, MaxBatchSize: 64, TTFTMs: 40, ITLMs: 8},
		{RateRPS: 5, InputTokens: 100, OutputTokens: 50, MaxBatchSize: 64, TTFTMs: math.NaN(), ITLMs: 8},
		{RateRPS: 5, InputTokens: -1, OutputTokens: 50, MaxBatchSize: 64, TTFTMs: 40, ITLMs: 8},
		{RateRPS: 5, InputTokens: 100, OutputTokens: 0.5, MaxBatchSize: 64, TTFTMs: 40, ITLMs: 8},
		{RateRPS: 5, InputTokens: 100, OutputTokens: 50, MaxBatchSize: 0, TTFTMs: 40, ITLMs: 8},
		{RateRPS: 5, InputTokens: 100, OutputTokens: 50, MaxBatchSize: 64, TTFTMs: 40, ITLMs: math.Inf(1)},
	} {
		if _, err := tu.Step(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if !sameParams(tu.Params(), Defaults(ModelIteration)) {
		t.Errorf("bad observations moved the estimate: %+v", tu.Params())
	}
	if _, err := tu.Step(good); err != nil {
		t.Errorf("good observation: %v", err)
	}
}

func TestLinearModelLearns(t *testing.T) {
	lin := Truth{Name: "linear", ServiceModel: ModelLinear, Params: Params{Alpha: 8, Beta: 0.1, Gamma: 25, Delta: 0.003},
		InputTokens: 800, OutputTokens: 200, MaxBatchSize: 64}
	obs := trace(t, lin, TraceSpec{Cycles: 10, Noise: 0.01, Seed: 4})
	tu, how, err := NewCold(Config{ServiceModel: ModelLinear}, obs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if _, err := tu.Step(o); err != nil {
			t.Fatal(err)
		}
	}
	if e := heldOut(t, lin, tu); e > 0.05 {
		t.Errorf("linear model from %s: held-out error %.1f %% after 10 cycles, estimate %+v", how, 100*e, tu.Params())
	}
	if len(tu.Covariance()) != 4 {
		t.Errorf("linear covariance is %d×%d", len(tu.Covariance()), len(tu.Covariance()))
	}
}

func TestBootstrap(t *testing.T) {
	// The bootstrap of the WVA queueing-model guide §9 on round numbers: α = 0.9·10 = 9; β+γ = (60 − 9)/1000 = 0.051;
	// γ = (1 − 0.051)/(1000 + 50.5 − 1) = 0.000904…; β = 0.051 − γ.
	p, ok := Bootstrap(ModelIteration, Observation{InputTokens: 1000, OutputTokens: 100, TTFTMs: 60, ITLMs: 10})
	gamma := (1 - 0.051) / 1049.5
	if !ok || math.Abs(p.Alpha-9) > 1e-12 || math.Abs(p.Gamma-gamma) > 1e-15 || math.Abs(p.Beta-(0.051-gamma)) > 1e-15 {
		t.Errorf("bootstrap = %+v, %v", p, ok)
	}
	if _, ok := Bootstrap(ModelIteration, Observation{InputTokens: 1000, OutputTokens: 100, TTFTMs: 5, ITLMs: 10}); ok {
		t.Error("bootstrap accepted a TTFT below α")
	}
	if _, ok := Bootstrap(ModelIteration, Observation{InputTokens: 0, OutputTokens: 100, TTFTMs: 60, ITLMs: 10}); ok {
		t.Error("bootstrap accepted zero input tokens")
	}
	tu, how, err := NewCold(Config{}, Observation{RateRPS: 1, InputTokens: 0, OutputTokens: 100, MaxBatchSize: 8, TTFTMs: 60, ITLMs: 10})
	if err != nil || how != "default" || !sameParams(tu.Params(), Defaults(ModelIteration)) {
		t.Errorf("fallback: %v %s", err, how)
	}
}

// TestStoreResumes stops a tuner after its warm-up, stores it, restores it,
// and checks that the restored tuner continues exactly as the original.
func TestStoreResumes(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 14, Noise: 0.02, Seed: 9})
	a, _ := New(Config{}, Defaults(ModelIteration))
	last := stepAll(t, a, obs[:5])
	store := NewMemoryStore()
	key := Key{Namespace: "llm", Model: "meta-llama/Llama-3.1-8B", Variant: "llama-h100"}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	if err := store.Put(key, a.Record(now)); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := store.Get(key)
	if err != nil || !ok || rec.Updates != 5 || !rec.LastUpdate.Equal(now) || rec.LastNIS != last.NIS {
		t.Fatalf("stored record: %+v %v %v", rec, ok, err)
	}
	b, err := Restore(Config{}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !sameParams(b.Params(), a.Params()) {
		t.Fatalf("restored %+v, stored %+v", b.Params(), a.Params())
	}
	for _, o := range obs[5:] {
		sa, _ := a.Step(o)
		sb, _ := b.Step(o)
		if sa.Accepted != sb.Accepted || math.Abs(sa.Params.Alpha/sb.Params.Alpha-1) > 1e-6 {
			t.Fatalf("restored tuner diverged: %+v vs %+v", sb, sa)
		}
	}
	checkRestoreRejects(t, rec)
	if err := store.Delete(key); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := store.Get(key); ok {
		t.Error("deleted key still present")
	}
}

// stepAll runs tu over obs and returns the last step.
func stepAll(t *testing.T, tu *Tuner, obs []Observation) Step {
	t.Helper()
	var last Step
	for _, o := range obs {
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		last = st
	}
	return last
}

// checkRestoreRejects: an iteration record does not restore into a linear
// tuner, nor a covariance that is not positive-definite (rec is changed).
func checkRestoreRejects(t *testing.T, rec Record) {
	t.Helper()
	if _, err := Restore(Config{ServiceModel: ModelLinear}, rec); err == nil {
		t.Error("restored an iteration record into a linear tuner")
	}
	rec.StateCovariance[0][0] = -1
	if _, err := Restore(Config{}, rec); err == nil {
		t.Error("restored a covariance that is not positive-definite")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{{ServiceModel: "cubic"}, {Strategy: "magic"}, {PercentChange: -1}, {MaxNIS: math.NaN()}, {Window: -2}} {
		if _, err := New(c, Defaults(ModelIteration)); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	if _, err := New(Config{}, Params{Alpha: 1, Beta: 0, Gamma: 1}); err == nil {
		t.Error("accepted a zero beta")
	}
}

// BenchmarkStep is one steady-state cycle of the iteration model with
// N = 256: the gate, the window fit and the anchor update.
func BenchmarkStep(b *testing.B) {
	obs, err := Synthesize(h100, TraceSpec{Cycles: 200, Noise: 0.02, Seed: 1, MaxQueueSize: 100})
	if err != nil {
		b.Fatal(err)
	}
	tu, _ := New(Config{}, Defaults(ModelIteration))
	for _, o := range obs[:20] {
		if _, err := tu.Step(o); err != nil {
			b.Fatal(err)
		}
	}
	i := 20
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tu.Step(obs[i]); err != nil {
			b.Fatal(err)
		}
		i++
		if i == len(obs) {
			i = 20
		}
	}
}

// meteredTrace is n observations as a server's metrics give them (not
// Steady: each is compared with the previous cycle's load, and its rate's
// Poisson error widens its variance): a load wandering between 35 % and
// 65 % of λmax by at most 6 % a cycle, latencies with 2 % noise.
func meteredTrace(tb testing.TB, n int) []Observation {
	tb.Helper()
	lmax, err := h100.MaxRate(100)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Observation
	for i := range n {
		load := 0.5 + 0.15*math.Sin(float64(i)/2.5)
		o, err := h100.Observe(h100.Params, load*lmax, 1024, 256, 100)
		if err != nil {
			tb.Fatal(err)
		}
		o.TTFTMs *= 1 + 0.02*math.Sin(float64(7*i))
		o.ITLMs *= 1 + 0.02*math.Cos(float64(11*i))
		out = append(out, o)
	}
	return out
}

// BenchmarkStepMetered is BenchmarkStep on observations as a server's
// metrics give them (meteredTrace): the load-change test and the rate's
// error in the variances run too.
func BenchmarkStepMetered(b *testing.B) {
	obs := meteredTrace(b, 200)
	tu, _ := New(Config{}, Defaults(ModelIteration))
	for _, o := range obs[:20] {
		if _, err := tu.Step(o); err != nil {
			b.Fatal(err)
		}
	}
	i := 20
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tu.Step(obs[i]); err != nil {
			b.Fatal(err)
		}
		i++
		if i == len(obs) {
			i = 20
		}
	}
}

// TestSteadyStepDoesNotAllocate: with the robust strategy a steady-state
// cycle — gate, window fit, anchor update, the Step it returns — allocates
// nothing (issue 30), accepted or rejected.
func TestSteadyStepDoesNotAllocate(t *testing.T) {
	for name, obs := range map[string][]Observation{
		"synthetic": trace(t, h100, TraceSpec{Cycles: 140, Noise: 0.02, Seed: 1, MaxQueueSize: 100}),
		"metered":   meteredTrace(t, 140),
	} {
		tu, err := New(Config{}, Defaults(ModelIteration))
		if err != nil {
			t.Fatal(err)
		}
		stepAll(t, tu, obs[:20])
		i, accepted := 20, 0
		if n := testing.AllocsPerRun(100, func() {
			st, err := tu.Step(obs[i])
			if err != nil {
				t.Fatal(err)
			}
			if st.Accepted {
				accepted++
			}
			i++
		}); n != 0 {
			t.Errorf("%s: a steady-state step allocates %v times", name, n)
		}
		if accepted == 0 {
			t.Errorf("%s: no step was accepted: the test no longer measures the window fit", name)
		}
	}
}

// BenchmarkWarmupStep is a cold start: the five warm-up cycles, each a
// joint fit of the window so far against the wide initial prior from
// several starts. ns/step is the time of one of them.
func BenchmarkWarmupStep(b *testing.B) {
	obs, err := Synthesize(h100, TraceSpec{Cycles: 5, Noise: 0.02, Seed: 1, MaxQueueSize: 100})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tu, _ := New(Config{}, Defaults(ModelIteration))
		for _, o := range obs {
			if _, err := tu.Step(o); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(obs)), "ns/step")
}

// TestRestoreEveryStep: the engine rebuilds a variant's tuner from its
// stored record every cycle. A tuner restored before each step must make
// exactly the steps of one that lives on — through the warm-up, the gated
// steps, rejections after a parameter jump and the re-anchoring they
// trigger. (Records once kept only the estimate and its covariance: every
// restore restarted the warm-up window with one observation and forgot the
// pending rejections, so an estimate once rejected stayed frozen.)
func TestRestoreEveryStep(t *testing.T) {
	obs := trace(t, h100, TraceSpec{Cycles: 30, Noise: 0.02, Seed: 4, JumpAt: 12, JumpFactor: 1.3})
	live, err := New(Config{}, Defaults(ModelIteration))
	if err != nil {
		t.Fatal(err)
	}
	rec := live.Record(time.Time{})
	rejected := 0
	for i, o := range obs {
		b, err := Restore(Config{}, rec)
		if err != nil {
			t.Fatal(err)
		}
		sb, errB := b.Step(o)
		sa, errA := live.Step(o)
		if (errA == nil) != (errB == nil) || sa.Accepted != sb.Accepted || sa.Reason != sb.Reason || !closeParams(sa.Params, sb.Params, 1e-6) {
			t.Fatalf("step %d: restored %q %+v, live %q %+v", i, sb.Reason, sb.Params, sa.Reason, sa.Params)
		}
		if !sa.Accepted {
			rejected++
		}
		rec = b.Record(time.Time{})
	}
	if rejected == 0 {
		t.Error("the jump caused no rejection: the test does not cover re-anchoring")
	}
	p := live.Params()
	if math.Abs(p.Alpha/(1.3*h100.Params.Alpha)-1) > 0.05 {
		t.Errorf("after the jump α = %v, want ≈ %v", p.Alpha, 1.3*h100.Params.Alpha)
	}
}

func TestConfiguredBounds(t *testing.T) {
	cfg := Config{IterationBounds: map[string][2]float64{"alpha": {5, 7}}, Bounds: map[string][2]float64{"alpha": {0.1, 0.2}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// A cold start far below the bound is clamped into it.
	tu, err := New(cfg, Params{Alpha: 1, Beta: 0.1, Gamma: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := Synthesize(Truth{Name: "t", ServiceModel: ModelIteration, Params: Params{Alpha: 6, Beta: 0.1, Gamma: 1e-4},
		InputTokens: 500, OutputTokens: 200, MaxBatchSize: 256}, TraceSpec{Cycles: 8, LoadMin: 0.2, LoadMax: 0.7, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if _, err := tu.Step(o); err != nil {
			t.Fatal(err)
		}
		if a := tu.Params().Alpha; a < 5-1e-9 || a > 7+1e-9 {
			t.Fatalf("alpha %v outside the configured [5, 7]", a)
		}
	}
	for _, bad := range []map[string][2]float64{{"alpha": {0, 1}}, {"beta": {2, 1}}, {"omega": {1, 2}}} {
		if err := (Config{Bounds: bad}).Validate(); err == nil {
			t.Errorf("bounds %v accepted", bad)
		}
	}
}

// TestCSVSteady: the optional steady column round-trips, and a bad value
// is a row problem naming it.
func TestCSVSteady(t *testing.T) {
	obs := []Observation{{RateRPS: 1, InputTokens: 10, OutputTokens: 5, MaxBatchSize: 8, TTFTMs: 20, ITLMs: 5, Steady: true},
		{RateRPS: 2, InputTokens: 10, OutputTokens: 5, MaxBatchSize: 8, TTFTMs: 21, ITLMs: 6}}
	var b strings.Builder
	if err := WriteCSV(&b, obs); err != nil {
		t.Fatal(err)
	}
	rows, problems, err := ReadCSV(strings.NewReader(b.String() + "3,10,5,8,22,7,maybe\n"))
	if err != nil || len(rows) != 2 || !rows[0].Steady || rows[1].Steady {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if len(problems) != 1 || problems[0].Column != CSVSteady {
		t.Errorf("problems %+v", problems)
	}
	b.Reset()
	if err := WriteCSV(&b, obs[1:]); err != nil || strings.Contains(b.String(), CSVSteady) {
		t.Errorf("a file without steady rows has the column: %q", b.String())
	}
}

// TestReleaseKeepsResults: tuners rebuilt from their record every cycle,
// their caches given back to the pool after each step (as the engine
// does), step exactly alike whether or not, in between, a tuner with
// another queue size evaluated the same parameters at the same
// observations in those caches: the pool empties them when they are
// taken, so nothing of another tuner's evaluations leaks (the cache is
// keyed by parameters and observation, not by the queue).
func TestReleaseKeepsResults(t *testing.T) {
	obs := trace(t, llama8b, TraceSpec{Cycles: 30, LoadMin: 0.7, LoadMax: 0.95, Noise: 0.02, Seed: 7})
	first, _, err := NewCold(Config{}, obs[0])
	if err != nil {
		t.Fatal(err)
	}
	step := func(rec *Record, o Observation) Step {
		t.Helper()
		tu, err := Restore(Config{}, *rec)
		if err != nil {
			t.Fatal(err)
		}
		st, err := tu.Step(o)
		if err != nil {
			t.Fatal(err)
		}
		*rec = tu.Record(time.Time{})
		tu.Release()
		return st
	}
	alone, mixed := first.Record(time.Time{}), first.Record(time.Time{})
	for i, o := range obs {
		want := step(&alone, o)
		// The other tuner: the same state and observation, a queue of 1.
		ot, err := Restore(Config{MaxQueueSize: 1}, mixed)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ot.Step(o); err != nil {
			t.Fatal(err)
		}
		ot.Release()
		got := step(&mixed, o)
		if got.Params != want.Params || got.Reason != want.Reason || got.NIS != want.NIS {
			t.Fatalf("cycle %d: after another tuner's evaluations %+v (%s, NIS %v), alone %+v (%s, NIS %v)", i, got.Params, got.Reason, got.NIS,
				want.Params, want.Reason, want.NIS)
		}
	}
}

// TestMemoryStoreCopies: what a MemoryStore holds is its own, row by row:
// neither the record put nor one got changes it, appending to a row does
// not reach the next (the rows share one allocation), ragged rows stay
// ragged, and an empty matrix or row comes back as a row-by-row copy gives
// it (never a nil matrix; an empty row nil).
func TestMemoryStoreCopies(t *testing.T) {
	s := NewMemoryStore()
	k := Key{Namespace: "ns", Model: "m", Variant: "v"}
	put := Record{ServiceModel: ModelIteration, StateCovariance: [][]float64{{1, 2, 3}, {4, 5}, {}, {6}},
		AnchorCovariance: nil, Window: []Observation{{RateRPS: 1}}}
	if err := s.Put(k, put); err != nil {
		t.Fatal(err)
	}
	put.StateCovariance[0][0], put.Window[0].RateRPS = -1, -1
	got, ok, err := s.Get(k)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := [][]float64{{1, 2, 3}, {4, 5}, nil, {6}}
	if !reflect.DeepEqual(got.StateCovariance, want) || got.Window[0].RateRPS != 1 {
		t.Fatalf("got %v, window %v; want %v, rate 1", got.StateCovariance, got.Window, want)
	}
	if got.AnchorCovariance == nil || len(got.AnchorCovariance) != 0 {
		t.Errorf("an absent matrix came back as %#v, want an empty one", got.AnchorCovariance)
	}
	got.StateCovariance[0] = append(got.StateCovariance[0], 99)
	if got.StateCovariance[1][0] != 4 {
		t.Errorf("appending to row 0 reached row 1: %v", got.StateCovariance)
	}
	got.StateCovariance[1][0] = -4
	again, _, _ := s.Get(k)
	if !reflect.DeepEqual(again.StateCovariance, want) {
		t.Errorf("changing a got record changed the store: %v", again.StateCovariance)
	}
}

// getOnly is a Store without Summarizer.
type getOnly struct{ Store }

// TestSummaryFrom: a MemoryStore's summary and one read through Get give
// the record's service model, updates and parameters; no record, no
// summary.
func TestSummaryFrom(t *testing.T) {
	s := NewMemoryStore()
	k := Key{Namespace: "ns", Model: "m", Variant: "v"}
	rec := Record{ServiceModel: ModelIteration, Params: Params{Alpha: 6, Beta: 0.02, Gamma: 3e-4}, Updates: 7,
		StateCovariance: [][]float64{{1}}, Window: []Observation{{RateRPS: 1}}}
	if err := s.Put(k, rec); err != nil {
		t.Fatal(err)
	}
	want := Summary{ServiceModel: ModelIteration, Updates: 7, Params: rec.Params}
	for name, st := range map[string]Store{"summarizer": s, "get": getOnly{s}} {
		got, ok, err := SummaryFrom(st, k)
		if err != nil || !ok || got != want {
			t.Errorf("%s: %+v %v %v, want %+v", name, got, ok, err, want)
		}
		if _, ok, err := SummaryFrom(st, Key{Model: "none"}); ok || err != nil {
			t.Errorf("%s: a missing record gave a summary (%v)", name, err)
		}
	}
}
