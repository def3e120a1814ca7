package sim

import (
	"context"
	"math"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
	"github.com/llm-d-incubation/wva/internal/sim/server"
)

// sample is one scrape of a pod, like Prometheus storing vLLM's metrics.
type sample struct {
	t        float64
	c        server.Counters
	kv       float64
	waiting  float64
	running  float64
	kvBlocks int
}

// scrape records every serving pod's counters and gauges.
func (s *Sim) scrape() {
	keep := s.sc.Scrape.WindowSeconds + s.sc.Scrape.DelaySeconds + 3*s.sc.Scrape.IntervalSeconds
	for _, v := range s.variants {
		for _, r := range v.replicas {
			if r.state != ready && r.state != terminating {
				continue
			}
			r.samples = append(r.samples, sample{t: s.now, c: r.Counters(), kv: r.KVUsage(),
				waiting: float64(r.QueueLen()), running: float64(len(r.Running())), kvBlocks: v.cfg.KVBlocks})
			r.samples = prune(r.samples, s.now-keep)
		}
	}
	for _, st := range s.streams {
		st.scrapes = append(st.scrapes, gatewaySample{t: s.now, count: st.count})
		st.scrapes = prune(st.scrapes, s.now-keep)
	}
}

// A timed is a scrape: a pod's sample or a gateway's count.
type timed interface{ at() float64 }

func (x sample) at() float64        { return x.t }
func (x gatewaySample) at() float64 { return x.t }

// prune drops the scrapes older than before, keeping at least the last
// two (a rate needs two).
func prune[T timed](xs []T, before float64) []T {
	drop := 0
	for drop < len(xs)-2 && xs[drop].at() < before {
		drop++
	}
	if drop > 0 {
		xs = append(xs[:0], xs[drop:]...)
	}
	return xs
}

// window is what a range query over the scrapes xs reads at now: xs[last]
// is the latest scrape the pipeline's delay lets through, xs[first] the
// earliest within the window before it; ok is false before the first
// scrape gets through.
func window[T timed](xs []T, now float64, p scenario.Scrape) (first, last int, ok bool) {
	cutoff := now - p.DelaySeconds
	last = -1
	for i := len(xs) - 1; i >= 0; i-- {
		if xs[i].at() <= cutoff {
			last = i
			break
		}
	}
	if last < 0 {
		return 0, 0, false
	}
	first = last
	for i := last; i >= 0 && xs[i].at() >= xs[last].at()-p.WindowSeconds; i-- {
		first = i
	}
	return first, last, true
}

// gatewayRate is a model's arrival rate at the gateway as the autoscalers
// read it: rate(requests[window]) through the pipeline's delay; -1 before
// two samples exist.
func (s *Sim) gatewayRate(m int) float64 {
	sc := s.streams[m].scrapes
	first, last, ok := window(sc, s.now, s.sc.Scrape)
	if !ok {
		return -1
	}
	if dt := sc[last].t - sc[first].t; dt > 0 {
		return float64(sc[last].count-sc[first].count) / dt
	}
	return -1
}

// View is what an autoscaler sees at one decision time: replica counts
// from the orchestrator and pod metrics through the Prometheus-like
// pipeline (scraped every interval, read with a delay, 1-minute rates and
// max_over_time gauges).
type View struct {
	Now      float64
	Scenario *scenario.Scenario
	Variants []VariantView
	// GatewayWaiting per model: requests held for lack of a ready replica.
	GatewayWaiting []int
	// GatewayArrivalRPS per model: the rate of requests reaching the
	// gateway, read like the pods' rates (-1 until two scrapes exist).
	// Unlike the sum over pods it includes requests served by pods that
	// have since been removed.
	GatewayArrivalRPS []float64
	// EPP reads the endpoint picker's metrics, for an autoscaler that
	// uses them (nil otherwise).
	EPP *EPPMetrics
	// ctx is the run's: an autoscaler that does long work in Decide (the
	// bounds' capacity measurements) stops when the run is cancelled.
	ctx context.Context
}

// VariantView is one variant as seen by an autoscaler.
type VariantView struct {
	Model                  int
	Name, Accelerator      string
	AcceleratorsPerReplica int
	Cost                   float64
	MinReplicas            int
	MaxReplicas            int
	Current, Ready         int // Current counts starting and ready replicas
	Pods                   []PodMetrics
	// Members are the variant's starting and ready pods, as the
	// controller lists them from the API (in the full view only).
	Members []Member
	Config  *scenario.Variant // the truth (for the oracle and profiled runs)
}

// Member is a pod as the Kubernetes API shows it: its name, whether it is
// ready, and the drain mark an autoscaler put on it.
type Member struct {
	Name       string
	Ready      bool
	Draining   bool
	DrainSince float64
}

// PodMetrics is one pod's metrics as a PromQL query would return them.
type PodMetrics struct {
	Name       string
	AgeSeconds float64
	// StartupSeconds is how long the pod took from its creation to Ready,
	// as Kubernetes records both (creationTimestamp, the Ready
	// condition's lastTransitionTime).
	StartupSeconds  float64
	ArrivalRateRPS  float64 // rate(requests finished[1m]): vLLM's request_success_total, as the collector reads it
	AvgInputTokens  float64
	AvgOutputTokens float64
	AvgTTFTMs       float64 // Δsum/Δcount of the TTFT histogram
	AvgITLMs        float64
	KVCacheUsage    float64 // max_over_time[1m]
	WaitingRequests float64 // max_over_time[1m]
	RunningRequests float64
	// PreemptionsPerSec is rate(preemptions[1m]): vLLM's
	// num_preemptions_total over the window.
	PreemptionsPerSec float64
	KVBlocks          int
	BlockSize         int
	MaxBatchSize      int
	HasRates          bool // two samples in the window
	// TTFTBuckets and TPOTBuckets are increase(<histogram>_bucket[1m]) of
	// the TTFT and per-request time-per-output-token histograms:
	// cumulative counts at server.TTFTBucketBounds and TPOTBucketBounds,
	// then +Inf.
	TTFTBuckets, TPOTBuckets []float64
}

