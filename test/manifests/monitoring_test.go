// The monitoring WVA ships (charts/wva/files, copied into
// config/monitoring): the Grafana dashboard and the Prometheus alerting
// rules. Every PromQL expression must parse and select only series that
// WVA's registry emits or that the collector reads from vLLM, with labels
// those series have; the rules must load as Prometheus loads them, fire as
// their promtool unit tests say, and point at runbooks that exist; the
// kustomize copy must equal the chart's files and pass the real
// PrometheusRule CRD. Over 400 lines (about 900) because it holds, in
// sections, the metric seriesCatalogue read from WVA's registry, the three
// checkers that use it (dashboard, rules, kustomize copy), and a strict
// loader that stands in for Prometheus's rulefmt, which go.mod cannot
// import without new modules (see ruleGroups).

package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/metrics"
	"github.com/llm-d-incubation/wva/internal/servermetrics"
	"github.com/llm-d-incubation/wva/internal/testenv"
)

// The files, relative to the repository root.
const (
	chartDashboard = "charts/wva/files/grafana-dashboard.json"
	chartRules     = "charts/wva/files/prometheus-rules.yaml"
	monitoringDir  = "config/monitoring"
	rulesUnitTests = "test/manifests/testdata/monitoring-rules-test.yaml"
	operationsDoc  = "docs/operations.md"
	runbookBase    = "https://github.com/llm-d-incubation/wva/blob/main/docs/operations.md#"
)

// The kustomize copies in monitoringDir, and the dashboard's key in its
// ConfigMap.
const (
	copiedDashboard = "grafana-dashboard.json"
	copiedRule      = "prometheusrule.yaml"
	dashboardKey    = "wva-overview.json"
)

var updateMonitoring = flag.Bool("update-monitoring", false, "rewrite config/monitoring's copies of the chart's dashboard and rules")

// requiredAlerts are the alerts docs/operations.md documents.
var requiredAlerts = []string{"WVANoSuccessfulCycle", "WVAMetricsUnavailable", "WVATargetConflict",
	"WVATargetNotFound", "WVADesiredNotApplied", "WVAEngineErrors", "WVATunerRejecting"}

func readMonitoringFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// --- The metric seriesCatalogue ---------------------------------------------------

// metricFamily is a metric family a query may select, with the labels its series
// have once scraped; a histogram's _bucket, _sum and _count series are its.
type metricFamily struct {
	labels    map[string]bool
	histogram bool
}

// scrapeLabels are the labels Prometheus adds when it scrapes the
// controller through a ServiceMonitor (config/prometheus), exported_namespace
// being the series' own namespace renamed (docs/metrics.md).
var scrapeLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container", "exported_namespace"}

// vllmInputs are the vLLM series the dashboard reads: series of the
// families the collector queries (TestMonitoringVLLMInputs checks them
// against the collector's vllm schema, servermetrics.VLLM). The collector reads the TTFT and ITL histograms' _sum and
// _count; their _bucket series give the dashboard's quantiles.
var vllmInputs = map[string]string{
	"vllm:time_to_first_token_seconds_bucket":   "the TTFT histogram",
	"vllm:inter_token_latency_seconds_bucket":   "the ITL histogram (vLLM ≥ 0.11)",
	"vllm:time_per_output_token_seconds_bucket": "the ITL histogram's name before vLLM 0.11",
	"vllm:request_success_total":                "completed requests, the collector's arrival rate",
}

// vllmModelLabel names the model on vLLM's series; the collector selects
// on it, and so must every vLLM query of the dashboard.
const vllmModelLabel = "model_name"

