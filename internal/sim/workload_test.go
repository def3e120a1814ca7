// Tests of the workload: SLO classes and shedding, prefix caching, trace
// replay and its errors, token files, and validation. Over 400 lines
// because each input format has its own round trip and failure cases.

package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

func runStatic(t *testing.T, sc scenario.Scenario, n int) *Result {
	t.Helper()
	rs, err := Compare(context.Background(), sc, []string{fmt.Sprintf("static:%d", n)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Completed+r.Failed+r.InFlight != r.Arrived {
		t.Fatalf("conservation: %d completed + %d failed + %d in flight != %d arrived", r.Completed, r.Failed, r.InFlight, r.Arrived)
	}
	return r
}

// TestClassesShedOnlySheddable: under overload with a gateway queue
// threshold, only the sheddable class is rejected, and each class is
// judged by its own SLO.
func TestClassesShedOnlySheddable(t *testing.T) {
	sc := oneReplica(20, tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}, 8, 600)
	sc.Models[0].Variants[0].MaxReplicas = 1
	sc.Gateway.QueueThreshold = 4
	sc.Models[0].Workload.Classes = []scenario.Class{
		{Name: "interactive", Share: 0.3, SLO: scenario.SLO{TTFTMs: 1e9, ITLMs: 1e9}},
		{Name: "batch", Share: 0.7, SLO: scenario.SLO{TTFTMs: 1, ITLMs: 1}, Sheddable: true},
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	r := runStatic(t, sc, 1)
	in, batch := r.Classes["m/interactive"], r.Classes["m/batch"]
	if in == nil || batch == nil {
		t.Fatalf("classes missing: %v", r.Classes)
	}
	if in.Arrived+batch.Arrived != r.Arrived {
		t.Errorf("class arrivals %d + %d != %d", in.Arrived, batch.Arrived, r.Arrived)
	}
	if share := float64(in.Arrived) / float64(r.Arrived); share < 0.27 || share > 0.33 {
		t.Errorf("interactive share %.3f, want ≈ 0.3", share)
	}
	if in.Failed != 0 {
		t.Errorf("%d interactive requests shed; only the batch class is sheddable", in.Failed)
	}
	if batch.Failed < batch.Arrived/2 {
		t.Errorf("only %d of %d batch requests shed under 5× overload", batch.Failed, batch.Arrived)
	}
	// The batch class's SLO (1 ms) is impossible; the interactive one is
	// always met.
	if batch.WithinSLO != 0 || in.WithinSLO != in.Completed || in.Completed == 0 {
		t.Errorf("per-class SLO: batch %d within, interactive %d of %d within", batch.WithinSLO, in.WithinSLO, in.Completed)
	}
	if want := float64(in.WithinSLO) / float64(in.Arrived); in.SLOAttainment != want {
		t.Errorf("interactive attainment %v, want %v", in.SLOAttainment, want)
	}
}

// TestPrefixCaching: a shared prefix skips most of the prefill, so TTFT
// falls, and prefix-affinity routing keeps each group on the replica that
// has it cached when the caches are too small for all groups (360 blocks:
// the four prefixes take 384, two of them and the requests in flight fit).
func TestPrefixCaching(t *testing.T) {
	base := func() scenario.Scenario {
		sc := oneReplica(2, tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}, 64, 900)
		sc.Models[0].Workload.Input = scenario.Tokens{Dist: "constant", Mean: 2048}
		sc.Models[0].Variants[0].MaxReplicas = 2
		sc.Models[0].Variants[0].KVBlocks = 360
		return sc
	}
	plain := runStatic(t, base(), 2)
	if plain.PrefixHits != 0 {
		t.Fatalf("%v prefix hits without prefixes", plain.PrefixHits)
	}
	hits := map[float64]*Result{}
	for _, w := range []float64{0, 10} {
		sc := base()
		sc.Models[0].Workload.PrefixGroups = 4
		sc.Models[0].Workload.PrefixTokens = 1536
		sc.Gateway.Weights = &scenario.ScorerWeights{KV: 1, Queue: 1, Batch: 1, Prefix: w}
		hits[w] = runStatic(t, sc, 2)
	}
	aff, none := hits[10], hits[0]
	t.Logf("hits: affinity %d/%d (%.2f of tokens), none %d/%d (%.2f); TTFT p50 %.1f ms vs %.1f ms without prefixes",
		aff.PrefixHits, aff.Completed, aff.PrefixCacheHitRate, none.PrefixHits, none.Completed, none.PrefixCacheHitRate, aff.TTFTms.P50, plain.TTFTms.P50)
	if aff.PrefixHits < aff.Completed*95/100 {
		t.Errorf("with affinity only %d of %d prefills hit the cache", aff.PrefixHits, aff.Completed)
	}
	if none.PrefixHits > aff.PrefixHits*8/10 {
		t.Errorf("without affinity %d hits, with %d: 4 prefixes in a cache for 3 should thrash", none.PrefixHits, aff.PrefixHits)
	}
	if aff.TTFTms.P50 > 0.8*plain.TTFTms.P50 {
		t.Errorf("TTFT p50 %.1f ms with cached prefixes, %.1f ms without", aff.TTFTms.P50, plain.TTFTms.P50)
	}
}

const traceScenario = `
name: replay
durationSeconds: 90
seed: 3
models:
  - name: m
    slo: {ttftMs: 5000, itlMs: 100}
    workload:
      trace: %s
      prefixTokens: 100
      classes:
        - {name: a, share: 0.5, slo: {ttftMs: 5000, itlMs: 100}}
        - {name: b, share: 0.5, slo: {ttftMs: 5000, itlMs: 100}, sheddable: true}
    variants:
      - {name: v, accelerator: H100, cost: 1, params: {alpha: 7, beta: 0.02, gamma: 0.00005}, minReplicas: 1, maxReplicas: 2, initialReplicas: 1}
`

func writeTrace(t *testing.T, dir string, rows []string) string {
	t.Helper()
	p := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(p, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sp, []byte(fmt.Sprintf(traceScenario, "trace.csv")), 0o600); err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestTraceReplay: every trace row before the end arrives once, at its
// time, with its tokens and class.
func TestTraceReplay(t *testing.T) {
	rows := []string{"seconds,input_tokens,output_tokens,class,prefix"}
	for i := range 200 {
		cls := "a"
		if i%4 == 0 {
			cls = "b"
		}
		prefix := ""
		if i%2 == 0 {
			prefix = "0"
		}
		rows = append(rows, fmt.Sprintf("%.2f,%d,%d,%s,%s", float64(i)*0.5, 300+i, 20+i%7, cls, prefix))
	}
	sc, err := scenario.LoadFile(writeTrace(t, t.TempDir(), rows))
	if err != nil {
		t.Fatal(err)
	}
	if m := sc.Models[0].Workload.Input.BoundedMean(); m != 300+199.0/2 {
		t.Errorf("trace input mean %v, want 399.5 (rows 0..199)", m)
	}
	r := runStatic(t, sc, 1)
	if r.Arrived != 180 { // rows at 0, 0.5, …, 89.5
		t.Errorf("arrived %d, want the 180 rows before 90 s", r.Arrived)
	}
	if a, b := r.Classes["m/a"].Arrived, r.Classes["m/b"].Arrived; a != 135 || b != 45 {
		t.Errorf("class arrivals a=%d b=%d, want 135 and 45 from the class column", a, b)
	}
	if r.PrefixHits == 0 {
		t.Error("no prefix hits though every other request shares prefix 0")
	}
	// The same file through ParseScenario is not loaded: Compare refuses.
	raw, err := scenario.ParseScenario([]byte(fmt.Sprintf(traceScenario, "trace.csv")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compare(context.Background(), raw, []string{"static:1"}, nil); err == nil || !strings.Contains(err.Error(), "LoadFile") {
		t.Errorf("Compare on an unloaded trace: %v", err)
	}
}

func TestTraceErrors(t *testing.T) {
	for _, tc := range []struct {
		rows []string
		want string
	}{
		{[]string{"time,input_tokens,output_tokens", "0,1,1"}, `lacks "seconds"`},
		{[]string{"seconds,input_tokens,output_tokens", "1,10,10", "0.5,10,10"}, "trace.csv:3: times must not decrease"},
		{[]string{"seconds,input_tokens,output_tokens", "0,ten,10"}, "trace.csv:2: column input_tokens: not a number"},
		{[]string{"seconds,input_tokens,output_tokens", "0,0,10"}, "trace.csv:2: seconds must be between 0 and 2592000, and token counts between 1 and 10000000"},
		{[]string{"seconds,input_tokens,output_tokens,class", "0,10,10,c"}, `request 1: its class is not one of the workload's classes ("a", "b")`},
		{[]string{"seconds,input_tokens,output_tokens,prefix", "0,10,10,-2"}, "column prefix"},
		{[]string{"seconds,input_tokens,output_tokens"}, "no requests"},
		// A second column of the same name would shadow the first in silence.
		{[]string{"seconds,input_tokens,output_tokens,input_tokens", "0,10,10,20"}, `the header names column "input_tokens" twice (columns 2 and 4)`},
		{[]string{"seconds,input_tokens,output_tokens", "0,10.5,10"}, "trace.csv:2: token counts must be whole numbers (10.5, 10)"},
		// Lines, not records: the quoted class spans lines 3 and 4.
		{[]string{"seconds,input_tokens,output_tokens,class", "0,10,10,a", "1,10,10,\"b", "\"", "2,ten,10,a"}, "trace.csv:5: column input_tokens: not a number"},
		{[]string{"seconds,input_tokens,output_tokens", "0,10,10", "1,\"10", "\"x,10"}, "trace.csv:4: CSV syntax: extraneous or missing \" in quoted-field"},
	} {
		_, err := scenario.LoadFile(writeTrace(t, t.TempDir(), tc.rows))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.rows, err, tc.want)
		}
	}
	if _, err := scenario.LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("loaded a missing file")
	}
}

func TestWorkloadValidation(t *testing.T) {
	sc := oneReplica(1, tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}, 8, 60)
	w := &sc.Models[0].Workload
	w.Input = scenario.Tokens{Dist: "empirical"}
	w.Output = scenario.Tokens{Dist: "empirical", Values: []float64{10, 0}}
	w.Classes = []scenario.Class{{Name: "a", Share: 0.5, SLO: scenario.SLO{TTFTMs: 1, ITLMs: 1}}, {Name: "a", Share: 0.4}}
	w.PrefixGroups = 3
	err := sc.Validate()
	if err == nil {
		t.Fatal("accepted a bad workload")
	}
	for _, want := range []string{"input.values: an empirical distribution needs values or a file", "output.values[1]: must be a whole token count between 1 and 10000000, got 0",
		"classes[1].name: must be set and unique", "classes[1].slo", "classes: shares must add up to 1", "prefixTokens"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	// Empirical draws come from the values.
	tk := scenario.Tokens{Dist: "empirical", Values: []float64{5, 9}}
	if m := tk.BoundedMean(); m != 7 {
		t.Errorf("empirical mean %v, want 7", m)
	}
	if u := tk.Upper(); u != 9 {
		t.Errorf("empirical upper %v, want 9", u)
	}
}

// TestEmpiricalFromFile: an empirical distribution's counts come from a
// file next to the scenario, and the requests draw only those counts.
func TestEmpiricalFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("in.txt", "# prompt lengths seen in production\n100, 200\n300\n")
	sp := write("s.yaml", `
name: empirical
durationSeconds: 120
models:
  - name: m
    slo: {ttftMs: 5000, itlMs: 100}
    workload:
      rate: {pattern: constant, rps: 5}
      input: {dist: empirical, file: in.txt}
      output: {dist: empirical, values: [7, 9]}
    variants:
      - {name: v, accelerator: H100, cost: 1, params: {alpha: 7, beta: 0.02, gamma: 0.00005}, minReplicas: 1, maxReplicas: 1, initialReplicas: 1}
`)
	sc, err := scenario.LoadFile(sp)
	if err != nil {
		t.Fatal(err)
	}
	if m := sc.Models[0].Workload.Input.BoundedMean(); m != 200 {
		t.Errorf("input mean %v, want 200 from in.txt", m)
	}
	var buf strings.Builder
	if err := WriteTrace(&buf, sc, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")[1:]
	if len(lines) < 500 {
		t.Fatalf("%d requests in 120 s at 5 RPS", len(lines))
	}
	seen := map[string]int{}
	for _, l := range lines {
		f := strings.Split(l, ",")
		seen[f[1]+"/"+f[2]]++
	}
	for k := range seen {
		switch k {
		case "100/7", "100/9", "200/7", "200/9", "300/7", "300/9":
		default:
			t.Errorf("drew %s, not from the empirical values", k)
		}
	}
	if len(seen) != 6 {
		t.Errorf("drew %d of the 6 combinations: %v", len(seen), seen)
	}
	raw, err := scenario.ParseScenario(mustRead(t, sp))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compare(context.Background(), raw, []string{"static:1"}, nil); err == nil || !strings.Contains(err.Error(), "LoadFile") {
		t.Errorf("Compare with an unloaded token file: %v", err)
	}
	write("in.txt", "100\nlots\n")
	if _, err := scenario.LoadFile(sp); err == nil || !strings.Contains(err.Error(), "in.txt:2: value 1 of the line is not a whole token count between 1 and 10000000") {
		t.Errorf("bad token file: %v", err)
	}
}

// TestTokenFileLoadedOnce: LoadFile checks the fields before it reads a
// token file (values and a file are an error, the file unread) and leaves
// a scenario that validates again, as Compare does.
func TestTokenFileLoadedOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("100 200\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeScenario := func(input string) string {
		p := filepath.Join(dir, "s.yaml")
		body := `
name: tokens
durationSeconds: 60
models:
  - name: m
    slo: {ttftMs: 5000, itlMs: 100}
    workload:
      rate: {pattern: constant, rps: 1}
      input: ` + input + `
      output: {mean: 10}
    variants:
      - {name: v, accelerator: H100, cost: 1, params: {alpha: 7, beta: 0.02, gamma: 0.00005}, minReplicas: 1, maxReplicas: 1, initialReplicas: 1}
`
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sc, err := scenario.LoadFile(writeScenario("{dist: empirical, file: in.txt}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Validate(); err != nil {
		t.Errorf("the loaded scenario fails validation: %v", err)
	}
	if _, err := Compare(context.Background(), sc, []string{"static:1"}, nil); err != nil {
		t.Errorf("Compare: %v", err)
	}
	_, err = scenario.LoadFile(writeScenario("{dist: empirical, file: missing.txt, values: [5]}"))
	if err == nil || !strings.Contains(err.Error(), "models[0].workload.input.file: give values or a file, not both") {
		t.Errorf("values and a file: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
