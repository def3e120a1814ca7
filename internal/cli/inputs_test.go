package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// runContext runs the command line under ctx, as Ctrl-C would cancel it.
func runContext(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	root := NewRootCommand(&out, &errb)
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// heavyScenario takes seconds of wall time per simulated minute (100 000
// requests/s) and stays within the simulator's limits.
const heavyScenario = `
name: heavy
durationSeconds: 120
models:
  - name: m
    slo: {ttftMs: 1000, itlMs: 50}
    workload: {rate: {pattern: constant, rps: 100000}, input: {mean: 64}, output: {mean: 16}}
    variants: [{name: v, accelerator: H100, params: {alpha: 5, beta: 0.01, gamma: 0.00001}, initialReplicas: 1, minReplicas: 1}]
`

// blocked is an --out that cannot be created: a folder inside a file.
func blocked(t *testing.T) string {
	t.Helper()
	return filepath.Join(tempFile(t, "file", "x"), "out")
}

// TestInterrupt: a cancelled context (what Ctrl-C gives) stops a
// simulation, a --repeat, a sweep and the tuner study, however long they
// would run, and each says it was interrupted. The context is cancelled
// before the command runs, so that nothing depends on the machine's
// speed; internal/sim's TestCancelStopsRun bounds the work a run does
// after a cancellation that comes while it runs.
func TestInterrupt(t *testing.T) {
	heavy := tempFile(t, "heavy.yaml", heavyScenario)
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr, or in the error
	}{
		{"simulate", []string{"simulate", "-f", heavy, "--autoscalers", "static:1", "--no-files"}, "interrupted: the results cover the time simulated so far"},
		{"repeat", []string{"simulate", "-f", heavy, "--autoscalers", "static:1", "--repeat", "3", "--parallel", "2", "--no-files"}, "interrupted before the first seed finished"},
		{"sweep", []string{"simulate", "-f", heavy, "--sweep", "--autoscalers", "clairvoyant", "--repeat", "2", "--parallel", "2", "--no-files"}, "interrupted: the results cover the settings whose seeds all finished"},
		{"tune study", []string{"tune", "study", "--cycles", "10000", "--out", t.TempDir()}, "interrupted: the study wrote no results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, stderr, err := runContext(ctx, tc.args...)
			got := stderr
			if err != nil {
				got += err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q (error %v), want %q", stderr, err, tc.want)
			}
		})
	}
}