// collectorRecorder keeps the collectors registered through it.
type collectorRecorder struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *collectorRecorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *collectorRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// wvaFamilies are the metric families metrics.NewEmitter registers, read
// from each collector's Desc: a renamed metric or label fails the checks.
func wvaFamilies(t *testing.T) map[string]metricFamily {
	t.Helper()
	rec := &collectorRecorder{Registerer: prometheus.NewRegistry()}
	if _, err := metrics.NewEmitter(rec); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricFamily{}
	for _, c := range rec.collectors {
		_, hist := c.(prometheus.Histogram)
		if _, ok := c.(*prometheus.HistogramVec); ok {
			hist = true
		}
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name and labels of %s", d)
			}
			f := metricFamily{labels: map[string]bool{}, histogram: hist}
			for _, l := range slices.Concat(strings.Split(m[2], ","), scrapeLabels) {
				f.labels[l] = l != ""
			}
			f.labels["le"] = hist
			out[m[1]] = f
		}
	}
	if len(out) == 0 {
		t.Fatal("metrics.NewEmitter registered nothing")
	}
	return out
}

// seriesCatalogue checks the series that queries select.
type seriesCatalogue map[string]metricFamily

// lookup is the WVA family a series name belongs to.
func (c seriesCatalogue) lookup(name string) (metricFamily, bool) {
	if f, ok := c[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && c[base].histogram {
			return c[base], true
		}
	}
	return metricFamily{}, false
}

// check parses expr and checks every series it selects.
func (c seriesCatalogue) check(expr string) error {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return err
	}
	var errs []error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			errs = append(errs, c.checkSelector(vs))
		}
		return nil
	})
	return errors.Join(errs...)
}

func (c seriesCatalogue) checkSelector(vs *parser.VectorSelector) error {
	name := vs.Name
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			name = m.Value
		}
	}
	if _, ok := vllmInputs[name]; ok {
		if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == vllmModelLabel }) {
			return fmt.Errorf("%s: a vLLM series selected without %s", vs, vllmModelLabel)
		}
		return nil
	}
	f, ok := c.lookup(name)
	if !ok {
		return fmt.Errorf("%s: %q is neither emitted by WVA (internal/metrics) nor a vLLM input the collector reads (vllmInputs)", vs, name)
	}
	var errs []error
	for _, m := range vs.LabelMatchers {
		if m.Name != model.MetricNameLabel && !f.labels[m.Name] {
			errs = append(errs, fmt.Errorf("%s: %s has no label %s", vs, name, m.Name))
		}
	}
	return errors.Join(errs...)
}

// TestMonitoringVLLMInputs: the vLLM series the dashboard reads are of the
// families the collector queries, selected by the same model label.
func TestMonitoringVLLMInputs(t *testing.T) {
	queried := map[string]bool{}
	for _, n := range servermetrics.VLLM.Series() {
		queried[n] = true
	}
	for name, what := range vllmInputs {
		base, bucket := strings.CutSuffix(name, "_bucket")
		if queried[name] || (bucket && queried[base+"_sum"] && queried[base+"_count"]) {
			continue
		}
		t.Errorf("%s (%s) is not among the series the collector's vllm schema reads: %v", name, what, queried)
	}
	if servermetrics.VLLM.ModelLabel != vllmModelLabel {
		t.Errorf("the collector selects vLLM's model by %s", servermetrics.VLLM.ModelLabel)
	}
}

// --- The dashboard ---------------------------------------------------------

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashTarget struct {
	RefID      string `json:"refId"`
	Expr       string `json:"expr"`
	Datasource *dsRef `json:"datasource"`
}

type dashPanel struct {
	ID          int          `json:"id"`
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Datasource  *dsRef       `json:"datasource"`
	Targets     []dashTarget `json:"targets"`
	Panels      []dashPanel  `json:"panels"` // a collapsed row's
	Repeat      string       `json:"repeat"`
}

type dashVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *dsRef          `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	Options    []struct {
		Value string `json:"value"`
	} `json:"options"`
}

type dashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Refresh       string      `json:"refresh"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []dashVariable `json:"list"`
	} `json:"templating"`
}

