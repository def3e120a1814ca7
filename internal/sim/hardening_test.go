package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/simtest"
)

// TestNonFiniteYAML: YAML's .nan and .inf are refused with a hint.
func TestNonFiniteYAML(t *testing.T) {
	_, err := scenario.ParseScenario([]byte(strings.Replace(simtest.ValidScenario, "rps: 2", "rps: .inf", 1)))
	if err == nil || !strings.Contains(err.Error(), "numbers must be finite") {
		t.Errorf("got %v", err)
	}
}

// scenarioNaming writes a scenario whose model reads its trace, or its
// input token counts, from file (an absolute path).
func scenarioNaming(t *testing.T, trace bool, file string) string {
	t.Helper()
	w := "{rate: {pattern: constant, rps: 1}, input: {dist: empirical, file: " + strconv.Quote(file) + "}, output: {mean: 10}}"
	if trace {
		w = "{trace: " + strconv.Quote(file) + "}"
	}
	p := filepath.Join(t.TempDir(), "s.yaml")
	body := strings.Replace(simtest.ValidScenario, "{rate: {pattern: constant, rps: 2}, input: {mean: 512}, output: {mean: 64}}", w, 1)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFileErrorsNeverEcho: an error about a file a scenario names gives
// the file and the line, never the file's text.
func TestFileErrorsNeverEcho(t *testing.T) {
	const secret = "root:$6$Sup3rS3cret$hash:19000:0:99999:7:::"
	for _, tc := range []struct {
		name  string
		trace bool
		body  string
		want  string
	}{
		{"token file", false, secret + "\n", "secret.txt:1: value 1 of the line is not a whole token count between 1 and 10000000"},
		{"token file, second line", false, "12, 40\n300 " + secret + "\n", "secret.txt:2: value 2 of the line is not a whole token count"},
		{"trace header", true, secret + "\n", `secret.txt: the header lacks "seconds"`},
		{"trace value", true, "seconds,input_tokens,output_tokens\n0,1,1\n1," + secret + ",1\n", "secret.txt:3: column input_tokens: not a number"},
		{"trace class", true, "seconds,input_tokens,output_tokens,class\n0,1,1," + secret + "\n", "request 1: its class is not one of the workload's classes (it has none)"},
		{"trace prefix", true, "seconds,input_tokens,output_tokens,prefix\n0,1,1," + secret + "\n", "secret.txt:2: column prefix: want a group number between 0 and 999999"},
		{"csv syntax", true, "seconds,input_tokens,output_tokens\n0,1,\"1" + secret + "\n", "secret.txt:2: CSV syntax: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "secret.txt")
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := scenario.LoadFile(scenarioNaming(t, tc.trace, file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			for _, part := range []string{"Sup3rS3cret", "root", "19000"} {
				if strings.Contains(err.Error(), part) {
					t.Errorf("the error repeats the file's text %q: %v", part, err)
				}
			}
		})
	}
}

// TestFileSizeLimits: a scenario, a trace or a token file beyond its size
// limit (here /dev/zero, which never ends) fails at once, naming the file
// and the limit.
func TestFileSizeLimits(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, tc := range []struct {
		name string
		path func() string
		want string
	}{
		{"scenario", func() string { return "/dev/zero" }, "/dev/zero is larger than 16 MiB"},
		{"trace", func() string { return scenarioNaming(t, true, "/dev/zero") }, "models[0].workload.trace: /dev/zero:1: the line is longer than 64 KiB"},
		{"token file", func() string { return scenarioNaming(t, false, "/dev/zero") }, "models[0].workload.input.file: /dev/zero is larger than 64 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The file never ends: an error naming the limit proves the
			// read stopped there (a wall-clock bound here failed on a
			// loaded machine; speed is not what this test is about).
			_, err := scenario.LoadFile(tc.path())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTokenDrawsBounded: token counts drawn are between 1 and MaxTokens,
// whatever the distribution's tail (a value beyond int used to wrap into
// 1).
func TestTokenDrawsBounded(t *testing.T) {
	tk := scenario.Tokens{Dist: "lognormal", Mean: scenario.MaxTokens, SD: scenario.MaxTokens}
	rng := rand.New(rand.NewPCG(1, 2))
	top := 0
	for range 10000 {
		n := tk.Draw(rng)
		if n < 1 || n > scenario.MaxTokens {
			t.Fatalf("drew %d tokens", n)
		}
		top = max(top, n)
	}
	if top != scenario.MaxTokens {
		t.Errorf("largest draw %d, want the bound %d", top, scenario.MaxTokens)
	}
	for _, v := range []float64{1e19, 1e300, math.Inf(1)} {
		if n := tk.Bound(v); n != scenario.MaxTokens {
			t.Errorf("bound(%v) = %d, want %d", v, n, scenario.MaxTokens)
		}
	}
}

// TestNoCompletionWarnings: a run in which no request completes says why:
// no accelerator to place a replica on, replicas still starting, no
// replica at all, or (replicas served but nothing finished) latency
// coefficients in the wrong unit. A zero inventory was once blamed on the
// coefficients' unit.
func TestNoCompletionWarnings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scaler int
		edit   func(s *scenario.Scenario)
		want   string
	}{
		{"no accelerator", 1, func(s *scenario.Scenario) { s.Inventory = map[string]int{"H100": 0} },
			"static:1: no request of 1199 completed in 600 s: no replica was ever ready, 1 could not be placed (the inventory has no free accelerator for them)"},
		{"still starting", 1, func(s *scenario.Scenario) { s.Models[0].Variants[0].StartupSeconds = 900 },
			"static:1: no request of 1199 completed in 600 s: no replica finished starting (startupSeconds)"},
		{"no replica", 0, func(*scenario.Scenario) {}, "static:0: no request of 1199 completed in 600 s: no replica ever ran (the autoscaler never scaled from zero)"},
		{"too slow", 1, func(s *scenario.Scenario) {
			s.Models[0].Variants[0].InitialReplicas = 1
			s.Models[0].Variants[0].Params.Alpha = 1e6
		}, "static:1: no request of 1199 completed in 600 s (are the latency coefficients in ms?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.ParseScenario([]byte(simtest.ValidScenario))
			if err != nil {
				t.Fatal(err)
			}
			sc.Models[0].Variants[0].InitialReplicas, sc.Models[0].Variants[0].MinReplicas = 0, 0
			sc.Models[0].Workload.Arrival = "constant"
			tc.edit(&sc)
			if err := sc.Validate(); err != nil {
				t.Fatal(err)
			}
			r := New(sc, &Static{n: tc.scaler}).Run(context.Background(), nil)
			if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], tc.want) {
				t.Errorf("warnings %q, want %q", r.Warnings, tc.want)
			}
		})
	}
}
