// The snapshot file: what `wva plan -f` reads and what the controller
// serves at /debug/snapshot for each cycle it planned (docs/plan.md). Both
// read and plan it here, so that a served document replays through
// exactly the code `wva plan` runs.

package snapshot

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/llm-d-incubation/wva/internal/strictyaml"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// MaxFileBytes bounds a snapshot file: `wva plan` reads no larger one,
// and the controller serves and writes none.
const MaxFileBytes = 16 << 20

// File is a snapshot file: the engine's Snapshot with three optional
// additions, all written by the controller so that its cycle can be
// replayed.
type File struct {
	engine.Snapshot
	// Tuner holds the tuner's settings (the controller's tuner ConfigMap)
	// for a cycle that tunes; nil: the tuner's defaults.
	Tuner *tuner.Config `json:"tuner,omitempty"`
	// State is what the engine carried into the cycle: planning starts
	// from it instead of from nothing.
	State *engine.Carried `json:"state,omitempty"`
	// Notes say where the document differs from what the engine saw
	// (planning ignores them).
	Notes []string `json:"notes,omitempty"`
}

// ParseFile reads a snapshot file, YAML or JSON, rejecting unknown fields,
// and checks its additions; the engine checks the snapshot when it plans.
func ParseFile(data []byte) (*File, error) {
	var f File
	if err := strictyaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *File) check() error {
	var errs []error
	if f.Tuner != nil {
		if err := f.Tuner.Validate(); err != nil {
			errs = append(errs, &engine.FieldError{Path: "tuner", Msg: strings.TrimPrefix(err.Error(), "tuner: ")})
		}
	}
	if f.State != nil {
		if f.Time.IsZero() {
			errs = append(errs, &engine.FieldError{Path: "time", Msg: "must be set with state (the state's times are relative to it)"})
		}
		errs = append(errs, f.State.Validate(&f.Snapshot, "state"))
	}
	return errors.Join(errs...)
}

// Plan runs one cycle on the file as `wva plan` does: a new engine, given
// the file's state and learned parameters, plans its snapshot.
func (f *File) Plan() (*engine.Plan, error) {
	e := engine.New(nil)
	if f.State != nil {
		if err := e.Restore(*f.State); err != nil {
			return nil, err
		}
	}
	s := f.Snapshot
	if f.Tuner != nil {
		s.Config.Tuner = *f.Tuner
	}
	return e.Plan(&s)
}

// Replay is the file that replays r's cycle on e: r's snapshot with what e
// carries into the cycle and, when it tunes, the tuner's settings. Call it
// after r.Seed(e) and before e plans r's snapshot.
func (r Result) Replay(e *engine.Engine) (*File, error) {
	st, err := e.Carried(r.Snapshot)
	if err != nil {
		return nil, err
	}
	f := &File{Snapshot: *r.Snapshot, State: &st}
	if r.Snapshot.Config.TuningEnabled {
		t := r.Snapshot.Config.Tuner
		f.Tuner = &t
	}
	return f, nil
}

// Split returns one file per model, each with the model's state and the
// cycle's settings (without f's notes).
func (f *File) Split() []*File {
	out := make([]*File, 0, len(f.Models))
	for _, m := range f.Models {
		one := *f
		one.Models = []engine.Model{m}
		one.State, one.Notes = nil, nil
		if f.State != nil {
			for _, cm := range f.State.Models {
				if cm.Namespace == m.Namespace && cm.Model == m.ID {
					one.State = &engine.Carried{Models: []engine.CarriedModel{cm}}
				}
			}
		}
		out = append(out, &one)
	}
	return out
}

