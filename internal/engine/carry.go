// What a cycle carries from the previous ones, copied out of the engine
// and put back: the controller serves it beside each cycle's snapshot, and
// `wva plan` starts from it, so that a live decision can be replayed
// (docs/plan.md, "Replaying a live decision").

package engine

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llm-d-incubation/wva/internal/queueing"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// Carried is the part of the State that decides a cycle, for some models,
// by model and variant: the form a snapshot file holds it in. What the
// fast loop alone reads (its surge baseline) is left out.
type Carried struct {
	Models []CarriedModel `json:"models"`
}

// CarriedModel is what the engine carries for one model.
type CarriedModel struct {
	Namespace string `json:"namespace,omitempty"`
	Model     string `json:"model"`
	// LastTraffic is when the model last saw a request (its idle time for
	// scale to zero).
	LastTraffic *time.Time `json:"lastTraffic,omitempty"`
	// Forecast is its arrival-rate forecaster (model-only and hybrid).
	Forecast *Forecast `json:"forecast,omitempty"`
	// Feedback is its attainment feedback (docs/engine.md §3 item 11).
	Feedback *Feedback        `json:"feedback,omitempty"`
	Variants []CarriedVariant `json:"variants,omitempty"`
}

// CarriedVariant is what the engine carries for one variant.
type CarriedVariant struct {
	Name string `json:"name"`
	// LastGood is its last decision made from good metrics: a variant
	// whose metrics cannot be used holds it.
	LastGood *int `json:"lastGood,omitempty"`
	// Recommendations are its scale-down stabilisation window.
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	// Provisioning is its learned time from scale-up to Ready.
	Provisioning *Provisioning `json:"provisioning,omitempty"`
	// Sizing is where its last capacity search ended, the next one's
	// start (it moves the answer within the search's tolerance at most).
	Sizing *SizingHints `json:"sizing,omitempty"`
	// Learned is the tuner's record of the variant (its learned
	// parameters), as the controller persists it; only for a cycle that
	// tunes (config.tuningEnabled), the only one that reads it.
	Learned *tuner.Record `json:"learned,omitempty"`
}

// SizingHints are queueing.Hints as a snapshot file holds them.
type SizingHints struct {
	TTFTRPS float64 `json:"ttftRps"`
	ITLRPS  float64 `json:"itlRps"`
}

// Carried returns a copy of what the engine carries into a cycle on s, for
// s's models and variants, with their learned parameters when s tunes. It
// is taken under the engine's lock (the fast loop may change the state
// meanwhile) and shares nothing with the engine.
func (e *Engine) Carried(s *Snapshot) (Carried, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := Carried{Models: make([]CarriedModel, 0, len(s.Models))}
	for i := range s.Models {
		m := &s.Models[i]
		cm := CarriedModel{Namespace: m.Namespace, Model: m.ID}
		mk := modelKey(m.Namespace, m.ID)
		if t, ok := e.state.LastTraffic[mk]; ok {
			cm.LastTraffic = &t
		}
		if f := e.state.Forecasts[mk]; f != nil {
			fc := *f
			cm.Forecast = &fc
		}
		if f := e.state.Feedback[mk]; f != nil {
			fc := *f
			cm.Feedback = &fc
		}
		for _, v := range m.Variants {
			cv, err := e.carriedVariant(m, v.Name, s.Config.TuningEnabled)
			if err != nil {
				return Carried{}, err
			}
			cm.Variants = append(cm.Variants, cv)
		}
		out.Models = append(out.Models, cm)
	}
	return out, nil
}

