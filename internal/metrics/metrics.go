// Package metrics publishes WVA's decisions as Prometheus metrics, the
// interface HPA (External metric) and KEDA (prometheus scaler) read: per
// variant the desired and current replicas and their ratio, a counter of
// scaling decisions, holds, the queueing model's figures, and the
// controller's own health figures (docs/metrics.md).
package metrics

import (
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
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
//
// Each decision series is published under two names: the seeds' inferno_*
// and the upstream llm-d autoscaler's wva_* (what its HPA and KServe
// integrations select), with the same labels and values, so that objects
// written for either keep working.
type Emitter struct {
	mu                      sync.Mutex
	desired, current, ratio []*prometheus.GaugeVec
	scaling                 []*prometheus.CounterVec
	cycle                   prometheus.Histogram
	errors                  prometheus.Counter
	tuner                   *prometheus.CounterVec
	tunerDeferred           prometheus.Counter
	lastSuccess             prometheus.Gauge
	buildInfo               *prometheus.GaugeVec
	held                    *prometheus.GaugeVec
	unresolved              *prometheus.GaugeVec
	info                    *prometheus.GaugeVec
	model                   modelSeries
	variant                 variantSeries
	// published are the label sets of the last plan, so that a variant
	// that disappears stops being reported instead of going stale.
	published map[[3]string]bool
	// unresolvedKeys are the {namespace, reason} pairs last published
	// by SetUnresolved.
	unresolvedKeys map[[2]string]bool
	// infoModel is the model each variant's wva_variant_info names.
	infoModel map[[3]string]string
	// heldCause is the cause each held variant was published with.
	heldCause map[[3]string]string
	// counted is the desired count each variant's last counted scaling
	// decision asked for: a decision repeated cycle after cycle (while HPA
	// applies it) is one scaling decision, not one per cycle.
	counted map[[3]string]int
}

// modelSeries are the model-level figures behind the decisions.
type modelSeries struct {
	demand, planned, sloTTFT, sloITL *prometheus.GaugeVec
	// cost is the plan's cost for the model by the rule that asks for
	// each replica (engine.Breakdown): the price of each kind of headroom.
	cost      *prometheus.GaugeVec
	published map[[2]string]bool
}

// variantSeries are the queueing model's figures per variant: the
// capacity of one replica within the SLO and the performance parameters
// it was sized with, with their standard deviation when learned.
type variantSeries struct {
	capacity, param, paramSD *prometheus.GaugeVec
}

// LabelModel and LabelParameter label the model-level and parameter series.
const (
	LabelModel     = "model_id"
	LabelParameter = "parameter"
	LabelCause     = "cause"
	// LabelRule names a part of the plan's cost breakdown.
	LabelRule = "rule"
)

// decisionNames are the prefixes the decision series are published under.
var decisionNames = []string{"inferno", "wva"}

// NewEmitter registers the metrics with reg.
func NewEmitter(reg prometheus.Registerer) (*Emitter, error) {
	if reg == nil {
		return nil, errors.New("metrics: a registerer is required")
	}
	labels := []string{LabelVariant, LabelNamespace, LabelAccelerator}
	scalingLabels := []string{LabelVariant, LabelNamespace, LabelAccelerator, LabelDirection, LabelReason}
	modelLabels := []string{LabelModel, LabelNamespace}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	e := &Emitter{
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wva_cycle_duration_seconds",
			Help: "Duration of an optimisation cycle (collect, plan, publish).", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "wva_engine_errors_total",
			Help: "Cycles whose plan failed; the last good decision was held."}),
		tuner: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wva_tuner_steps_total",
			Help: "Tuner steps by result (accepted or rejected)."}, []string{"result"}),
		tunerDeferred: prometheus.NewCounter(prometheus.CounterOpts{Name: "wva_tuner_steps_deferred_total",
			Help: "Tuner steps the tuning budget (tuning-budget) put off to a later cycle: variants with an observation beyond the budget."}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "wva_last_successful_cycle_timestamp_seconds",
			Help: "Unix time at which the last optimisation cycle that produced a plan ended."}),
		buildInfo: gauge("wva_build_info", "Always 1; the labels say which build of the controller runs.", "version", "revision", "goversion"),
		held: gauge("wva_variant_held", "1 while the variant is held at its last good decision because its metrics are unusable; the cause says why (missing, stale, invalid, implausible, prometheus-error).",
			append(labels, LabelCause)...),
		unresolved: gauge("wva_variants_unresolved", "VariantAutoscalings the last cycle could not plan because of their target, by reason: TargetConflict (another, older VariantAutoscaling targets the same Deployment) or TargetNotFound (the Deployment does not exist).",
			LabelNamespace, LabelReason),
		info: gauge("wva_variant_info", "Always 1 while the variant is planned; model_id names its model, to join the variant series (which have no model label) with the model series.",
			append(labels, LabelModel)...),
		model: modelSeries{
			demand:  gauge("wva_model_demand_rps", "Arrival rate of the model's requests the last cycle measured, requests/s.", modelLabels...),
			planned: gauge("wva_model_planned_rps", "Demand the queueing model sized for: the arrival rate raised to the forecast's quantile over the provisioning horizon, requests/s.", modelLabels...),
			sloTTFT: gauge("wva_model_slo_ttft_seconds", "TTFT target the model was sized against.", modelLabels...),
			sloITL:  gauge("wva_model_slo_itl_seconds", "ITL target the model was sized against.", modelLabels...),
			cost: gauge("wva_model_cost", "Cost of the model's desired replicas (per hour, in the units of the accelerator costs) by the rule that asks for each replica: need (the queueing model's target for the demand now), spare (the forecast's), backlog, saturation, safetyBlock, window, other, unsized, held.",
				LabelModel, LabelNamespace, LabelRule),
			published: map[[2]string]bool{},
		},
		variant: variantSeries{
			capacity: gauge("wva_variant_capacity_per_replica_rps", "Requests/s one replica of the variant serves within the SLO, by the queueing model.", labels...),
			param:    gauge("wva_variant_parameter", "Performance parameter the variant was sized with (alpha ms, beta ms/token, gamma ms/token², delta).", append(labels, LabelParameter)...),
			paramSD:  gauge("wva_variant_parameter_stddev", "Standard deviation of a learned performance parameter, from the tuner's covariance.", append(labels, LabelParameter)...),
		},
		published:      map[[3]string]bool{},
		heldCause:      map[[3]string]string{},
		unresolvedKeys: map[[2]string]bool{},
		infoModel:      map[[3]string]string{},
		counted:        map[[3]string]int{},
	}
	for _, prefix := range decisionNames {
		e.desired = append(e.desired, gauge(prefix+"_desired_replicas", "Replicas WVA wants for the variant (what HPA or KEDA should apply).", labels...))
		e.current = append(e.current, gauge(prefix+"_current_replicas", "Replicas the variant has (starting and ready).", labels...))
		e.ratio = append(e.ratio, gauge(prefix+"_desired_ratio", "Desired over current replicas; the desired count when the variant has none.", labels...))
		e.scaling = append(e.scaling, prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "_replica_scaling_total",
			Help: "Scaling decisions, by direction (up or down) and reason; a decision repeated while it is applied counts once."}, scalingLabels))
	}
	cs := []prometheus.Collector{e.cycle, e.errors, e.tuner, e.tunerDeferred, e.lastSuccess, e.buildInfo, e.held, e.unresolved, e.info,
		e.model.demand, e.model.planned, e.model.sloTTFT, e.model.sloITL, e.model.cost, e.variant.capacity, e.variant.param, e.variant.paramSD}
	for i := range decisionNames {
		cs = append(cs, e.desired[i], e.current[i], e.ratio[i], e.scaling[i])
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// SetBuildInfo publishes wva_build_info for this build: version is the
// release (the one --version prints); the revision and Go version come
// from the binary's build information.
func (e *Emitter) SetBuildInfo(version string) {
	revision, goVersion := "unknown", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	e.buildInfo.Reset()
	e.buildInfo.WithLabelValues(version, revision, goVersion).Set(1)
}

// Publish sets the decision series from a plan and counts its scaling
// decisions. Variants and models of the previous plan that are not in this
// one are removed.
func (e *Emitter) Publish(p *engine.Plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := map[[3]string]bool{}
	for _, d := range p.Variants {
		k := [3]string{d.Variant, d.Namespace, d.Accelerator}
		now[k] = true
		e.setDecision(k, d)
		e.setInfo(k, d.Model)
		e.setHeld(k, d)
		e.setQueueing(k, d.Queueing)
		e.count(k, d)
	}
	for k := range e.published {
		if !now[k] {
			e.forget(k)
		}
	}
	e.published = now
	e.publishModels(p.Models)
}

// SetUnresolved publishes wva_variants_unresolved: counts maps
// {namespace, reason} to the number of VariantAutoscalings in that state.
// Pairs of the previous call that are absent now are removed (a resolved
// conflict stops being reported rather than reading 0 forever).
func (e *Emitter) SetUnresolved(counts map[[2]string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.unresolvedKeys {
		if counts[k] == 0 {
			e.unresolved.DeleteLabelValues(k[:]...)
			delete(e.unresolvedKeys, k)
		}
	}
	for k, n := range counts {
		if n > 0 {
			e.unresolved.WithLabelValues(k[:]...).Set(float64(n))
			e.unresolvedKeys[k] = true
		}
	}
}

// setDecision sets the desired, current and ratio series under each name.
func (e *Emitter) setDecision(k [3]string, d engine.VariantDecision) {
	for i := range decisionNames {
		e.desired[i].WithLabelValues(k[:]...).Set(float64(d.Desired))
		e.current[i].WithLabelValues(k[:]...).Set(float64(d.Current))
		e.ratio[i].WithLabelValues(k[:]...).Set(Ratio(d.Desired, d.Current))
	}
}

// setHeld publishes the held gauge while the variant is held, with its
// cause, and removes it once the variant is decided again.
func (e *Emitter) setHeld(k [3]string, d engine.VariantDecision) {
	cause := ""
	if d.Reason == engine.ReasonHoldMetrics {
		cause = string(d.Hold)
		if cause == "" {
			cause = "unknown"
		}
	}
	if old, ok := e.heldCause[k]; ok && old != cause {
		e.held.DeleteLabelValues(k[0], k[1], k[2], old)
		delete(e.heldCause, k)
	}
	if cause != "" {
		e.held.WithLabelValues(k[0], k[1], k[2], cause).Set(1)
		e.heldCause[k] = cause
	}
}

// parameterNames are the parameter label's values, in tuner.Params' order.
var parameterNames = [4]string{"alpha", "beta", "gamma", "delta"}

// setQueueing publishes the queueing model's figures for the variant, or
// removes them when the model did not size it this cycle.
func (e *Emitter) setQueueing(k [3]string, q *engine.ModelDetail) {
	e.deleteQueueing(k)
	if q == nil || q.Error != "" || q.Params == nil {
		return
	}
	e.variant.capacity.WithLabelValues(k[:]...).Set(q.CapacityPerReplicaRPS)
	values := func(p *tuner.Params) [4]float64 { return [4]float64{p.Alpha, p.Beta, p.Gamma, p.Delta} }
	v := values(q.Params)
	for i, name := range parameterNames {
		if name == "delta" && v[i] == 0 {
			continue // only the linear service model has δ
		}
		e.variant.param.WithLabelValues(k[0], k[1], k[2], name).Set(v[i])
		if q.ParamsStdDev != nil {
			e.variant.paramSD.WithLabelValues(k[0], k[1], k[2], name).Set(values(q.ParamsStdDev)[i])
		}
	}
}

// deleteQueueing removes a variant's queueing-model series.
func (e *Emitter) deleteQueueing(k [3]string) {
	e.variant.capacity.DeleteLabelValues(k[:]...)
	for _, name := range parameterNames {
		e.variant.param.DeleteLabelValues(k[0], k[1], k[2], name)
		e.variant.paramSD.DeleteLabelValues(k[0], k[1], k[2], name)
	}
}

// forget removes every series of a variant no longer planned.
func (e *Emitter) forget(k [3]string) {
	for i := range decisionNames {
		e.desired[i].DeleteLabelValues(k[:]...)
		e.current[i].DeleteLabelValues(k[:]...)
		e.ratio[i].DeleteLabelValues(k[:]...)
	}
	if cause, ok := e.heldCause[k]; ok {
		e.held.DeleteLabelValues(k[0], k[1], k[2], cause)
		delete(e.heldCause, k)
	}
	e.deleteQueueing(k)
	delete(e.counted, k)
	if m, ok := e.infoModel[k]; ok {
		e.info.DeleteLabelValues(k[0], k[1], k[2], m)
		delete(e.infoModel, k)
	}
}

// setInfo publishes wva_variant_info for the variant's model (replacing
// the series of a model it served before).
func (e *Emitter) setInfo(k [3]string, model string) {
	if m, ok := e.infoModel[k]; ok && m != model {
		e.info.DeleteLabelValues(k[0], k[1], k[2], m)
	}
	e.infoModel[k] = model
	e.info.WithLabelValues(k[0], k[1], k[2], model).Set(1)
}

// publishModels sets the model-level series; a model's SLO series exist
// only while the queueing model resolved an SLO for it.
func (e *Emitter) publishModels(models []engine.ModelSummary) {
	ms := &e.model
	now := map[[2]string]bool{}
	for _, m := range models {
		k := [2]string{m.Model, m.Namespace}
		now[k] = true
		ms.demand.WithLabelValues(k[:]...).Set(m.DemandRPS)
		ms.planned.WithLabelValues(k[:]...).Set(math.Max(m.PlannedRPS, m.DemandRPS))
		ms.sloTTFT.DeleteLabelValues(k[:]...)
		ms.sloITL.DeleteLabelValues(k[:]...)
		if m.SLOTTFTMs > 0 {
			ms.sloTTFT.WithLabelValues(k[:]...).Set(m.SLOTTFTMs / 1000)
		}
		if m.SLOITLMs > 0 {
			ms.sloITL.WithLabelValues(k[:]...).Set(m.SLOITLMs / 1000)
		}
		ms.setCost(k, m.CostBreakdown)
	}
	for k := range ms.published {
		if !now[k] {
			for _, g := range []*prometheus.GaugeVec{ms.demand, ms.planned, ms.sloTTFT, ms.sloITL} {
				g.DeleteLabelValues(k[:]...)
			}
			ms.setCost(k, nil)
		}
	}
	ms.published = now
}

// setCost publishes every part of the model's cost breakdown (zeros
// included, so that a dashboard's stack keeps its series), or removes them
// when the plan has none.
func (ms *modelSeries) setCost(k [2]string, b *engine.Breakdown) {
	if b == nil {
		ms.cost.DeletePartialMatch(prometheus.Labels{LabelModel: k[0], LabelNamespace: k[1]})
		return
	}
	for _, p := range b.Parts() {
		ms.cost.WithLabelValues(k[0], k[1], p.Name).Set(p.Value)
	}
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
	for _, c := range e.scaling {
		c.WithLabelValues(d.Variant, d.Namespace, d.Accelerator, dir, string(d.Reason)).Inc()
	}
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

// CycleSucceeded records the time at which a cycle that produced a plan
// ended (wva_last_successful_cycle_timestamp_seconds): an alert on its age
// catches a controller that runs but no longer decides.
func (e *Emitter) CycleSucceeded(at time.Time) {
	e.lastSuccess.Set(float64(at.UnixNano()) / 1e9)
}

// TunerStep counts a tuner step.
func (e *Emitter) TunerStep(accepted bool) {
	if accepted {
		e.tuner.WithLabelValues("accepted").Inc()
	} else {
		e.tuner.WithLabelValues("rejected").Inc()
	}
}

// TunerStepsDeferred counts n tuner steps the tuning budget deferred.
func (e *Emitter) TunerStepsDeferred(n int) {
	if n > 0 {
		e.tunerDeferred.Add(float64(n))
	}
}

// Wake publishes a scale-from-zero decision between cycles: the variant's
// series are set to the decision and the scale-up is counted. Other
// variants are left as the last plan published them.
func (e *Emitter) Wake(d engine.VariantDecision) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := [3]string{d.Variant, d.Namespace, d.Accelerator}
	e.setDecision(k, d)
	e.count(k, d)
	e.published[k] = true
}
