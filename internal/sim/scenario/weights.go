package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The router's scorer weights may be written as an object (kv, queue,
// batch, prefix) or, as the seed's experiments and llm-d's endpoint picker
// configurations name them, as a string of scorer:weight pairs:
//
//	weights: "prefix-affinity:4,queue-depth:3"
//
// A scorer the string leaves out weighs 0, as a key the object leaves out
// does.

// scorerNames maps each name of the string form to its weight. The short
// names are the seed's (pa:3,qd:2,kv:2).
var scorerNames = map[string]func(w *ScorerWeights) *float64{
	"prefix-affinity": func(w *ScorerWeights) *float64 { return &w.Prefix },
	"pa":              func(w *ScorerWeights) *float64 { return &w.Prefix },
	"queue-depth":     func(w *ScorerWeights) *float64 { return &w.Queue },
	"qd":              func(w *ScorerWeights) *float64 { return &w.Queue },
	"kv-utilization":  func(w *ScorerWeights) *float64 { return &w.KV },
	"kv-utilisation":  func(w *ScorerWeights) *float64 { return &w.KV },
	"kv":              func(w *ScorerWeights) *float64 { return &w.KV },
	"batch":           func(w *ScorerWeights) *float64 { return &w.Batch },
}

// scorerList names the string form's scorers for error messages.
const scorerList = "prefix-affinity (pa), queue-depth (qd), kv-utilization (kv), batch"

// ParseScorerWeights reads the string form, "scorer:weight,…". Each weight
// is a number; a scorer named twice is an error.
func ParseScorerWeights(s string) (ScorerWeights, error) {
	var w ScorerWeights
	seen := map[*float64]string{}
	for part := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), ":")
		name = strings.TrimSpace(name)
		field, known := scorerNames[name]
		switch {
		case !ok:
			return ScorerWeights{}, fmt.Errorf("%q is not scorer:weight (scorers: %s)", part, scorerList)
		case !known:
			return ScorerWeights{}, fmt.Errorf("unknown scorer %q (want %s)", name, scorerList)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return ScorerWeights{}, fmt.Errorf("%s: weight %q is not a number", name, val)
		}
		p := field(&w)
		if other, dup := seen[p]; dup {
			return ScorerWeights{}, fmt.Errorf("%s and %s name the same scorer", other, name)
		}
		seen[p] = name
		*p = x
	}
	return w, nil
}

// String writes the weights in the string form (the non-zero ones).
func (w ScorerWeights) String() string {
	var parts []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"prefix-affinity", w.Prefix}, {"queue-depth", w.Queue}, {"kv-utilization", w.KV}, {"batch", w.Batch}} {
		if f.v != 0 {
			parts = append(parts, f.name+":"+strconv.FormatFloat(f.v, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// UnmarshalJSON reads the object form strictly (an unknown key is an
// error, as everywhere in a scenario) or the string form. A string that
// does not parse is kept and reported by Validate, with its field's path.
func (w *ScorerWeights) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		parsed, err := ParseScorerWeights(s)
		*w = parsed
		w.parseErr = err
		return nil
	}
	type plain ScorerWeights
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("gateway.weights: %w", err)
	}
	*w = ScorerWeights(p)
	return nil
}
