package predictive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	errcommon "sigs.k8s.io/gateway-api-inference-extension/pkg/common/error"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/datalayer"
	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	fwkplugin "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/plugin"
	extractormetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/extractor/metrics"
	sourcemetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/source/metrics"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/fairness"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/ordering"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/saturationdetector/utilization"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/flowcontrol/usagelimits"
	reqdataprodprefix "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/requesthandling/parsers/openai"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/picker"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/profile"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/kvcacheutilization"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/prefix"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/scheduling/scorer/queuedepth"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/handlers"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/requestcontrol"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/scheduling"
)

// These tests run the plugins inside the endpoint picker's own request
// path: the shipped configuration is loaded by its config loader, the
// request control plugins are wired as its runner wires them, and requests
// go through its Director (the saturation detector's admission, the
// prepare-data producers, the admission plugins, the scheduler with its
// profiles, the PreRequest and response plugins); errors become HTTP
// statuses by its own errcommon.BuildErrResponse. Only Kubernetes and
// Envoy are left out: the pool is a fixed list of endpoints.

const exampleConfig = "../examples/epp-config.yaml"

func init() {
	// The endpoint picker's in-tree plugins the example and the defaults
	// use (its runner registers them in Run), and ours.
	for typ, factory := range map[string]fwkplugin.FactoryFunc{
		prefix.PrefixCacheScorerPluginType:              prefix.PrefixCachePluginFactory,
		reqdataprodprefix.ApproxPrefixCachePluginType:   reqdataprodprefix.ApproxPrefixCacheFactory,
		queuedepth.QueueScorerType:                      queuedepth.QueueScorerFactory,
		kvcacheutilization.KvCacheUtilizationScorerType: kvcacheutilization.KvCacheUtilizationScorerFactory,
		picker.MaxScorePickerType:                       picker.MaxScorePickerFactory,
		profile.SingleProfileHandlerType:                profile.SingleProfileHandlerFactory,
		ordering.FCFSOrderingPolicyType:                 ordering.FCFSOrderingPolicyFactory,
		fairness.GlobalStrictFairnessPolicyType:         fairness.GlobalStrictFairnessPolicyFactory,
		usagelimits.StaticUsageLimitPolicyType:          usagelimits.StaticPolicyFactory,
		openai.OpenAIParserType:                         openai.OpenAIParserPluginFactory,
		utilization.UtilizationDetectorType:             utilization.UtilizationDetectorFactory,
		sourcemetrics.MetricsDataSourceType:             sourcemetrics.MetricsDataSourceFactory,
		extractormetrics.MetricsExtractorType:           extractormetrics.CoreMetricsExtractorFactory,
	} {
		fwkplugin.Register(typ, factory)
	}
	Register()
}

// pool is the endpoint picker's view of the model servers and the
// InferenceObjectives: the Director's Datastore and EndpointCandidates.
type pool struct {
	servers    []*fwkdl.ModelServer
	objectives map[string]int // name → priority
}

func (p *pool) PoolGet() (*datalayer.EndpointPool, error) {
	return nil, errors.New("no pool in the tests")
}

func (p *pool) ObjectiveGet(name string) *v1alpha2.InferenceObjective {
	prio, ok := p.objectives[name]
	if !ok {
		return nil
	}
	return &v1alpha2.InferenceObjective{Spec: v1alpha2.InferenceObjectiveSpec{Priority: &prio}}
}

