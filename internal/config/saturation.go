package config

import (
	"github.com/llm-d-incubation/wva/internal/engine"
)

// The engine's default thresholds that the cross-field check needs (seed
// 002 §3.4; engine.SaturationConfig).
const (
	defaultKVCacheThreshold = 0.80
	defaultKVSpareTrigger   = 0.10
)

const (
	saturationDefaultExample  = `{"kvCacheThreshold": 0.80, "queueLengthThreshold": 5, "kvSpareTrigger": 0.1, "queueSpareTrigger": 3, "minNonSaturatedReplicasForScaleDown": 2}`
	saturationOverrideExample = `{"model_id": "meta-llama/Llama-3.1-8B", "namespace": "prod", "kvCacheThreshold": 0.9}`
)

// thresholds are the saturation fields as written; nil fields were absent.
type thresholds struct {
	KVCacheThreshold                    *float64 `json:"kvCacheThreshold"`
	QueueLengthThreshold                *float64 `json:"queueLengthThreshold"`
	KVSpareTrigger                      *float64 `json:"kvSpareTrigger"`
	QueueSpareTrigger                   *float64 `json:"queueSpareTrigger"`
	MinNonSaturatedReplicasForScaleDown *int     `json:"minNonSaturatedReplicasForScaleDown"`
	KVScaleUpThreshold                  *float64 `json:"kvScaleUpThreshold"`
}

// saturationOverrideEntry is a per-model value of the saturation ConfigMap.
type saturationOverrideEntry struct {
	ModelID   *string `json:"model_id"`
	Namespace *string `json:"namespace"`
	thresholds
}

// ParseSaturation parses the saturation ConfigMap (SaturationName). The
// key "default" holds the default thresholds (absent: the engine's); every
// other key is a per-model override with model_id, an optional namespace
// ("" matches every namespace) and any of the thresholds. A spare trigger
// written as 0 is stored as ExplicitZero.
func ParseSaturation(data map[string]string) (Saturation, error) {
	ps := problems{configMap: SaturationName}
	var s Saturation
	base := engine.SaturationConfig{KVCacheThreshold: defaultKVCacheThreshold, KVSpareTrigger: defaultKVSpareTrigger}
	if v, ok := data["default"]; ok {
		var t thresholds
		if ps.check("default", decode(v, &t, saturationDefaultExample)) {
			n := len(ps.list)
			s.Default = t.check(&ps, "default", base)
			if len(ps.list) == n {
				base = mergeKV(base, s.Default)
			}
		}
	}
	claimed := map[[2]string]string{}
	for _, k := range sortedKeys(data) {
		if k == "default" {
			continue
		}
		if o, ok := parseSaturationOverride(&ps, k, data[k], base); ok && claim(&ps, claimed, k, o.ModelID, o.Namespace) {
			s.Overrides = append(s.Overrides, o)
		}
	}
	if err := ps.err(); err != nil {
		return Saturation{}, err
	}
	return s, nil
}

func parseSaturationOverride(ps *problems, key, value string, base engine.SaturationConfig) (SaturationOverride, bool) {
	var e saturationOverrideEntry
	if !ps.check(key, decode(value, &e, saturationOverrideExample)) {
		return SaturationOverride{}, false
	}
	n := len(ps.list)
	o := SaturationOverride{ModelID: text(e.ModelID), Namespace: text(e.Namespace)}
	if o.ModelID == "" {
		ps.add(key, "model_id: required; want the model's ID, such as meta-llama/Llama-3.1-8B")
	}
	o.Config = e.check(ps, key, base)
	return o, len(ps.list) == n
}

