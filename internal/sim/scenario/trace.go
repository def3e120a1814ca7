package scenario

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/llm-d-incubation/wva/internal/boundedio"
)

// TraceRow is one request of a replayed trace.
type TraceRow struct {
	Time   float64
	Input  int
	Output int
	Class  string
	Prefix int // -1: none
}

// LoadFile reads a scenario file and the traces and token files it names
// (relative paths from the file's folder), and validates it: its fields
// before the files are read, the sizes they add up to (which depend on
// the files) after.
func LoadFile(path string) (Scenario, error) {
	data, err := boundedio.ReadFile(path, MaxScenarioBytes)
	if err != nil {
		return Scenario{}, err
	}
	sc, err := decodeScenario(data)
	if err == nil {
		err = collect(sc.checkFields)
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	for i := range sc.Models {
		w := &sc.Models[i].Workload
		for _, t := range []struct {
			name string
			t    *Tokens
		}{{"input", &w.Input}, {"output", &w.Output}} {
			if t.t.File == "" || w.Trace != "" {
				continue
			}
			vals, err := readCounts(resolve(path, t.t.File))
			if err != nil {
				return Scenario{}, fmt.Errorf("models[%d].workload.%s.file: %w", i, t.name, err)
			}
			t.t.Values, t.t.File = vals, "" // an empirical distribution like any other now
		}
		if w.Trace == "" {
			continue
		}
		p := resolve(path, w.Trace)
		rows, err := ReadTrace(p)
		if err != nil {
			return Scenario{}, fmt.Errorf("models[%d].workload.trace: %w", i, err)
		}
		if err := UseTrace(w, rows); err != nil {
			return Scenario{}, fmt.Errorf("models[%d].workload.trace: %s: %w", i, p, err)
		}
	}
	// The sizes, some of which depend on the files: a trace's requests,
	// the default KV cache of its longest request.
	if err := collect(sc.checkSize); err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// UseTrace attaches the rows to the workload. The token distributions
// become the trace's empirical ones, so that the autoscalers that read the
// workload's means (the oracle, KEDA's automatic threshold) and the
// default KV-cache size see what the trace holds.
func UseTrace(w *Workload, rows []TraceRow) error {
	known := map[string]bool{}
	for _, c := range w.Classes {
		known[c.Name] = true
	}
	in, out := make([]float64, len(rows)), make([]float64, len(rows))
	for j, r := range rows {
		if r.Class != "" && !known[r.Class] {
			// The file's text is not repeated: the file may not be a trace.
			return fmt.Errorf("request %d: its class is not one of the workload's classes (%s)", j+1, classList(w.Classes))
		}
		if r.Prefix >= 0 && w.PrefixTokens == 0 {
			return fmt.Errorf("request %d has a prefix group but the workload sets no prefixTokens", j+1)
		}
		in[j], out[j] = float64(r.Input), float64(r.Output)
	}
	w.Input = Tokens{Dist: "empirical", Values: in}
	w.Output = Tokens{Dist: "empirical", Values: out}
	w.Rows = rows
	return nil
}

// classList names the classes for an error message.
func classList(cs []Class) string {
	if len(cs) == 0 {
		return "it has none"
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = strconv.Quote(c.Name)
	}
	return strings.Join(names, ", ")
}

// TraceRate is the highest arrival rate of the trace over 30-s windows
// from t0 to t1 (requests/s).
func TraceRate(rows []TraceRow, t0, t1 float64) float64 {
	const win = 30.0
	peak := 0.0
	for a := t0; a < t1 || a == t0; a += win {
		i := sort.Search(len(rows), func(k int) bool { return rows[k].Time >= a })
		j := sort.Search(len(rows), func(k int) bool { return rows[k].Time >= a+win })
		peak = math.Max(peak, float64(j-i)/win)
	}
	return peak
}

// resolve reads a path relative to the scenario file's folder.
func resolve(scenario, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(scenario), p)
}

// Errors about a file a scenario names give the file and the line, never
// the line's text: a scenario could name a file that is not meant to be
// read out (a key, /etc/shadow).

// readCounts reads the token counts of an empirical distribution.
func readCounts(path string) ([]float64, error) {
	data, err := boundedio.ReadFile(path, MaxInputFileBytes)
	if err != nil {
		return nil, err
	}
	var out []float64
	for n, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for k, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !(v >= 1 && v <= MaxTokens) || v != math.Trunc(v) {
				return nil, fmt.Errorf("%s:%d: value %d of the line is not a whole token count between 1 and %d (want numbers separated by newlines, commas or spaces)", path, n+1, k+1, MaxTokens)
			}
			if len(out) == MaxEmpiricalValues {
				return nil, fmt.Errorf("%s:%d: more than %d token counts", path, n+1, MaxEmpiricalValues)
			}
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no token counts", path)
	}
	return out, nil
}

