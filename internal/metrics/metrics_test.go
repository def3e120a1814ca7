package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llm-d-incubation/wva/internal/engine"
)

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPublish(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, err := NewEmitter(reg)
	if err != nil {
		t.Fatal(err)
	}
	plan := &engine.Plan{Variants: []engine.VariantDecision{
		{Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 2, Desired: 5, Reason: "saturation"},
		{Variant: "llama-a100", Namespace: "llm", Accelerator: "A100", Current: 4, Desired: 3, Reason: "model"},
		{Variant: "mistral-l4", Namespace: "llm", Accelerator: "L4", Current: 0, Desired: 1, Reason: "scale-from-zero"},
	}}
	e.Publish(plan)
	e.CycleDone(120*time.Millisecond, false)
	e.CycleDone(80*time.Millisecond, true)
	e.TunerStep(true)
	e.TunerStep(false)
	e.TunerStep(true)
	out := scrape(t, reg)
	for _, want := range []string{
		`inferno_desired_replicas{accelerator_type="H100",namespace="llm",variant_name="llama-h100"} 5`,
		`inferno_current_replicas{accelerator_type="H100",namespace="llm",variant_name="llama-h100"} 2`,
		`inferno_desired_ratio{accelerator_type="H100",namespace="llm",variant_name="llama-h100"} 2.5`,
		`inferno_desired_ratio{accelerator_type="A100",namespace="llm",variant_name="llama-a100"} 0.75`,
		`inferno_desired_ratio{accelerator_type="L4",namespace="llm",variant_name="mistral-l4"} 1`,
		`inferno_replica_scaling_total{accelerator_type="H100",direction="up",namespace="llm",reason="saturation",variant_name="llama-h100"} 1`,
		`inferno_replica_scaling_total{accelerator_type="A100",direction="down",namespace="llm",reason="model",variant_name="llama-a100"} 1`,
		`wva_cycle_duration_seconds_count 2`,
		`wva_engine_errors_total 1`,
		`wva_tuner_steps_total{result="accepted"} 2`,
		`wva_tuner_steps_total{result="rejected"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	// The next plan: the A100 variant is gone, the H100 one holds.
	e.Publish(&engine.Plan{Variants: []engine.VariantDecision{
		{Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 5, Desired: 5, Reason: "no-change"},
	}})
	out = scrape(t, reg)
	if strings.Contains(out, `inferno_desired_replicas{accelerator_type="A100"`) {
		t.Error("a variant no longer planned is still reported")
	}
	if !strings.Contains(out, `inferno_desired_ratio{accelerator_type="H100",namespace="llm",variant_name="llama-h100"} 1`) {
		t.Error("the H100 ratio was not updated")
	}
	// A hold is not a scaling decision: the up counter stays at 1.
	if !strings.Contains(out, `direction="up",namespace="llm",reason="saturation",variant_name="llama-h100"} 1`) {
		t.Error("the scaling counter changed on a hold")
	}
	// A decision repeated while HPA applies it is counted once; a new one
	// is counted again.
	for i := 0; i < 3; i++ {
		e.Publish(&engine.Plan{Variants: []engine.VariantDecision{
			{Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 5, Desired: 7, Reason: "saturation"}}})
	}
	e.Publish(&engine.Plan{Variants: []engine.VariantDecision{
		{Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 6, Desired: 8, Reason: "saturation"}}})
	e.Publish(&engine.Plan{Variants: []engine.VariantDecision{
		{Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 6, Desired: 8, Reason: engine.ReasonHoldMetrics}}})
	if out = scrape(t, reg); !strings.Contains(out, `direction="up",namespace="llm",reason="saturation",variant_name="llama-h100"} 3`) {
		t.Errorf("repeated decisions: %s", out)
	}
	if _, err := NewEmitter(reg); err == nil {
		t.Error("registered the metrics twice")
	}
	if _, err := NewEmitter(nil); err == nil {
		t.Error("accepted a nil registerer")
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		d, c int
		want float64
	}{{5, 2, 2.5}, {0, 3, 0}, {2, 0, 2}, {0, 0, 0}} {
		if got := Ratio(tc.d, tc.c); got != tc.want {
			t.Errorf("Ratio(%d, %d) = %v, want %v", tc.d, tc.c, got, tc.want)
		}
	}
}
