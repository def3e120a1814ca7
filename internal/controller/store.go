package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// configMapStore is the tuner's Store for the controller: records live in
// memory and are written to one ConfigMap after each cycle (flush), so that
// learned parameters survive restarts and leader changes; load reads them
// back when a replica becomes leader.
//
// One data key per variant, "<namespace>.<variant>" (a namespace has no
// dots, so the key is unique), holding the record as JSON with its model.
// A ConfigMap holds at most 1 MiB, about 400 variants with full tuner
// windows, so the records are spread over shards: the ConfigMap ref itself
// and, as the state grows, ref-1, ref-2, ... A variant's shard is a hash of
// its key modulo the shard count, which ref's annotation shardsAnnotation
// records; the count grows until every shard fits and shrinks when the
// state does (surplus shards are emptied: the controller may not delete
// ConfigMaps). A shard whose content did not change is not rewritten.
type configMapStore struct {
	c   client.Client
	ref types.NamespacedName
	// written is a hash of each shard's data as last written or read, so
	// that unchanged shards are skipped; shards is the count ref records.
	written map[string]uint64
	shards  int

	mu    sync.Mutex
	m     map[tuner.Key]tuner.Record
	dirty bool
	// loaded is set once the ConfigMap was read (or found absent): until
	// then flush must not overwrite what an earlier leader learned.
	loaded bool
}

var _ tuner.Store = (*configMapStore)(nil)

// newConfigMapStore returns an empty store persisted to the ConfigMap ref.
func newConfigMapStore(c client.Client, ref types.NamespacedName) *configMapStore {
	return &configMapStore{c: c, ref: ref, m: map[tuner.Key]tuner.Record{}, written: map[string]uint64{}}
}

type storedRecord struct {
	Namespace string       `json:"namespace"`
	Model     string       `json:"model"`
	Variant   string       `json:"variant"`
	Record    tuner.Record `json:"record"`
}

func dataKey(k tuner.Key) string { return k.Namespace + "." + k.Variant }

// Get implements tuner.Store.
func (s *configMapStore) Get(k tuner.Key) (tuner.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	return r, ok, nil
}

// Put implements tuner.Store.
func (s *configMapStore) Put(k tuner.Key, r tuner.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = r
	s.dirty = true
	return nil
}

// Delete implements tuner.Store.
func (s *configMapStore) Delete(k tuner.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		delete(s.m, k)
		s.dirty = true
	}
	return nil
}

// storeEntry is one variant's learned parameters, as the tuner API returns them.
type storeEntry struct {
	Key    tuner.Key
	Record tuner.Record
}

