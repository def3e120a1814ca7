// Package metrics publishes WVA's decisions as Prometheus metrics, the
// interface HPA (External metric) and KEDA (prometheus scaler) read (seed
// 000 §11.8): per variant the desired and current replicas and their
// ratio, a counter of scaling decisions, and the controller's own health
// figures.
package metrics

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llm-d-incubation/wva/internal/engine"
)

// The labels of the decision series (the WVA HPA guide's names, so existing HPA
// and KEDA objects keep selecting them).
const (
	LabelVariant     = "variant_name"
	LabelNamespace   = "namespace"
	LabelAccelerator = "accelerator_type"
	LabelDirection   = "direction"
	LabelReason      = "reason"
)

// Emitter holds the metrics. Publish one plan per cycle. It is safe for
// concurrent use (the planner and the scale-from-zero loop both publish).
type Emitter struct {
	mu                      sync.Mutex
	desired, current, ratio *prometheus.GaugeVec
	scaling                 *prometheus.CounterVec
	cycle                   prometheus.Histogram
	errors                  prometheus.Counter
	tuner                   *prometheus.CounterVec
	// published are the label sets of the last plan, so that a variant
	// that disappears stops being reported instead of going stale.
	published map[[3]string]bool
	// counted is the desired count each variant's last counted scaling
	// decision asked for: a decision repeated cycle after cycle (while HPA
	// applies it) is one scaling decision, not one per cycle.
	counted map[[3]string]int
}

// NewEmitter registers the metrics with reg.
func NewEmitter(reg prometheus.Registerer) (*Emitter, error) {
	if reg == nil {
		return nil, errors.New("metrics: a registerer is required")
	}
	labels := []string{LabelVariant, LabelNamespace, LabelAccelerator}
	scalingLabels := []string{LabelVariant, LabelNamespace, LabelAccelerator, LabelDirection, LabelReason}
	e := &Emitter{
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inferno_desired_replicas",
			Help: "Replicas WVA wants for the variant (what HPA or KEDA should apply)."}, labels),
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inferno_current_replicas",
			Help: "Replicas the variant has (starting and ready)."}, labels),
		ratio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inferno_desired_ratio",
			Help: "Desired over current replicas; the desired count when the variant has none."}, labels),
		scaling: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inferno_replica_scaling_total",
			Help: "Scaling decisions, by direction (up or down) and reason; a decision repeated while it is applied counts once."}, scalingLabels),
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wva_cycle_duration_seconds",
			Help: "Duration of an optimisation cycle (collect, plan, publish).", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "wva_engine_errors_total",
			Help: "Cycles whose plan failed; the last good decision was held."}),
		tuner: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wva_tuner_steps_total",
			Help: "Tuner steps by result (accepted or rejected)."}, []string{"result"}),
		published: map[[3]string]bool{},
		counted:   map[[3]string]int{},
	}
	for _, c := range []prometheus.Collector{e.desired, e.current, e.ratio, e.scaling, e.cycle, e.errors, e.tuner} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Publish sets the decision series from a plan and counts its scaling
// decisions. Variants of the previous plan that are not in this one are
// removed.
func (e *Emitter) Publish(p *engine.Plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := map[[3]string]bool{}
	for _, d := range p.Variants {
		k := [3]string{d.Variant, d.Namespace, d.Accelerator}
		now[k] = true
		e.desired.WithLabelValues(k[:]...).Set(float64(d.Desired))
		e.current.WithLabelValues(k[:]...).Set(float64(d.Current))
		e.ratio.WithLabelValues(k[:]...).Set(Ratio(d.Desired, d.Current))
		e.count(k, d)
	}
	for k := range e.published {
		if !now[k] {
			e.desired.DeleteLabelValues(k[:]...)
			e.current.DeleteLabelValues(k[:]...)
			e.ratio.DeleteLabelValues(k[:]...)
			delete(e.counted, k)
		}
	}
	e.published = now
}

// count counts a scaling decision once: when the variant's desired count
// differs from its current one and from the last decision counted. A hold
// is not a decision.
func (e *Emitter) count(k [3]string, d engine.VariantDecision) {
	if d.Desired == d.Current {
		delete(e.counted, k)
		return
	}
	if last, ok := e.counted[k]; (ok && last == d.Desired) || d.Reason == engine.ReasonHoldMetrics {
		return
	}
	e.counted[k] = d.Desired
	dir := "up"
	if d.Desired < d.Current {
		dir = "down"
	}
	e.scaling.WithLabelValues(d.Variant, d.Namespace, d.Accelerator, dir, string(d.Reason)).Inc()
}

// Ratio is desired/current, or desired when current is 0 (a variant
// waking from zero), so the series is always finite.
func Ratio(desired, current int) float64 {
	if current == 0 {
		return float64(desired)
	}
	return float64(desired) / float64(current)
}

// CycleDone records a cycle's duration and whether its plan failed.
func (e *Emitter) CycleDone(d time.Duration, failed bool) {
	e.cycle.Observe(d.Seconds())
	if failed {
		e.errors.Inc()
	}
}

// TunerStep counts a tuner step.
func (e *Emitter) TunerStep(accepted bool) {
	if accepted {
		e.tuner.WithLabelValues("accepted").Inc()
	} else {
		e.tuner.WithLabelValues("rejected").Inc()
	}
}

// Wake publishes a scale-from-zero decision between cycles: the variant's
// series are set to the decision and the scale-up is counted. Other
// variants are left as the last plan published them.
func (e *Emitter) Wake(d engine.VariantDecision) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := [3]string{d.Variant, d.Namespace, d.Accelerator}
	e.desired.WithLabelValues(k[:]...).Set(float64(d.Desired))
	e.current.WithLabelValues(k[:]...).Set(float64(d.Current))
	e.ratio.WithLabelValues(k[:]...).Set(Ratio(d.Desired, d.Current))
	e.count(k, d)
	e.published[k] = true
}
