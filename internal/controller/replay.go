// Replays of live decisions: for each model, the snapshot file of the last
// cycle that planned it, in `wva plan -f`'s format with the state the
// engine carried into the cycle, served at GET /debug/snapshot behind the
// metrics server's authentication and authorisation, and each cycle's
// file written to --replay-dir when set (docs/plan.md, "Replaying a live
// decision").

package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// Bounds of the replays kept in memory, as JSON.
const (
	// maxReplayModelBytes bounds one model's file (about 4 000 pods).
	maxReplayModelBytes = 4 << 20
	// maxReplayBytes bounds all models' files together.
	maxReplayBytes = 64 << 20
)

// replayStore keeps one replay per model: the last cycle's that planned
// it. It is safe for concurrent use (the planner records, the metrics
// server serves).
type replayStore struct {
	// Dir, when set, receives each cycle's file; the Keep newest stay.
	Dir  string
	Keep int
	Log  logr.Logger
	// maxModel and maxTotal bound the files kept, in bytes of JSON
	// (maxReplayModelBytes and maxReplayBytes; smaller in tests).
	maxModel, maxTotal int

	mu     sync.Mutex
	last   time.Time // the last cycle recorded
	models map[collector.Target]replayEntry
}

// replayEntry is a model's file as JSON, or why there is none.
type replayEntry struct {
	at  time.Time
	doc []byte
	err error
}

func newReplayStore(dir string, keep int, log logr.Logger) *replayStore {
	return &replayStore{Dir: dir, Keep: keep, Log: log, maxModel: maxReplayModelBytes, maxTotal: maxReplayBytes,
		models: map[collector.Target]replayEntry{}}
}

// plan seeds the engine as built.Plan does, copies out the replay of the
// cycle it is about to run, runs it and, when it planned, keeps the replay.
func (p *planner) plan(c *cycleState, built snapshot.Result) (*engine.Plan, error) {
	built.Seed(p.Engine)
	var file *snapshot.File
	if p.Replays != nil {
		f, err := built.Replay(p.Engine)
		if err != nil {
			p.Log.Error(err, "copying the cycle's replay; /debug/snapshot keeps the previous one")
		}
		file = f
	}
	plan, err := p.Engine.Plan(built.Snapshot)
	if err == nil && file != nil {
		p.Replays.record(c.now, file, c.groups)
	}
	return plan, err
}

// record keeps each model's part of f, planned at now, and forgets the
// models no longer in live; with Dir set it writes the cycle's file.
func (r *replayStore) record(now time.Time, f *snapshot.File, live map[collector.Target][]*variant) {
	fresh := map[collector.Target]replayEntry{}
	for _, part := range f.Split() {
		m := part.Models[0]
		part.Finite()
		doc, err := json.Marshal(part)
		if err == nil && len(doc) > r.maxModel {
			doc, err = nil, fmt.Errorf("its snapshot is %d bytes, over the %d kept per model", len(doc), r.maxModel)
		}
		fresh[collector.Target{Namespace: m.Namespace, Model: m.ID}] = replayEntry{at: now, doc: doc, err: err}
	}
	r.mu.Lock()
	for t, e := range fresh {
		r.models[t] = e
	}
	for t := range r.models {
		if _, ok := live[t]; !ok {
			delete(r.models, t)
		}
	}
	r.bound()
	r.last = now
	r.mu.Unlock()
	if r.Dir != "" {
		r.write(now)
	}
}

// bound drops the files beyond maxTotal bytes in all, in model order, each
// leaving why.
func (r *replayStore) bound() {
	total := 0
	for _, t := range r.targets("") {
		e := r.models[t]
		total += len(e.doc)
		if total > r.maxTotal {
			total -= len(e.doc)
			r.models[t] = replayEntry{at: e.at, err: fmt.Errorf("the controller keeps at most %d bytes of snapshots", r.maxTotal)}
		}
	}
}

