// Tests of the main ConfigMap's parsing: defaults, every key's accepted and
// refused values, the error text, and the documented examples. Over 400
// lines because the tables list every key of the configuration reference.

package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/engine"
)

// configMapData returns the data of a ConfigMap manifest, as the
// controller would see it.
func configMapData(t *testing.T, manifest string) map[string]string {
	t.Helper()
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(manifest), &cm); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return cm.Data
}

// problem is a wanted problem: its key and substrings of its message.
type problem struct {
	key  string
	want []string
}

// expectProblems checks that err is an *Error of configMap that reports
// every wanted problem, both in Problems and in its text.
func expectProblems(t *testing.T, err error, configMap string, wants ...problem) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *Error", err)
	}
	if e.ConfigMap != configMap {
		t.Errorf("ConfigMap = %q, want %q", e.ConfigMap, configMap)
	}
	for _, w := range wants {
		if !hasProblem(e, w) {
			t.Errorf("no problem of key %q with %q in:\n%v", w.key, w.want, err)
		}
		if !strings.Contains(err.Error(), configMap+"/"+w.key+": ") {
			t.Errorf("error text does not name %s/%s:\n%v", configMap, w.key, err)
		}
	}
}

func hasProblem(e *Error, w problem) bool {
	for _, p := range e.Problems {
		if p.Key == w.key && p.ConfigMap == e.ConfigMap && containsAll(p.Message, w.want) {
			return true
		}
	}
	return false
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func p(key string, want ...string) problem { return problem{key, want} }

func TestErrorText(t *testing.T) {
	e := &Error{ConfigMap: "cm", Problems: []Problem{
		{ConfigMap: "cm", Key: "a", Message: "first"},
		{ConfigMap: "cm", Key: "b", Message: "second"},
	}}
	if got, want := e.Error(), "cm/a: first\ncm/b: second"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := (&Error{ConfigMap: "cm"}).Error(); got != "cm: invalid" {
		t.Errorf("Error() without problems = %q", got)
	}
}

func TestProblemsAreSortedByKeyAndAllReported(t *testing.T) {
	_, err := ParseMain(map[string]string{
		"WVA_MODE":            "fast",
		"GLOBAL_OPT_INTERVAL": "soon",
		"PROMETHEUS_WINDOW":   "5s",
		"WVA_MAX_QUEUE_SIZE":  "0",
	})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *Error", err)
	}
	var keys []string
	for _, p := range e.Problems {
		keys = append(keys, p.Key)
	}
	want := []string{"GLOBAL_OPT_INTERVAL", "PROMETHEUS_WINDOW", "WVA_MAX_QUEUE_SIZE", "WVA_MODE"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("problem keys = %v, want %v", keys, want)
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 4 {
		t.Errorf("error has %d lines, want 4:\n%v", len(lines), err)
	}
}

func TestDefaultMain(t *testing.T) {
	m, err := ParseMain(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, DefaultMain()) {
		t.Errorf("ParseMain(nil) = %+v, want DefaultMain() %+v", m, DefaultMain())
	}
	want := Main{
		Interval: 60 * time.Second, Optimizer: engine.OptimizerUnlimited, CapacitySource: "nodes",
		ScaleFromZeroInterval: 2 * time.Second, ScaleFromZeroQuery: DefaultScaleFromZeroQuery, GatewayRateQuery: DefaultGatewayRateQuery,
		Drain: Drain{Timeout: 5 * time.Minute, Method: DrainActivePorts},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("defaults = %+v, want %+v", m, want)
	}
}

// The main ConfigMap as the WVA configuration guide writes it.
const seedMainConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: variantautoscaling-config
  namespace: workload-variant-autoscaler-system
data:
  # Prometheus configuration
  PROMETHEUS_BASE_URL: "https://kube-prometheus-stack-prometheus.workload-variant-autoscaler-monitoring.svc.cluster.local:9090"
  PROMETHEUS_TLS_INSECURE_SKIP_VERIFY: "true"
  # Optimization interval - controls reconciliation frequency
  GLOBAL_OPT_INTERVAL: "60s"
  # Scale-to-zero configuration
  WVA_SCALE_TO_ZERO: "false"
`

func TestParseMainSeedExample(t *testing.T) {
	m, err := ParseMain(configMapData(t, seedMainConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultMain()
	want.Prometheus.URL = "https://kube-prometheus-stack-prometheus.workload-variant-autoscaler-monitoring.svc.cluster.local:9090"
	want.Prometheus.InsecureSkipVerify = true
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v\nwant %+v", m, want)
	}
}

func TestParseMainValues(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want func(*Main)
	}{
		{"prometheus TLS and auth", map[string]string{
			"PROMETHEUS_BASE_URL":               " http://prometheus:9090 ",
			"PROMETHEUS_CA_CERT_PATH":           "/etc/ca.pem",
			"PROMETHEUS_CLIENT_CERT_PATH":       "/etc/tls.crt",
			"PROMETHEUS_CLIENT_KEY_PATH":        "/etc/tls.key",
			"PROMETHEUS_BEARER_TOKEN_FILE":      "/var/run/token",
			"PROMETHEUS_BEARER_TOKEN_OVER_HTTP": "true",
			"PROMETHEUS_TIMEOUT":                "15s",
			"PROMETHEUS_WINDOW":                 "2m",
			"PROMETHEUS_NAMESPACE_LABEL":        "exported_namespace",
			"PROMETHEUS_POD_LABEL":              "pod_name",
			"PROMETHEUS_METRICS_SCHEMA":         "sglang",
		}, func(m *Main) {
			m.Prometheus = Prometheus{
				URL: "http://prometheus:9090", CAFile: "/etc/ca.pem", CertFile: "/etc/tls.crt", KeyFile: "/etc/tls.key",
				BearerTokenFile: "/var/run/token", BearerTokenOverHTTP: true, Timeout: 15 * time.Second, Window: 2 * time.Minute,
				NamespaceLabel: "exported_namespace", PodLabel: "pod_name", MetricsSchema: "sglang",
			}
		}},
		{"loops and modes", map[string]string{
			"GLOBAL_OPT_INTERVAL":          "30s",
			"WVA_SCALE_TO_ZERO":            "true",
			"WVA_MODE":                     "hybrid",
			"WVA_OPTIMIZER":                "limited",
			"WVA_CAPACITY_SOURCE":          "configmap",
			"WVA_SCALE_FROM_ZERO_INTERVAL": "500ms",
			"WVA_SCALE_FROM_ZERO_QUERY":    "sum by (namespace, model_name) (my_queue)",
			"WVA_GATEWAY_RATE_QUERY":       "none",
			"WVA_SURGE":                    "true",
			"WVA_POD_VARIANT_LABEL":        "variant",
		}, func(m *Main) {
			m.GatewayRateQuery, m.Surge = GatewayRateQueryOff, true
			m.Interval, m.ScaleToZero, m.Mode, m.Optimizer = 30*time.Second, true, engine.ModeHybrid, engine.OptimizerLimited
			m.CapacitySource, m.ScaleFromZeroInterval = "configmap", 500*time.Millisecond
			m.ScaleFromZeroQuery, m.PodVariantLabel = "sum by (namespace, model_name) (my_queue)", "variant"
		}},
		{"drain by label", map[string]string{"WVA_DRAIN_TIMEOUT": "90s", "WVA_DRAIN_METHOD": "label: llm-d.ai/inference-serving"}, func(m *Main) {
			m.Drain = Drain{Timeout: 90 * time.Second, Method: DrainLabel, Label: "llm-d.ai/inference-serving"}
		}},
		{"drain off", map[string]string{"WVA_DRAIN_TIMEOUT": "0"}, func(m *Main) { m.Drain.Timeout = 0 }},
		{"drain off, with a unit", map[string]string{"WVA_DRAIN_TIMEOUT": "0s", "WVA_DRAIN_METHOD": "active-ports"}, func(m *Main) { m.Drain.Timeout = 0 }},
		{"engine settings", map[string]string{
			"WVA_SCALE_TO_ZERO_RETENTION":    "15m",
			"WVA_SCALE_DOWN_STABILIZATION":   "90s",
			"WVA_METRICS_MAX_AGE":            "1m30s",
			"WVA_TRANSIENT_DELAY":            "1m",
			"WVA_MAX_QUEUE_SIZE":             "64",
			"WVA_ALLOCATION_ALGORITHM":       "greedy",
			"WVA_SATURATION_POLICY":          "PriorityRoundRobin",
			"WVA_ACCELERATOR_PENALTY_FACTOR": "0.25",
			"WVA_SLO_MULTIPLIER":             "2.5",
			"WVA_SPARE_QUANTILE":             "0.9",
			"WVA_SURGE_RATIO":                "2",
			"WVA_FORECAST":                   "false",
			"WVA_ATTAINMENT_FEEDBACK":        "false",
			"WVA_PROVISIONING_TIME":          "3m",
			"WVA_TTFT_ATTAINMENT":            "0.99",
			"WVA_CAPACITY_MODEL":             "fleet",
			"WVA_ATTAINMENT":                 "0.95",
			"WVA_TOKEN_CV":                   "0.8",
			"WVA_MAX_REPLICAS_DEFAULT":       "200",
			"WVA_SCALE_UP_LIMIT_FACTOR":      "2.5",
			"WVA_SCALE_UP_LIMIT_REPLICAS":    "3",
			"WVA_MAX_POD_ARRIVAL_RATE":       "500",
		}, func(m *Main) {
			m.Engine = engine.Config{
				ScaleToZeroRetentionSeconds: 900, ScaleDownStabilizationSeconds: 90, MetricsMaxAgeSeconds: 90,
				TransientDelaySeconds: 60, MaxQueueSize: 64, AllocationAlgorithm: "greedy",
				SaturationPolicy: "PriorityRoundRobin", AcceleratorPenaltyFactor: 0.25, SLOMultiplier: 2.5,
				SpareQuantile: 0.9, SurgeRatio: 2, DisableForecast: true, DisableFeedback: true, ProvisioningSeconds: 180, TTFTAttainment: 0.99,
				CapacityModel: engine.CapacityFleet, Attainment: 0.95, TokenCV: 0.8,
				MaxReplicasDefault: 200, ScaleUpLimitFactor: 2.5, ScaleUpLimitReplicas: 3, MaxPodArrivalRPS: 500,
			}
		}},
		{"a written zero is kept as ExplicitZero", map[string]string{
			"WVA_SCALE_DOWN_STABILIZATION":   "0s",
			"WVA_SCALE_TO_ZERO_RETENTION":    "0",
			"WVA_TRANSIENT_DELAY":            "0s",
			"WVA_ACCELERATOR_PENALTY_FACTOR": "0",
		}, func(m *Main) {
			m.Engine = engine.Config{
				ScaleDownStabilizationSeconds: ExplicitZero, ScaleToZeroRetentionSeconds: ExplicitZero,
				TransientDelaySeconds: ExplicitZero, AcceleratorPenaltyFactor: ExplicitZero,
			}
		}},
		{"empty values take the defaults", map[string]string{
			"GLOBAL_OPT_INTERVAL": "", "WVA_SCALE_FROM_ZERO_QUERY": "  ", "WVA_MODE": "",
		}, func(*Main) {}},
		{"keys without a reserved prefix are notes", map[string]string{
			"owner": "team-a", "GLOBAL_NOTE": "anything",
		}, func(*Main) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMain(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultMain()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestHasValue(t *testing.T) {
	data := map[string]string{"A": "x", "B": " \n", "C": ""}
	for key, want := range map[string]bool{"A": true, "B": false, "C": false, "D": false} {
		if got := HasValue(data, key); got != want {
			t.Errorf("HasValue(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestParseMainInvalid(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want problem
	}{
		{"interval not a duration", map[string]string{"GLOBAL_OPT_INTERVAL": "soon"},
			p("GLOBAL_OPT_INTERVAL", `want a duration such as 60s, got "soon"`)},
		{"interval too short", map[string]string{"GLOBAL_OPT_INTERVAL": "500ms"},
			p("GLOBAL_OPT_INTERVAL", `want a duration from 1s to 1h, got "500ms"`)},
		{"interval too long", map[string]string{"GLOBAL_OPT_INTERVAL": "2h"},
			p("GLOBAL_OPT_INTERVAL", `want a duration from 1s to 1h, got "2h"`)},
		{"negative interval", map[string]string{"GLOBAL_OPT_INTERVAL": "-60s"},
			p("GLOBAL_OPT_INTERVAL", `want a duration from 1s to 1h, got "-60s"`)},
		{"URL with a port out of range", map[string]string{"PROMETHEUS_BASE_URL": "http://prometheus:99999"},
			p("PROMETHEUS_BASE_URL", `want a port from 1 to 65535, got "99999" in "http://prometheus:99999"`)},
		{"URL with port 0", map[string]string{"PROMETHEUS_BASE_URL": "https://prometheus:0"},
			p("PROMETHEUS_BASE_URL", `want a port from 1 to 65535, got "0"`)},
		{"URL with a malformed port", map[string]string{"PROMETHEUS_BASE_URL": "https://prometheus:90x"},
			p("PROMETHEUS_BASE_URL", "http:// or https://", `"https://prometheus:90x"`)},
		{"URL with a password is not echoed", map[string]string{"PROMETHEUS_BASE_URL": "https://admin:hunter2@prometheus:9090"},
			p("PROMETHEUS_BASE_URL", "want no user name or password in the URL", `"https://admin:xxxxx@prometheus:9090"`)},
		{"URL with a query", map[string]string{"PROMETHEUS_BASE_URL": "https://prometheus:9090/?x=1"},
			p("PROMETHEUS_BASE_URL", "want no query or fragment")},
		{"URL with only a port", map[string]string{"PROMETHEUS_BASE_URL": "http://:9090"},
			p("PROMETHEUS_BASE_URL", "http:// or https://")},
		{"bearer token over http", map[string]string{"PROMETHEUS_BASE_URL": "http://prometheus:9090", "PROMETHEUS_BEARER_TOKEN_FILE": "/var/run/token"},
			p("PROMETHEUS_BEARER_TOKEN_FILE", "the token would be sent in clear text to http://prometheus:9090: use an https:// PROMETHEUS_BASE_URL, "+
				"or set PROMETHEUS_BEARER_TOKEN_OVER_HTTP to true to allow it")},
		{"bearer token over HTTP in capitals", map[string]string{"PROMETHEUS_BASE_URL": "HTTP://prometheus:9090", "PROMETHEUS_BEARER_TOKEN_FILE": "/var/run/token"},
			p("PROMETHEUS_BEARER_TOKEN_FILE", "the token would be sent in clear text to")},
		{"token opt-in not a bool", map[string]string{"PROMETHEUS_BEARER_TOKEN_OVER_HTTP": "please"},
			p("PROMETHEUS_BEARER_TOKEN_OVER_HTTP", `want true or false, got "please"`)},
		{"URL without scheme", map[string]string{"PROMETHEUS_BASE_URL": "prometheus:9090"},
			p("PROMETHEUS_BASE_URL", "http:// or https://", `"prometheus:9090"`)},
		{"URL with another scheme", map[string]string{"PROMETHEUS_BASE_URL": "ftp://prometheus"},
			p("PROMETHEUS_BASE_URL", "http:// or https://")},
		{"URL without host", map[string]string{"PROMETHEUS_BASE_URL": "https://"},
			p("PROMETHEUS_BASE_URL", "http:// or https://")},
		{"bool", map[string]string{"PROMETHEUS_TLS_INSECURE_SKIP_VERIFY": "yes"},
			p("PROMETHEUS_TLS_INSECURE_SKIP_VERIFY", `want true or false, got "yes"`)},
		{"client cert without key", map[string]string{"PROMETHEUS_CLIENT_CERT_PATH": "/tls.crt"},
			p("PROMETHEUS_CLIENT_KEY_PATH", "required when PROMETHEUS_CLIENT_CERT_PATH is set")},
		{"client key without cert", map[string]string{"PROMETHEUS_CLIENT_KEY_PATH": "/tls.key"},
			p("PROMETHEUS_CLIENT_CERT_PATH", "required when PROMETHEUS_CLIENT_KEY_PATH is set")},
		{"zero timeout", map[string]string{"PROMETHEUS_TIMEOUT": "0s"},
			p("PROMETHEUS_TIMEOUT", `want a duration > 0 and at most 5m, got "0s"`)},
		{"negative timeout", map[string]string{"PROMETHEUS_TIMEOUT": "-5s"},
			p("PROMETHEUS_TIMEOUT", `want a duration > 0 and at most 5m, got "-5s"`)},
		{"timeout too long", map[string]string{"PROMETHEUS_TIMEOUT": "1h"},
			p("PROMETHEUS_TIMEOUT", `want a duration > 0 and at most 5m, got "1h"`)},
		{"short window", map[string]string{"PROMETHEUS_WINDOW": "10s"},
			p("PROMETHEUS_WINDOW", `want a duration from 15s to 1h, got "10s"`)},
		{"long window", map[string]string{"PROMETHEUS_WINDOW": "24h"},
			p("PROMETHEUS_WINDOW", `want a duration from 15s to 1h, got "24h"`)},
		{"namespace label", map[string]string{"PROMETHEUS_NAMESPACE_LABEL": "kube-namespace"},
			p("PROMETHEUS_NAMESPACE_LABEL", "Prometheus label name", `"kube-namespace"`)},
		{"unknown metrics schema", map[string]string{"PROMETHEUS_METRICS_SCHEMA": "tgi"},
			p("PROMETHEUS_METRICS_SCHEMA", `unknown metrics schema "tgi" (known: sglang, vllm)`)},
		{"pod label starting with a digit", map[string]string{"PROMETHEUS_POD_LABEL": "1pod"},
			p("PROMETHEUS_POD_LABEL", "Prometheus label name")},
		{"drain timeout too long", map[string]string{"WVA_DRAIN_TIMEOUT": "2h"},
			p("WVA_DRAIN_TIMEOUT", `want a duration from 0s to 1h, got "2h"`)},
		{"drain timeout negative", map[string]string{"WVA_DRAIN_TIMEOUT": "-5s"}, p("WVA_DRAIN_TIMEOUT", `got "-5s"`)},
		{"drain method", map[string]string{"WVA_DRAIN_METHOD": "readiness"}, p("WVA_DRAIN_METHOD", `"active-ports" or "label:KEY"`, `"readiness"`)},
		{"drain label", map[string]string{"WVA_DRAIN_METHOD": "label:bad key!"}, p("WVA_DRAIN_METHOD", "not a Kubernetes label key")},
		{"variant label", map[string]string{"WVA_POD_VARIANT_LABEL": "app.kubernetes.io/name"},
			p("WVA_POD_VARIANT_LABEL", "Prometheus label name")},
		{"mode", map[string]string{"WVA_MODE": "Hybrid"},
			p("WVA_MODE", "capacity-only, model-only, hybrid", `"Hybrid"`)},
		{"optimizer", map[string]string{"WVA_OPTIMIZER": "global"},
			p("WVA_OPTIMIZER", "unlimited, limited", `"global"`)},
		{"capacity source", map[string]string{"WVA_CAPACITY_SOURCE": "api"},
			p("WVA_CAPACITY_SOURCE", "nodes, configmap")},
		{"scale-from-zero interval", map[string]string{"WVA_SCALE_FROM_ZERO_INTERVAL": "50ms"},
			p("WVA_SCALE_FROM_ZERO_INTERVAL", `want a duration from 100ms to 10m, got "50ms"`)},
		{"scale-from-zero interval too long", map[string]string{"WVA_SCALE_FROM_ZERO_INTERVAL": "1h"},
			p("WVA_SCALE_FROM_ZERO_INTERVAL", `want a duration from 100ms to 10m, got "1h"`)},
		{"scale-from-zero query not PromQL", map[string]string{"WVA_SCALE_FROM_ZERO_QUERY": "sum by (namespace, model_name) (queue"},
			p("WVA_SCALE_FROM_ZERO_QUERY", "want a PromQL query: 1:", "unclosed left parenthesis")},
		{"scale-from-zero query a string", map[string]string{"WVA_SCALE_FROM_ZERO_QUERY": `"queue"`},
			p("WVA_SCALE_FROM_ZERO_QUERY", "want a PromQL query returning an instant vector (series by namespace and model_name), got a string")},
		{"scale-from-zero query a scalar", map[string]string{"WVA_SCALE_FROM_ZERO_QUERY": "1 + 1"},
			p("WVA_SCALE_FROM_ZERO_QUERY", "got a scalar")},
		{"scale-from-zero query a range", map[string]string{"WVA_SCALE_FROM_ZERO_QUERY": "queue[5m]"},
			p("WVA_SCALE_FROM_ZERO_QUERY", "got a matrix")},
		{"gateway rate query not PromQL", map[string]string{"WVA_GATEWAY_RATE_QUERY": "rate(x[1m]"},
			p("WVA_GATEWAY_RATE_QUERY", "want a PromQL query: 1:", `(or "none" to disable the query)`)},
		{"gateway rate query unknown function", map[string]string{"WVA_GATEWAY_RATE_QUERY": "rates(x[1m])"},
			p("WVA_GATEWAY_RATE_QUERY", `1:1: parse error: unknown function with name "rates"`)},
		{"negative retention", map[string]string{"WVA_SCALE_TO_ZERO_RETENTION": "-1m"},
			p("WVA_SCALE_TO_ZERO_RETENTION", `want a duration from 0s to 168h, got "-1m"`)},
		{"retention over a week", map[string]string{"WVA_SCALE_TO_ZERO_RETENTION": "200h"},
			p("WVA_SCALE_TO_ZERO_RETENTION", `want a duration from 0s to 168h, got "200h"`)},
		{"stabilisation over an hour", map[string]string{"WVA_SCALE_DOWN_STABILIZATION": "2h"},
			p("WVA_SCALE_DOWN_STABILIZATION", `want a duration from 0s to 1h, got "2h"`)},
		{"negative stabilisation", map[string]string{"WVA_SCALE_DOWN_STABILIZATION": "-1s"},
			p("WVA_SCALE_DOWN_STABILIZATION", `want a duration from 0s to 1h, got "-1s"`)},
		{"metrics max age over an hour", map[string]string{"WVA_METRICS_MAX_AGE": "90m"},
			p("WVA_METRICS_MAX_AGE", `want a duration > 0 and at most 1h, got "90m"`)},
		{"negative provisioning time", map[string]string{"WVA_PROVISIONING_TIME": "-2m"},
			p("WVA_PROVISIONING_TIME", `want a duration from 0s to 1h, got "-2m"`)},
		{"transient delay over an hour", map[string]string{"WVA_TRANSIENT_DELAY": "3h"},
			p("WVA_TRANSIENT_DELAY", `want a duration from 0s to 1h, got "3h"`)},
		{"stabilisation not a duration", map[string]string{"WVA_SCALE_DOWN_STABILIZATION": "300"},
			p("WVA_SCALE_DOWN_STABILIZATION", "want a duration such as 5m", `"300"`)},
		{"metrics max age zero", map[string]string{"WVA_METRICS_MAX_AGE": "0s"},
			p("WVA_METRICS_MAX_AGE", "want a duration > 0")},
		{"transient delay", map[string]string{"WVA_TRANSIENT_DELAY": "later"},
			p("WVA_TRANSIENT_DELAY", "want a duration")},
		{"queue size", map[string]string{"WVA_MAX_QUEUE_SIZE": "0"},
			p("WVA_MAX_QUEUE_SIZE", `want a whole number of requests from 1 to 1000000, got "0"`)},
		{"queue size above the engine's limit", map[string]string{"WVA_MAX_QUEUE_SIZE": "100000000"},
			p("WVA_MAX_QUEUE_SIZE", `want a whole number of requests from 1 to 1000000, got "100000000"`)},
		{"default max replicas 0", map[string]string{"WVA_MAX_REPLICAS_DEFAULT": "0"},
			p("WVA_MAX_REPLICAS_DEFAULT", "want a whole number of replicas from 1 to 1048576")},
		{"default max replicas above int32", map[string]string{"WVA_MAX_REPLICAS_DEFAULT": "3000000000"},
			p("WVA_MAX_REPLICAS_DEFAULT", `want a whole number of replicas from 1 to 1048576, got "3000000000"`)},
		{"scale-up factor below 1", map[string]string{"WVA_SCALE_UP_LIMIT_FACTOR": "0.5"},
			p("WVA_SCALE_UP_LIMIT_FACTOR", "want a number from 1 to 1048576, got 0.5")},
		{"scale-up replicas negative", map[string]string{"WVA_SCALE_UP_LIMIT_REPLICAS": "-2"},
			p("WVA_SCALE_UP_LIMIT_REPLICAS", `got "-2"`)},
		{"pod arrival rate Inf", map[string]string{"WVA_MAX_POD_ARRIVAL_RATE": "Inf"},
			p("WVA_MAX_POD_ARRIVAL_RATE", "want a finite number")},
		{"pod arrival rate negative", map[string]string{"WVA_MAX_POD_ARRIVAL_RATE": "-5"},
			p("WVA_MAX_POD_ARRIVAL_RATE", "want a number of requests/s > 0, got -5")},
		{"queue size not an integer", map[string]string{"WVA_MAX_QUEUE_SIZE": "1.5"},
			p("WVA_MAX_QUEUE_SIZE", `got "1.5"`)},
		{"allocation algorithm", map[string]string{"WVA_ALLOCATION_ALGORITHM": "optimal"},
			p("WVA_ALLOCATION_ALGORITHM", "exact, greedy")},
		{"saturation policy", map[string]string{"WVA_SATURATION_POLICY": "none"},
			p("WVA_SATURATION_POLICY", "None, PriorityExhaustive, PriorityRoundRobin, RoundRobin", `"none"`)},
		{"negative penalty", map[string]string{"WVA_ACCELERATOR_PENALTY_FACTOR": "-0.1"},
			p("WVA_ACCELERATOR_PENALTY_FACTOR", "want a number ≥ 0, got -0.1")},
		{"NaN penalty", map[string]string{"WVA_ACCELERATOR_PENALTY_FACTOR": "NaN"},
			p("WVA_ACCELERATOR_PENALTY_FACTOR", "want a finite number, got NaN")},
		{"SLO multiplier 1", map[string]string{"WVA_SLO_MULTIPLIER": "1"},
			p("WVA_SLO_MULTIPLIER", "want a number > 1, got 1")},
		{"spare quantile 1", map[string]string{"WVA_SPARE_QUANTILE": "1"},
			p("WVA_SPARE_QUANTILE", "want a number in (0, 1), got 1")},
		{"surge ratio 0.9", map[string]string{"WVA_SURGE_RATIO": "0.9"},
			p("WVA_SURGE_RATIO", "want a number in [1, 100] (1: no surge), got 0.9")},
		{"capacity model", map[string]string{"WVA_CAPACITY_MODEL": "magic"},
			p("WVA_CAPACITY_MODEL", "queueing, fleet", `"magic"`)},
		{"attainment 1", map[string]string{"WVA_ATTAINMENT": "1"},
			p("WVA_ATTAINMENT", "want a number in (0, 1), got 1")},
		{"token CV 0", map[string]string{"WVA_TOKEN_CV": "0"},
			p("WVA_TOKEN_CV", "want a number in (0, 10]")},
		{"TTFT attainment 1", map[string]string{"WVA_TTFT_ATTAINMENT": "1"},
			p("WVA_TTFT_ATTAINMENT", "want a number in [0, 1)")},
		{"SLO multiplier Inf", map[string]string{"WVA_SLO_MULTIPLIER": "+Inf"},
			p("WVA_SLO_MULTIPLIER", "finite")},
		{"typo with a reserved prefix", map[string]string{"WVA_SCALE_TO_ZER0": "true"},
			p("WVA_SCALE_TO_ZER0", "unknown key; did you mean WVA_SCALE_TO_ZERO?")},
		{"unknown key with a reserved prefix", map[string]string{"PROMETHEUS_SOMETHING_ELSE": "x"},
			p("PROMETHEUS_SOMETHING_ELSE", "unknown key", "docs/configuration.md")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMain(tt.data)
			expectProblems(t, err, MainName, tt.want)
			if !reflect.DeepEqual(m, Main{}) {
				t.Errorf("on error got %+v, want the zero Main", m)
			}
		})
	}
}

// parsers are the Parse functions by ConfigMap name, returning only the
// error.
var parsers = map[string]func(map[string]string) error{
	MainName:           func(d map[string]string) error { _, err := ParseMain(d); return err },
	AcceleratorsName:   func(d map[string]string) error { _, err := ParseAccelerators(d); return err },
	ServiceClassesName: func(d map[string]string) error { _, err := ParseServiceClasses(d); return err },
	SaturationName:     func(d map[string]string) error { _, err := ParseSaturation(d); return err },
	QueueingModelName:  func(d map[string]string) error { _, err := ParseQueueingModel(d); return err },
	TunerName:          func(d map[string]string) error { _, err := ParseTuner(d); return err },
	InventoryName:      func(d map[string]string) error { _, err := ParseInventory(d); return err },
}

// FuzzParsers checks that no input makes a parser panic and that every
// failure is an *Error naming its ConfigMap.
func FuzzParsers(f *testing.F) {
	f.Add("default", "sloMultiplier: 3.0")
	f.Add("H100", `{"name": "H100", "cost": 3}`)
	f.Add("state-constraints", `{"alpha": {"min": 1, "max": 2}}`)
	f.Add("GLOBAL_OPT_INTERVAL", "60s")
	f.Add("m", "model_id: m\nkvCacheThreshold: .nan")
	f.Fuzz(func(t *testing.T, key, value string) {
		for name, parse := range parsers {
			err := parse(map[string]string{key: value})
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.ConfigMap != name || len(e.Problems) == 0) {
				t.Errorf("%s: error %v is not an *Error with problems", name, err)
			}
		}
	})
}

// TestDocExamples parses every ConfigMap example of docs/configuration.md.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```yaml\n")[1:]
	if len(blocks) != 7 {
		t.Errorf("found %d YAML examples, want one per ConfigMap (7)", len(blocks))
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		manifest, _, _ := strings.Cut(b, "```")
		var cm struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(manifest), &cm); err != nil {
			t.Fatalf("example: %v\n%s", err, manifest)
		}
		name := cm.Metadata.Name
		parse, ok := parsers[name]
		if !ok {
			t.Errorf("example names no configuration ConfigMap: %q", name)
			continue
		}
		seen[name] = true
		if err := parse(configMapData(t, manifest)); err != nil {
			t.Errorf("example of %s does not parse:\n%v", name, err)
		}
	}
	if len(seen) != len(parsers) {
		t.Errorf("examples cover %d ConfigMaps, want %d", len(seen), len(parsers))
	}
}