// allPanels are the dashboard's panels, rows and those of collapsed rows.
func (d *dashboard) allPanels() []dashPanel {
	var out []dashPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// query is a query variable's query, a string or {query: ...}.
func (v dashVariable) query() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &o)
	return o.Query
}

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	b := readMonitoringFile(t, chartDashboard)
	d := &dashboard{}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatalf("%s: %v", chartDashboard, err)
	}
	return d
}

// grafanaVar matches Grafana's variable syntaxes: ${name}, ${name:format},
// $name and [[name]].
var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?:[:.][^}]*)?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]`)

// grafanaBuiltins are Grafana's global variables, with values of the kind
// it substitutes.
var grafanaBuiltins = map[string]string{"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}

// grafanaExpand substitutes vars into q as Grafana does before it sends a query.
// $1 and alike (label_replace's references) stay, as Grafana leaves them.
func grafanaExpand(q string, vars map[string]string) (string, error) {
	var errs []error
	out := grafanaVar.ReplaceAllStringFunc(q, func(m string) string {
		sm := grafanaVar.FindStringSubmatch(m)
		name := sm[1] + sm[2] + sm[3]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := grafanaBuiltins[name]; ok {
			return v
		}
		if _, err := strconv.Atoi(name); err == nil {
			return m
		}
		errs = append(errs, fmt.Errorf("undefined variable %s", m))
		return m
	})
	return out, errors.Join(errs...)
}

// variableValues are the ways Grafana may fill the dashboard's variables:
// one per value of each custom variable (the label-name choices), a
// sample for query variables (multi-valued ones as Grafana's escaped
// regex alternation).
func variableValues(d *dashboard) []map[string]string {
	base := map[string]string{}
	var custom []dashVariable
	for _, v := range d.Templating.List {
		switch {
		case v.Type == "custom":
			custom = append(custom, v)
		case v.Multi || v.IncludeAll:
			base[v.Name] = `(meta-llama/Llama-3\\.1-8B-Instruct|sample\\-` + v.Name + `)`
		default:
			base[v.Name] = "sample-" + v.Name
		}
	}
	sets := []map[string]string{base}
	for _, v := range custom {
		var next []map[string]string
		for _, s := range sets {
			for _, o := range v.Options {
				m := map[string]string{v.Name: o.Value}
				for k, x := range s {
					m[k] = x
				}
				next = append(next, m)
			}
		}
		sets = next
	}
	return sets
}

var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_]\w*)\)$`)

// variableExpr is the PromQL of a query variable's label_values(...) or
// query_result(...).
func variableExpr(q string) (string, error) {
	if m := labelValuesQuery.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	if e, ok := strings.CutPrefix(q, "query_result("); ok && strings.HasSuffix(e, ")") {
		return strings.TrimSuffix(e, ")"), nil
	}
	return "", fmt.Errorf("%q: want label_values(series, label) or query_result(expr)", q)
}

// TestMonitoringDashboard: the dashboard is what Grafana and the chart
// expect (uid, schema, variables, a description and the datasource
// variable on every panel, unique ids).
func TestMonitoringDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID != "wva-overview" || d.SchemaVersion < 39 || d.Refresh == "" || d.Title == "" {
		t.Errorf("uid %q, schemaVersion %d, refresh %q, title %q: want uid wva-overview, schemaVersion ≥ 39, a refresh and a title",
			d.UID, d.SchemaVersion, d.Refresh, d.Title)
	}
	checkDashboardVariables(t, d)
	ids := map[int]string{}
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or taken by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Type != "row" {
			checkDashboardPanel(t, p)
		}
	}
}

