package prometheus

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// servePage serves testdata/vllm-metrics.txt, a /metrics page in vLLM's
// exact exposition format (engine and model_name labels, counters with
// _total and _created, histograms with buckets, cache_config_info without
// model_name). Every cumulative series grows by its page value every
// `period` (so rates are page/period and sum/count averages are the
// page's), gauges stay as they are.
func servePage(t *testing.T, period time.Duration) *httptest.Server {
	t.Helper()
	page, err := os.ReadFile("testdata/vllm-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		now := time.Now() // samples carry it: exact rates however late the scrape is answered
		f := 1 + float64(now.Sub(start))/float64(period)
		sc := bufio.NewScanner(bytes.NewReader(page))
		for sc.Scan() {
			line := sc.Text()
			i := strings.LastIndexByte(line, ' ')
			name := line
			if j := strings.IndexByte(line, '{'); j > 0 {
				name = line[:j]
			}
			cumulative := strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_bucket")
			if strings.HasPrefix(line, "#") || i < 0 {
				fmt.Fprintln(w, line)
				continue
			}
			if !cumulative {
				fmt.Fprintf(w, "%s %d\n", line, now.UnixMilli())
				continue
			}
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				t.Errorf("testdata line %q: %v", line, err)
				return
			}
			fmt.Fprintf(w, "%s %g %d\n", line[:i], math.Round(v*f*1e6)/1e6, now.UnixMilli())
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestVLLMPageEndToEnd: the real Prometheus scrapes the vLLM-format page;
// the source reads what the page implies. Page figures: 500 requests (412
// stop, 88 length), 256 000 prompt and 64 000 generated tokens, TTFT sum
// 45 s over 500, time per output token 762 s over 63 500, KV 0.4219, 2
// waiting, 14 running, 3 preemptions, 27 512 blocks of 16 tokens.
func TestVLLMPageEndToEnd(t *testing.T) {
	const period = 100 * time.Second // 500 requests per 100 s: 5 req/s
	pod := servePage(t, period)
	url := testenv.Prometheus(t, map[string]map[string]string{
		strings.TrimPrefix(pod.URL, "http://"): {"namespace": "llm-d", "pod": "llama-8b-h100-7d9f8-x2x4q"},
	})
	src, err := New(Config{URL: url, Window: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	target := collector.Target{Namespace: "llm-d", Model: "meta-llama/Llama-3.1-8B-Instruct"}
	var rep collector.Report
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if rep, err = src.Collect(context.Background(), time.Now(), target); err != nil {
			t.Fatal(err)
		}
		// Settled: the window is full of samples (rates at the start of a
		// series cover less than the window).
		if len(rep.Pods) == 1 && math.Abs(rep.Pods[0].Pod.ArrivalRateRPS-5) < 0.05 && rep.Pods[0].Pod.KVBlocks > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled figures after 30 s: %+v", rep)
		}
	}
	p := rep.Pods[0].Pod
	if p.Missing || len(rep.Problems) > 0 {
		t.Fatalf("problems: %v", rep.Problems)
	}
	for name, c := range map[string]struct{ got, want, tol float64 }{
		"arrival rate":  {p.ArrivalRateRPS, 5, 0.01},
		"input tokens":  {p.AvgInputTokens, 512, 1e-6},
		"output tokens": {p.AvgOutputTokens, 128, 1e-6},
		"TTFT ms":       {p.AvgTTFTMs, 90, 1e-6},
		"ITL ms":        {p.AvgITLMs, 12, 1e-6},
		"KV usage":      {p.KVCacheUsage, 0.4219, 1e-9},
		"waiting":       {p.WaitingRequests, 2, 0},
		"running":       {p.RunningRequests, 14, 0},
		"preemptions/s": {p.PreemptionsPerSec, 0.03, 1e-3},
	} {
		if math.Abs(c.got-c.want) > c.tol*math.Max(c.want, 1) {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	if p.KVBlocks != 27512 || p.BlockSize != 16 {
		t.Errorf("cache geometry: %d blocks of %d", p.KVBlocks, p.BlockSize)
	}
	// The histograms by le, in order, ending at +Inf: 371 of 500 TTFTs
	// within 0.1 s, 480 of 500 requests' time per output token within
	// 25 ms (the window's increase scales every bucket alike).
	checkBuckets(t, "TTFT", p.TTFTBuckets, 23, 0.1, 371.0/500)
	checkBuckets(t, "TPOT", p.TPOTBuckets, 20, 0.025, 480.0/500)
}

// checkBuckets: h has n buckets, the last +Inf, and the share share of
// its count at bound le.
func checkBuckets(t *testing.T, name string, h []engine.Bucket, n int, le, share float64) {
	t.Helper()
	if len(h) != n || !math.IsInf(h[len(h)-1].UpperBound, 1) {
		t.Errorf("%s histogram: %d buckets (want %d, the last +Inf): %v", name, len(h), n, h)
		return
	}
	for _, b := range h {
		if got := b.Count / h[len(h)-1].Count; b.UpperBound == le && math.Abs(got-share) > 1e-6 {
			t.Errorf("%s histogram: share within %v s = %v, want %v", name, le, got, share)
		}
	}
}
