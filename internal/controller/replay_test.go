package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/collector/file"
	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/snapshot"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestReplayLiveDecision runs two real cycles on the API server: a
// saturated model scales up, an idle one is held by its scale-down window
// (seeded from its replicas), and one whose metrics went missing holds the
// scale-up its first cycle decided. The snapshot the controller serves at
// /debug/snapshot, fetched over the secure metrics endpoint with a
// wva-debug-reader token, replays through snapshot.ParseFile and
// File.Plan (what `wva plan -f` runs) to the live decisions, variant by
// variant, for the whole cycle and for each model; without its state the
// same document decides otherwise. The file --replay-dir keeps is the
// same document.
func TestReplayLiveDecision(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	f.planner.Replays = newReplayStore(dir, 1, logr.Discard())
	for _, v := range []struct {
		name     string
		replicas int32
	}{{"up-h100", 2}, {"down-h100", 4}, {"held-h100", 2}} {
		f.deployment(v.name, v.replicas)
		f.va(v.name, "model-"+strings.TrimSuffix(v.name, "-h100"), nil)
	}
	saturated, idle := pods("up-h100", 2, 0.95, 12), pods("down-h100", 4, 0.05, 0)
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: "model-up", Pods: saturated},
		{Namespace: f.ns, Model: "model-down", Pods: idle}, {Namespace: f.ns, Model: "model-held", Pods: pods("held-h100", 2, 0.95, 12)}}})
	f.cycle()
	f.clock.Step(time.Minute)
	missing := []file.Pod{{Pod: engine.Pod{Name: "held-h100-0", Missing: true}}, {Pod: engine.Pod{Name: "held-h100-1", Missing: true}}}
	f.writeMetrics(file.Document{Targets: []file.TargetPods{{Namespace: f.ns, Model: "model-up", Pods: saturated},
		{Namespace: f.ns, Model: "model-down", Pods: idle}, {Namespace: f.ns, Model: "model-held", Pods: missing}}})
	f.cycle()

	live := liveDecisions(t, f)
	get := serveReplays(t, f)
	whole := get("/debug/snapshot", "")
	checkReplay(t, "the last cycle", whole, live, 3)
	for name, d := range live {
		doc := get(fmt.Sprintf("/debug/snapshot?namespace=%s&model=%s&format=json", f.ns, d.Model), "")
		checkReplay(t, name, doc, map[string]engine.VariantDecision{name: d}, 1)
	}
	if doc := get("/debug/snapshot?model=model-up", "application/json"); !strings.HasPrefix(doc, "{") {
		t.Errorf("Accept: application/json answered %.100q", doc)
	}

	files, err := filepath.Glob(filepath.Join(dir, "snapshot-*.yaml"))
	if err != nil || len(files) != 1 || !strings.Contains(files[0], f.clock.Now().UTC().Format("20060102T150405")) {
		t.Fatalf("--replay-dir keeps %v (%v), want the last cycle's file only", files, err)
	}
	if b, err := os.ReadFile(files[0]); err != nil || string(b) != whole {
		t.Errorf("the kept file differs from the served document (%v)", err)
	}
}

// liveDecisions returns the decisions of the last cycle, checking that the
// scenario holds: up-h100 scales up, down-h100 is held by its window,
// held-h100 holds its first cycle's scale-up.
func liveDecisions(t *testing.T, f *fixture) map[string]engine.VariantDecision {
	t.Helper()
	live := map[string]engine.VariantDecision{}
	for _, name := range []string{"up-h100", "down-h100", "held-h100"} {
		d, ok := f.planner.Cache.get(types.NamespacedName{Namespace: f.ns, Name: name})
		if !ok || !d.Decided {
			t.Fatalf("%s: no decision", name)
		}
		live[name] = d.Decision
	}
	if d := live["up-h100"]; d.Action != engine.ActionScaleUp {
		t.Fatalf("up-h100: live decision %d (%s: %s), want a scale-up", d.Desired, d.Reason, d.Explanation)
	}
	for name, want := range map[string]engine.Reason{"down-h100": engine.ReasonStabilized, "held-h100": engine.ReasonHoldMetrics} {
		if d := live[name]; d.Reason != want {
			t.Fatalf("%s: live decision %d (%s: %s), want %s: the scenario does not hold", name, d.Desired, d.Reason, d.Explanation, want)
		}
	}
	if d := live["held-h100"]; d.Desired <= d.Current {
		t.Fatalf("held-h100 holds %d, not the scale-up of its first cycle (current %d)", d.Desired, d.Current)
	}
	return live
}

