package tuner

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Key identifies one variant's learned parameters.
type Key struct {
	Namespace string
	Model     string // model ID, e.g. meta-llama/Llama-3.1-8B-Instruct
	Variant   string // the variant (VariantAutoscaling name)
}

func (k Key) String() string { return k.Namespace + "/" + k.Model + "/" + k.Variant }

// Record is what a Store keeps for one variant: enough to resume tuning
// where it stopped.
type Record struct {
	ServiceModel string
	Strategy     Strategy
	Params       Params
	// StateCovariance is the covariance of the filter state: of the
	// log-parameters for the robust strategy, of the parameters themselves
	// for the seed one.
	StateCovariance [][]float64
	Updates         int // accepted updates so far
	Rejections      int
	Skips           int // observations the server gate kept out
	LastNIS         float64
	LastUpdate      time.Time
	// The moving-horizon state, so that a tuner rebuilt from its record
	// every cycle (as the engine does) keeps its warm-up window, its count
	// of consecutive rejections and the anchor they are fitted against.
	// Without them every restore restarted the window with one
	// observation, never reached MaxRejections and lost the anchor's
	// growth by Q on a rejection: an estimate once rejected stayed frozen.
	// Empty in records written before these fields existed.
	AnchorState      []float64
	AnchorCovariance [][]float64
	Window           []Observation
	Pending          []Observation
	Fitting          bool
	// QueueFit: the current fit took queue-dominated or preempting cycles
	// (the server gate is off until a fit starts anew).
	QueueFit bool `json:"queueFit,omitempty"`
	// LastRate is the previous observation's arrival rate per replica
	// (the robust strategy skips a cycle in which it changed by more than
	// 30 %).
	LastRate float64 `json:"lastRate,omitempty"`
	// LastQueued: the previous observation's TTFT was mostly queueing wait
	// (the next one without a queue is skipped).
	LastQueued bool `json:"lastQueued,omitempty"`
	// QueuedBefore: the observation before the previous one's was too (a
	// queued cycle counts only after two that queued: the metrics window
	// spans two cycles).
	QueuedBefore bool `json:"queuedBefore,omitempty"`
	// LastWaiting is the previous observation's waiting requests per
	// replica (a queue less than half of it is draining).
	LastWaiting float64 `json:"lastWaiting,omitempty"`
}

// Store keeps learned parameters across cycles (and, in the controller,
// across restarts and leader changes). Implementations must be safe for
// concurrent use: the engine reads it from several goroutines.
type Store interface {
	// Get returns the record of k; ok is false when there is none.
	Get(k Key) (rec Record, ok bool, err error)
	// Put replaces the record of k.
	Put(k Key, rec Record) error
	// Delete forgets k; deleting a missing key is not an error.
	Delete(k Key) error
}

// Summary is the part of a record that sizing with learned parameters
// reads.
type Summary struct {
	ServiceModel string
	Updates      int
	Params       Params
}

// SummaryOf is rec's summary.
func SummaryOf(rec Record) Summary {
	return Summary{ServiceModel: rec.ServiceModel, Updates: rec.Updates, Params: rec.Params}
}

// A Summarizer is a Store that gives a record's summary without copying
// the record (its window and covariances), for callers that only size
// with it.
type Summarizer interface {
	// Summary returns the summary of k's record; ok is false when there
	// is none.
	Summary(k Key) (sum Summary, ok bool, err error)
}

// SummaryFrom reads k's summary from s, through Summarizer where s is one.
func SummaryFrom(s Store, k Key) (Summary, bool, error) {
	if sz, ok := s.(Summarizer); ok {
		return sz.Summary(k)
	}
	rec, ok, err := s.Get(k)
	if err != nil || !ok {
		return Summary{}, false, err
	}
	return SummaryOf(rec), true, nil
}

// MemoryStore is a Store in memory, safe for concurrent use.
type MemoryStore struct {
	mu sync.Mutex
	m  map[Key]Record
}

var (
	_ Store      = (*MemoryStore)(nil)
	_ Summarizer = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{m: map[Key]Record{}} }

// Get implements Store.
func (s *MemoryStore) Get(k Key) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	return r.clone(), ok, nil
}

// Summary implements Summarizer: it copies nothing but the summary.
func (s *MemoryStore) Summary(k Key) (Summary, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	if !ok {
		return Summary{}, false, nil
	}
	return SummaryOf(r), true, nil
}

