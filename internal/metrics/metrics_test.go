package metrics

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/tuner"
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
	e.TunerStepsDeferred(0)
	e.TunerStepsDeferred(3)
	e.TunerStepsDeferred(4)
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
		`wva_tuner_steps_deferred_total 7`,
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
	// The upstream names carry the same series.
	for _, name := range []string{"desired_replicas", "current_replicas", "desired_ratio", "replica_scaling_total"} {
		if a, b := series(out, "inferno_"+name), series(out, "wva_"+name); a == "" || a != b {
			t.Errorf("inferno_%s and wva_%s differ:\n%s\n%s", name, name, a, b)
		}
	}
	if _, err := NewEmitter(reg); err == nil {
		t.Error("registered the metrics twice")
	}
	if _, err := NewEmitter(nil); err == nil {
		t.Error("accepted a nil registerer")
	}
}

// TestVariantInfo: wva_variant_info names each planned variant's model,
// moves with the variant to another model and goes with the variant.
func TestVariantInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, err := NewEmitter(reg)
	if err != nil {
		t.Fatal(err)
	}
	e.Publish(&engine.Plan{Variants: []engine.VariantDecision{
		{Model: "llama", Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 2, Desired: 2},
		{Model: "mistral", Variant: "mistral-l4", Namespace: "llm", Accelerator: "L4", Current: 1, Desired: 1},
	}})
	out := series(scrape(t, reg), "wva_variant_info")
	want := `accelerator_type="H100",model_id="llama",namespace="llm",variant_name="llama-h100"} 1
accelerator_type="L4",model_id="mistral",namespace="llm",variant_name="mistral-l4"} 1
`
	if out != want {
		t.Errorf("wva_variant_info:\n%s\nwant\n%s", out, want)
	}
	e.Publish(&engine.Plan{Variants: []engine.VariantDecision{
		{Model: "llama-3", Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 2, Desired: 2},
	}})
	out = series(scrape(t, reg), "wva_variant_info")
	if want := `accelerator_type="H100",model_id="llama-3",namespace="llm",variant_name="llama-h100"} 1
`; out != want {
		t.Errorf("after the model changed and mistral-l4 went:\n%s\nwant\n%s", out, want)
	}
}

// series is the exposition's lines of one metric, without its name.
func series(out, name string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, name+"{"); ok {
			b.WriteString(rest + "\n")
		}
	}
	return b.String()
}

// TestHealthAndModelSeries: build info, the last successful cycle, holds
// with their cause (cleared when the variant is decided again), the
// model-level figures and the learned parameters with their uncertainty;
// a model or variant no longer planned loses its series.
func TestHealthAndModelSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, err := NewEmitter(reg)
	if err != nil {
		t.Fatal(err)
	}
	e.SetBuildInfo("1.2.3")
	e.CycleSucceeded(time.Unix(1700000000, 500_000_000))
	q := &engine.ModelDetail{CapacityPerReplicaRPS: 4.5, ParamsSource: "learned",
		Params: &tuner.Params{Alpha: 6, Beta: 0.02, Gamma: 0.0005}, ParamsStdDev: &tuner.Params{Alpha: 0.3, Beta: 0.001, Gamma: 0.00002}}
	plan := &engine.Plan{
		Variants: []engine.VariantDecision{
			{Model: "llama", Variant: "llama-h100", Namespace: "llm", Accelerator: "H100", Current: 2, Desired: 3, Reason: "model", Queueing: q},
			{Model: "llama", Variant: "llama-a100", Namespace: "llm", Accelerator: "A100", Current: 2, Desired: 2, Reason: engine.ReasonHoldMetrics, Hold: engine.HoldStale},
		},
		Models: []engine.ModelSummary{{Model: "llama", Namespace: "llm", DemandRPS: 12.5, PlannedRPS: 14, SLOTTFTMs: 500, SLOITLMs: 25,
			CostBreakdown: &engine.Breakdown{Need: 20, Spare: 5, SafetyBlock: 2.5}}},
	}
	e.Publish(plan)
	out := scrape(t, reg)
	for _, want := range []string{
		`wva_build_info{goversion="` + runtime.Version() + `",revision=`,
		`version="1.2.3"} 1`,
		`wva_last_successful_cycle_timestamp_seconds 1.7000000005e+09`,
		`wva_variant_held{accelerator_type="A100",cause="stale",namespace="llm",variant_name="llama-a100"} 1`,
		`wva_model_demand_rps{model_id="llama",namespace="llm"} 12.5`,
		`wva_model_planned_rps{model_id="llama",namespace="llm"} 14`,
		`wva_model_cost{model_id="llama",namespace="llm",rule="need"} 20`,
		`wva_model_cost{model_id="llama",namespace="llm",rule="spare"} 5`,
		`wva_model_cost{model_id="llama",namespace="llm",rule="safetyBlock"} 2.5`,
		`wva_model_cost{model_id="llama",namespace="llm",rule="window"} 0`,
		`wva_model_slo_ttft_seconds{model_id="llama",namespace="llm"} 0.5`,
		`wva_model_slo_itl_seconds{model_id="llama",namespace="llm"} 0.025`,
		`wva_variant_capacity_per_replica_rps{accelerator_type="H100",namespace="llm",variant_name="llama-h100"} 4.5`,
		`wva_variant_parameter{accelerator_type="H100",namespace="llm",parameter="alpha",variant_name="llama-h100"} 6`,
		`wva_variant_parameter_stddev{accelerator_type="H100",namespace="llm",parameter="gamma",variant_name="llama-h100"} 2e-05`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(out, `variant_name="llama-h100"} 1`) && strings.Contains(out, `wva_variant_held{accelerator_type="H100"`) {
		t.Error("a decided variant is reported held")
	}
	if strings.Contains(out, `parameter="delta"`) {
		t.Error("δ published for the iteration model")
	}
	// The A100 variant is decided again, the H100 one is no longer planned
	// and the model lost its SLO.
	plan.Variants = []engine.VariantDecision{{Model: "llama", Variant: "llama-a100", Namespace: "llm", Accelerator: "A100", Current: 2, Desired: 2, Reason: "no-change"}}
	plan.Models[0].SLOTTFTMs, plan.Models[0].SLOITLMs = 0, 0
	plan.Models[0].CostBreakdown = nil
	e.Publish(plan)
	out = scrape(t, reg)
	for _, gone := range []string{"wva_variant_held{", "wva_desired_replicas{accelerator_type=\"H100\"", "wva_variant_capacity_per_replica_rps{",
		"wva_model_slo_ttft_seconds{", "wva_variant_parameter{", "wva_variant_parameter_stddev{", "wva_model_cost{"} {
		if strings.Contains(out, gone) {
			t.Errorf("still reported: %s", gone)
		}
	}
	e.Publish(&engine.Plan{})
	if out = scrape(t, reg); strings.Contains(out, "wva_model_demand_rps{") {
		t.Error("a model no longer planned is still reported")
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
