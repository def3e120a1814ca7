package emulate

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/llm-d-incubation/wva/internal/servermetrics"
)

const testModel = "meta-llama/Llama-3.1-8B-Instruct"

// testSpec is one model at rps requests/s on one Deployment "llama" whose
// servers load in 30 model seconds.
func testSpec(t *testing.T, rps float64) Spec {
	t.Helper()
	spec, err := ParseSpec([]byte(`
seed: 7
models:
  - name: ` + testModel + `
    workload:
      rate: {pattern: constant, rps: ` + ftoa(rps) + `}
      input: {mean: 512}
      output: {mean: 128}
    deployments:
      - name: llama
        params: {alpha: 7, beta: 0.02, gamma: 0.00005}
        kvBlocks: 4096
        startupSeconds: 30
        startupJitterSeconds: 0.001
`))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

var epoch = time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)

// TestFleetFollowsTheClock: with --time-scale 10, servers asked for at the
// start are ready 30 model seconds (3 wall seconds) later, and the model
// time follows the clock.
func TestFleetFollowsTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f, err := NewFleet(testSpec(t, 4), FleetOptions{Clock: clk, TimeScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	reps := f.Scale(0, 2, nil)
	if len(reps) != 2 || reps[0].Ready {
		t.Fatalf("after scaling: %+v", reps)
	}
	clk.Step(2900 * time.Millisecond)
	if got := f.Advance(); math.Abs(got-29) > 1e-9 {
		t.Fatalf("model time %v after 2.9 s at scale 10, want 29", got)
	}
	if f.Replicas(0)[0].Ready {
		t.Fatal("ready before its start-up time")
	}
	clk.Step(200 * time.Millisecond)
	f.Advance()
	for _, r := range f.Replicas(0) {
		if !r.Ready {
			t.Fatalf("not ready after its start-up time: %+v", r)
		}
	}
	if got := f.WallDuration(30); got != 3*time.Second {
		t.Errorf("WallDuration(30) = %v", got)
	}
}

// scrape reads a server's page as Prometheus would.
func scrape(t *testing.T, f *Fleet, id int) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	metricsHandler(f, testModel, id).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return parsePage(t, rec.Body.Bytes())
}

func parsePage(t *testing.T, page []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v\n%s", err, page)
	}
	return fams
}

// TestPageUnderLoad: a loaded server's page has every series the collector
// reads, labelled with the model, with values that agree with each other
// and with the workload.
func TestPageUnderLoad(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f, err := NewFleet(testSpec(t, 8), FleetOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	reps := f.Scale(0, 1, nil)
	clk.Step(330 * time.Second) // 30 s loading, then 300 s at 8 requests/s
	f.Advance()
	fams := scrape(t, f, reps[0].ID)
	checkPage(t, fams)
	done := value(t, fams, "vllm:request_success_total")
	if done < 0.9*8*300 || done > 1.1*8*300 {
		t.Errorf("request_success_total = %v after 300 s at 8 requests/s", done)
	}
	h := fams["vllm:time_to_first_token_seconds"].Metric[0].Histogram
	if mean := h.GetSampleSum() / float64(h.GetSampleCount()); !(mean > 0.005 && mean < 5) {
		t.Errorf("mean TTFT %v s", mean)
	}
	p := fams["vllm:request_prompt_tokens"].Metric[0].Histogram
	if got := p.GetSampleSum() / float64(p.GetSampleCount()); got != 512 {
		t.Errorf("mean prompt tokens %v, want 512", got)
	}
	if kv := value(t, fams, "vllm:kv_cache_usage_perc"); !(kv > 0 && kv <= 1) {
		t.Errorf("kv_cache_usage_perc = %v under load", kv)
	}
	rec := httptest.NewRecorder()
	metricsHandler(f, testModel, 999).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("a server that is gone answers %d", rec.Code)
	}
}