// checkReplay plans doc as `wva plan -f` does and compares the decisions
// with the live ones; then plans it without its state, which must change
// the held and the stabilised variants' decisions.
func checkReplay(t *testing.T, what, doc string, live map[string]engine.VariantDecision, models int) {
	t.Helper()
	parsed, err := snapshot.ParseFile([]byte(doc))
	if err != nil {
		t.Fatalf("%s: the served snapshot does not parse: %v\n%s", what, err, doc)
	}
	if len(parsed.Models) != models || parsed.State == nil {
		t.Fatalf("%s: %d models, state %v; want %d with state", what, len(parsed.Models), parsed.State != nil, models)
	}
	replay, err := parsed.Plan()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got := byVariant(replay)
	for name, d := range live {
		if r := got[name]; r.Desired != d.Desired || r.Reason != d.Reason {
			t.Errorf("%s: %s replays to %d (%s), live %d (%s)", what, name, r.Desired, r.Reason, d.Desired, d.Reason)
		}
	}
	parsed.State = nil
	bare, err := parsed.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got = byVariant(bare)
	for _, name := range []string{"down-h100", "held-h100"} {
		if d, ok := live[name]; ok && got[name].Desired == d.Desired {
			t.Errorf("%s: without its state %s still replays to %d: the state is not what makes the replay", what, name, d.Desired)
		}
	}
}

func byVariant(p *engine.Plan) map[string]engine.VariantDecision {
	out := map[string]engine.VariantDecision{}
	for _, d := range p.Variants {
		out[d.Variant] = d
	}
	return out
}

// serveReplays serves the fixture's replays on a secure metrics server on
// the real API server, checks that it refuses clients without a token,
// without the role, with a role for /metrics only and with the scrapers'
// wva-metrics-reader, and returns a getter for a wva-debug-reader's token.
func serveReplays(t *testing.T, f *fixture) func(path, accept string) string {
	t.Helper()
	reader := generatedClusterRole(t, "wva-debug-reader")
	reader.Name = "wva-debug-reader-" + f.ns
	create(t, reader)
	scraper := generatedClusterRole(t, "wva-metrics-reader")
	scraper.Name = "wva-metrics-reader-" + f.ns
	create(t, scraper)
	metricsOnly := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-only-" + f.ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	create(t, metricsOnly)
	tokens := map[string]string{"reader": saToken(t, f.ns, "reader", reader.Name), "stranger": saToken(t, f.ns, "stranger", ""),
		"partial": saToken(t, f.ns, "partial", metricsOnly.Name), "scraper": saToken(t, f.ns, "scraper", scraper.Name)}
	o := DefaultOptions()
	o.Namespace, o.WatchNamespaces, o.LeaderElect = ctrlNS, []string{f.ns}, false
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	o.MetricsAddr, o.HealthAddr = addr, "0"
	mgr, err := newManager(env.Config, o, map[string]http.Handler{"/debug/snapshot": f.planner.Replays})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	c := newMetricsClient(t)
	url := "https://" + addr + "/debug/snapshot"
	waitFor(t, 30*time.Second, "the metrics server", func() bool {
		code, _, _ := c.get(url, "")
		return code != 0
	})
	for who, want := range map[string]int{"": http.StatusUnauthorized, "stranger": http.StatusForbidden, "partial": http.StatusForbidden, "scraper": http.StatusForbidden} {
		if code, body, _ := c.get(url, tokens[who]); code != want {
			t.Errorf("/debug/snapshot with token %q: %d %.200q, want %d", who, code, body, want)
		}
	}
	if code, body, _ := c.get(url+"?namespace="+f.ns+"&model=nothing", tokens["reader"]); code != http.StatusNotFound || !strings.Contains(body, "no snapshot") {
		t.Errorf("an unknown model: %d %.200q", code, body)
	}
	return func(path, accept string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokens["reader"])
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := c.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b.String())
		}
		return b.String()
	}
}

