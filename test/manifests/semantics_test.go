// What the API server cannot check about the samples: that the HPA and
// KEDA objects apply WVA's decision safely (docs/hpa-keda.md). Over 400
// lines because every rule comes with the broken samples that show it can
// fail.

package manifests

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// desiredMetric is the series WVA publishes for HPA and KEDA to apply.
const desiredMetric = "inferno_desired_replicas"

// variantLabels are the labels that select one variant's series once
// Prometheus has scraped the controller (docs/metrics.md).
var variantLabels = []string{"variant_name", "exported_namespace"}

// adapterValues is the part of the prometheus-community/prometheus-adapter
// chart's values that the sample sets; adapterRule is the adapter's
// discovery rule (its config.DiscoveryRule). Strict decoding rejects a key
// either does not have.
type adapterValues struct {
	Prometheus struct {
		URL  string `json:"url"`
		Port int    `json:"port"`
		Path string `json:"path,omitempty"`
	} `json:"prometheus"`
	Rules struct {
		Default  *bool         `json:"default"`
		Custom   []adapterRule `json:"custom,omitempty"`
		External []adapterRule `json:"external"`
	} `json:"rules"`
}

type adapterRule struct {
	SeriesQuery   string `json:"seriesQuery"`
	SeriesFilters []struct {
		Is    string `json:"is,omitempty"`
		IsNot string `json:"isNot,omitempty"`
	} `json:"seriesFilters,omitempty"`
	Resources struct {
		Template  string `json:"template,omitempty"`
		Overrides map[string]struct {
			Group    string `json:"group,omitempty"`
			Resource string `json:"resource"`
		} `json:"overrides,omitempty"`
		Namespaced *bool `json:"namespaced,omitempty"`
	} `json:"resources"`
	Name struct {
		Matches string `json:"matches,omitempty"`
		As      string `json:"as,omitempty"`
	} `json:"name"`
	MetricsQuery string `json:"metricsQuery"`
}

func loadAdapterValues(t *testing.T) adapterValues {
	t.Helper()
	path := filepath.Join(testenv.Root(), "config", "samples", "prometheus-adapter-values.yaml")
	docs := readDocs(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", path, len(docs))
	}
	var v adapterValues
	if err := yaml.UnmarshalStrict(docs[0], &v); err != nil {
		t.Fatalf("%s is not in the chart's values format: %v", path, err)
	}
	return v
}

var promql = parser.NewParser(parser.Options{})

// served is the external metric name a rule serves for a series name ("" if
// its name.matches does not match), as the adapter names it: name.as with
// the captures of name.matches, by default $1 with one capture, else $0.
func (r adapterRule) served(series string) string {
	m := r.Name.Matches
	if m == "" {
		m = ".*"
	}
	re, err := regexp.Compile(m)
	if err != nil || !re.MatchString(series) {
		return ""
	}
	as := r.Name.As
	if as == "" {
		as = "$0"
		if re.NumSubexp() == 1 {
			as = "$1"
		}
	}
	return string(re.ExpandString(nil, as, series, re.FindStringSubmatchIndex(series)))
}

// seriesName is the metric name the rule's seriesQuery selects.
func (r adapterRule) seriesName() (string, error) {
	ms, err := promql.ParseMetricSelector(r.SeriesQuery)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value, nil
		}
	}
	return "", fmt.Errorf("%s selects no single metric name", r.SeriesQuery)
}

// render fills the metricsQuery template as the adapter does (delimiters
// << >>) for an HPA selecting sel, and parses the result.
func (r adapterRule) render(sel map[string]string) (parser.Expr, error) {
	tmpl, err := template.New("metricsQuery").Delims("<<", ">>").Parse(r.MetricsQuery)
	if err != nil {
		return nil, err
	}
	series, _ := r.seriesName()
	var ms []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		ms = append(ms, fmt.Sprintf("%s=%q", k, sel[k]))
	}
	var b strings.Builder
	err = tmpl.Execute(&b, struct {
		Series            string
		LabelMatchers     string
		GroupBy           string
		GroupBySlice      []string
		LabelValuesByName map[string][]string
	}{Series: series, LabelMatchers: strings.Join(ms, ",")})
	if err != nil {
		return nil, err
	}
	return promql.ParseExpr(b.String())
}