// TestSimulateInputs: inputs that used to hang, run unbounded or be
// accepted silently fail at once with a message naming the flag or field.
func TestSimulateInputs(t *testing.T) {
	heavy := tempFile(t, "heavy.yaml", heavyScenario)
	huge := tempFile(t, "huge.yaml", strings.Replace(heavyScenario, "rps: 100000", "rps: 1e9", 1))
	shadow := tempFile(t, "shadow", "root:$6$saltsalt$hashhash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
	zero := tempFile(t, "zero.yaml", strings.Replace(heavyScenario, "{rate: {pattern: constant, rps: 100000}, input: {mean: 64}, output: {mean: 16}}", "{trace: /dev/zero}", 1))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"duplicate autoscalers", []string{"simulate", "--autoscalers", "wva,wva", "--no-files"}, "--autoscalers: wva is listed twice"},
		{"duplicate static", []string{"simulate", "--autoscalers", "static:2,hpa,static:02", "--no-files"}, "--autoscalers: static:2 is listed twice"},
		{"empty autoscaler", []string{"simulate", "--autoscalers", "wva,", "--no-files"}, `--autoscalers: unknown autoscaler ""`},
		{"huge static", []string{"simulate", "--autoscalers", "static:1000000", "--no-files"}, "static:N needs a replica count between 0 and 1000"},
		{"1e9 rps", []string{"simulate", "-f", huge, "--no-files"},
			"models[0].workload.rate: a peak of 1e+09 requests/s over durationSeconds 120 is up to 1.2e+11 requests, more than the 20000000 a run may simulate"},
		{"trace of /dev/zero", []string{"simulate", "-f", zero, "--no-files"}, "models[0].workload.trace: /dev/zero:1: the line is longer than 64 KiB"},
		{"another kind of file", []string{"simulate", "-f", shadow, "--no-files"}, "unknown field (a key that is no field name; not shown: is this the right file?)"},
		{"another kind of file, plan", []string{"plan", "-f", shadow}, "unknown field (a key that is no field name; not shown"},
		{"-f and --scenario", []string{"simulate", "-f", heavy, "--scenario", "bursty", "--no-files"}, "-f and --scenario: give one"},
		{"empty --write-traces", []string{"simulate", "--write-traces", ""}, "--write-traces: needs a folder"},
		{"--grid twice", []string{"simulate", "-f", heavy, "--sweep", "--autoscalers", "wva", "--grid", "wva.spareQuantile=0.5", "--grid", "wva.spareQuantile=0.9", "--no-files"},
			"--grid: wva.spareQuantile is given twice"},
		{"--grid for an autoscaler not run", []string{"simulate", "-f", heavy, "--sweep", "--autoscalers", "wva", "--grid", "hpa.kvTarget=0.5", "--no-files"},
			"--grid: hpa.kvTarget sets hpa, which the sweep does not run (--autoscalers wva)"},
		{"scenario of /dev/zero", []string{"simulate", "-f", "/dev/zero", "--no-files"}, "--file: /dev/zero is larger than 16 MiB"},
		{"unwritable --out", []string{"simulate", "-f", heavy, "--autoscalers", "static:1", "--out", blocked(t)}, "--out: mkdir"},
		{"unwritable --out, repeat", []string{"simulate", "-f", heavy, "--autoscalers", "static:1", "--repeat", "2", "--out", blocked(t)}, "--out: mkdir"},
		{"unwritable --out, sweep", []string{"simulate", "-f", heavy, "--sweep", "--autoscalers", "clairvoyant", "--out", blocked(t)}, "--out: mkdir"},
		{"--out is a file", []string{"simulate", "-f", heavy, "--autoscalers", "static:1", "--out", tempFile(t, "f", "")}, "--out: mkdir"},
		{"unwritable --write-traces", []string{"simulate", "-f", heavy, "--write-traces", blocked(t)}, "--write-traces: mkdir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, stderr, tc.want)
			}
			// Nothing ran: no progress line before the error, no output.
			if strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "\r") || stdout != "" {
				t.Errorf("stdout %q, stderr %q: want the error alone", stdout, stderr)
			}
		})
	}
}

// TestWriteTracesStayInFolder: model names become file names that stay in
// the --write-traces folder; two that would share a file are an error.
func TestWriteTracesStayInFolder(t *testing.T) {
	body := `
name: names
durationSeconds: 20
models:
` + strings.Repeat(`  - name: %q
    slo: {ttftMs: 1000, itlMs: 50}
    workload: {rate: {pattern: constant, rps: 1}, input: {mean: 64}, output: {mean: 16}}
    variants: [{name: v, accelerator: H100, params: {alpha: 5, beta: 0.01, gamma: 0.00001}}]
`, 4)
	root := t.TempDir()
	dir := filepath.Join(root, "traces")
	file := tempFile(t, "s.yaml", fmt.Sprintf(body, "../escape", "a/b", "/etc/cron.d/x", ".hidden"))
	if _, stderr, code := run(t, "simulate", "-f", file, "--write-traces", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{"_.._escape.csv", "_.hidden.csv", "_etc_cron.d_x.csv", "a_b.csv"}
	if got := names(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("wrote %v, want %v", got, want)
	}
	if got := names(t, root); len(got) != 1 {
		t.Errorf("wrote beside the folder: %v", got)
	}
	clash := tempFile(t, "s.yaml", fmt.Sprintf(body, "a/b", "a_b", "c", "d"))
	if _, stderr, code := run(t, "simulate", "-f", clash, "--write-traces", t.TempDir()); code == 0 ||
		!strings.Contains(stderr, `--write-traces: models "a/b" and "a_b" would both be written to a_b.csv`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestTuneStudyInputs: --cycles is bounded, --traces stays inside --out,
// and an unwritable --out fails before the study runs.
func TestTuneStudyInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"too many cycles", []string{"--cycles", "10000000"}, "--cycles: must be between 4 and 10000, got 10000000"},
		{"too few cycles", []string{"--cycles", "3"}, "--cycles: must be between 4 and 10000, got 3"},
		{"traces outside", []string{"--traces", "../traces"}, `--traces: must be a relative folder inside --out (no absolute path, no ".."), got "../traces"`},
		{"traces absolute", []string{"--traces", "/tmp/traces"}, `--traces: must be a relative folder inside --out`},
		{"unwritable --out", []string{"--out", blocked(t)}, "--out: mkdir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, append([]string{"tune", "study"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, stderr, tc.want)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q: want the error alone (nothing ran)", stderr)
			}
		})
	}
}

