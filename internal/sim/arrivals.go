package sim

import (
	"math"
	"math/rand/v2"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// nextArrival schedules model m's next arrival after t, unless its
// arrivals are over (durationSeconds reached, or numRequests arrived).
func (s *Sim) nextArrival(m int, t float64) {
	st := s.streams[m]
	if n := s.sc.Models[m].Workload.NumRequests; n == 0 || st.count < n {
		next := st.next(t, s.sc.DurationSeconds)
		if next < s.sc.DurationSeconds {
			s.schedule(&event{t: next, kind: evArrival, model: m})
			return
		}
		if st.w.Rows == nil || st.pos < len(st.w.Rows) {
			t = s.sc.DurationSeconds // else the trace is over at t
		}
	}
	s.arrivalsOpen--
	s.arrivalsEnd = math.Max(s.arrivalsEnd, t)
}

// arrive creates the next request of model m and schedules the one after.
func (s *Sim) arrive(m int) {
	s.nextReq++
	q := newRequest(s.nextReq, m, s.now)
	s.fill(q)
	s.res.Arrived++
	s.res.class(q.model, q.class).Arrived++
	s.res.PerModel[m].Arrived++
	s.inFlight++
	s.bucket.arrivals++
	s.streams[m].count++
	s.nextArrival(m, s.now)
	s.route(q)
}

// fill gives a new request of its model its token counts, class and
// prefix: from the trace row of this arrival, or drawn from the workload.
func (s *Sim) fill(q *request) {
	m := q.model
	w := &s.sc.Models[m].Workload
	q.Prefix = -1
	if w.Rows != nil {
		row := w.Rows[s.streams[m].pos-1]
		q.Input, q.Output, q.Prefix = row.Input, row.Output, row.Prefix
		q.class = classIndex(w.Classes, row.Class)
	} else {
		rng := s.tokenRNG[m]
		q.Input, q.Output = w.Input.Draw(rng), w.Output.Draw(rng)
		q.class = scenario.DrawClass(w.Classes, s.classRNG[m])
		if w.PrefixGroups > 0 {
			q.Prefix = drawPrefix(w, s.classRNG[m], s.now)
		}
	}
	if len(w.Classes) > 0 {
		q.Priority = w.Classes[q.class].RequestPriority()
	}
	if q.Prefix >= 0 {
		q.PrefixTokens = min(w.PrefixTokens, q.Input-1)
	}
}

// drawPrefix picks a request's prefix group: one of the new groups that
// have started, by its share, else one of the groups there from the start.
// Without new groups it draws as it always did (one draw).
func drawPrefix(w *scenario.Workload, rng *rand.Rand, now float64) int {
	if len(w.NewPrefixGroups) > 0 {
		u := rng.Float64()
		for k, g := range w.NewPrefixGroups {
			if now < g.AtSeconds {
				continue
			}
			if u < g.Share {
				return w.PrefixGroups + k
			}
			u -= g.Share
		}
	}
	return rng.IntN(w.PrefixGroups)
}

func classIndex(cs []scenario.Class, name string) int {
	for i, c := range cs {
		if c.Name == name {
			return i
		}
	}
	return 0
}

// sloOf is the SLO a request is judged by: its class's, else its model's.
func (s *Sim) sloOf(q *request) *scenario.SLO {
	if cs := s.sc.Models[q.model].Workload.Classes; len(cs) > 0 {
		return &cs[q.class].SLO
	}
	return &s.sc.Models[q.model].SLO
}