// ReadTrace parses a CSV with a header: seconds,input_tokens,output_tokens
// and optionally class and prefix, in time order.
func ReadTrace(path string) ([]TraceRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(boundedio.NewReader(f, path, MaxInputFileBytes, MaxLineBytes))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	head, err := r.Read()
	if boundedio.IsSizeError(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", path, err)
	}
	col, err := traceColumns(head, path)
	if err != nil {
		return nil, err
	}
	var rows []TraceRow
	last := 0.0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if boundedio.IsSizeError(err) {
			return nil, err
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// The parser's own error names the line (a quoted field may
			// span lines, so records are not lines).
			return nil, fmt.Errorf("%s:%d: CSV syntax: %w", path, pe.Line, pe.Err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rows) == MaxRequests {
			return nil, fmt.Errorf("%s:%d: more than %d requests, the most a run may simulate", path, line, MaxRequests)
		}
		row, err := parseRow(rec, col, fmt.Sprintf("%s:%d", path, line))
		if err != nil {
			return nil, err
		}
		if row.Time < last {
			return nil, fmt.Errorf("%s:%d: times must not decrease (%v after %v)", path, line, row.Time, last)
		}
		last = row.Time
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no requests", path)
	}
	return rows, nil
}

// traceColumns maps a trace header's column names to their indexes: the
// three required ones present, none named twice.
func traceColumns(head []string, path string) (map[string]int, error) {
	col := map[string]int{}
	for i, h := range head {
		name := strings.TrimSpace(h)
		if _, dup := col[name]; dup && name != "" {
			return nil, fmt.Errorf("%s: the header names column %q twice (columns %d and %d)", path, name, col[name]+1, i+1)
		}
		col[name] = i
	}
	for _, c := range []string{"seconds", "input_tokens", "output_tokens"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: the header lacks %q (want seconds,input_tokens,output_tokens[,class][,prefix])", path, c)
		}
	}
	return col, nil
}

// parseRow reads one trace record; at names the line in errors, which do
// not repeat the record's text.
func parseRow(rec []string, col map[string]int, at string) (TraceRow, error) {
	row := TraceRow{Prefix: -1}
	var vals [3]float64
	for k, name := range []string{"seconds", "input_tokens", "output_tokens"} {
		v, err := traceNumber(rec, col[name], name, at)
		if err != nil {
			return row, err
		}
		vals[k] = v
	}
	row.Time = vals[0]
	if row.Time < 0 || row.Time > MaxDurationSeconds || vals[1] < 1 || vals[2] < 1 || vals[1] > MaxTokens || vals[2] > MaxTokens {
		return row, fmt.Errorf("%s: seconds must be between 0 and %d, and token counts between 1 and %d", at, MaxDurationSeconds, MaxTokens)
	}
	if vals[1] != math.Trunc(vals[1]) || vals[2] != math.Trunc(vals[2]) {
		return row, fmt.Errorf("%s: token counts must be whole numbers (%v, %v)", at, vals[1], vals[2])
	}
	row.Input, row.Output = int(vals[1]), int(vals[2])
	err := row.readOptional(rec, col, at)
	return row, err
}

// traceNumber reads the finite number in column i (named name) of a
// record.
func traceNumber(rec []string, i int, name, at string) (float64, error) {
	if i >= len(rec) {
		return 0, fmt.Errorf("%s: column %s: missing value", at, name)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: column %s: not a number", at, name)
	}
	return v, nil
}

// readOptional reads the optional class and prefix columns of a record.
func (row *TraceRow) readOptional(rec []string, col map[string]int, at string) error {
	if i, ok := col["class"]; ok && i < len(rec) {
		row.Class = strings.Clone(strings.TrimSpace(rec[i])) // not the whole record's memory
	}
	if i, ok := col["prefix"]; ok && i < len(rec) && strings.TrimSpace(rec[i]) != "" {
		p, err := prefixGroup(rec[i], at)
		if err != nil {
			return err
		}
		row.Prefix = p
	}
	return nil
}

// prefixGroup reads a trace's prefix column.
func prefixGroup(s, at string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 0 || p >= MaxPrefixGroups {
		return 0, fmt.Errorf("%s: column prefix: want a group number between 0 and %d", at, MaxPrefixGroups-1)
	}
	return p, nil
}