func checkDashboardVariables(t *testing.T, d *dashboard) {
	t.Helper()
	vars := map[string]dashVariable{}
	for _, v := range d.Templating.List {
		if _, dup := vars[v.Name]; dup {
			t.Errorf("variable %s defined twice", v.Name)
		}
		vars[v.Name] = v
		if v.Type == "query" && !isDatasourceVar(v.Datasource) {
			t.Errorf("variable %s: datasource %+v, want the prometheus ${datasource}", v.Name, v.Datasource)
		}
	}
	if ds := vars["datasource"]; ds.Type != "datasource" || ds.query() != "prometheus" {
		t.Errorf("variable datasource: type %q query %q, want a prometheus datasource variable", ds.Type, ds.query())
	}
	for _, name := range []string{"namespace", "model"} {
		v := vars[name]
		q, err := grafanaExpand(v.query(), variableValues(d)[0])
		e, perr := variableExpr(q)
		if err = errors.Join(err, perr); v.Type != "query" || err != nil || !strings.HasPrefix(e, "wva_") {
			t.Errorf("variable %s: type %q query %q (%v): want label_values of a WVA series", name, v.Type, v.query(), err)
		}
	}
}

func isDatasourceVar(r *dsRef) bool {
	return r != nil && r.Type == "prometheus" && (r.UID == "${datasource}" || r.UID == "$datasource")
}

func checkDashboardPanel(t *testing.T, p dashPanel) {
	t.Helper()
	if p.Description == "" {
		t.Errorf("panel %q has no description", p.Title)
	}
	if !isDatasourceVar(p.Datasource) {
		t.Errorf("panel %q: datasource %+v, want the prometheus ${datasource}", p.Title, p.Datasource)
	}
	if len(p.Targets) == 0 {
		t.Errorf("panel %q has no query", p.Title)
	}
	refs := map[string]bool{}
	for _, tg := range p.Targets {
		if refs[tg.RefID] || tg.RefID == "" {
			t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
		}
		refs[tg.RefID] = true
		if tg.Datasource != nil && !isDatasourceVar(tg.Datasource) {
			t.Errorf("panel %q query %s: datasource %+v, want ${datasource}", p.Title, tg.RefID, tg.Datasource)
		}
	}
}

// TestMonitoringDashboardQueries: every query, the panels' and the
// variables', parses once Grafana's variables are substituted (with each
// choice of namespace label) and selects only known series and labels.
func TestMonitoringDashboardQueries(t *testing.T) {
	d := loadDashboard(t)
	cat := seriesCatalogue(wvaFamilies(t))
	var exprs []string
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			exprs = append(exprs, v.query())
		}
	}
	for _, vals := range variableValues(d) {
		for _, q := range exprs {
			if err := checkDashboardQuery(cat, q, vals); err != nil {
				t.Errorf("%s\n  with %v:\n  %v", q, vals, err)
			}
		}
	}
}

func checkDashboardQuery(cat seriesCatalogue, q string, vals map[string]string) error {
	e, err := grafanaExpand(q, vals)
	if err != nil {
		return err
	}
	if strings.HasPrefix(e, "label_values(") || strings.HasPrefix(e, "query_result(") {
		if e, err = variableExpr(e); err != nil {
			return err
		}
	}
	return cat.check(e)
}

// --- The rules -------------------------------------------------------------

