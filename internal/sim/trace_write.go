package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// WriteTrace writes the requests that model m of the scenario receives in
// a run, in the CSV format LoadFile replays: replaying it gives the same
// run as the synthetic workload. Use it to start a trace from a synthetic
// workload, or to export one for another tool.
func WriteTrace(w io.Writer, sc scenario.Scenario, m int) error {
	if m < 0 || m >= len(sc.Models) {
		return fmt.Errorf("no model %d (the scenario has %d)", m, len(sc.Models))
	}
	s := New(sc, &Static{n: 0})
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"seconds", "input_tokens", "output_tokens", "class", "prefix"})
	wl := &s.sc.Models[m].Workload
	end := s.sc.DurationSeconds
	n := 0
	for t := s.streams[m].next(0, end); t < end && (wl.NumRequests == 0 || n < wl.NumRequests); t = s.streams[m].next(t, end) {
		n++
		q := &request{model: m}
		s.fill(q)
		cls, prefix := "", ""
		if len(wl.Classes) > 0 {
			cls = wl.Classes[q.class].Name
		}
		if q.Prefix >= 0 {
			prefix = strconv.Itoa(q.Prefix)
		}
		if err := cw.Write([]string{strconv.FormatFloat(t, 'g', -1, 64), strconv.Itoa(q.Input), strconv.Itoa(q.Output), cls, prefix}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
