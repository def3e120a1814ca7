package sim

import (
	"context"
	"testing"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// rateRecorder keeps the first pod's request rate at each decision.
type rateRecorder struct {
	at, rates []float64
}

func (r *rateRecorder) Name() string      { return "recorder" }
func (r *rateRecorder) Interval() float64 { return 30 }
func (r *rateRecorder) Decide(v *View) []int {
	if pods := v.Variants[0].Pods; len(pods) > 0 {
		r.at = append(r.at, v.Now)
		r.rates = append(r.rates, pods[0].ArrivalRateRPS)
	}
	return []int{-1}
}

// TestPodRateCountsFinishedRequests: a pod's request rate is what the
// collector reads, rate(vllm:request_success_total) — the requests it
// finished, not those routed to it. On one replica that serves about 4
// requests/s (a batch of 8 requests of 256 output tokens at ~8 ms a step)
// under 20 arriving a second, the two differ fivefold; the rate the
// autoscaler sees must be the server's throughput.
func TestPodRateCountsFinishedRequests(t *testing.T) {
	sc := oneReplica(20, tuner.Params{Alpha: 7, Beta: 0.02, Gamma: 5e-5}, 8, 600)
	rec := &rateRecorder{}
	res := New(sc, rec).Run(context.Background(), nil)
	served := float64(res.Completed) / res.DurationSecs
	if !(served < 10) {
		t.Fatalf("the replica finished %.2f requests/s: the case needs it overloaded", served)
	}
	n := 0
	for i, r := range rec.rates {
		if rec.at[i] < 120 || rec.at[i] > 600 {
			continue
		}
		n++
		if r < 0.7*served || r > 1.3*served {
			t.Errorf("at %.0f s the pod reports %.2f requests/s; it finishes %.2f (20 arrive)", rec.at[i], r, served)
		}
	}
	if n == 0 {
		t.Fatal("no pod metrics between 120 and 600 s")
	}
}
