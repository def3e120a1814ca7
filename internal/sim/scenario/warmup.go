package scenario

import "fmt"

// MaxWarmUpSeconds bounds WarmUp: a day of the initial rate.
const MaxWarmUpSeconds = 24 * 3600

// WarmUp returns the scenario preceded by w seconds of each model's
// initial rate: every time in its rate patterns (staircase steps after the
// first, a ramp's start and end, a diurnal sine's start, spikes) and in
// its new prefix groups moves w seconds later, and the run lasts w seconds
// longer. The autoscalers then meet the scenario's changes after w seconds
// of steady traffic, as in a deployment that has run for a while, instead
// of at their first traffic. The reports cover the whole run, warm-up
// included. A replayed trace, or a model that stops after numRequests,
// has no initial rate to extend: it is an error.
func WarmUp(sc Scenario, w float64) (Scenario, error) {
	if !(w >= 0 && w <= MaxWarmUpSeconds) {
		return Scenario{}, fmt.Errorf("must be 0 to %d seconds, got %v", MaxWarmUpSeconds, w)
	}
	if w == 0 {
		return sc, nil
	}
	out := sc
	out.Models = make([]Model, len(sc.Models))
	for i, m := range sc.Models {
		wl := &m.Workload
		switch {
		case wl.Trace != "":
			return Scenario{}, fmt.Errorf("model %q replays a trace, which has no initial rate to extend", m.Name)
		case wl.NumRequests > 0:
			return Scenario{}, fmt.Errorf("model %q stops after numRequests %d, which the warm-up would spend", m.Name, wl.NumRequests)
		}
		wl.Rate = shiftRate(wl.Rate, w)
		wl.NewPrefixGroups = append([]NewPrefixGroup(nil), wl.NewPrefixGroups...)
		for j := range wl.NewPrefixGroups {
			wl.NewPrefixGroups[j].AtSeconds += w
		}
		out.Models[i] = m
	}
	out.DurationSeconds += w
	out.Description = fmt.Sprintf("%s (after a %.0f-s warm-up)", sc.Description, w)
	if err := out.Validate(); err != nil {
		return Scenario{}, err
	}
	return out, nil
}

// shiftRate moves a pattern's times w seconds later, keeping its rate at
// time 0 until then.
func shiftRate(r Rate, w float64) Rate {
	r.Steps = append([]Step(nil), r.Steps...)
	for j := range r.Steps {
		if r.Steps[j].AtSeconds > 0 {
			r.Steps[j].AtSeconds += w
		}
	}
	r.Spikes = append([]Spike(nil), r.Spikes...)
	for j := range r.Spikes {
		if r.Spikes[j].AtSeconds > 0 {
			r.Spikes[j].AtSeconds += w
		} else {
			r.Spikes[j].DurationSeconds += w // a spike from the start lasts through the warm-up
		}
	}
	switch r.Pattern {
	case "ramp":
		r.StartSeconds += w
		r.EndSeconds += w
	case "diurnal":
		r.StartSeconds += w
	}
	return r
}