// Join merges files of one cycle (Split's, for example) into one: the
// first file's settings with every file's models, state and notes, models
// in the order of their namespace and ID.
func Join(files []*File) *File {
	if len(files) == 0 {
		return nil
	}
	out := *files[0]
	out.Models, out.State, out.Notes = nil, nil, nil
	for _, f := range files {
		out.Models = append(out.Models, f.Models...)
		out.Notes = append(out.Notes, f.Notes...)
		if f.State != nil {
			if out.State == nil {
				out.State = &engine.Carried{}
			}
			out.State.Models = append(out.State.Models, f.State.Models...)
		}
	}
	sort.SliceStable(out.Models, func(i, j int) bool {
		return modelLess(out.Models[i].Namespace, out.Models[i].ID, out.Models[j].Namespace, out.Models[j].ID)
	})
	if out.State != nil {
		ms := out.State.Models
		sort.SliceStable(ms, func(i, j int) bool { return modelLess(ms[i].Namespace, ms[i].Model, ms[j].Namespace, ms[j].Model) })
	}
	return &out
}

func modelLess(ns1, id1, ns2, id2 string) bool {
	if ns1 != ns2 {
		return ns1 < ns2
	}
	return id1 < id2
}

// Finite makes f writable as JSON, which has no NaN or infinity: a pod
// figure that is not finite becomes -1, which the engine judges as it
// did the original (invalid metrics: the variant holds), and a note says
// so. The models, variants and pods are copied, never changed in place.
func (f *File) Finite() {
	f.Models = append([]engine.Model(nil), f.Models...)
	for i := range f.Models {
		m := &f.Models[i]
		m.Variants = append([]engine.Variant(nil), m.Variants...)
		for j := range m.Variants {
			v := &m.Variants[j]
			var pods []engine.Pod
			for k := range v.Pods {
				p := v.Pods[k]
				bad := finitePod(&p)
				if len(bad) == 0 {
					continue
				}
				if pods == nil {
					pods = append([]engine.Pod(nil), v.Pods...)
				}
				pods[k] = p
				f.Notes = append(f.Notes, fmt.Sprintf("pod %s of variant %s (model %s, namespace %q): %s written as -1 (not finite)",
					p.Name, v.Name, m.ID, m.Namespace, strings.Join(bad, ", ")))
			}
			if pods != nil {
				v.Pods = pods
			}
		}
	}
}

// finitePod replaces p's non-finite figures with -1 and names them.
func finitePod(p *engine.Pod) []string {
	var bad []string
	for _, x := range []struct {
		name string
		v    *float64
	}{{"arrivalRate", &p.ArrivalRateRPS}, {"avgInputTokens", &p.AvgInputTokens}, {"avgOutputTokens", &p.AvgOutputTokens},
		{"avgTTFTMs", &p.AvgTTFTMs}, {"avgITLMs", &p.AvgITLMs}, {"kvCacheUsage", &p.KVCacheUsage},
		{"waitingRequests", &p.WaitingRequests}, {"runningRequests", &p.RunningRequests}} {
		if math.IsNaN(*x.v) || math.IsInf(*x.v, 0) {
			*x.v = -1
			bad = append(bad, x.name)
		}
	}
	for _, h := range []struct {
		name string
		b    *[]engine.Bucket
	}{{"ttftBuckets", &p.TTFTBuckets}, {"tpotBuckets", &p.TPOTBuckets}} {
		if finiteHistogram(h.b) {
			bad = append(bad, h.name+" (a count or a bound)")
		}
	}
	return bad
}

// finiteHistogram rewrites, in a copy, the buckets of *h that JSON cannot
// hold — a count that is not finite, a bound that is NaN or −Inf (+Inf is
// the last bucket's, written "+Inf") — as a count of −1 at the previous
// bound (0 for the first). The engine refuses such a histogram as it
// refused the original (docs/engine.md §3 item 11), so the file still
// replays the decision. It says whether it rewrote any.
func finiteHistogram(h *[]engine.Bucket) bool {
	var out []engine.Bucket
	for i, b := range *h {
		if b.Encodable() {
			continue
		}
		if out == nil {
			out = append([]engine.Bucket(nil), *h...)
		}
		prev := 0.0
		if i > 0 {
			prev = out[i-1].UpperBound
		}
		out[i] = engine.Bucket{UpperBound: prev, Count: -1}
	}
	if out == nil {
		return false
	}
	*h = out
	return true
}