// ruleGroups is a rules file, Prometheus's rulefmt.RuleGroups. That
// package cannot be imported here: it pulls in the query engine, whose
// modules go.mod lacks (github.com/edsrzf/mmap-go, facette/natsort). So
// loadRules decodes strictly and validates as rulefmt.Parse does, in the
// parts these rules use; promtool check rules (TestMonitoringRulesPromtool)
// runs the real rulefmt on the same file.
type ruleGroups struct {
	Groups []struct {
		Name        string            `json:"name"`
		Interval    string            `json:"interval,omitempty"`
		QueryOffset string            `json:"query_offset,omitempty"`
		Limit       int               `json:"limit,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Rules       []ruleFileRule    `json:"rules"`
	} `json:"groups"`
}

type ruleFileRule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// loadRules reads the chart's rules: unknown fields, duplicate keys, bad
// durations, group names, rule kinds, expressions, label and annotation
// names, and templates fail it.
func loadRules(t *testing.T) *ruleGroups {
	t.Helper()
	var rgs ruleGroups
	if err := yaml.UnmarshalStrict(readMonitoringFile(t, chartRules), &rgs); err != nil {
		t.Fatalf("%s: %v", chartRules, err)
	}
	names := map[string]bool{}
	for _, g := range rgs.Groups {
		if g.Name == "" || names[g.Name] {
			t.Errorf("%s: group name %q empty or repeated", chartRules, g.Name)
		}
		names[g.Name] = true
		errs := checkDurations(g.Interval, g.QueryOffset)
		for _, r := range g.Rules {
			errs = append(errs, r.validate()...)
		}
		if err := errors.Join(errs...); err != nil {
			t.Errorf("%s, group %s: %v", chartRules, g.Name, err)
		}
	}
	return &rgs
}

func checkDurations(ds ...string) []error {
	var errs []error
	for _, d := range ds {
		if _, err := model.ParseDuration(d); d != "" && err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// validate is rulefmt's Rule.Validate.
func (r ruleFileRule) validate() []error {
	name := r.Alert + r.Record
	errs := checkDurations(r.For, r.KeepFiringFor)
	if (r.Alert == "") == (r.Record == "") {
		errs = append(errs, fmt.Errorf("%s: exactly one of record and alert must be set", name))
	}
	if _, err := promql.ParseExpr(r.Expr); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if r.Record != "" && (len(r.Annotations) > 0 || r.For != "" || !model.LegacyValidation.IsValidMetricName(r.Record)) {
		errs = append(errs, fmt.Errorf("%s: a recording rule needs a metric name and has no annotations or for", name))
	}
	for k, v := range r.Labels {
		if !model.LegacyValidation.IsValidLabelName(k) || k == model.MetricNameLabel || !model.LabelValue(v).IsValid() {
			errs = append(errs, fmt.Errorf("%s: invalid label %s=%q", name, k, v))
		}
		errs = append(errs, checkTemplate(name, v))
	}
	for k, v := range r.Annotations {
		if !model.LegacyValidation.IsValidLabelName(k) {
			errs = append(errs, fmt.Errorf("%s: invalid annotation name %s", name, k))
		}
		errs = append(errs, checkTemplate(name, v))
	}
	return errs
}

// templateFuncs are the functions Prometheus's alert templates have
// (github.com/prometheus/prometheus/template), as stubs.
var templateFuncs = func() template.FuncMap {
	m := template.FuncMap{}
	for _, f := range strings.Fields(`query first label value strvalue args reReplaceAll safeHtml match title
		toUpper toLower graphLink tableLink sortByLabel stripPort stripDomain humanize humanize1024
		humanizeDuration humanizePercentage humanizeTimestamp toTime toDuration now pathPrefix
		externalURL parseDuration urlQueryEscape tmpl`) {
		m[f] = func(...any) (string, error) { return "x", nil }
	}
	return m
}()

// checkTemplate parses and runs a label or annotation template as
// Prometheus does (with $labels, $externalLabels, $externalURL, $value).
func checkTemplate(name, text string) error {
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	tmpl, err := template.New(name).Funcs(templateFuncs).Option("missingkey=zero").Parse(defs + text)
	if err != nil {
		return err
	}
	data := map[string]any{"Labels": map[string]string{}, "ExternalLabels": map[string]string{}, "ExternalURL": "", "Value": 1.0}
	if err := tmpl.Execute(io.Discard, data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// headingAnchors are the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(md []byte) map[string]bool {
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, m := range regexp.MustCompile(`(?m)^#+\s+(.+?)\s*$`).FindAllSubmatch(md, -1) {
		out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(string(m[1])), ""), " ", "-")] = true
	}
	return out
}