// Put implements Store.
func (s *MemoryStore) Put(k Key, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = rec.clone()
	return nil
}

// Delete implements Store.
func (s *MemoryStore) Delete(k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
	return nil
}

func (r Record) clone() Record {
	c := r
	c.StateCovariance = cloneRows(r.StateCovariance)
	c.AnchorState = append([]float64(nil), r.AnchorState...)
	c.AnchorCovariance = cloneRows(r.AnchorCovariance)
	c.Window = append([]Observation(nil), r.Window...)
	c.Pending = append([]Observation(nil), r.Pending...)
	return c
}

// Record returns the tuner's state for a Store, stamped with now.
func (t *Tuner) Record(now time.Time) Record {
	return Record{ServiceModel: t.cfg.ServiceModel, Strategy: t.cfg.Strategy, Params: t.Params(),
		StateCovariance: t.cov().rows(t.n), Updates: t.updates, Rejections: t.rejections, Skips: t.skips, LastNIS: t.lastNIS, LastUpdate: now,
		AnchorState: append([]float64(nil), t.anchorX[:t.n]...), AnchorCovariance: t.anchorP.rows(t.n),
		Window: append([]Observation(nil), t.window...), Pending: append([]Observation(nil), t.pending...), Fitting: t.fitting, QueueFit: t.queueFit, LastRate: t.lastRate, LastQueued: t.lastQueued, QueuedBefore: t.queuedBefore, LastWaiting: t.lastWaiting}
}

// symOf checks and converts a stored n×n covariance.
func symOf(m [][]float64, n int) (square, error) {
	var p square
	if len(m) != n {
		return p, fmt.Errorf("tuner: record covariance is %d×%d, want %d×%d", len(m), len(m), n, n)
	}
	for i, row := range m {
		if len(row) != n {
			return p, errors.New("tuner: record covariance is not square")
		}
		for j := i; j < n; j++ {
			v := (row[j] + m[j][i]) / 2
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return p, errors.New("tuner: record covariance is not finite")
			}
			p[i][j], p[j][i] = v, v
		}
	}
	if _, ok := cholesky(p, n); !ok {
		return p, errors.New("tuner: record covariance is not positive-definite")
	}
	return p, nil
}

// Restore returns a tuner that resumes from rec. The configuration must
// name the same service model and strategy. A record that has finished its
// warm-up resumes gated; one that has not restarts its warm-up window from
// the stored estimate.
func Restore(cfg Config, rec Record) (*Tuner, error) {
	full := cfg.withDefaults()
	if rec.ServiceModel != full.ServiceModel || rec.Strategy != full.Strategy {
		return nil, fmt.Errorf("tuner: record is for %s/%s, configuration is %s/%s",
			rec.ServiceModel, rec.Strategy, full.ServiceModel, full.Strategy)
	}
	t, err := New(cfg, rec.Params)
	if err != nil {
		return nil, err
	}
	n := dim(full.ServiceModel)
	p, err := symOf(rec.StateCovariance, n)
	if err != nil {
		return nil, err
	}
	t.setState(t.state(), &p)
	t.anchorX, t.anchorP = t.state(), t.cov()
	t.updates, t.rejections, t.skips, t.lastNIS = rec.Updates, rec.Rejections, rec.Skips, rec.LastNIS
	t.queueFit = rec.QueueFit
	if rec.LastRate > 0 && !math.IsInf(rec.LastRate, 0) {
		t.lastRate = rec.LastRate
	}
	t.lastQueued, t.queuedBefore = rec.LastQueued, rec.QueuedBefore
	if rec.LastWaiting > 0 && !math.IsInf(rec.LastWaiting, 0) {
		t.lastWaiting = rec.LastWaiting
	}
	t.fitting = rec.Updates < t.windowSize // resume gated once warmed up
	if len(rec.AnchorState) == n && len(rec.AnchorCovariance) == n {
		ap, err := symOf(rec.AnchorCovariance, n)
		if err != nil {
			return nil, err
		}
		t.anchorX, t.anchorP = vecOf(rec.AnchorState), ap
		t.window = append(t.window[:0], rec.Window...)
		t.pending = append(t.pending[:0], rec.Pending...)
		t.fitting = rec.Fitting
	}
	return t, nil
}
