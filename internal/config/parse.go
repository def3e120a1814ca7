package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llm-d-incubation/wva/internal/strictyaml"
)

// ExplicitZero stands for a 0 that the user wrote where the engine reads 0
// as "use the default" (engine.Config's durations and penalty factor, the
// saturation spare triggers). It is small enough to act as 0 everywhere:
// "WVA_SCALE_DOWN_STABILIZATION: 0s" disables stabilisation.
const ExplicitZero = 1e-9

var _ error = (*Error)(nil)

// Error returns one line per problem, "configmap/key: message".
func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return e.ConfigMap + ": invalid"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// problems collects the problems of one ConfigMap.
type problems struct {
	configMap string
	list      []Problem
}

func (ps *problems) add(key, format string, args ...any) {
	ps.list = append(ps.list, Problem{ConfigMap: ps.configMap, Key: key, Message: fmt.Sprintf(format, args...)})
}

// check records err, if any, as a problem of key and says whether there
// was none.
func (ps *problems) check(key string, err error) bool {
	if err != nil {
		ps.add(key, "%s", err.Error())
		return false
	}
	return true
}

// field records err, if any, as a problem of the field of key's value.
func (ps *problems) field(key, field string, err error) {
	if err != nil {
		ps.add(key, "%s: %s", field, err.Error())
	}
}

// unknown records an unknown key, with the closest known one if any.
func (ps *problems) unknown(key string, known []string) {
	if s := closest(key, known); s != "" {
		ps.add(key, "unknown key; did you mean %s?", s)
		return
	}
	ps.add(key, "unknown key; known keys are listed in docs/configuration.md")
}

// err returns the problems sorted by key as an *Error, or nil.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool { return ps.list[i].Key < ps.list[j].Key })
	return &Error{ConfigMap: ps.configMap, Problems: ps.list}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// closest returns the known key within a small edit distance of key, or "".
func closest(key string, known []string) string {
	best, bestDist := "", 4
	for _, k := range known {
		if d := editDistance(strings.ToUpper(key), strings.ToUpper(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// decode reads a JSON or YAML value into out (a struct of pointer fields),
// rejecting unknown and duplicate fields. example shows what is wanted
// when the value's shape is wrong.
func decode(value string, out any, example string) error {
	if strings.TrimSpace(value) == "" {
		return fmt.Errorf("empty value; want JSON or YAML such as %s", example)
	}
	err := strictyaml.Unmarshal([]byte(value), out)
	if err == nil {
		return nil
	}
	if msg, ok := fieldError(err); ok {
		return errors.New(msg)
	}
	return fmt.Errorf("%s; want JSON or YAML such as %s", shapeError(err), example)
}

// fieldError describes an error about one field's value, if err is one.
func fieldError(err error) (string, bool) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: want %s, got %s", te.Field, kindName(te.Type), te.Value), true
	}
	var ue *json.UnsupportedValueError
	if errors.As(err, &ue) {
		return "want finite numbers, got " + ue.Str, true
	}
	return "", false
}

// shapeError turns any other sigs.k8s.io/yaml error into a short message.
func shapeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got %s", kindName(te.Type), te.Value)
	}
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return strings.Join(strings.Fields(msg), " ")
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "an object"
	default:
		return t.String()
	}
}

// rule is a condition on a number, with what it wants in words.
type rule struct {
	want string
	ok   func(float64) bool
}

func above(lo float64) rule {
	return rule{fmt.Sprintf("a number > %v", lo), func(x float64) bool { return x > lo }}
}

// nonNegative is x ≥ 0.
var nonNegative = rule{"a number ≥ 0", func(x float64) bool { return x >= 0 }}

// fraction is 0 < x ≤ 1 when closedHi, 0 < x < 1 otherwise.
func fraction(closedHi bool) rule {
	if closedHi {
		return rule{"a number in (0, 1]", func(x float64) bool { return x > 0 && x <= 1 }}
	}
	return rule{"a number in (0, 1)", func(x float64) bool { return x > 0 && x < 1 }}
}

// check says what is wrong with x, or returns nil.
func (r rule) check(x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("want a finite number, got %v", x)
	}
	if !r.ok(x) {
		return fmt.Errorf("want %s, got %v", r.want, x)
	}
	return nil
}

// parseFloat reads a number from a ConfigMap value and checks it.
func parseFloat(v string, r rule) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("want %s, got %q", r.want, v)
	}
	return x, r.check(x)
}

// parseCount reads a whole number of unit (requests, replicas) in
// [lo, hi].
func parseCount(v string, lo, hi int, unit string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want a whole number of %s from %d to %d, got %q", unit, lo, hi, v)
	}
	return n, nil
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("want true or false, got %q", v)
	}
	return b, nil
}

// parseDuration reads a duration ≥ least; example is shown when v is not
// a duration.
func parseDuration(v string, least time.Duration, example string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as %s, got %q", example, v)
	}
	if d < least {
		return 0, fmt.Errorf("want a duration of at least %v, got %q", least, v)
	}
	return d, nil
}

// parseDurationIn reads a duration in [least, most]; a least of 1 (ns)
// means "> 0".
func parseDurationIn(v string, least, most time.Duration, example string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("want a duration such as %s, got %q", example, v)
	case d < least || d > most:
		if least == 1 {
			return 0, fmt.Errorf("want a duration > 0 and at most %s, got %q", FormatDuration(most), v)
		}
		return 0, fmt.Errorf("want a duration from %s to %s, got %q", FormatDuration(least), FormatDuration(most), v)
	}
	return d, nil
}

// FormatDuration writes d as a person would: 1h, 5m, 1m30s, 100ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseSeconds reads a duration from 0 to most as seconds for
// engine.Config, where 0 would mean the default: it is stored as
// ExplicitZero.
func parseSeconds(v string, most time.Duration, example string) (float64, error) {
	d, err := parseDurationIn(v, 0, most, example)
	return orExplicitZero(d.Seconds()), err
}

func orExplicitZero(x float64) float64 {
	if x == 0 {
		return ExplicitZero
	}
	return x
}

// oneOf checks that v is one of allowed (case-sensitive).
func oneOf(v string, allowed ...string) (string, error) {
	if slices.Contains(allowed, v) {
		return v, nil
	}
	return "", fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), v)
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// parseLabel checks a Prometheus label name.
func parseLabel(v string) (string, error) {
	if !labelName.MatchString(v) {
		return "", fmt.Errorf("want a Prometheus label name (letters, digits and _, not starting with a digit), got %q", v)
	}
	return v, nil
}

// text reads an optional string field of a decoded value.
func text(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

// checkName checks the optional name field of an entry against its key.
func checkName(ps *problems, key string, name *string) {
	if name != nil && text(name) != key {
		ps.add(key, "name: want %q (the key), got %q", key, *name)
	}
}
