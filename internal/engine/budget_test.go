package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestTunerBudget: five variants want a tuner step every cycle and the
// budget allows two. Those that never stepped go first, in key order, then
// those that waited longest, ties in key order (worked out by hand below);
// each variant steps once in every two or three cycles, and a deferred
// variant says so in its explanation.
func TestTunerBudget(t *testing.T) {
	store := tuner.NewMemoryStore()
	e := New(store)
	names := []string{"e", "b", "d", "a", "c"} // the snapshot's order is not the keys'
	var vs []*variantB
	for _, n := range names {
		vs = append(vs, variant(n, "H100").params(h100Params).pods(0.3, 0).traffic(2, 1000, 200, 60, 15))
	}
	s := snapshot(ModeModelOnly, vs...)
	s.Config.TuningEnabled, s.Config.TunerBudget = true, 2
	// Cycle 0: none stepped: a, b. Cycle 1: c, d never stepped (e too):
	// c, d. Cycle 2: e never stepped, then a and b (cycle 0): a. Cycle 3:
	// b (cycle 0), then c and d (cycle 1): c. Cycle 4: d (cycle 1), then
	// a and e (cycle 2): a.
	want := [][]string{{"a", "b"}, {"c", "d"}, {"a", "e"}, {"b", "c"}, {"a", "d"}}
	for cycle, w := range want {
		s.Time = t0.Add(time.Duration(cycle) * 30 * time.Second)
		p := plan(t, e, s)
		var stepped []string
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			rec, ok, err := store.Get(tuner.Key{Namespace: "prod", Model: "llama", Variant: n})
			if err != nil {
				t.Fatal(err)
			}
			if ok && rec.LastUpdate.Equal(s.Time) {
				stepped = append(stepped, n)
			}
			deferred := strings.Contains(decision(t, p, n).Explanation, "tuner step deferred: 5 variants wanted one, tuning-budget allows 2 a cycle")
			if deferred == slices.Contains(w, n) {
				t.Errorf("cycle %d: variant %s deferred %v (explanation %q)", cycle, n, deferred, decision(t, p, n).Explanation)
			}
		}
		if !slices.Equal(stepped, w) {
			t.Errorf("cycle %d: stepped %v, want %v", cycle, stepped, w)
		}
		if p.TunerDeferred != 3 {
			t.Errorf("cycle %d: %d steps deferred, want 3", cycle, p.TunerDeferred)
		}
	}
	// Within the default budget every variant steps every cycle.
	s.Config.TunerBudget = 0
	s.Time = t0.Add(5 * 30 * time.Second)
	if p := plan(t, e, s); p.TunerDeferred != 0 {
		t.Errorf("default budget: %d steps deferred", p.TunerDeferred)
	}
	for _, n := range names {
		if rec, _, _ := store.Get(tuner.Key{Namespace: "prod", Model: "llama", Variant: n}); !rec.LastUpdate.Equal(s.Time) {
			t.Errorf("default budget: variant %s last stepped at %v, want %v", n, rec.LastUpdate, s.Time)
		}
	}
}

// TestTunerBudgetSizesDeferred: a variant whose step the budget defers is
// sized with what its tuner stored, as between tuner periods.
func TestTunerBudgetSizesDeferred(t *testing.T) {
	e := New(nil)
	a := variant("a", "H100").pods(0.3, 0).traffic(2, 1000, 200, 60, 15)
	b := variant("b", "H100").pods(0.3, 0).traffic(2, 1000, 200, 60, 15)
	s := snapshot(ModeModelOnly, a, b)
	s.Config.TuningEnabled = true
	for i := range 8 {
		s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		plan(t, e, s)
	}
	s.Config.TunerBudget = 1
	s.Time = t0.Add(8 * 30 * time.Second)
	p := plan(t, e, s)
	// a and b last stepped in the same cycle: a (the first key) steps, b
	// waits and is sized with its stored parameters.
	d := decision(t, p, "b")
	if !strings.Contains(d.Explanation, "tuner step deferred") || !strings.Contains(d.Explanation, "last step 30 s ago") {
		t.Errorf("b: explanation %q, want a deferred step", d.Explanation)
	}
	if d.Queueing == nil || d.Queueing.ParamsSource != "learned" || d.Queueing.Params == nil || d.Queueing.ParamsStdDev != nil {
		t.Errorf("b: sized with %+v, want the learned parameters stored before (and no step's deviation)", d.Queueing)
	}
	if da := decision(t, p, "a"); da.Queueing == nil || da.Queueing.ParamsStdDev == nil {
		t.Errorf("a: %+v, want this cycle's step", da.Queueing)
	}
}