// check validates the thresholds that are set and returns them as an
// engine.SaturationConfig (absent fields zero). base holds the KV values
// in force where t sets none, for the check kvSpareTrigger <
// kvCacheThreshold.
func (t thresholds) check(ps *problems, key string, base engine.SaturationConfig) engine.SaturationConfig {
	var c engine.SaturationConfig
	n := len(ps.list)
	if t.KVCacheThreshold != nil {
		c.KVCacheThreshold = *t.KVCacheThreshold
		ps.field(key, "kvCacheThreshold", fraction(true).check(c.KVCacheThreshold))
	}
	if t.KVScaleUpThreshold != nil {
		c.KVScaleUpThreshold = *t.KVScaleUpThreshold
		ps.field(key, "kvScaleUpThreshold", fraction(true).check(c.KVScaleUpThreshold))
	}
	if t.QueueLengthThreshold != nil {
		c.QueueLengthThreshold = *t.QueueLengthThreshold
		ps.field(key, "queueLengthThreshold", above(0).check(c.QueueLengthThreshold))
	}
	if t.KVSpareTrigger != nil {
		c.KVSpareTrigger = orExplicitZero(*t.KVSpareTrigger)
		ps.field(key, "kvSpareTrigger", rule{"a number in [0, 1)", func(x float64) bool { return x >= 0 && x < 1 }}.check(*t.KVSpareTrigger))
	}
	if t.QueueSpareTrigger != nil {
		c.QueueSpareTrigger = orExplicitZero(*t.QueueSpareTrigger)
		ps.field(key, "queueSpareTrigger", nonNegative.check(*t.QueueSpareTrigger))
	}
	if t.MinNonSaturatedReplicasForScaleDown != nil {
		c.MinNonSaturatedReplicasForScaleDown = *t.MinNonSaturatedReplicasForScaleDown
		if c.MinNonSaturatedReplicasForScaleDown < 1 {
			ps.add(key, "minNonSaturatedReplicasForScaleDown: want a whole number ≥ 1, got %d", c.MinNonSaturatedReplicasForScaleDown)
		}
	}
	if len(ps.list) == n && (t.KVCacheThreshold != nil || t.KVSpareTrigger != nil) {
		if m := mergeKV(base, c); !(m.KVSpareTrigger < m.KVCacheThreshold) {
			ps.add(key, "kvSpareTrigger %v%s must be below kvCacheThreshold %v%s",
				m.KVSpareTrigger, inherited(t.KVSpareTrigger), m.KVCacheThreshold, inherited(t.KVCacheThreshold))
		}
	}
	return c
}

// inherited marks a value that an entry does not set itself.
func inherited(p *float64) string {
	if p == nil {
		return " (inherited)"
	}
	return ""
}

// mergeKV returns base with the KV fields that c sets.
func mergeKV(base, c engine.SaturationConfig) engine.SaturationConfig {
	if c.KVCacheThreshold != 0 {
		base.KVCacheThreshold = c.KVCacheThreshold
	}
	if c.KVSpareTrigger != 0 {
		base.KVSpareTrigger = c.KVSpareTrigger
	}
	return base
}

// claim records that key configures (modelID, namespace), and reports a
// second key that does.
func claim(ps *problems, claimed map[[2]string]string, key, modelID, namespace string) bool {
	id := [2]string{modelID, namespace}
	if first, ok := claimed[id]; ok {
		ps.add(key, "model_id %q in namespace %q is already configured by key %q", modelID, namespace, first)
		return false
	}
	claimed[id] = key
	return true
}

// For returns the override for the model in the namespace: an entry for
// that namespace, else one without a namespace, else nil. Its zero fields
// mean the defaults.
func (s Saturation) For(modelID, namespace string) *engine.SaturationConfig {
	i := match(len(s.Overrides), func(i int) (string, string) { return s.Overrides[i].ModelID, s.Overrides[i].Namespace }, modelID, namespace)
	if i < 0 {
		return nil
	}
	c := s.Overrides[i].Config
	return &c
}

// match returns the index of the entry for (modelID, namespace): an exact
// match, else one with an empty namespace, else -1.
func match(n int, entry func(int) (string, string), modelID, namespace string) int {
	fallback := -1
	for i := range n {
		id, ns := entry(i)
		switch {
		case id != modelID:
		case ns == namespace:
			return i
		case ns == "" && fallback < 0:
			fallback = i
		}
	}
	return fallback
}
