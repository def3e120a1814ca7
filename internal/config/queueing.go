package config

import (
	"fmt"

	"github.com/llm-d-incubation/wva/internal/engine"
)

const (
	queueingDefaultExample = `{"sloMultiplier": 3.0, "tuningEnabled": true}`
	queueingEntryExample   = `{"model_id": "meta-llama/Meta-Llama-3.1-8B-Instruct", "namespace": "llm-d-prod", "targetTTFT": 500, "targetITL": 50, "sloMultiplier": 3.0, "attainment": 0.99, "surgeRatio": 2}`
)

// queueingDefault is the "default" value of the queueing-model ConfigMap
// as written; nil fields were absent.
type queueingDefault struct {
	SLOMultiplier *float64 `json:"sloMultiplier"`
	TuningEnabled *bool    `json:"tuningEnabled"`
}

// queueingEntry is a per-model value of the queueing-model ConfigMap.
type queueingEntry struct {
	ModelID       *string  `json:"model_id"`
	Namespace     *string  `json:"namespace"`
	TargetTTFT    *float64 `json:"targetTTFT"`
	TargetITL     *float64 `json:"targetITL"`
	SLOMultiplier *float64 `json:"sloMultiplier"`
	Attainment    *float64 `json:"attainment"`
	SurgeRatio    *float64 `json:"surgeRatio"`
}

// ParseQueueingModel parses the queueing-model ConfigMap (QueueingModelName,
// the WVA queueing-model guide §2). The key "default" holds sloMultiplier (> 1, default 3) and
// tuningEnabled (default true), and its presence sets Present; every other
// key is a per-model entry with model_id, an optional namespace ("" matches
// every namespace), sloMultiplier, targetTTFT with targetITL (ms; both
// or neither), attainment (the model's target share of requests within
// both targets, in (0, 1)) and surgeRatio (the rise its demand may make
// within one start-up, which its fleet holds the capacity for, in [1,
// engine.MaxSurgeRatio]). An empty ConfigMap is valid and not Present.
func ParseQueueingModel(data map[string]string) (QueueingModel, error) {
	ps := problems{configMap: QueueingModelName}
	q := QueueingModel{SLOMultiplier: engine.DefaultSLOMultiplier, TuningEnabled: true}
	if v, ok := data["default"]; ok {
		q.Present = true
		parseQueueingDefault(&ps, v, &q)
	}
	claimed := map[[2]string]string{}
	for _, k := range sortedKeys(data) {
		if k == "default" {
			continue
		}
		if e, ok := parseQueueingEntry(&ps, k, data[k]); ok && claim(&ps, claimed, k, e.ModelID, e.Namespace) {
			q.Models = append(q.Models, e)
		}
	}
	if err := ps.err(); err != nil {
		return QueueingModel{}, err
	}
	return q, nil
}

func parseQueueingDefault(ps *problems, value string, q *QueueingModel) {
	var d queueingDefault
	if !ps.check("default", decode(value, &d, queueingDefaultExample)) {
		return
	}
	if d.SLOMultiplier != nil {
		q.SLOMultiplier = *d.SLOMultiplier
		ps.field("default", "sloMultiplier", above(1).check(q.SLOMultiplier))
	}
	if d.TuningEnabled != nil {
		q.TuningEnabled = *d.TuningEnabled
	}
}

func parseQueueingEntry(ps *problems, key, value string) (QueueingModelEntry, bool) {
	var e queueingEntry
	if !ps.check(key, decode(value, &e, queueingEntryExample)) {
		return QueueingModelEntry{}, false
	}
	n := len(ps.list)
	q := QueueingModelEntry{ModelID: text(e.ModelID), Namespace: text(e.Namespace)}
	if q.ModelID == "" {
		ps.add(key, "model_id: required; want the model's ID, such as meta-llama/Meta-Llama-3.1-8B-Instruct")
	}
	if e.SLOMultiplier != nil {
		q.SLOMultiplier = *e.SLOMultiplier
		ps.field(key, "sloMultiplier", above(1).check(q.SLOMultiplier))
	}
	q.Attainment = optionalAttainment(ps, key, e.Attainment)
	if e.SurgeRatio != nil {
		q.SurgeRatio = *e.SurgeRatio
		ps.field(key, "surgeRatio", surgeRatioRule.check(q.SurgeRatio))
	}
	q.TargetTTFTMs = optionalTarget(ps, key, "targetTTFT", e.TargetTTFT)
	q.TargetITLMs = optionalTarget(ps, key, "targetITL", e.TargetITL)
	if len(ps.list) == n && (q.TargetTTFTMs > 0) != (q.TargetITLMs > 0) {
		ps.add(key, "targetTTFT and targetITL must both be set, or both omitted; got targetTTFT %v and targetITL %v", q.TargetTTFTMs, q.TargetITLMs)
	}
	return q, len(ps.list) == n
}

// For returns the entry for the model in the namespace: an entry for that
// namespace, else one without a namespace, else nil.
func (q QueueingModel) For(modelID, namespace string) *QueueingModelEntry {
	i := match(len(q.Models), func(i int) (string, string) { return q.Models[i].ModelID, q.Models[i].Namespace }, modelID, namespace)
	if i < 0 {
		return nil
	}
	e := q.Models[i]
	return &e
}

// surgeRatioRule accepts a declared surge (engine.Config.SurgeRatio): 1
// (none) to engine.MaxSurgeRatio.
var surgeRatioRule = rule{fmt.Sprintf("a number in [1, %g] (1: no surge)", engine.MaxSurgeRatio), engine.SurgeRatioOK}