// groupedBy is the set of labels every aggregation of e keeps (nil: e
// aggregates nothing away).
func groupedBy(e parser.Expr) []string {
	var keep []string
	found := false
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok && !a.Without {
			if !found {
				keep, found = slices.Clone(a.Grouping), true
			} else {
				keep = slices.DeleteFunc(keep, func(l string) bool { return !slices.Contains(a.Grouping, l) })
			}
		}
		return nil
	})
	if !found {
		return nil
	}
	return keep
}

// selected returns the equality matchers of every selector of
// desiredMetric in the query, and an error if it does not parse or
// selects no such series.
func selected(query string) ([]map[string]string, error) {
	e, err := promql.ParseExpr(query)
	if err != nil {
		return nil, err
	}
	var sels []map[string]string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || vs.Name != desiredMetric {
			return nil
		}
		m := map[string]string{}
		for _, lm := range vs.LabelMatchers {
			if lm.Type == labels.MatchEqual && lm.Name != model.MetricNameLabel {
				m[lm.Name] = lm.Value
			}
		}
		sels = append(sels, m)
		return nil
	})
	if len(sels) == 0 {
		return nil, fmt.Errorf("selects no %s", desiredMetric)
	}
	return sels, nil
}

// checkBehavior reports an HPA behavior (of an HPA or of KEDA's
// horizontalPodAutoscalerConfig) without explicit scale-up and scale-down
// rules: the HPA's defaults add a 300 s scale-down window to WVA's own.
func checkBehavior(o object, path ...string) []string {
	b, ok, err := unstructured.NestedMap(o.u.Object, path...)
	if err != nil || !ok {
		return []string{fmt.Sprintf("%s: no %s: the HPA's default behavior adds a 300 s scale-down window to WVA's", o, strings.Join(path, "."))}
	}
	var p []string
	for _, dir := range []string{"scaleUp", "scaleDown"} {
		if _, ok, _ := unstructured.NestedInt64(b, dir, "stabilizationWindowSeconds"); !ok {
			p = append(p, fmt.Sprintf("%s: %s.%s.stabilizationWindowSeconds is not set", o, strings.Join(path, "."), dir))
		}
		if _, ok, _ := unstructured.NestedSlice(b, dir, "policies"); !ok {
			p = append(p, fmt.Sprintf("%s: %s.%s.policies is not set", o, strings.Join(path, "."), dir))
		}
	}
	return p
}

// checkSamples reports what the API server cannot: that the HPA and KEDA
// objects apply WVA's decision as docs/hpa-keda.md says.
func checkSamples(objs []object, adapter adapterValues) []string {
	var p []string
	vas := map[string]bool{} // namespace/name of VariantAutoscaling samples
	for _, o := range objs {
		if o.u.GetKind() == "VariantAutoscaling" {
			vas[o.u.GetNamespace()+"/"+o.u.GetName()] = true
		}
	}
	variant := func(o object, sel map[string]string) []string {
		var p []string
		for _, l := range variantLabels {
			if sel[l] == "" {
				p = append(p, fmt.Sprintf("%s: does not select %s", o, l))
			}
		}
		if sel["exported_namespace"] != "" && sel["exported_namespace"] != o.u.GetNamespace() {
			p = append(p, fmt.Sprintf("%s: selects exported_namespace %q, not its own namespace", o, sel["exported_namespace"]))
		}
		if len(vas) > 0 && !vas[sel["exported_namespace"]+"/"+sel["variant_name"]] {
			p = append(p, fmt.Sprintf("%s: selects variant %s/%s, which no VariantAutoscaling sample is", o, sel["exported_namespace"], sel["variant_name"]))
		}
		return p
	}
	for _, o := range objs {
		switch o.u.GetKind() {
		case "ScaledObject":
			p = append(p, checkScaledObject(o, variant)...)
		case "HorizontalPodAutoscaler":
			p = append(p, checkHPA(o, variant, adapter)...)
		}
	}
	return p
}