func (e *Engine) carriedVariant(m *Model, name string, learned bool) (CarriedVariant, error) {
	key := variantKey(m.Namespace, m.ID, name)
	cv := CarriedVariant{Name: name, Recommendations: append([]Recommendation(nil), e.state.Recommendations[key]...)}
	if n, ok := e.state.LastGood[key]; ok {
		cv.LastGood = &n
	}
	if p := e.state.Provisioning[key]; p != nil {
		pc := *p
		pc.Starts = append([]time.Time(nil), p.Starts...)
		cv.Provisioning = &pc
	}
	if h, ok := e.state.Sizing[key]; ok {
		cv.Sizing = &SizingHints{TTFTRPS: h.TTFTRPS, ITLRPS: h.ITLRPS}
	}
	if !learned {
		return cv, nil
	}
	rec, ok, err := e.store.Get(tuner.Key{Namespace: m.Namespace, Model: m.ID, Variant: name})
	if err != nil {
		return CarriedVariant{}, fmt.Errorf("reading the learned parameters of %s: %w", key, err)
	}
	if ok {
		// The last NIS is only reported (the next step replaces it); a
		// non-finite one would make the record unwritable as JSON.
		if math.IsNaN(rec.LastNIS) || math.IsInf(rec.LastNIS, 0) {
			rec.LastNIS = 0
		}
		cv.Learned = &rec
	}
	return cv, nil
}

