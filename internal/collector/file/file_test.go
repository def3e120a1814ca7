package file

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

const doc = `
targets:
- namespace: llm-d
  model: llama
  pods:
  - name: b-1
    labels: {variant: h100}
    arrivalRate: 2.5
    kvCacheUsage: 0.4
    waitingRequests: 1
  - name: a-0
    arrivalRate: 1
    kvCacheUsage: -0.1
    waitingRequests: 0
demand:
- {namespace: llm-d, model: llama, value: 2}
- {namespace: llm-d, model: llama, value: 1.5}
`

func TestFileSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := collector.New("file", map[string]string{"path": path})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rep, err := src.Collect(context.Background(), now, collector.Target{Namespace: "llm-d", Model: "llama"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pods) != 2 || rep.Pods[0].Pod.Name != "a-0" || rep.Pods[1].Labels["variant"] != "h100" {
		t.Fatalf("pods: %+v", rep.Pods)
	}
	if rep.Pods[0].Pod.Missing || rep.Pods[1].Pod.Missing || rep.Pods[1].Pod.ArrivalRateRPS != 2.5 || !rep.Pods[1].Pod.SampledAt.Equal(now) {
		t.Errorf("records: %+v", rep.Pods)
	}
	want := []collector.Problem{{Pod: "a-0", Metric: "kvCacheUsage", Kind: engine.HoldInvalid, Detail: "kvCacheUsage is -0.1 (negative)"}}
	if !reflect.DeepEqual(rep.Problems, want) {
		t.Errorf("problems: %+v", rep.Problems)
	}
	checkDemandAndErrors(t, src, path, now)
}

func checkDemandAndErrors(t *testing.T, src collector.Source, path string, now time.Time) {
	t.Helper()
	d, err := src.(collector.DemandSource).Demand(context.Background(), now, "ignored")
	if err != nil || d[collector.Target{Namespace: "llm-d", Model: "llama"}] != 3.5 {
		t.Errorf("demand %v, %v", d, err)
	}
	other, _ := src.Collect(context.Background(), now, collector.Target{Namespace: "x", Model: "llama"})
	if len(other.Pods) != 0 || len(other.Problems) != 1 {
		t.Errorf("unknown target: %+v", other)
	}
	if err := os.WriteFile(path, []byte("targets: [{namespace: a, modelName: typo}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Collect(context.Background(), now, collector.Target{}); err == nil || !strings.Contains(err.Error(), "modelName") {
		t.Errorf("a typo in the file: %v", err)
	}
	if _, err := collector.New("file", nil); err == nil {
		t.Error("no path accepted")
	}
}

// TestFileBounded: a file that never ends is an error at MaxFileBytes,
// not exhausted memory (it is re-read at every collection).
func TestFileBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := Source{Path: "/dev/zero"}.Collect(context.Background(), time.Now(), collector.Target{Namespace: "n", Model: "m"})
	if err == nil || !strings.Contains(err.Error(), "/dev/zero is larger than 64 MiB") {
		t.Errorf("got %v", err)
	}
}