// list returns the records, sorted by key, that match the non-empty
// filters.
func (s *configMapStore) list(namespace, model, variant string) []storeEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storeEntry
	for k, r := range s.m {
		if (namespace == "" || k.Namespace == namespace) && (model == "" || k.Model == model) && (variant == "" || k.Variant == variant) {
			out = append(out, storeEntry{Key: k, Record: r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out
}

// retain forgets the records of variants not in keep (deleted
// VariantAutoscalings).
func (s *configMapStore) retain(keep map[tuner.Key]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if !keep[k] {
			delete(s.m, k)
			s.dirty = true
		}
	}
}

// shardsAnnotation on the tuner state's first ConfigMap is the number of
// shards the records are spread over (absent: 1, the layout before shards).
const shardsAnnotation = "wva.llmd.ai/tuner-state-shards"

// Shard sizes: the data budget of one ConfigMap (1 MiB less room for its
// metadata) and the most shards (about 60 MiB, some 25 000 variants).
const (
	shardBudget = 1<<20 - 16<<10
	maxShards   = 64
)

// shardName is the name of shard i.
func (s *configMapStore) shardName(i int) string {
	if i == 0 {
		return s.ref.Name
	}
	return fmt.Sprintf("%s-%d", s.ref.Name, i)
}

// load reads the records of every shard. A record learned in memory since
// (newer than the stored one) is kept. A missing ConfigMap is an empty
// store; an entry that does not parse, or a shard that is missing, is
// skipped and reported.
func (s *configMapStore) load(ctx context.Context) (skipped []string, err error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, s.ref, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			s.mu.Lock()
			s.loaded, s.shards, s.written = true, 0, map[string]uint64{}
			s.mu.Unlock()
			return nil, nil
		}
		return nil, fmt.Errorf("tuner state: reading ConfigMap %s: %w", s.ref, err)
	}
	n := 1
	if a, ok := cm.Annotations[shardsAnnotation]; ok {
		if v, err := strconv.Atoi(a); err == nil && v >= 1 && v <= maxShards {
			n = v
		} else {
			skipped = append(skipped, fmt.Sprintf("annotation %s=%q is not a shard count in 1..%d; reading only %s", shardsAnnotation, a, maxShards, s.ref.Name))
		}
	}
	m := map[tuner.Key]tuner.Record{}
	written := map[string]uint64{s.ref.Name: dataHash(cm.Data)}
	skipped = append(skipped, decodeShard(cm.Data, m)...)
	for i := 1; i < n; i++ {
		var sh corev1.ConfigMap
		err := s.c.Get(ctx, types.NamespacedName{Namespace: s.ref.Namespace, Name: s.shardName(i)}, &sh)
		switch {
		case apierrors.IsNotFound(err):
			skipped = append(skipped, fmt.Sprintf("shard %s is missing; its records are relearned", s.shardName(i)))
		case err != nil:
			return nil, fmt.Errorf("tuner state: reading ConfigMap %s/%s: %w", s.ref.Namespace, s.shardName(i), err)
		default:
			written[sh.Name] = dataHash(sh.Data)
			skipped = append(skipped, decodeShard(sh.Data, m)...)
		}
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
	s.m, s.loaded, s.shards, s.written = m, true, n, written
	return skipped, nil
}

// decodeShard adds a shard's records to m and returns the keys it skipped.
func decodeShard(data map[string]string, m map[tuner.Key]tuner.Record) (skipped []string) {
	for key, v := range data {
		var sr storedRecord
		if err := json.Unmarshal([]byte(v), &sr); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		m[tuner.Key{Namespace: sr.Namespace, Model: sr.Model, Variant: sr.Variant}] = sr.Record
	}
	return skipped
}

// dataHash identifies a shard's content.
func dataHash(data map[string]string) uint64 {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := fnv.New64a()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(data[k]))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// isLoaded says whether load has succeeded.
func (s *configMapStore) isLoaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// flush writes the records when they changed since the last flush or load:
// the shards after the first, then the first with the shard count (so a
// reader never follows a count to shards not written yet), then empties
// the shards no longer used.
func (s *configMapStore) flush(ctx context.Context) error {
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
	old, written := s.shards, s.written
	s.dirty = false
	s.mu.Unlock()
	shards, err := spread(data)
	if err != nil {
		s.markDirty()
		return err
	}
	next := map[string]uint64{}
	for i := len(shards) - 1; i >= 0; i-- { // the first (with the count) last
		if err := s.writeShard(ctx, i, shards[i], len(shards), old, written, next); err != nil {
			s.markDirty()
			return err
		}
	}
	for i := len(shards); i < old; i++ {
		if err := s.writeShard(ctx, i, map[string]string{}, len(shards), old, written, next); err != nil {
			s.markDirty()
			return err
		}
	}
	s.mu.Lock()
	s.shards, s.written = len(shards), next
	s.mu.Unlock()
	if len(bad) > 0 {
		return fmt.Errorf("tuner state: records not saved: %s", strings.Join(bad, "; "))
	}
	return nil
}

// spread assigns the records to the fewest shards (by a hash of their key)
// in which every shard fits a ConfigMap.
func spread(data map[string]string) ([]map[string]string, error) {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	for n := max(1, (size+shardBudget-1)/shardBudget); n <= maxShards; n++ {
		shards, used := make([]map[string]string, n), make([]int, n)
		for i := range shards {
			shards[i] = map[string]string{}
		}
		fits := true
		for k, v := range data {
			h := fnv.New32a()
			h.Write([]byte(k))
			i := int(h.Sum32() % uint32(n)) // n ≤ maxShards
			shards[i][k] = v
			if used[i] += len(k) + len(v); used[i] > shardBudget {
				fits = false
				break
			}
		}
		if fits {
			return shards, nil
		}
	}
	return nil, fmt.Errorf("tuner state: %d bytes do not fit %d ConfigMaps of 1 MiB", size, maxShards)
}

// writeShard creates or updates shard i of n with data, unless its content
// is what was last written (and, for the first, the count old it records
// is n); next records what it now holds.
func (s *configMapStore) writeShard(ctx context.Context, i int, data map[string]string, n, old int, written, next map[string]uint64) error {
	name := s.shardName(i)
	h := dataHash(data)
	next[name] = h
	if prev, ok := written[name]; ok && prev == h && (i > 0 || old == n) {
		return nil
	}
	ref := types.NamespacedName{Namespace: s.ref.Namespace, Name: name}
	var cm corev1.ConfigMap
	err := s.c.Get(ctx, ref, &cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ref.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "wva", "app.kubernetes.io/component": "tuner-state"}}}
		setShard(&cm, i, n, data)
		err = s.c.Create(ctx, &cm)
	case err == nil:
		setShard(&cm, i, n, data)
		err = s.c.Update(ctx, &cm)
	}
	if err != nil {
		return fmt.Errorf("tuner state: writing ConfigMap %s: %w", ref, err)
	}
	return nil
}

// setShard puts data in cm and, on the first shard, the shard count.
func setShard(cm *corev1.ConfigMap, i, n int, data map[string]string) {
	cm.Data = data
	if i != 0 {
		return
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[shardsAnnotation] = strconv.Itoa(n)
}

func (s *configMapStore) markDirty() {
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