// TestInputFileLimits: the files the commands read whole are bounded; a
// file that never ends fails at once.
func TestInputFileLimits(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, args := range [][]string{
		{"plan", "-f", "/dev/zero"},
		{"tune", "-f", "/dev/zero"},
		llamaArgs("analyze", "-f", "/dev/zero"),
	} {
		_, stderr, code := run(t, args...)
		if code == 0 || !strings.Contains(stderr, "--file: /dev/zero is larger than 16 MiB") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	var out, errb bytes.Buffer
	root := NewRootCommand(&out, &errb)
	root.SetArgs([]string{"plan", "-f", "-"})
	root.SetIn(strings.NewReader(strings.Repeat("#", 16<<20+1)))
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--file: standard input is larger than 16 MiB") {
		t.Errorf("plan from a large standard input: %v", err)
	}
}

// TestNumericFlags: the numeric flags of tune and model reject values
// beyond what the engine and the model can take.
func TestNumericFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "-f", "../../examples/tune/observations.csv", "--max-queue-size", "1000000000"},
			"--max-queue-size: must be between 0 and 1000000 (the engine's limit), got 1000000000"},
		{llamaArgs("analyze", "--rate", "1", "--input-tokens", "1e300"), "--input-tokens: must be at most 10000000 tokens, got 1e+300"},
		{llamaArgs("size", "--target-itl", "50", "--output-tokens", "2e7"), "--output-tokens: must be at most 10000000 tokens, got 2e+07"},
		{llamaArgs("analyze", "--rate", "1e-19"), "--rate: must be at least 1e-09 requests/s"},
		{llamaArgs("size", "--target-ttft", "500", "--demand", "2e20"), "--demand: needs more than 2147483647 replicas"},
	} {
		stdout, stderr, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%v printed %q", tc.args, stdout)
		}
	}
}

// TestInterruptOnce: the first Ctrl-C cancels the command's context and
// says that a second one quits at once (it is no longer caught: before,
// every further Ctrl-C was ignored while partial results were written,
// 169 s at the series limit).
func TestInterruptOnce(t *testing.T) {
	var errb bytes.Buffer
	cmd := NewRootCommand(io.Discard, &errb)
	cmd.SetContext(context.Background())
	ctx, cancel := interruptible(cmd)
	defer cancel()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Skip(err)
	}
	<-ctx.Done() // the message is written before the cancellation
	if !strings.Contains(errb.String(), "Ctrl-C again to quit at once") {
		t.Errorf("stderr %q", errb.String())
	}
}

// TestWorkBounds: inputs of a valid size that would run for minutes are
// refused at once: an observation file of more than 100 000 rows (a
// million took 6 min and 2.2 GB), a case file with more than 10 000 rates
// (200 000 ran past a minute).
func TestWorkBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Join(tuner.CSVColumns, ",") + "\n")
	row := strings.TrimSuffix(strings.Repeat("1,", len(tuner.CSVColumns)), ",") + "\n"
	for range tuner.MaxCSVRows + 1 {
		b.WriteString(row)
	}
	csvFile := tempFile(t, "obs.csv", b.String())
	if _, stderr, code := run(t, "tune", "-f", csvFile); code == 0 || !strings.Contains(stderr, "more than 100000 observation rows") {
		t.Errorf("tune: exit %d, %q", code, stderr)
	}
	rates := strings.TrimSuffix(strings.Repeat("1, ", 10_001), ", ")
	cases := tempFile(t, "cases.yaml", "cases:\n  - {rates: ["+rates+"]}\n")
	if _, stderr, code := run(t, llamaArgs("analyze", "-f", cases)...); code == 0 || !strings.Contains(stderr, "10001 rates in all, at most 10000") {
		t.Errorf("model analyze: exit %d, %q", code, stderr)
	}
}
