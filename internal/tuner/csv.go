package tuner

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CSVColumns are the columns an observation file must have, in any order.
var CSVColumns = []string{"rate_rps", "input_tokens", "output_tokens", "max_batch_size", "ttft_ms", "itl_ms"}

// CSVSteady is an optional column: true (or 1) marks a row that is a steady
// state by construction, as a synthetic trace's are (Observation.Steady);
// empty, false or 0 a window average (the default).
const CSVSteady = "steady"

// Row is one usable row of an observation file.
type Row struct {
	Line int // 1-based line number in the file
	Observation
}

// RowProblem is a row that was skipped, and why.
type RowProblem struct {
	Line   int
	Column string
	Reason string
}

func (p RowProblem) String() string {
	return fmt.Sprintf("line %d: column %s: %s; row skipped", p.Line, p.Column, p.Reason)
}

// MaxCSVRows bounds the rows of an observation file: each is a tuner step
// (about 0.5 ms) and a line of the output.
const MaxCSVRows = 100_000

// ReadCSV reads observations, one per row in time order, from a CSV file
// with a header naming at least CSVColumns (other columns are ignored).
// Rows with a missing, non-numeric, zero, negative or non-finite value in a
// required column, or a max_batch_size that is not a whole number, are
// returned as problems and never used. An unreadable file or header is an
// error.
func ReadCSV(r io.Reader) ([]Row, []RowProblem, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, errors.New("tuner: observation file is empty (expected a header line)")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tuner: reading header: %w", err)
	}
	index := map[string]int{}
	for i, h := range header {
		name := strings.TrimSpace(h)
		if _, dup := index[name]; dup && name != "" {
			return nil, nil, fmt.Errorf("tuner: the header names column %q twice (columns %d and %d)", name, index[name]+1, i+1)
		}
		index[name] = i
	}
	var missing []string
	for _, c := range CSVColumns {
		if _, ok := index[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("tuner: header lacks column(s) %s (required: %s)", strings.Join(missing, ", "), strings.Join(CSVColumns, ","))
	}
	var rows []Row
	var problems []RowProblem
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if n == MaxCSVRows {
			return nil, nil, fmt.Errorf("tuner: more than %d observation rows (a cycle every 30 s for %d days): split the file", MaxCSVRows, MaxCSVRows*30/86400)
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				problems = append(problems, RowProblem{Line: pe.Line, Column: "-", Reason: pe.Err.Error()})
				continue
			}
			return nil, nil, fmt.Errorf("tuner: reading observations: %w", err)
		}
		line, _ := cr.FieldPos(0)
		row, problem := parseRow(rec, index, line)
		if problem != nil {
			problems = append(problems, *problem)
			continue
		}
		rows = append(rows, row)
	}
	return rows, problems, nil
}

func parseRow(rec []string, index map[string]int, line int) (Row, *RowProblem) {
	vals := make(map[string]float64, len(CSVColumns))
	for _, c := range CSVColumns {
		i := index[c]
		if i >= len(rec) || strings.TrimSpace(rec[i]) == "" {
			return Row{}, &RowProblem{Line: line, Column: c, Reason: "missing value"}
		}
		s := strings.TrimSpace(rec[i])
		v, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil:
			return Row{}, &RowProblem{Line: line, Column: c, Reason: "not a number"}
		case math.IsNaN(v) || math.IsInf(v, 0):
			return Row{}, &RowProblem{Line: line, Column: c, Reason: "not a finite number (NaN or infinite)"}
		case v == 0:
			return Row{}, &RowProblem{Line: line, Column: c, Reason: "zero"}
		case v < 0:
			return Row{}, &RowProblem{Line: line, Column: c, Reason: fmt.Sprintf("negative (%v)", v)}
		}
		vals[c] = v
	}
	n := vals["max_batch_size"]
	if n != math.Trunc(n) || n > 1e7 {
		return Row{}, &RowProblem{Line: line, Column: "max_batch_size", Reason: fmt.Sprintf("not a whole number of requests (%v)", n)}
	}
	if vals["output_tokens"] < 1 {
		return Row{}, &RowProblem{Line: line, Column: "output_tokens", Reason: fmt.Sprintf("below 1 (%v)", vals["output_tokens"])}
	}
	steady, problem := parseSteady(rec, index, line)
	if problem != nil {
		return Row{}, problem
	}
	return Row{Line: line, Observation: Observation{
		RateRPS: vals["rate_rps"], InputTokens: vals["input_tokens"], OutputTokens: vals["output_tokens"],
		MaxBatchSize: int(n), TTFTMs: vals["ttft_ms"], ITLMs: vals["itl_ms"], Steady: steady,
	}}, nil
}

// parseSteady reads the optional steady column of a row.
func parseSteady(rec []string, index map[string]int, line int) (bool, *RowProblem) {
	i, ok := index[CSVSteady]
	if !ok || i >= len(rec) {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(rec[i])) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, &RowProblem{Line: line, Column: CSVSteady, Reason: fmt.Sprintf("not true, false, 1 or 0 (%q)", rec[i])}
}

// WriteCSV writes observations in the format ReadCSV reads, with the
// steady column when any observation is Steady.
func WriteCSV(w io.Writer, obs []Observation) error {
	cw := csv.NewWriter(w)
	steady := slices.ContainsFunc(obs, func(o Observation) bool { return o.Steady })
	header := CSVColumns
	if steady {
		header = append(slices.Clone(CSVColumns), CSVSteady)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, o := range obs {
		rec := []string{f(o.RateRPS), f(o.InputTokens), f(o.OutputTokens), strconv.Itoa(o.MaxBatchSize), f(o.TTFTMs), f(o.ITLMs)}
		if steady {
			rec = append(rec, strconv.FormatBool(o.Steady))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