// checkHPA reports an HPA that does not read WVA's decision for one
// variant as replicas (AverageValue 1), through a rule the adapter serves.
func checkHPA(o object, variant variantCheck, adapter adapterValues) []string {
	p := checkBehavior(o, "spec", "behavior")
	metrics, _, _ := unstructured.NestedSlice(o.u.Object, "spec", "metrics")
	n := 0
	for _, m := range metrics {
		mm, _ := m.(map[string]any)
		name, _, _ := unstructured.NestedString(mm, "external", "metric", "name")
		if !strings.HasPrefix(name, "inferno_") {
			continue
		}
		n++
		if name != desiredMetric {
			p = append(p, fmt.Sprintf("%s: reads %s, not %s", o, name, desiredMetric))
		}
		typ, _, _ := unstructured.NestedString(mm, "external", "target", "type")
		avg, _, _ := unstructured.NestedString(mm, "external", "target", "averageValue")
		if typ != "AverageValue" || avg != "1" {
			p = append(p, fmt.Sprintf("%s: target %s %q: averageValue 1 makes the replicas the metric's value", o, typ, avg))
		}
		sel, _, _ := unstructured.NestedStringMap(mm, "external", "metric", "selector", "matchLabels")
		p = append(p, variant(o, sel)...)
		p = append(p, checkServed(o, adapter, name, sel)...)
	}
	if n == 0 {
		p = append(p, fmt.Sprintf("%s: reads no inferno_ metric", o))
	}
	return p
}

// variantCheck reports a selector that does not pick one variant's series.
type variantCheck func(object, map[string]string) []string

// checkFallback reports a ScaledObject whose fallback is missing or would
// scale its target to zero.
func checkFallback(o object) []string {
	fb, ok, _ := unstructured.NestedMap(o.u.Object, "spec", "fallback")
	if !ok {
		return []string{fmt.Sprintf("%s: no fallback: while the trigger fails KEDA's HPA has no metric, for as long as the errors last", o)}
	}
	var p []string
	if n, _, _ := unstructured.NestedInt64(fb, "failureThreshold"); n < 1 {
		p = append(p, fmt.Sprintf("%s: fallback.failureThreshold %d: one failed read would already fall back", o, n))
	}
	if n, _, _ := unstructured.NestedInt64(fb, "replicas"); n < 1 {
		p = append(p, fmt.Sprintf("%s: fallback.replicas %d: with a fallback of 0 replicas KEDA scales a target to zero when its trigger fails", o, n))
	}
	return p
}

func checkScaledObject(o object, variant variantCheck) []string {
	p := checkFallback(o)
	p = append(p, checkBehavior(o, "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior")...)
	triggers, _, _ := unstructured.NestedSlice(o.u.Object, "spec", "triggers")
	n := 0
	for i, tr := range triggers {
		t, _ := tr.(map[string]any)
		if t["type"] != "prometheus" {
			continue
		}
		n++
		p = append(p, checkTrigger(o, fmt.Sprintf("%s: trigger %d:", o, i), t, variant)...)
	}
	if n == 0 {
		p = append(p, fmt.Sprintf("%s: no prometheus trigger", o))
	}
	return p
}