// collectorSeries are the families of a current vLLM that
// internal/collector/prometheus reads (its vllm schema's series).
func collectorSeries() []string {
	var out []string
	fx := servermetrics.MustFixture(servermetrics.FixtureVLLMCurrent)
	for _, s := range servermetrics.VLLM.Series() {
		if f, ok := fx.Has(s); ok && !slices.Contains(out, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

func checkPage(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for _, name := range collectorSeries() {
		fam, ok := fams[name]
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		for _, m := range fam.Metric {
			if l := label(m, "model_name"); l != testModel && name != "vllm:cache_config_info" {
				t.Errorf("%s model_name %q", name, l)
			}
			if h := m.Histogram; h != nil {
				b := h.Bucket
				if b[len(b)-1].GetCumulativeCount() > h.GetSampleCount() {
					t.Errorf("%s: buckets above the count", name)
				}
			}
		}
	}
	c := fams["vllm:cache_config_info"].Metric[0]
	if label(c, "num_gpu_blocks") != "4096" || label(c, "block_size") != "16" {
		t.Errorf("cache_config_info labels %v", c.Label)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	fam, ok := fams[name]
	if !ok || len(fam.Metric) == 0 {
		t.Fatalf("no %s", name)
	}
	sum := 0.0 // over the series (request_success_total's reasons)
	for _, m := range fam.Metric {
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		default:
			t.Fatalf("%s is neither counter nor gauge", name)
		}
	}
	return sum
}

// TestWallSecondLatencies: --latency-clock wall divides the latencies by
// the time scale.
func TestWallSecondLatencies(t *testing.T) {
	means := map[bool]float64{}
	for _, wall := range []bool{false, true} {
		clk := clocktesting.NewFakeClock(epoch)
		f, err := NewFleet(testSpec(t, 4), FleetOptions{Clock: clk, TimeScale: 5, WallSecondLatencies: wall})
		if err != nil {
			t.Fatal(err)
		}
		reps := f.Scale(0, 1, nil)
		clk.Step(60 * time.Second)
		f.Advance()
		h := scrape(t, f, reps[0].ID)["vllm:inter_token_latency_seconds"].Metric[0].Histogram
		means[wall] = h.GetSampleSum() / float64(h.GetSampleCount())
	}
	if r := means[false] / means[true]; math.Abs(r-5) > 1e-9 {
		t.Errorf("model/wall ITL ratio %v, want 5", r)
	}
}

// TestSDFile: the file lists every server with its labels, sorted, and is
// replaced atomically (no temporary file left).
func TestSDFile(t *testing.T) {
	dir := t.TempDir()
	w := sdWriter{path: dir + "/sd.json"}
	content := renderSD([]sdTarget{{Addr: "127.0.0.1:2", Namespace: "b", Pod: "p2", Deployment: "d"}, {Addr: "127.0.0.1:1", Namespace: "a", Pod: "p1", Deployment: "d"}})
	if err := w.write(content); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(w.path)
	if err != nil {
		t.Fatal(err)
	}
	want := `[
  {
    "targets": [
      "127.0.0.1:1"
    ],
    "labels": {
      "deployment": "d",
      "namespace": "a",
      "pod": "p1"
    }
  },
  {
    "targets": [
      "127.0.0.1:2"
    ],
    "labels": {
      "deployment": "d",
      "namespace": "b",
      "pod": "p2"
    }
  }
]
`
	if string(got) != want {
		t.Errorf("SD file:\n%s\nwant\n%s", got, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
	if string(renderSD(nil)) != "[]\n" {
		t.Errorf("empty SD file %q", renderSD(nil))
	}
}

// TestGatewayPage: the gateway's page has, per model whose namespace is
// known, the requests held for want of a ready server and those received.
func TestGatewayPage(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f, err := NewFleet(testSpec(t, 4), FleetOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	page := func() map[string]*dto.MetricFamily {
		rec := httptest.NewRecorder()
		gatewayHandler(f).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return parsePage(t, rec.Body.Bytes())
	}
	if fams := page(); len(fams) != 0 {
		t.Fatalf("series before the model's namespace is known: %v", fams)
	}
	f.SetModelNamespace(0, "llm-d")
	clk.Step(10 * time.Second) // no server: every request waits
	f.Advance()
	fams := page()
	q, n := value(t, fams, "llm_d_epp_flow_control_queue_size"), value(t, fams, "inference_objective_request_total")
	if q != n || n < 20 || n > 60 {
		t.Errorf("queue %v, requests %v after 10 s at 4/s without servers", q, n)
	}
	m := fams["llm_d_epp_flow_control_queue_size"].Metric[0]
	if label(m, "namespace") != "llm-d" || label(m, "model_name") != testModel {
		t.Errorf("labels %v", m.Label)
	}
}
