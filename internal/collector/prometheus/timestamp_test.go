package prometheus

import (
	"math"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
)

// TestSampledAtChecked: a timestamp that cannot be a scrape's (NaN, ±Inf,
// 0, negative, 1e300) holds the pod as invalid instead of converting to a
// time that differs by platform; a plausible one is kept to the
// nanosecond's precision a float gives.
func TestSampledAtChecked(t *testing.T) {
	for _, ts := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -5, 1e300, 2e10} {
		var p engine.Pod
		var problems []collector.Problem
		fillSampledAt(&p, ts, &problems)
		if !p.Missing || !p.SampledAt.IsZero() || len(problems) != 1 || problems[0].Kind != engine.HoldInvalid {
			t.Errorf("%v: %+v %v", ts, p, problems)
		}
	}
	var p engine.Pod
	var problems []collector.Problem
	fillSampledAt(&p, 1.7645e9+0.25, &problems)
	if want := time.Unix(1764500000, 250_000_000).UTC(); p.Missing || len(problems) > 0 || p.SampledAt.Sub(want).Abs() > time.Microsecond {
		t.Errorf("%v %v, want %v", p.SampledAt, problems, want)
	}
}
