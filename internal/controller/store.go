package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// ConfigMapStore is the tuner's Store for the controller: records live in
// memory and are written to one ConfigMap after each cycle (Flush), so that
// learned parameters survive restarts and leader changes; Load reads them
// back when a replica becomes leader.
//
// One data key per variant, "<namespace>.<variant>" (a namespace has no
// dots, so the key is unique), holding the record as JSON with its model.
// A ConfigMap holds at most 1 MiB: about 400 variants with full tuner
// windows. Flush reports an error beyond that.
type ConfigMapStore struct {
	c   client.Client
	ref types.NamespacedName

	mu    sync.Mutex
	m     map[tuner.Key]tuner.Record
	dirty bool
	// loaded is set once the ConfigMap was read (or found absent): until
	// then Flush must not overwrite what an earlier leader learned.
	loaded bool
}

var _ tuner.Store = (*ConfigMapStore)(nil)

// NewConfigMapStore returns an empty store persisted to the ConfigMap ref.
func NewConfigMapStore(c client.Client, ref types.NamespacedName) *ConfigMapStore {
	return &ConfigMapStore{c: c, ref: ref, m: map[tuner.Key]tuner.Record{}}
}

type storedRecord struct {
	Namespace string       `json:"namespace"`
	Model     string       `json:"model"`
	Variant   string       `json:"variant"`
	Record    tuner.Record `json:"record"`
}

func dataKey(k tuner.Key) string { return k.Namespace + "." + k.Variant }

// Get implements tuner.Store.
func (s *ConfigMapStore) Get(k tuner.Key) (tuner.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	return r, ok, nil
}

// Put implements tuner.Store.
func (s *ConfigMapStore) Put(k tuner.Key, r tuner.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = r
	s.dirty = true
	return nil
}

// Delete implements tuner.Store.
func (s *ConfigMapStore) Delete(k tuner.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		delete(s.m, k)
		s.dirty = true
	}
	return nil
}

// Entry is one variant's learned parameters, as the tuner API returns them.
type Entry struct {
	Key    tuner.Key
	Record tuner.Record
}

// List returns the records, sorted by key, that match the non-empty
// filters.
func (s *ConfigMapStore) List(namespace, model, variant string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for k, r := range s.m {
		if (namespace == "" || k.Namespace == namespace) && (model == "" || k.Model == model) && (variant == "" || k.Variant == variant) {
			out = append(out, Entry{Key: k, Record: r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out
}

// Retain forgets the records of variants not in keep (deleted
// VariantAutoscalings).
func (s *ConfigMapStore) Retain(keep map[tuner.Key]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if !keep[k] {
			delete(s.m, k)
			s.dirty = true
		}
	}
}

// Load reads the ConfigMap's records. A record learned in memory since
// (newer than the stored one) is kept. A missing ConfigMap is an empty
// store; an entry that does not parse is skipped and reported.
func (s *ConfigMapStore) Load(ctx context.Context) (skipped []string, err error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, s.ref, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			s.mu.Lock()
			s.loaded = true
			s.mu.Unlock()
			return nil, nil
		}
		return nil, fmt.Errorf("tuner state: reading ConfigMap %s: %w", s.ref, err)
	}
	m := map[tuner.Key]tuner.Record{}
	for key, v := range cm.Data {
		var sr storedRecord
		if err := json.Unmarshal([]byte(v), &sr); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		m[tuner.Key{Namespace: sr.Namespace, Model: sr.Model, Variant: sr.Variant}] = sr.Record
	}
	sort.Strings(skipped)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.m {
		if old, ok := m[k]; !ok || r.LastUpdate.After(old.LastUpdate) {
			m[k] = r
			s.dirty = true
		}
	}
	s.m, s.loaded = m, true
	return skipped, nil
}

// Loaded says whether Load has succeeded.
func (s *ConfigMapStore) Loaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// Flush writes the records when they changed since the last Flush or Load.
func (s *ConfigMapStore) Flush(ctx context.Context) error {
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil
	}
	if !s.loaded {
		s.mu.Unlock()
		return fmt.Errorf("tuner state: ConfigMap %s not read yet; not overwriting it", s.ref)
	}
	data := make(map[string]string, len(s.m))
	var bad []string
	for k, r := range s.m {
		b, err := json.Marshal(storedRecord{Namespace: k.Namespace, Model: k.Model, Variant: k.Variant, Record: finite(r)})
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		data[dataKey(k)] = string(b)
	}
	s.dirty = false
	s.mu.Unlock()
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size > 1<<20-4096 {
		s.markDirty()
		return fmt.Errorf("tuner state: %d bytes exceed a ConfigMap's 1 MiB", size)
	}
	var cm corev1.ConfigMap
	err := s.c.Get(ctx, s.ref, &cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.ref.Name, Namespace: s.ref.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "wva", "app.kubernetes.io/component": "tuner-state"}}, Data: data}
		err = s.c.Create(ctx, &cm)
	case err == nil:
		cm.Data = data
		err = s.c.Update(ctx, &cm)
	}
	if err != nil {
		s.markDirty()
		return fmt.Errorf("tuner state: writing ConfigMap %s: %w", s.ref, err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("tuner state: records not saved: %s", strings.Join(bad, "; "))
	}
	return nil
}

func (s *ConfigMapStore) markDirty() {
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
}

// finite replaces non-finite figures (JSON cannot carry them) by 0.
func finite(r tuner.Record) tuner.Record {
	if math.IsNaN(r.LastNIS) || math.IsInf(r.LastNIS, 0) {
		r.LastNIS = 0
	}
	return r
}