// targets lists the models kept, of namespace ns when not empty, sorted.
func (r *replayStore) targets(ns string) []collector.Target {
	out := make([]collector.Target, 0, len(r.models))
	for t := range r.models {
		if ns == "" || t.Namespace == ns {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// errNoReplay: nothing matches the request (yet).
var errNoReplay = errors.New("no snapshot")

// errAmbiguousModel: the request names a model in several namespaces
// without saying which (the client's to fix).
var errAmbiguousModel = errors.New("ambiguous model")

// model returns the file of one model; an empty namespace matches the
// model in any namespace when it is in one only.
func (r *replayStore) model(ns, model string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []collector.Target
	for _, t := range r.targets(ns) {
		if t.Model == model {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w of model %q (namespace %q) yet: it was not planned since the controller started leading", errNoReplay, model, ns)
	case 1:
	default:
		return nil, fmt.Errorf("%w: model %q is in namespaces %v: name one with ?namespace=", errAmbiguousModel, model, found)
	}
	e := r.models[found[0]]
	if e.err != nil {
		return nil, fmt.Errorf("the snapshot of %s is not kept: %w", found[0], e.err)
	}
	return e.doc, nil
}

// cycle returns the last cycle's file: every model it planned (of
// namespace ns when not empty), a note for each it planned but does not
// keep.
func (r *replayStore) cycle(ns string) ([]byte, error) {
	targets, docs, notes := r.lastCycle(ns)
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w of the last cycle (namespace %q): no model was planned yet, or none is kept", errNoReplay, ns)
	}
	parts := make([]*snapshot.File, len(docs))
	for i, doc := range docs {
		parts[i] = &snapshot.File{}
		if err := json.Unmarshal(doc, parts[i]); err != nil {
			return nil, fmt.Errorf("reading the kept snapshot of %s: %w", targets[i], err)
		}
	}
	f := snapshot.Join(parts)
	f.Notes = append(f.Notes, notes...)
	doc, err := json.Marshal(f)
	if err == nil && len(doc) > snapshot.MaxFileBytes {
		err = fmt.Errorf("the last cycle's snapshot is %d bytes, over the %d wva plan reads: ask for one model (?namespace=&model=)", len(doc), snapshot.MaxFileBytes)
	}
	return doc, err
}

// lastCycle returns the kept files of the last cycle's models (of
// namespace ns when not empty) and a note for each it does not keep. The
// files are never changed once kept: they are decoded after the lock is
// released, so that a large answer does not hold up the planner.
func (r *replayStore) lastCycle(ns string) (targets []collector.Target, docs [][]byte, notes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.targets(ns) {
		e := r.models[t]
		switch {
		case !e.at.Equal(r.last):
		case e.err != nil:
			notes = append(notes, fmt.Sprintf("model %s left out: %v", t, e.err))
		default:
			targets, docs = append(targets, t), append(docs, e.doc)
		}
	}
	return targets, docs, notes
}

// ServeHTTP serves GET /debug/snapshot[?namespace=&model=][&format=yaml|json]:
// with model, that model's last snapshot; without, the last cycle's (of
// namespace when given). YAML unless format=json or the Accept header
// asks for JSON.
func (r *replayStore) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	q := req.URL.Query()
	asJSON, err := wantsJSON(q.Get("format"), req.Header.Get("Accept"))
	if err != nil {
		replayError(w, http.StatusBadRequest, err)
		return
	}
	var doc []byte
	if m := q.Get("model"); m != "" {
		doc, err = r.model(q.Get("namespace"), m)
	} else {
		doc, err = r.cycle(q.Get("namespace"))
	}
	if err == nil {
		doc, err = encodeReplay(doc, asJSON)
	}
	switch {
	case errors.Is(err, errNoReplay):
		replayError(w, http.StatusNotFound, err)
	case errors.Is(err, errAmbiguousModel):
		replayError(w, http.StatusBadRequest, err)
	case err != nil:
		replayError(w, http.StatusInternalServerError, err)
	default:
		w.Header().Set("Content-Type", map[bool]string{true: "application/json", false: "application/yaml"}[asJSON])
		_, _ = w.Write(doc)
	}
}

// wantsJSON reads ?format= (yaml or json), else the Accept header.
func wantsJSON(format, accept string) (bool, error) {
	switch format {
	case "json":
		return true, nil
	case "yaml":
		return false, nil
	case "":
		return strings.Contains(accept, "application/json"), nil
	}
	return false, fmt.Errorf("format: want yaml or json, got %q", format)
}

// encodeReplay turns a compact JSON file into the answer's format.
func encodeReplay(doc []byte, asJSON bool) ([]byte, error) {
	if !asJSON {
		return yaml.JSONToYAML(doc)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func replayError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// replayPrefix names the files written to Dir: replayPrefix, the cycle's
// time (UTC, sortable), ".yaml".
const replayPrefix = "snapshot-"

// write writes the cycle of now to Dir and removes all but the Keep newest
// files (by name, which sorts by time). Failures are logged: the cycle
// does not depend on them.
func (r *replayStore) write(now time.Time) {
	doc, err := r.cycle("")
	if err == nil {
		doc, err = encodeReplay(doc, false)
	}
	if err != nil {
		r.Log.Error(err, "writing the cycle's snapshot", "dir", r.Dir)
		return
	}
	name := filepath.Join(r.Dir, replayPrefix+now.UTC().Format("20060102T150405.000000000Z")+".yaml")
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, doc, 0o600); err != nil {
		r.Log.Error(err, "writing the cycle's snapshot", "dir", r.Dir)
		return
	}
	if err := os.Rename(tmp, name); err != nil {
		r.Log.Error(err, "writing the cycle's snapshot", "dir", r.Dir)
		return
	}
	old, err := filepath.Glob(filepath.Join(r.Dir, replayPrefix+"*.yaml"))
	if err != nil {
		return
	}
	sort.Strings(old)
	for _, f := range old[:max(len(old)-r.Keep, 0)] {
		if err := os.Remove(f); err != nil {
			r.Log.Error(err, "removing an old snapshot", "file", f)
		}
	}
}