// view is what the autoscalers see now; without pods, the pods' metrics
// are left out (the fast loop's view).
func (s *Sim) view(pods bool) *View {
	v := &View{Now: s.now, Scenario: &s.sc, ctx: s.ctx, GatewayWaiting: make([]int, len(s.sc.Models)), GatewayArrivalRPS: make([]float64, len(s.sc.Models))}
	for m := range s.sc.Models {
		v.GatewayArrivalRPS[m] = s.gatewayRate(m)
	}
	if s.epp != nil {
		v.EPP = &EPPMetrics{st: s.epp, now: s.now, delay: s.sc.Scrape.DelaySeconds}
	}
	for m, g := range s.gateway {
		for _, q := range g {
			if !q.failed {
				v.GatewayWaiting[m]++
			}
		}
	}
	for _, rt := range s.variants {
		cfg := rt.cfg
		vv := VariantView{Model: rt.model, Name: cfg.Name, Accelerator: cfg.Accelerator, AcceleratorsPerReplica: cfg.AcceleratorsPerReplica,
			Cost: cfg.Cost, MinReplicas: cfg.MinReplicas, MaxReplicas: cfg.MaxReplicas, Config: &rt.cfg}
		for _, r := range rt.replicas {
			if pods && (r.state == starting || r.state == ready) {
				vv.Members = append(vv.Members, Member{Name: podName(r), Ready: r.state == ready, Draining: r.draining, DrainSince: r.drainSince})
			}
			switch r.state {
			case starting:
				vv.Current++
			case ready:
				vv.Current++
				vv.Ready++
				if !pods {
					continue
				}
				if pm, ok := s.podMetrics(r); ok {
					vv.Pods = append(vv.Pods, pm)
				}
			}
		}
		v.Variants = append(v.Variants, vv)
	}
	return v
}

// podMetrics reads a pod's metrics at the current time through the
// pipeline's delay and window.
func (s *Sim) podMetrics(r *replica) (PodMetrics, bool) {
	first, last, ok := window(r.samples, s.now, s.sc.Scrape)
	if !ok {
		return PodMetrics{}, false
	}
	s1 := r.samples[last]
	pm := PodMetrics{Name: podName(r), AgeSeconds: s.now - r.readyAt, StartupSeconds: r.startup, KVBlocks: r.v.cfg.KVBlocks, BlockSize: r.v.cfg.BlockSize,
		MaxBatchSize: r.v.cfg.MaxBatchSize, RunningRequests: s1.running}
	for i := last; i >= first; i-- {
		pm.KVCacheUsage = math.Max(pm.KVCacheUsage, r.samples[i].kv)
		pm.WaitingRequests = math.Max(pm.WaitingRequests, r.samples[i].waiting)
	}
	s0 := r.samples[first]
	if dt := s1.t - s0.t; dt > 0 {
		pm.HasRates = true
		d := diff(s1.c, s0.c)
		pm.ArrivalRateRPS = d.Completed / dt
		if d.TTFTCount > 0 {
			pm.AvgTTFTMs = 1000 * d.TTFTSum / d.TTFTCount
			pm.AvgInputTokens = d.PromptTokens / d.TTFTCount
		}
		if d.ITLCount > 0 {
			pm.AvgITLMs = 1000 * d.ITLSum / d.ITLCount
		}
		if d.Completed > 0 {
			pm.AvgOutputTokens = d.GenerationTokens / d.Completed
		}
		pm.PreemptionsPerSec = d.Preempted / dt
		pm.TTFTBuckets, pm.TPOTBuckets = cumulative(d.TTFTBuckets[:]), cumulative(d.TPOTBuckets[:])
	}
	return pm, true
}

// cumulative turns counts per bucket into Prometheus' cumulative ones.
func cumulative(counts []float64) []float64 {
	out := make([]float64, len(counts))
	c := 0.0
	for i, n := range counts {
		c += n
		out[i] = c
	}
	return out
}

func diff(a, b server.Counters) server.Counters {
	d := server.Counters{Arrived: a.Arrived - b.Arrived, Completed: a.Completed - b.Completed, TTFTSum: a.TTFTSum - b.TTFTSum,
		TTFTCount: a.TTFTCount - b.TTFTCount, ITLSum: a.ITLSum - b.ITLSum, ITLCount: a.ITLCount - b.ITLCount,
		PromptTokens: a.PromptTokens - b.PromptTokens, GenerationTokens: a.GenerationTokens - b.GenerationTokens,
		Preempted: a.Preempted - b.Preempted}
	for i := range d.TTFTBuckets {
		d.TTFTBuckets[i] = a.TTFTBuckets[i] - b.TTFTBuckets[i]
	}
	for i := range d.TPOTBuckets {
		d.TPOTBuckets[i] = a.TPOTBuckets[i] - b.TPOTBuckets[i]
	}
	return d
}

// Context is the run's context (Background outside a run): an autoscaler
// that does long work in Decide stops when it is done.
func (v *View) Context() context.Context {
	if v.ctx == nil {
		return context.Background()
	}
	return v.ctx
}