// checkTrigger reports a prometheus trigger that does not turn WVA's
// decision into replicas safely (see docs/hpa-keda.md).
func checkTrigger(o object, at string, t map[string]any, variant variantCheck) []string {
	var p []string
	md, _, _ := unstructured.NestedStringMap(t, "metadata")
	if _, ok := md["metricType"]; ok {
		p = append(p, at+" metricType in the trigger's metadata, where KEDA ignores it: it belongs on the trigger")
	}
	if mt, _, _ := unstructured.NestedString(t, "metricType"); mt != "AverageValue" {
		p = append(p, fmt.Sprintf("%s metricType %q on the trigger: AverageValue with threshold 1 sets the replicas to the query's value (Value would multiply it by the ready replicas)", at, mt))
	}
	if md["ignoreNullValues"] != "false" {
		p = append(p, fmt.Sprintf("%s ignoreNullValues %q: an empty result must be an error (fallback), not 0 (scale to zero)", at, md["ignoreNullValues"]))
	}
	if md["threshold"] != "1" {
		p = append(p, fmt.Sprintf("%s threshold %q, not 1", at, md["threshold"]))
	}
	if a, err := strconv.ParseFloat(md["activationThreshold"], 64); err != nil || a < 0 || a >= 1 {
		p = append(p, fmt.Sprintf("%s activationThreshold %q: set it below 1 so that one desired replica activates the target", at, md["activationThreshold"]))
	}
	sels, err := selected(md["query"])
	if err != nil {
		p = append(p, fmt.Sprintf("%s query %q: %v", at, md["query"], err))
	}
	for _, s := range sels {
		p = append(p, variant(o, s)...)
	}
	return p
}

// checkServed reports an HPA external metric that the adapter's rules do
// not serve, or serve aggregated across the labels the HPA selects on.
func checkServed(o object, adapter adapterValues, name string, sel map[string]string) []string {
	for _, r := range adapter.Rules.External {
		series, err := r.seriesName()
		if err != nil || r.served(series) != name {
			continue
		}
		e, err := r.render(sel)
		if err != nil {
			return []string{fmt.Sprintf("%s: the adapter's metricsQuery for %s: %v", o, name, err)}
		}
		var p []string
		if g := groupedBy(e); g != nil {
			for l := range sel {
				if !slices.Contains(g, l) {
					p = append(p, fmt.Sprintf("%s: the adapter's metricsQuery aggregates %s away", o, l))
				}
			}
		}
		return p
	}
	return []string{fmt.Sprintf("%s: prometheus-adapter-values.yaml does not serve the external metric %s", o, name)}
}

// TestAdapterValues: prometheus-adapter-values.yaml is in the chart's
// values format (strictly: a key out of place, such as the adapter's own
// externalRules at the top, fails) and its one external rule serves
// inferno_desired_replicas per variant and namespace, with queries that
// parse as PromQL once the adapter's template is filled.
func TestAdapterValues(t *testing.T) {
	v := loadAdapterValues(t)
	if v.Prometheus.URL == "" || v.Prometheus.Port == 0 {
		t.Errorf("prometheus.url and prometheus.port must be set: %+v", v.Prometheus)
	}
	if v.Rules.Default == nil || *v.Rules.Default {
		t.Errorf("rules.default must be false (the chart's default custom-metrics rules are not needed)")
	}
	if len(v.Rules.External) != 1 {
		t.Fatalf("rules.external has %d rules, want 1", len(v.Rules.External))
	}
	r := v.Rules.External[0]
	series, err := r.seriesName()
	if err != nil || series != desiredMetric {
		t.Errorf("seriesQuery %q selects %q (%v), want %s", r.SeriesQuery, series, err, desiredMetric)
	}
	if got := r.served(series); got != desiredMetric {
		t.Errorf("the rule serves %q, want %s", got, desiredMetric)
	}
	if ov, ok := r.Resources.Overrides["exported_namespace"]; !ok || ov.Resource != "namespace" {
		t.Errorf("resources.overrides must map exported_namespace to the namespace resource (Prometheus renames the controller's namespace label): %+v", r.Resources.Overrides)
	}
	e, err := r.render(map[string]string{"variant_name": "v", "exported_namespace": "ns"})
	if err != nil {
		t.Fatalf("metricsQuery %q: %v", r.MetricsQuery, err)
	}
	if g := groupedBy(e); g != nil {
		for _, l := range variantLabels {
			if !slices.Contains(g, l) {
				t.Errorf("metricsQuery %q aggregates %s away", r.MetricsQuery, l)
			}
		}
	}
}