func (p *pool) PodList(keep func(fwkdl.Endpoint) bool) []fwkdl.Endpoint {
	out := make([]fwkdl.Endpoint, 0, len(p.servers))
	for _, s := range p.servers {
		if keep == nil || keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func (p *pool) ModelRewriteGet(string) (*v1alpha2.InferenceModelRewriteRule, string) { return nil, "" }

func (p *pool) Locate(context.Context, map[string]any) []fwkdl.Endpoint { return p.PodList(nil) }

// fresh marks every server's metrics as just scraped (the saturation
// detector treats stale metrics as saturation).
func (p *pool) fresh() {
	for _, s := range p.servers {
		m := s.GetMetrics().Clone()
		m.UpdateTime = time.Now()
		s.UpdateMetrics(m)
	}
}

func newPool() *pool {
	return &pool{servers: []*fwkdl.ModelServer{endpoint("pod-a").kv(0.1).server(), endpoint("pod-b").kv(0.1).server()},
		objectives: map[string]int{"batch": -1, "chat": 0, "premium": 1}}
}

// epp is the endpoint picker's request path around a pool.
type epp struct {
	director *requestcontrol.Director
	handle   fwkplugin.Handle
	pool     *pool
	seq      int
	lastErr  error // the last request's error, nil when it was routed
}

// newEPP loads the configuration as the endpoint picker's runner does.
func newEPP(t *testing.T, configYAML []byte, p *pool) *epp {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	raw, _, err := loader.LoadRawConfig(configYAML, logr.Discard())
	if err != nil {
		t.Fatalf("LoadRawConfig: %v", err)
	}
	handle := fwkplugin.NewEppHandle(ctx, func() []types.NamespacedName { return nil })
	cfg, err := loader.InstantiateAndConfigure(raw, handle, logr.Discard())
	if err != nil {
		t.Fatalf("InstantiateAndConfigure: %v", err)
	}
	rc := requestcontrol.NewConfig()
	rc.AddPlugins(handle.GetAllPlugins()...)
	order, err := datalayer.ValidateAndOrderDataDependencies(handle.GetAllPlugins())
	if err != nil {
		t.Fatalf("the plugins' data dependencies: %v", err)
	}
	rc.OrderPrepareDataPlugins(order)
	d := requestcontrol.NewDirectorWithConfig(p, scheduling.NewSchedulerWithConfig(cfg.SchedulerConfig),
		requestcontrol.NewLegacyAdmissionController(cfg.SaturationDetector, p), handlers.NewParser(cfg.ParserConfig), p, rc)
	return &epp{director: d, handle: handle, pool: p}
}

// send sends a completion request of the given prompt length (tokens at 4
// characters) under the objective, and returns the HTTP status the
// endpoint picker answers with before proxying (200 when it routes the
// request) and the request's context.
func (e *epp) send(t *testing.T, objective string, tokens int, stream bool) (int, *handlers.RequestContext) {
	t.Helper()
	e.seq++
	e.pool.fresh()
	body := fmt.Sprintf(`{"model": "m", "prompt": %q, "stream": %v}`, strings.Repeat("abcd", tokens), stream)
	reqCtx := &handlers.RequestContext{ObjectiveKey: objective, RequestSize: len(body),
		Request: &handlers.Request{Headers: map[string]string{"x-request-id": fmt.Sprint("req-", e.seq),
			":path": "/v1/completions"}, RawBody: []byte(body), Metadata: map[string]any{}},
		Response: &handlers.Response{Headers: map[string]string{}}}
	reqCtx, err := e.director.HandleRequest(context.Background(), reqCtx)
	e.lastErr = err
	if err == nil {
		return 200, reqCtx
	}
	resp, rerr := errcommon.BuildErrResponse(err)
	if rerr != nil {
		t.Fatalf("HandleRequest: %v, not an HTTP answer: %v", err, rerr)
	}
	return int(resp.GetImmediateResponse().GetStatus().GetCode()), reqCtx
}

func (e *epp) filter(t *testing.T) *Filter {
	t.Helper()
	f, err := fwkplugin.PluginByType[*Filter](e.handle, FilterType)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readExample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A 20 000-token prompt needs an estimated 0.360 s of prefill where it is
// not cached: over the sheddable budget (0.3 s), within the standard one.
const longPrompt = 20000

func TestEPPShedsOverBudgetRequestsWith429(t *testing.T) {
	e := newEPP(t, readExample(t), newPool())
	if status, _ := e.send(t, "batch", longPrompt, false); status != 429 ||
		!strings.Contains(e.lastErr.Error(), "failed to find target endpoint") {
		t.Errorf("sheddable request over its budget: status %d (%v), want 429 from the scheduler", status, e.lastErr)
	}
	if status, reqCtx := e.send(t, "chat", longPrompt, false); status != 200 || reqCtx.TargetPod == nil {
		t.Errorf("standard request within its budget: status %d, want 200 and an endpoint", status)
	}
	if status, _ := e.send(t, "", longPrompt, false); status != 200 {
		t.Errorf("request without an objective (priority 0, standard): status %d, want 200", status)
	}
	if status, _ := e.send(t, "premium", 3*longPrompt, false); status != 200 {
		t.Errorf("critical request 1 s over its budget: status %d, want 200", status)
	}
	if status, _ := e.send(t, "batch", 1000, false); status != 200 {
		t.Errorf("short sheddable request: status %d, want 200", status)
	}
}

// The approximate prefix producer records where each request went; a long
// prompt that would be shed is admitted once it is cached, to the endpoint
// that holds it. The producer's index is updated asynchronously, so the
// test waits for it.
func TestEPPAdmitsACachedPromptWhereItIsCached(t *testing.T) {
	e := newEPP(t, readExample(t), newPool())
	status, first := e.send(t, "chat", longPrompt, false)
	if status != 200 {
		t.Fatalf("standard request: status %d", status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, again := e.send(t, "batch", longPrompt, false)
		if status == 200 {
			if got, want := again.TargetPod.PodName, first.TargetPod.PodName; got != want {
				t.Errorf("the cached prompt went to %s, want %s, which holds it", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cached sheddable request is still shed (status %d)", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The endpoint picker v1.5.0 answers an admission plugin's rejection with
// 500, whatever error the plugin returns: the reason the filter is the
// plugin to configure with it.
func TestEPPAdmitterRejectionIs500InThisVersion(t *testing.T) {
	cfg := `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: wva-predictive-admitter
- type: queue-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
`
	e := newEPP(t, []byte(cfg), newPool())
	if status, _ := e.send(t, "batch", longPrompt, false); status != 500 ||
		!strings.Contains(e.lastErr.Error(), "request cannot be admitted") {
		t.Errorf("sheddable request over its budget: status %d (%v), want 500 from the admission plugins", status, e.lastErr)
	}
	if status, _ := e.send(t, "chat", longPrompt, false); status != 200 {
		t.Errorf("standard request within its budget: status %d, want 200", status)
	}
}

// The response hooks are wired by the endpoint picker's own request
// control: a streamed response teaches the endpoint's step time and, with
// calibration (on in the example), one TTFT observation.
func TestEPPLearnsFromStreamedResponses(t *testing.T) {
	e := newEPP(t, readExample(t), newPool())
	f := e.filter(t)
	c := newClock()
	f.mu.Lock()
	f.now = c.now
	f.mu.Unlock()
	status, reqCtx := e.send(t, "chat", 1000, true)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	reqCtx.Response.Headers[":status"] = "200"
	reqCtx.Response.Headers["content-type"] = "text/event-stream"
	e.director.HandleResponseHeader(context.Background(), reqCtx)
	c.advance(80 * time.Millisecond)
	e.director.HandleResponseBody(context.Background(), reqCtx, false)
	for range 9 {
		c.advance(25 * time.Millisecond)
		e.director.HandleResponseBody(context.Background(), reqCtx, false)
	}
	e.director.HandleResponseBody(context.Background(), reqCtx, true)
	f.mu.Lock()
	defer f.mu.Unlock()
	if fit := f.cal.Fit(); fit.Used != 1 {
		t.Errorf("calibrator: %+v, want one observation", fit)
	}
	// 10 chunks 25 ms apart, and the end of the stream at the same time
	// as the last: 10 intervals over 225 ms.
	if st := f.endpoints[types.NamespacedName{Namespace: "ns", Name: reqCtx.TargetPod.PodName}]; st == nil || st.step != 0.0225 {
		t.Errorf("learned step %+v, want 22.5 ms", st)
	}
	if len(f.flights) != 0 {
		t.Errorf("%d requests still followed", len(f.flights))
	}
}

func TestExampleConfigIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), string(readExample(t))) {
		t.Errorf("docs/gateway.md does not show %s verbatim", exampleConfig)
	}
}
