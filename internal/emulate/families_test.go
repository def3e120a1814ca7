package emulate

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/llm-d-incubation/wva/internal/servermetrics"
)

// TestServesFixtureFamilies: a loaded server of each metric set serves
// exactly the default families of its pinned vLLM fixture (what a real
// vLLM of that line exports without options), each with the fixture's type
// and label names; so the end-to-end suite sees what a real server shows
// the collector. The legacy set has the old ITL name and not the new one.
func TestServesFixtureFamilies(t *testing.T) {
	for set, fixture := range map[string]string{MetricsCurrent: servermetrics.FixtureVLLMCurrent, MetricsLegacy: servermetrics.FixtureVLLMLegacy} {
		clk := clocktesting.NewFakeClock(epoch)
		f, err := NewFleet(testSpec(t, 8), FleetOptions{Clock: clk, Metrics: set})
		if err != nil {
			t.Fatal(err)
		}
		reps := f.Scale(0, 1, nil)
		clk.Step(120 * time.Second)
		f.Advance()
		checkFamilies(t, set, fixture, scrape(t, f, reps[0].ID))
	}
	legacy, err := MetricSet(MetricsLegacy)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(legacy, func(f servermetrics.Family) bool { return f.Name == "vllm:time_per_output_token_seconds" }) ||
		slices.ContainsFunc(legacy, func(f servermetrics.Family) bool { return f.Name == "vllm:inter_token_latency_seconds" }) {
		t.Error("the legacy set must have the old ITL name only")
	}
	if _, err := MetricSet("v0.4"); err == nil || !strings.Contains(err.Error(), "want current or legacy") {
		t.Errorf("unknown set: %v", err)
	}
	if _, err := NewFleet(testSpec(t, 8), FleetOptions{Metrics: "newest"}); err == nil {
		t.Error("NewFleet took an unknown metric set")
	}
}

// checkFamilies: the page has exactly the fixture's default families, with
// their types and labels, and every histogram observed something.
func checkFamilies(t *testing.T, set, fixture string, fams map[string]*dto.MetricFamily) {
	t.Helper()
	want := servermetrics.MustFixture(fixture).Default()
	var names []string
	for _, fam := range want {
		names = append(names, fam.Name)
		got, ok := fams[fam.Name]
		if !ok {
			t.Errorf("%s: %s is not served", set, fam.Name)
			continue
		}
		if typ := strings.ToLower(got.GetType().String()); typ != fam.Type {
			t.Errorf("%s: %s is a %s, want a %s", set, fam.Name, typ, fam.Type)
		}
		if l := labelNames(got); !slices.Equal(l, fam.Labels) {
			t.Errorf("%s: %s has labels %v, want %v", set, fam.Name, l, fam.Labels)
		}
		if fam.Type == "histogram" && got.Metric[0].Histogram.GetSampleCount() == 0 {
			t.Errorf("%s: %s observed nothing under load", set, fam.Name)
		}
	}
	for name := range fams {
		if !slices.Contains(names, name) {
			t.Errorf("%s: serves %s, which vLLM's fixture %s does not list", set, name, fixture)
		}
	}
}

func labelNames(f *dto.MetricFamily) []string {
	var out []string
	for _, l := range f.Metric[0].Label {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}