// TestReplayStore: one file per model, the latest; models gone are
// forgotten; a model over its bound or over the total is kept as why it is
// not; a model name in two namespaces needs its namespace; requests the
// handler cannot answer say why.
func TestReplayStore(t *testing.T) {
	r := newReplayStore("", 1, logr.Discard())
	model := func(ns, id string, pods int) engine.Model {
		v := engine.Variant{Name: "v-" + ns, Accelerator: "H100", CurrentReplicas: pods, ReadyReplicas: pods}
		for i := range pods {
			v.Pods = append(v.Pods, engine.Pod{Name: fmt.Sprintf("p-%d", i), ArrivalRateRPS: 1})
		}
		return engine.Model{ID: id, Namespace: ns, Variants: []engine.Variant{v}}
	}
	cycle := func(at time.Time, ms ...engine.Model) {
		live := map[collector.Target][]*variant{}
		for _, m := range ms {
			live[collector.Target{Namespace: m.Namespace, Model: m.ID}] = nil
		}
		r.record(at, &snapshot.File{Snapshot: engine.Snapshot{Time: at, Models: ms}}, live)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cycle(t0, model("a", "m", 1), model("b", "m", 1), model("c", "gone", 1))
	if _, err := r.model("", "m"); err == nil || !strings.Contains(err.Error(), "name one with ?namespace=") {
		t.Errorf("a model in two namespaces: %v", err)
	}
	if doc, err := r.model("a", "m"); err != nil || !strings.Contains(string(doc), `"namespace":"a"`) {
		t.Errorf("model a/m: %v %s", err, doc)
	}
	r.maxModel, r.maxTotal = 600, 400
	cycle(t0.Add(time.Minute), model("a", "m", 1), model("b", "m", 1), model("d", "big", 20))
	if _, err := r.model("", "gone"); !errors.Is(err, errNoReplay) {
		t.Errorf("a model gone: %v", err)
	}
	if _, err := r.model("d", "big"); err == nil || !strings.Contains(err.Error(), "over the 600 kept per model") {
		t.Errorf("a model over its bound: %v", err)
	}
	if _, err := r.model("b", "m"); err == nil || !strings.Contains(err.Error(), "at most 400 bytes") {
		t.Errorf("a model over the total: %v", err)
	}
	doc, err := r.cycle("")
	if err != nil || !strings.Contains(string(doc), "model d/big left out") || strings.Count(string(doc), `"id":`) != 1 {
		t.Errorf("the last cycle: %v %s", err, doc)
	}
	checkReplayHandler(t, r)
}

// checkReplayHandler asks r's handler what it cannot answer, and one thing
// it can.
func checkReplayHandler(t *testing.T, r *replayStore) {
	t.Helper()
	for _, c := range []struct {
		method, url string
		code        int
	}{
		{http.MethodPost, "/debug/snapshot", http.StatusMethodNotAllowed},
		{http.MethodGet, "/debug/snapshot?format=xml", http.StatusBadRequest},
		{http.MethodGet, "/debug/snapshot?namespace=x", http.StatusNotFound},
		{http.MethodGet, "/debug/snapshot?model=m", http.StatusBadRequest},
		{http.MethodGet, "/debug/snapshot?namespace=d&model=big", http.StatusInternalServerError},
		{http.MethodGet, "/debug/snapshot?namespace=a&model=m&format=yaml", http.StatusOK},
	} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(c.method, c.url, http.NoBody))
		if w.Code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.url, w.Code, w.Body, c.code)
		}
	}
}

// TestReplayKeepsHistograms: a pod's latency histograms end with a +Inf
// bucket, which JSON cannot hold as a number; the replay keeps it (as
// "+Inf") and `wva plan -f` reads it back, in JSON and in YAML. Before,
// every cycle whose pods had histograms left "json: unsupported value:
// +Inf" instead of a snapshot (seen in the e2e suite on a loaded machine).
func TestReplayKeepsHistograms(t *testing.T) {
	r := newReplayStore("", 1, logr.Discard())
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	h := []engine.Bucket{{UpperBound: 0.1, Count: 5}, {UpperBound: 1, Count: 9}, {UpperBound: math.Inf(1), Count: 10}}
	m := engine.Model{ID: "m", Namespace: "a", Variants: []engine.Variant{{Name: "v", Accelerator: "H100", CurrentReplicas: 1, ReadyReplicas: 1,
		Pods: []engine.Pod{{Name: "p", ArrivalRateRPS: 1, TTFTBuckets: h, TPOTBuckets: h}}}}}
	r.record(at, &snapshot.File{Snapshot: engine.Snapshot{Time: at, Models: []engine.Model{m}}},
		map[collector.Target][]*variant{{Namespace: "a", Model: "m"}: nil})
	doc, err := r.model("a", "m")
	if err != nil {
		t.Fatalf("the replay of a model with histograms: %v", err)
	}
	for _, format := range []string{"json", "yaml"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/snapshot?namespace=a&model=m&format="+format, http.NoBody))
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", format, w.Code, w.Body)
		}
		f, err := snapshot.ParseFile(w.Body.Bytes())
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, w.Body)
		}
		got := f.Models[0].Variants[0].Pods[0]
		if len(got.TTFTBuckets) != 3 || !math.IsInf(got.TTFTBuckets[2].UpperBound, 1) || got.TPOTBuckets[1] != h[1] {
			t.Errorf("%s: histograms read back as %v %v", format, got.TTFTBuckets, got.TPOTBuckets)
		}
	}
	if !strings.Contains(string(doc), `"le":"+Inf"`) {
		t.Errorf("the +Inf bound is not written as Prometheus writes it: %s", doc)
	}
}
