package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	wvav1 "github.com/llm-d-incubation/wva/api/v1alpha1"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/tuner"
)

// TestTunerStatePersists: the learned parameters are written to the state
// ConfigMap, a new store (a restarted or new leader) reads them back, and
// GET /tuner/params serves them.
func TestTunerStatePersists(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.deployment("llama-h100", 2)
	f.va("llama-h100", model, nil)
	if err := f.planner.Config.apply(defaultConfigNames().QueueingModel, map[string]string{"default": "sloMultiplier: 3\ntuningEnabled: true\n"}, true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		ps := pods("llama-h100", 2, 0.3, 0)
		for j := range ps {
			ps[j].ArrivalRateRPS = 1 + float64(i)
			ps[j].AvgTTFTMs = 60 + 10*float64(i)
			ps[j].AvgITLMs = 10 + float64(i)
		}
		f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: model, Pods: ps}}})
		f.cycle()
		f.clock.Step(60e9)
	}
	va := f.reconcile("llama-h100")
	wantCond(t, va, wvav1.ConditionTuningActive, metav1.ConditionTrue, wvav1.ReasonTuning)
	key := tuner.Key{Namespace: f.ns, Model: model, Variant: "llama-h100"}
	rec, ok, _ := f.planner.Store.Get(key)
	if !ok || rec.Params.Alpha <= 0 {
		t.Fatalf("no learned record: %+v", rec)
	}
	restarted := newConfigMapStore(env.Client, f.planner.Store.ref)
	if skipped, err := restarted.load(ctx); err != nil || len(skipped) > 0 {
		t.Fatalf("load: %v %v", skipped, err)
	}
	got, ok, _ := restarted.Get(key)
	if !ok || got.Params != rec.Params || got.Updates != rec.Updates || len(got.Window) != len(rec.Window) || !got.LastUpdate.Equal(rec.LastUpdate) {
		t.Fatalf("restored %+v\nwant %+v", got, rec)
	}
	checkTunerAPI(t, restarted, f.ns, rec)
}

// checkTunerAPI reads GET /tuner/params for the variant and an unknown one.
func checkTunerAPI(t *testing.T, store *configMapStore, ns string, rec tuner.Record) {
	t.Helper()
	srv := httptest.NewServer(tunerHandler(store))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "?namespace=" + ns + "&variant=llama-h100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []tunerParams
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Alpha != rec.Params.Alpha || out[0].Model != model || len(out[0].Covariance) != 3 {
		t.Fatalf("tuner API: %+v", out)
	}
	resp2, err := srv.Client().Get(srv.URL + "?variant=nope")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Errorf("unknown variant: status %d", resp2.StatusCode)
	}
}

// TestStoreNeverOverwritesUnread: a leader whose first read of the tuner
// state fails must not replace it with what it learned since; once the
// read succeeds both are kept.
func TestStoreNeverOverwritesUnread(t *testing.T) {
	ctx := context.Background()
	ref := types.NamespacedName{Namespace: ctrlNS, Name: "state-unread"}
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ctrlNS}})
	a := tuner.Key{Namespace: "ns", Model: "m", Variant: "a"}
	b := tuner.Key{Namespace: "ns", Model: "m", Variant: "b"}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	saveRecord(t, ref, a, tuner.Record{Params: tuner.Params{Alpha: 6}, LastUpdate: t0})

	failing := true
	s := newConfigMapStore(flakyGets(t, &failing), ref)
	if _, err := s.load(ctx); err == nil {
		t.Fatal("the failing read succeeded")
	}
	if err := s.Put(b, tuner.Record{Params: tuner.Params{Alpha: 2}, LastUpdate: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(ctx); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Fatalf("flush before a successful read: %v", err)
	}
	failing = false
	if _, err := s.load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkAlphas(t, ref, map[tuner.Key]float64{a: 6, b: 2})
}

// saveRecord saves the tuner state ref holding one record, as a leader
// before this one left it.
func saveRecord(t *testing.T, ref types.NamespacedName, k tuner.Key, rec tuner.Record) {
	t.Helper()
	ctx := context.Background()
	s := newConfigMapStore(env.Client, ref)
	if _, err := s.load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(k, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// flakyGets is a client of the test API server whose reads time out while
// *failing is true.
func flakyGets(t *testing.T, failing *bool) client.Client {
	t.Helper()
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(ww, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
		if *failing {
			return fmt.Errorf("etcdserver: request timed out")
		}
		return c.Get(ctx, k, o, opts...)
	}})
}

// checkAlphas: a new store reads the tuner state ref back with a record
// of each key, its alpha as wanted.
func checkAlphas(t *testing.T, ref types.NamespacedName, want map[tuner.Key]float64) {
	t.Helper()
	check := newConfigMapStore(env.Client, ref)
	if _, err := check.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k, alpha := range want {
		if r, ok, _ := check.Get(k); !ok || r.Params.Alpha != alpha {
			t.Fatalf("stored %s: %v %+v, want alpha %v", k.Variant, ok, r.Params, alpha)
		}
	}
}
