package controller

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llm-d-incubation/wva/internal/tuner"
)

// fullRecord is a record the size the tuner writes once warmed up: a full
// window, pending observations and the covariances.
func fullRecord(i int) tuner.Record {
	obs := make([]tuner.Observation, 6)
	for j := range obs {
		obs[j] = tuner.Observation{RateRPS: 1.25 + float64(i%97)/7, InputTokens: 1013.5, OutputTokens: 211.25, MaxBatchSize: 256,
			TTFTMs: 87.123456789 + float64(j), ITLMs: 12.987654321}
	}
	cov := [][]float64{{0.0123456789, 1e-5, 2e-6}, {1e-5, 0.0234567891, 3e-6}, {2e-6, 3e-6, 0.0345678912}}
	return tuner.Record{ServiceModel: "queue", Strategy: "robust", Params: tuner.Params{Alpha: 6.1 + float64(i%13), Beta: 0.031, Gamma: 0.0021},
		StateCovariance: cov, AnchorState: []float64{1.8, -3.4, -6.2}, AnchorCovariance: cov, Updates: 100 + i, LastNIS: 1.234567,
		LastUpdate: time.Date(2026, 11, 22, 10, 0, i%60, 0, time.UTC), Window: obs, Pending: obs[:5]}
}

// TestTunerStateSharded: 5 000 learned variants (some 10 MB of state,
// ten times what one ConfigMap holds) are saved over as many shards as
// needed, each under the limit, and read back whole by a new leader; an
// unchanged state writes nothing, one changed record rewrites one shard,
// and when the fleet shrinks the surplus shards are emptied.
func TestTunerStateSharded(t *testing.T) {
	ctx := context.Background()
	ref := types.NamespacedName{Namespace: ctrlNS, Name: "state-sharded"}
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ctrlNS}})
	s := newConfigMapStore(env.Client, ref)
	if _, err := s.load(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	key := func(i int) tuner.Key {
		return tuner.Key{Namespace: fmt.Sprintf("team-%d", i%40), Model: fmt.Sprintf("model-%d", i%300), Variant: fmt.Sprintf("variant-%04d", i)}
	}
	for i := range n {
		if err := s.Put(key(i), fullRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkShards(t, readShards(t, s), n)

	checkReadBack(t, ref, n, key)
	checkRewrites(t, s, key(7), fullRecord(7))
	checkShrunk(t, s, key)
}

// checkReadBack: a new leader reads all n records back, unchanged.
func checkReadBack(t *testing.T, ref types.NamespacedName, n int, key func(int) tuner.Key) {
	t.Helper()
	next := newConfigMapStore(env.Client, ref)
	if skipped, err := next.load(context.Background()); err != nil || len(skipped) != 0 {
		t.Fatalf("load: %v, skipped %v", err, skipped)
	}
	if got := len(next.list("", "", "")); got != n {
		t.Fatalf("read back %d records, want %d", got, n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		got, ok, _ := next.Get(key(i))
		want := fullRecord(i)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("record %d read back as %+v", i, got)
		}
	}
}

// checkShrunk: when the fleet shrinks to ten variants, they fit in one
// shard, the surplus shards are emptied, and a new leader reads the ten.
func checkShrunk(t *testing.T, s *configMapStore, key func(int) tuner.Key) {
	t.Helper()
	ctx := context.Background()
	keep := map[tuner.Key]bool{}
	for i := range 10 {
		keep[key(i)] = true
	}
	s.retain(keep)
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readShards(t, s); len(got) != 1 || len(got[0].Data) != 10 {
		t.Fatalf("after shrinking: %d shards", len(got))
	}
	var surplus corev1.ConfigMap
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: s.ref.Namespace, Name: s.ref.Name + "-1"}, &surplus); err != nil || len(surplus.Data) != 0 {
		t.Errorf("surplus shard: %v, %d records", err, len(surplus.Data))
	}
	last := newConfigMapStore(env.Client, s.ref)
	if _, err := last.load(ctx); err != nil || len(last.list("", "", "")) != 10 {
		t.Fatalf("after shrinking read back %d records (%v)", len(last.list("", "", "")), err)
	}
}

// checkRewrites: putting an unchanged record writes nothing; changing it
// rewrites one shard.
func checkRewrites(t *testing.T, s *configMapStore, k tuner.Key, rec tuner.Record) {
	t.Helper()
	ctx := context.Background()
	// Nothing changed: nothing written. One record changed: one shard.
	before := versions(readShards(t, s))
	if err := s.Put(k, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if after := versions(readShards(t, s)); !reflect.DeepEqual(after, before) {
		t.Errorf("an unchanged state rewrote shards: %v → %v", before, after)
	}
	r := rec
	r.Params.Alpha = 99
	if err := s.Put(k, r); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for name, v := range versions(readShards(t, s)) {
		if before[name] != v {
			changed++
		}
	}
	if changed != 1 {
		t.Errorf("one changed record rewrote %d shards", changed)
	}
}

// checkShards: more than ten shards, each under a ConfigMap's limit,
// holding n records in all.
func checkShards(t *testing.T, shards []corev1.ConfigMap, n int) {
	t.Helper()
	if len(shards) < 10 {
		t.Fatalf("%d shards for 5 000 variants, want ≥ 10", len(shards))
	}
	total, bytes := 0, 0
	for _, cm := range shards {
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		if size > 1<<20-16<<10 {
			t.Errorf("shard %s holds %d bytes", cm.Name, size)
		}
		total, bytes = total+len(cm.Data), bytes+size
	}
	t.Logf("%d records, %d bytes in %d shards", total, bytes, len(shards))
	if total != n {
		t.Errorf("%d records stored, want %d", total, n)
	}
}

// readShards reads the shards the first ConfigMap's annotation counts.
func readShards(t *testing.T, s *configMapStore) []corev1.ConfigMap {
	t.Helper()
	var first corev1.ConfigMap
	if err := env.Client.Get(context.Background(), s.ref, &first); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(first.Annotations[shardsAnnotation])
	if err != nil {
		t.Fatalf("shard count %q", first.Annotations[shardsAnnotation])
	}
	out := []corev1.ConfigMap{first}
	for i := 1; i < n; i++ {
		var cm corev1.ConfigMap
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ref.Namespace, Name: s.shardName(i)}, &cm); err != nil {
			t.Fatal(err)
		}
		out = append(out, cm)
	}
	return out
}

func versions(cms []corev1.ConfigMap) map[string]string {
	out := map[string]string{}
	for _, cm := range cms {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}
