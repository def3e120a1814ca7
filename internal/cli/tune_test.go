package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func writeCSV(t *testing.T, body string) string { return tempFile(t, "obs.csv", body) }

// TestTuneExample learns the shipped example trace (true parameters after
// its jump: α = 7.8, β = 0.0156, γ = 0.0000455 ms) and checks the JSON
// contract.
func TestTuneExample(t *testing.T) {
	out, stderr, code := run(t, "tune", "-f", "../../examples/tune/observations.csv", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"alpha", "beta", "gamma", "covariance", "accepted", "rejected", "steps"} {
		if _, ok := res[key]; !ok {
			t.Errorf("missing key %q", key)
		}
	}
	if _, ok := res["delta"]; ok {
		t.Error("delta printed for the iteration model")
	}
	for key, want := range map[string]float64{"alpha": 7.8, "beta": 0.0156, "gamma": 4.55e-5} {
		if got := res[key].(float64); math.Abs(got/want-1) > 0.1 {
			t.Errorf("%s = %v, want %v ± 10 %%", key, got, want)
		}
	}
	steps := res["steps"].([]any)
	if len(steps) != 20 || res["accepted"].(float64)+res["rejected"].(float64) != 20 {
		t.Fatalf("%d steps, %v accepted, %v rejected", len(steps), res["accepted"], res["rejected"])
	}
	first := steps[0].(map[string]any)
	for _, key := range []string{"alpha", "beta", "gamma", "nis", "accepted", "ttft_pred_ms", "itl_pred_ms", "reason", "line"} {
		if _, ok := first[key]; !ok {
			t.Errorf("step lacks %q", key)
		}
	}
	if first["line"].(float64) != 5 {
		t.Errorf("first step is line %v, want 5 (after three comment lines and the header)", first["line"])
	}
}

func TestTuneSkipsBadRows(t *testing.T) {
	file := writeCSV(t, `time,rate_rps,input_tokens,output_tokens,max_batch_size,ttft_ms,itl_ms
0,6,1024,256,256,20.2,7.47
15,abc,1024,256,256,20.2,7.47
30,6,1024,256,256,,7.47
45,6,1024,256,256,-3,7.47
60,6,1024,256,0,20.2,7.47
75,6,1024,256,12.5,20.2,7.47
90,12,1000,250,256,23.9,9.8
`)
	out, stderr, code := run(t, "tune", "-f", file, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"line 3: column rate_rps: not a number; row skipped",
		"line 4: column ttft_ms: missing value; row skipped",
		"line 5: column ttft_ms: negative (-3); row skipped",
		"line 6: column max_batch_size: zero; row skipped",
		"line 7: column max_batch_size: not a whole number of requests (12.5); row skipped",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "abc") {
		t.Errorf("stderr repeats the file's text:\n%s", stderr)
	}
	var res tuneResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 || res.Steps[0].Line != 2 || res.Steps[1].Line != 8 {
		t.Errorf("steps %+v", res.Steps)
	}
}

func TestTuneBadInput(t *testing.T) {
	good := writeCSV(t, "rate_rps,input_tokens,output_tokens,max_batch_size,ttft_ms,itl_ms\n6,1024,256,256,20.2,7.47\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune"}, "--file is required"},
		{[]string{"tune", "-f", good, "--init", "1,2"}, `--init: want "bootstrap", "default" or 3 comma-separated numbers`},
		{[]string{"tune", "-f", good, "--init", "1,-2,3"}, "--init: value 2 (\"-2\") must be a positive number"},
		{[]string{"tune", "-f", good, "--service-model", "linear", "--init", "1,2,3"}, "4 comma-separated numbers for the linear model"},
		{[]string{"tune", "-f", good, "--strategy", "magic"}, `--strategy: must be "robust" or "seed"`},
		{[]string{"tune", "-f", good, "-o", "yaml"}, `--output: must be "table" or "json"`},
		{[]string{"tune", "-f", writeCSV(t, "rate_rps,ttft_ms\n1,2\n")}, "header lacks column(s) input_tokens, output_tokens, max_batch_size, itl_ms"},
		{[]string{"tune", "-f", writeCSV(t, "rate_rps,input_tokens,output_tokens,max_batch_size,ttft_ms,itl_ms\n0,1,1,1,1,1\n")}, "no usable observation rows"},
		{[]string{"tune", "-f", writeCSV(t, "rate_rps,input_tokens,output_tokens,max_batch_size,ttft_ms,itl_ms,ttft_ms\n1,1,1,1,1,1,2\n")}, `the header names column "ttft_ms" twice (columns 5 and 7)`},
	} {
		_, stderr, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestTuneLinearAndTable(t *testing.T) {
	file := writeCSV(t, `rate_rps,input_tokens,output_tokens,max_batch_size,ttft_ms,itl_ms
1,800,200,64,40,9
2,800,200,64,42,10
3,800,200,64,45,11
`)
	out, stderr, code := run(t, "tune", "-f", file, "--service-model", "linear", "--init", "8,0.1,25,0.003")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"LINE", "linear model, robust tuner, start: explicit", "delta"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