// TestDefaultQueriesParse: the shipped queries pass the PromQL check.
func TestDefaultQueriesParse(t *testing.T) {
	for _, q := range []string{DefaultScaleFromZeroQuery, DefaultGatewayRateQuery, "sum by (namespace, model_name) (my_queue)"} {
		if _, err := ParsePromQL(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, u := range []string{"http://prometheus:9090", "https://prometheus.monitoring.svc:9090/prefix", "https://[::1]:9090", "https://p"} {
		if _, err := ParseURL(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// TestEveryMainKeyDocumented: docs/configuration.md has a row for every
// key of the main ConfigMap.
func TestEveryMainKeyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range sortedKeys(mainKeys) {
		if !strings.Contains(string(doc), "| `"+k+"` |") {
			t.Errorf("docs/configuration.md has no row for %s", k)
		}
	}
}

// TestPromQLBounds: a query is bounded in length and nesting before the
// parser sees it (a 900 KB "up or up or …" took the parser minutes, under
// the configuration's lock); string literals do not count as nesting.
func TestPromQLBounds(t *testing.T) {
	long := strings.Repeat("up or ", 150000) + "up"
	if _, err := ParsePromQL(long); err == nil || !strings.Contains(err.Error(), "at most 16384 bytes, got 900002") {
		t.Errorf("900 KB query: %v", err)
	}
	deep := strings.Repeat("(", 5000) + "up" + strings.Repeat(")", 5000)
	if _, err := ParsePromQL(deep); err == nil || !strings.Contains(err.Error(), "nested at most 64 deep") {
		t.Errorf("deep query: %v", err)
	}
	ok := strings.Repeat("(", 64) + "up" + strings.Repeat(")", 64)
	if _, err := ParsePromQL(ok); err != nil {
		t.Errorf("64 deep: %v", err)
	}
	quoted := `sum by (namespace, model_name) (up{job="` + strings.Repeat("(", 100) + `"})`
	if _, err := ParsePromQL(quoted); err != nil {
		t.Errorf("parentheses in a string: %v", err)
	}
	atLimit := strings.Repeat("up or ", (MaxPromQLBytes-2)/6) + "up"
	if _, err := ParsePromQL(atLimit); err != nil {
		t.Errorf("a %d-byte query: %v", len(atLimit), err)
	}
	if _, err := ParseMain(map[string]string{"WVA_SCALE_FROM_ZERO_QUERY": long}); err == nil || !strings.Contains(err.Error(), "WVA_SCALE_FROM_ZERO_QUERY") {
		t.Errorf("ConfigMap with a 900 KB query: %v", err)
	}
}