// Restore makes c what the engine carries for the models and variants it
// names, replacing what it had for them, and puts their learned
// parameters in its store. Check c with Validate first.
func (e *Engine) Restore(c Carried) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range c.Models {
		mk := modelKey(m.Namespace, m.Model)
		if m.LastTraffic != nil {
			e.state.LastTraffic[mk] = *m.LastTraffic
		}
		if m.Forecast != nil {
			f := *m.Forecast
			e.state.Forecasts[mk] = &f
		}
		if m.Feedback != nil {
			f := *m.Feedback
			e.state.Feedback[mk] = &f
		}
		for _, v := range m.Variants {
			if err := e.restoreVariant(m, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *Engine) restoreVariant(m CarriedModel, v CarriedVariant) error {
	key := variantKey(m.Namespace, m.Model, v.Name)
	if v.LastGood != nil {
		e.state.LastGood[key] = *v.LastGood
	}
	if len(v.Recommendations) > 0 {
		e.state.Recommendations[key] = append([]Recommendation(nil), v.Recommendations...)
	}
	if v.Provisioning != nil {
		p := *v.Provisioning
		p.Starts = append([]time.Time(nil), v.Provisioning.Starts...)
		e.state.Provisioning[key] = &p
	}
	if v.Sizing != nil {
		e.state.Sizing[key] = queueing.Hints{TTFTRPS: v.Sizing.TTFTRPS, ITLRPS: v.Sizing.ITLRPS}
	}
	if v.Learned != nil {
		if err := e.store.Put(tuner.Key{Namespace: m.Namespace, Model: m.Model, Variant: v.Name}, *v.Learned); err != nil {
			return fmt.Errorf("storing the learned parameters of %s: %w", key, err)
		}
	}
	return nil
}

// Validate reports every problem of c as the state of a cycle on s, each
// named by its path under prefix (for example
// "state.models[0].variants[1].lastGood"): models and variants that s
// does not have, duplicates, negative counts, figures that are not finite,
// times missing, and learned records a tuner cannot resume from.
func (c *Carried) Validate(s *Snapshot, prefix string) error {
	var v validator
	variants := map[[2]string]map[string]bool{}
	for _, m := range s.Models {
		names := map[string]bool{}
		for _, va := range m.Variants {
			names[va.Name] = true
		}
		variants[[2]string{m.Namespace, m.ID}] = names
	}
	seen := map[[2]string]int{}
	for i := range c.Models {
		m := &c.Models[i]
		p := prefix + ".models[" + strconv.Itoa(i) + "]"
		key := [2]string{m.Namespace, m.Model}
		names, ok := variants[key]
		switch j, dup := seen[key]; {
		case dup:
			v.add(p+".model", "duplicates %s.models[%d] (%s in namespace %q)", prefix, j, m.Model, m.Namespace)
		case !ok:
			v.add(p+".model", "names no model of models (%s in namespace %q)", m.Model, m.Namespace)
		}
		seen[key] = i
		v.carriedModel(p, m, names)
	}
	return v.err()
}

func (v *validator) carriedModel(p string, m *CarriedModel, names map[string]bool) {
	if m.LastTraffic != nil && m.LastTraffic.IsZero() {
		v.add(p+".lastTraffic", "must be a time")
	}
	if f := m.Forecast; f != nil {
		v.finite(p+".forecast.level", f.Level)
		v.finite(p+".forecast.trend", f.Trend)
		v.finiteNonNeg(p+".forecast.variance", f.Variance)
		v.finiteNonNeg(p+".forecast.stepSeconds", f.StepSeconds)
		if f.Updates < 0 {
			v.add(p+".forecast.updates", "must be ≥ 0, got %d", f.Updates)
		}
		if f.Updates > 0 && f.Last.IsZero() {
			v.add(p+".forecast.last", "must be the time of the last update (updates is %d)", f.Updates)
		}
	}
	if m.Feedback != nil {
		v.feedback(p+".feedback", m.Feedback)
	}
	seen := map[string]int{}
	for j := range m.Variants {
		cv := &m.Variants[j]
		vp := p + ".variants[" + strconv.Itoa(j) + "]"
		switch k, dup := seen[cv.Name]; {
		case dup:
			v.add(vp+".name", "duplicates variants[%d] (%q)", k, cv.Name)
		case names != nil && !names[cv.Name]:
			v.add(vp+".name", "names no variant of the model (%q)", cv.Name)
		}
		seen[cv.Name] = j
		v.carriedVariant(vp, cv)
	}
}

func (v *validator) carriedVariant(p string, cv *CarriedVariant) {
	if cv.LastGood != nil && *cv.LastGood < 0 {
		v.add(p+".lastGood", "must be ≥ 0, got %d", *cv.LastGood)
	}
	if len(cv.Recommendations) > maxRecommendations {
		v.add(p+".recommendations", "must hold at most %d, got %d", maxRecommendations, len(cv.Recommendations))
	}
	for k, r := range cv.Recommendations {
		rp := p + ".recommendations[" + strconv.Itoa(k) + "]"
		if r.Time.IsZero() {
			v.add(rp+".time", "must be a time")
		}
		if r.Replica < 0 {
			v.add(rp+".replicas", "must be ≥ 0, got %d", r.Replica)
		}
	}
	if pr := cv.Provisioning; pr != nil {
		v.finiteNonNeg(p+".provisioning.seconds", pr.Seconds)
		if pr.Samples < 0 || pr.Current < 0 || pr.Ready < 0 {
			v.add(p+".provisioning", "samples, current and ready must be ≥ 0, got %d, %d and %d", pr.Samples, pr.Current, pr.Ready)
		}
		if len(pr.Starts) > maxStarts {
			v.add(p+".provisioning.starts", "must hold at most %d times, got %d", maxStarts, len(pr.Starts))
		}
	}
	if h := cv.Sizing; h != nil {
		v.finiteNonNeg(p+".sizing.ttftRps", h.TTFTRPS)
		v.finiteNonNeg(p+".sizing.itlRps", h.ITLRPS)
	}
	if r := cv.Learned; r != nil {
		if _, err := tuner.Restore(tuner.Config{ServiceModel: r.ServiceModel, Strategy: r.Strategy}, *r); err != nil {
			v.add(p+".learned", "a tuner cannot resume from it: %v", err)
		}
	}
}

func (v *validator) finite(path string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		v.add(path, "must be a finite number, got %v", x)
	}
}

// modelKey keys a model in the engine's State.
func modelKey(namespace, model string) string { return namespace + "/" + model }

// feedback checks a carried attainment feedback.
func (v *validator) feedback(p string, f *Feedback) {
	if !(f.LogFactor >= feedbackMinLog && f.LogFactor <= feedbackMaxLog) {
		v.add(p+".logFactor", "must be in [%.4f, %.4f] (a factor in [½, 1.5]), got %v", feedbackMinLog, feedbackMaxLog, f.LogFactor)
	}
	if !(f.Observed >= 0 && f.Observed <= 1) {
		v.add(p+".observed", "must be a share in [0, 1], got %v", f.Observed)
	}
	v.finiteNonNeg(p+".requests", f.Requests)
	if !(f.Demonstrated >= 0 && f.Demonstrated <= math.Exp(feedbackMaxLog)) {
		v.add(p+".demonstrated", "must be in [0, 1.5] (a load as a share of the model's capacity, which a counted window's demand never exceeds), got %v", f.Demonstrated)
	}
	if f.Updates < 0 {
		v.add(p+".updates", "must be ≥ 0, got %d", f.Updates)
	}
}