// TestMonitoringRules: the rules load as Prometheus loads them (rulefmt:
// strict fields, durations, label names, templates), every alert has a
// severity, a summary, a description and a runbook that docs/operations.md
// has, and every expression selects only known series.
func TestMonitoringRules(t *testing.T) {
	cat := seriesCatalogue(wvaFamilies(t))
	anchors := headingAnchors(readMonitoringFile(t, operationsDoc))
	seen := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			seen[name] = true
			if err := cat.check(r.Expr); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if r.Alert != "" {
				checkAlert(t, r, anchors)
			}
		}
	}
	for _, a := range requiredAlerts {
		if !seen[a] {
			t.Errorf("no alert %s in %s", a, chartRules)
		}
	}
}

func checkAlert(t *testing.T, r ruleFileRule, anchors map[string]bool) {
	t.Helper()
	if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
		t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
	}
	for _, a := range []string{"summary", "description"} {
		if r.Annotations[a] == "" {
			t.Errorf("%s has no %s", r.Alert, a)
		}
	}
	anchor := strings.ToLower(r.Alert)
	if u := r.Annotations["runbook_url"]; u != runbookBase+anchor {
		t.Errorf("%s: runbook_url %q, want %s%s", r.Alert, u, runbookBase, anchor)
	}
	if !anchors[anchor] {
		t.Errorf("%s: %s has no section #%s (a heading %q)", r.Alert, operationsDoc, anchor, r.Alert)
	}
}

