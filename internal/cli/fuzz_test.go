package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/snapshot"
)

// FuzzSnapshot parses arbitrary bytes as a "wva plan" snapshot (with or
// without the state a controller serves) and plans it. Neither may panic; a plan the engine returns has no negative replica
// count, encodes as JSON (no NaN or ±Inf figure) and prints as a table.
func FuzzSnapshot(f *testing.F) {
	paths, err := filepath.Glob("../../examples/plan/*.yaml")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seed snapshots: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// A pod reporting an absurd rate, in JSON.
	f.Add([]byte(`{"mode":"hybrid","models":[{"id":"m","slo":{"ttftMs":100,"itlMs":10},"variants":[{"name":"v","accelerator":"a",` +
		`"currentReplicas":1,"readyReplicas":1,"params":{"alpha":6,"beta":0.01,"gamma":0.00003},"pods":[{"name":"p","arrivalRate":1e12,` +
		`"avgInputTokens":1024,"avgOutputTokens":256,"avgTTFTMs":30,"avgITLMs":10,"kvCacheUsage":0.9,"waitingRequests":3}]}]}]}`))
	// Hardening seeds (issue 28): counts near MaxInt64, tiny and huge
	// parameters, huge costs, an empty inventory type, a number beyond
	// float64.
	for _, v := range []string{`"maxReplicas":9223372036854775807,"scaleUpLimitReplicas":9223372036854775807`,
		`"params":{"alpha":1e-300,"beta":1e-300,"gamma":1e-300}`, `"params":{"alpha":1e9,"beta":1e9,"gamma":1e9}`,
		`"cost":1e300,"acceleratorsPerReplica":1024`, `"currentReplicas":1048577`} {
		f.Add([]byte(`{"mode":"hybrid","optimizer":"limited","inventory":{"a":1073741824,"":1},"config":{"scaleUpLimitFactor":1e300},` +
			`"models":[{"id":"m","slo":{"ttftMs":100,"itlMs":10},"variants":[{"name":"v","accelerator":"a",` + v + `,` +
			`"pods":[{"name":"p","arrivalRate":2,"avgInputTokens":1024,"avgOutputTokens":256,"kvCacheUsage":0.5,"kvBlocks":-1,"blockSize":-1}]}]}]}`))
	}
	f.Add([]byte("mode: hybrid\nmodels: [{id: m, variants: [{name: v, accelerator: a, cost: 1e309}]}]\n"))
	// Latency histograms, the last bound +Inf (written "+Inf": JSON has no
	// infinity), one bound in a string.
	f.Add([]byte(`{"mode":"hybrid","models":[{"id":"m","slo":{"ttftMs":1000,"itlMs":50},"variants":[{"name":"v","accelerator":"a",` +
		`"currentReplicas":1,"readyReplicas":1,"params":{"alpha":6,"beta":0.01,"gamma":0.00003},"pods":[{"name":"p","arrivalRate":2,` +
		`"avgInputTokens":1024,"avgOutputTokens":256,"kvCacheUsage":0.5,"waitingRequests":0,` +
		`"ttftBuckets":[{"le":0.1,"count":50},{"le":"1","count":190},{"le":"+Inf","count":200}],` +
		`"tpotBuckets":[{"le":0.01,"count":20},{"le":0.1,"count":199},{"le":"+Inf","count":200}]}]}]}]}`))
	// Learning on with a budget of one step for two variants (issue 31).
	f.Add([]byte(`{"mode":"hybrid","config":{"tuningEnabled":true,"tunerBudget":1},"models":[{"id":"m","slo":{"ttftMs":1000,"itlMs":50},"variants":[` +
		`{"name":"a","accelerator":"x","currentReplicas":1,"readyReplicas":1,"pods":[{"name":"p","arrivalRate":2,"avgInputTokens":1024,"avgOutputTokens":256,"avgTTFTMs":40,"avgITLMs":12,"kvCacheUsage":0.5}]},` +
		`{"name":"b","accelerator":"x","currentReplicas":1,"readyReplicas":1,"pods":[{"name":"q","arrivalRate":3,"avgInputTokens":1024,"avgOutputTokens":256,"avgTTFTMs":45,"avgITLMs":13,"kvCacheUsage":0.6}]}]}]}`))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := snapshot.ParseFile(data)
		if err != nil {
			return
		}
		if s.Time.IsZero() {
			s.Time = at
		}
		// Whatever wva plan reads, the controller's replay can write back
		// (a +Inf bucket once made every replay with histograms fail).
		back := *s
		back.Finite()
		if _, err := json.Marshal(&back); err != nil {
			t.Fatalf("a file wva plan reads does not encode back: %v", err)
		}
		p, err := s.Plan()
		if err != nil {
			return
		}
		for _, d := range p.Variants {
			if d.Desired < 0 || d.Current < 0 {
				t.Fatalf("%s/%s: current %d, desired %d", d.Model, d.Variant, d.Current, d.Desired)
			}
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("the plan does not encode: %v", err)
		}
		if err := printPlan(io.Discard, p); err != nil {
			t.Fatal(err)
		}
	})
}
