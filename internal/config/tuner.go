package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

const stateConstraintsExample = `{"alpha": {"min": 0.1, "max": 100.0}, "beta": {"min": 0.01, "max": 10.0}}`

// tunerSetter stores a trimmed, non-empty value in t or says what is wrong.
type tunerSetter func(t *Tuner, v string) error

var tunerKeys = map[string]tunerSetter{
	"tuning-enabled": func(t *Tuner, v string) (err error) {
		t.Enabled, err = parseBool(v)
		return err
	},
	"tuning-period": func(t *Tuner, v string) (err error) {
		t.Period, err = parseDuration(v, 0, "30s")
		return err
	},
	"tuning-budget": func(t *Tuner, v string) (err error) {
		t.Budget, err = parseCount(v, 1, engine.MaxTunerBudget, "tuner steps a cycle")
		return err
	},
	"max-nis-threshold": func(t *Tuner, v string) (err error) {
		t.Config.MaxNIS, err = parseFloat(v, above(0))
		return err
	},
	"percent-change": func(t *Tuner, v string) (err error) {
		t.Config.PercentChange, err = parseFloat(v, fraction(true))
		return err
	},
	"error-level": func(t *Tuner, v string) (err error) {
		t.Config.ErrorLevel, err = parseFloat(v, fraction(false))
		return err
	},
	"strategy": func(t *Tuner, v string) error {
		s, err := oneOf(v, string(tuner.StrategyRobust), string(tuner.StrategySeed))
		t.Config.Strategy = tuner.Strategy(s)
		return err
	},
	"state-constraints": func(t *Tuner, v string) (err error) {
		t.Config.Bounds, err = parseBounds(v)
		return err
	},
	// The iteration model's parameters mean other things than the
	// linear model's (γ is per token), so they have their own bounds.
	"iteration-state-constraints": func(t *Tuner, v string) (err error) {
		t.Config.IterationBounds, err = parseBounds(v)
		return err
	},
}

// ParseTuner parses the tuner ConfigMap (TunerName; docs/configuration.md). Absent keys and keys with an empty value take their
// defaults: tuning enabled, every cycle, and tuner.Config's defaults.
// Unknown keys are problems.
func ParseTuner(data map[string]string) (Tuner, error) {
	ps := problems{configMap: TunerName}
	t := Tuner{Enabled: true}
	for _, k := range sortedKeys(data) {
		v := strings.TrimSpace(data[k])
		set, known := tunerKeys[k]
		switch {
		case !known:
			ps.unknown(k, sortedKeys(tunerKeys))
		case v != "":
			ps.check(k, set(&t, v))
		}
	}
	if len(ps.list) == 0 {
		if err := t.Config.Validate(); err != nil {
			msg := strings.TrimPrefix(err.Error(), "tuner: ")
			ps.add(tunerKeyOf(msg), "%s", msg)
		}
	}
	if err := ps.err(); err != nil {
		return Tuner{}, err
	}
	return t, nil
}

// tunerKeyOf names the key that a tuner.Config.Validate message concerns.
func tunerKeyOf(msg string) string {
	for _, m := range []struct{ words, key string }{
		{"percent change", "percent-change"}, {"error level", "error-level"},
		{"max NIS", "max-nis-threshold"}, {"strategy", "strategy"},
	} {
		if strings.Contains(msg, m.words) {
			return m.key
		}
	}
	return "state-constraints"
}

// bound is one parameter's entry of state-constraints.
type bound struct {
	Min *float64 `json:"min"`
	Max *float64 `json:"max"`
}

// parseBounds reads state-constraints: {"alpha": {"min": …, "max": …}, …}
// with 0 < min < max, for alpha, beta, gamma and delta.
func parseBounds(v string) (map[string][2]float64, error) {
	var raw map[string]bound
	if err := decode(v, &raw, stateConstraintsExample); err != nil {
		return nil, err
	}
	out := make(map[string][2]float64, len(raw))
	var msgs []string
	for _, name := range sortedKeys(raw) {
		b, err := checkBound(name, raw[name])
		if err != nil {
			msgs = append(msgs, err.Error())
			continue
		}
		out[name] = b
	}
	if len(msgs) > 0 {
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return out, nil
}

func checkBound(name string, b bound) ([2]float64, error) {
	switch name {
	case "alpha", "beta", "gamma", "delta":
	default:
		return [2]float64{}, fmt.Errorf("%s: unknown parameter; want alpha, beta, gamma or delta", name)
	}
	if b.Min == nil || b.Max == nil {
		return [2]float64{}, fmt.Errorf("%s: want both min and max", name)
	}
	lo, hi := *b.Min, *b.Max
	if err := above(0).check(lo); err != nil {
		return [2]float64{}, fmt.Errorf("%s: min: %w", name, err)
	}
	if err := above(lo).check(hi); err != nil {
		return [2]float64{}, fmt.Errorf("%s: max: %w", name, err)
	}
	return [2]float64{lo, hi}, nil
}