// rulesUnitTestFile is the part of promtool's unit test file read here.
type rulesUnitTestFile struct {
	Tests []struct {
		AlertRuleTests []struct {
			AlertName string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `json:"exp_labels"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestMonitoringRulesUnitTestsCover: the promtool unit tests make every
// alerting rule fire (an expected alert with the rule's own labels) and
// check every alert where it must stay silent.
func TestMonitoringRulesUnitTestsCover(t *testing.T) {
	var f rulesUnitTestFile
	if err := yaml.Unmarshal(readMonitoringFile(t, rulesUnitTests), &f); err != nil {
		t.Fatal(err)
	}
	silent := map[string]bool{}
	var firing []map[string]string
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTests {
			silent[a.AlertName] = silent[a.AlertName] || len(a.ExpAlerts) == 0
			for _, e := range a.ExpAlerts {
				firing = append(firing, labelsWith(e.ExpLabels, "alertname", a.AlertName))
			}
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			own := labelsWith(r.Labels, "alertname", r.Alert)
			if !slices.ContainsFunc(firing, func(got map[string]string) bool { return labelsSubset(own, got) }) {
				t.Errorf("%s: no unit test in %s expects it to fire with %v", r.Alert, rulesUnitTests, own)
			}
			if !silent[r.Alert] {
				t.Errorf("%s: no unit test in %s expects it silent", r.Alert, rulesUnitTests)
			}
		}
	}
}

func labelsWith(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

func labelsSubset(a, b map[string]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// promtoolPath is Prometheus's promtool: $WVA_PROMTOOL, on the PATH, or beside
// $WVA_PROMETHEUS. Debian's prometheus package (make test-deps) ships it.
func promtoolPath() string {
	if p := os.Getenv("WVA_PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if p := os.Getenv("WVA_PROMETHEUS"); p != "" {
		if pt := filepath.Join(filepath.Dir(p), "promtool"); isFile(pt) {
			return pt
		}
	}
	return ""
}

func isFile(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestMonitoringRulesPromtool: a real Prometheus's promtool checks the
// rules (its linter included) and runs their unit tests, which evaluate
// each alert over series that make it fire and series that must not.
func TestMonitoringRulesPromtool(t *testing.T) {
	bin := promtoolPath()
	if bin == "" {
		t.Skip("promtool not found (WVA_PROMTOOL, PATH, beside WVA_PROMETHEUS): `make test-deps` installs Debian's prometheus package, which ships it")
	}
	root := testenv.Root()
	for _, args := range [][]string{{"check", "rules", chartRules}, {"test", "rules", rulesUnitTests}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// --- The kustomize copy ------------------------------------------------------

// ruleHeader precedes the chart's rules, indented, in config/monitoring's
// PrometheusRule.
const ruleHeader = `# Generated from charts/wva/files/prometheus-rules.yaml by
# go test ./test/manifests -run TestMonitoringCopies -update-monitoring
# (TestMonitoringCopies fails when it differs). Edit the chart's file.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: wva-alerts
  namespace: workload-variant-autoscaler-system
spec:
`

// prometheusRule is config/monitoring's PrometheusRule for the chart's rules.
func prometheusRule(rules []byte) []byte {
	var b bytes.Buffer
	b.WriteString(ruleHeader)
	for l := range strings.Lines(string(rules)) {
		if strings.TrimSpace(l) != "" {
			b.WriteString("  ")
		}
		b.WriteString(l)
	}
	return b.Bytes()
}

// TestMonitoringCopies: config/monitoring holds the chart's dashboard byte
// for byte and its rules as a PrometheusRule (-update-monitoring writes them).
func TestMonitoringCopies(t *testing.T) {
	want := map[string][]byte{
		copiedDashboard: readMonitoringFile(t, chartDashboard),
		copiedRule:      prometheusRule(readMonitoringFile(t, chartRules)),
	}
	for name, b := range want {
		path := filepath.Join(testenv.Root(), monitoringDir, name)
		if *updateMonitoring {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s/%s differs from the chart's file (%v): run go test ./test/manifests -run TestMonitoringCopies -update-monitoring", monitoringDir, name, err)
		}
	}
}

// buildMonitoring renders config/monitoring with kustomize, by kind.
func buildMonitoring(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(testenv.Root(), monitoringDir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", monitoringDir, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out[r.GetKind()] = &unstructured.Unstructured{Object: m}
	}
	return out
}

// TestMonitoringKustomize: config/monitoring builds into the dashboard's
// ConfigMap for Grafana's sidecar and a PrometheusRule whose spec is the
// chart's rules; both pass a server-side dry run against the real CRD
// with nothing dropped, and a broken rule is refused (the schema is
// enforced).
func TestMonitoringKustomize(t *testing.T) {
	objs := buildMonitoring(t)
	cm, rule := objs["ConfigMap"], objs["PrometheusRule"]
	if cm == nil || rule == nil || len(objs) != 2 {
		t.Fatalf("%s builds %v, want a ConfigMap and a PrometheusRule", monitoringDir, objs)
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", dashboardKey)
	if data != string(readMonitoringFile(t, chartDashboard)) || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap %s: want the chart's dashboard under %s and the label grafana_dashboard: \"1\"", cm.GetName(), dashboardKey)
	}
	var rules map[string]any
	if err := yaml.Unmarshal(readMonitoringFile(t, chartRules), &rules); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule.Object["spec"], rules) {
		t.Errorf("PrometheusRule %s: its spec is not %s", rule.GetName(), chartRules)
	}
	for _, u := range []*unstructured.Unstructured{cm, rule} {
		got, err := dryRun(t, u)
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if d := dropped(u.Object, got.Object, ""); len(d) > 0 {
			t.Errorf("%s %s: the API server dropped or changed %v", u.GetKind(), u.GetName(), d)
		}
	}
	broken := rule.DeepCopy()
	groups, _, _ := unstructured.NestedSlice(broken.Object, "spec", "groups") // a copy
	groups[0].(map[string]any)["rules"].([]any)[0].(map[string]any)["for"] = "ten minutes"
	if err := unstructured.SetNestedSlice(broken.Object, groups, "spec", "groups"); err != nil {
		t.Fatal(err)
	}
	if _, err := dryRun(t, broken); err == nil {
		t.Error("a PrometheusRule with for: ten minutes passed the dry run: the CRD's schema is not enforced")
	}
}
