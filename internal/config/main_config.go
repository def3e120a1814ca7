package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/llm-d-incubation/wva/internal/engine"
	"github.com/llm-d-incubation/wva/internal/servermetrics"
)

// Defaults of the main ConfigMap.
const (
	DefaultInterval              = 60 * time.Second
	DefaultScaleFromZeroInterval = 2 * time.Second
	DefaultCapacitySource        = "nodes"
	// MinPrometheusWindow is the shortest PROMETHEUS_WINDOW: rate() needs
	// at least two samples at the usual 15 s scrape interval.
	MinPrometheusWindow = 15 * time.Second
	// MaxPrometheusWindow is the longest: a rate over more than an hour
	// says nothing about the current load.
	MaxPrometheusWindow = time.Hour
	// MaxPrometheusTimeout bounds PROMETHEUS_TIMEOUT (and the flag): a
	// query allowed more would hold a cycle for longer than any interval
	// worth running.
	MaxPrometheusTimeout = 5 * time.Minute
	// MinInterval and MaxInterval bound GLOBAL_OPT_INTERVAL (and --interval).
	MinInterval = time.Second
	MaxInterval = time.Hour
	// MinScaleFromZeroInterval and MaxScaleFromZeroInterval bound
	// WVA_SCALE_FROM_ZERO_INTERVAL.
	MinScaleFromZeroInterval = 100 * time.Millisecond
	MaxScaleFromZeroInterval = 10 * time.Minute
	// MaxStabilization bounds WVA_SCALE_DOWN_STABILIZATION (as the HPA's
	// stabilizationWindowSeconds): the engine keeps every cycle's
	// recommendation for the window, so the window bounds that memory.
	MaxStabilization = time.Duration(engine.MaxStabilizationSeconds) * time.Second
	// MaxRetention bounds WVA_SCALE_TO_ZERO_RETENTION (a week).
	MaxRetention = time.Duration(engine.MaxRetentionSeconds) * time.Second
	// MaxEngineDelay bounds WVA_METRICS_MAX_AGE, WVA_TRANSIENT_DELAY and
	// WVA_PROVISIONING_TIME.
	MaxEngineDelay = time.Duration(engine.MaxDelaySeconds) * time.Second
	// DefaultDrainTimeout and MaxDrainTimeout: WVA_DRAIN_TIMEOUT.
	DefaultDrainTimeout = 5 * time.Minute
	MaxDrainTimeout     = time.Hour
)

// DefaultMain returns the main configuration when the ConfigMap is empty.
func DefaultMain() Main {
	return Main{
		Interval:              DefaultInterval,
		Optimizer:             engine.OptimizerUnlimited,
		CapacitySource:        DefaultCapacitySource,
		ScaleFromZeroInterval: DefaultScaleFromZeroInterval,
		ScaleFromZeroQuery:    DefaultScaleFromZeroQuery,
		GatewayRateQuery:      DefaultGatewayRateQuery,
		Drain:                 Drain{Timeout: DefaultDrainTimeout, Method: DrainActivePorts},
	}
}

// ParseMain parses the main ConfigMap (MainName). Absent keys and keys
// with an empty value take their defaults (DefaultMain). Unknown keys are
// problems only when they start with WVA_ or PROMETHEUS_; others are
// ignored, so that a ConfigMap may hold notes.
func ParseMain(data map[string]string) (Main, error) {
	ps := problems{configMap: MainName}
	m := DefaultMain()
	for _, k := range sortedKeys(data) {
		v := strings.TrimSpace(data[k])
		set, known := mainKeys[k]
		switch {
		case !known:
			if strings.HasPrefix(k, "WVA_") || strings.HasPrefix(k, "PROMETHEUS_") {
				ps.unknown(k, sortedKeys(mainKeys))
			}
		case HasValue(data, k):
			ps.check(k, set(&m, v))
		}
	}
	checkClientCert(&ps, m.Prometheus)
	checkBearer(&ps, m.Prometheus)
	if err := ps.err(); err != nil {
		return Main{}, err
	}
	return m, nil
}

// HasValue says whether the ConfigMap sets key: present with a value that
// is not blank. A blank value means the key's default, as if absent.
func HasValue(data map[string]string, key string) bool {
	return strings.TrimSpace(data[key]) != ""
}

// checkClientCert requires the client certificate and key together.
func checkClientCert(ps *problems, p Prometheus) {
	switch {
	case p.CertFile != "" && p.KeyFile == "":
		ps.add("PROMETHEUS_CLIENT_KEY_PATH", "required when PROMETHEUS_CLIENT_CERT_PATH is set (%q)", p.CertFile)
	case p.KeyFile != "" && p.CertFile == "":
		ps.add("PROMETHEUS_CLIENT_CERT_PATH", "required when PROMETHEUS_CLIENT_KEY_PATH is set (%q)", p.KeyFile)
	}
}

// checkBearer refuses a bearer token that would travel in clear text: a
// token file with an http:// URL needs PROMETHEUS_BEARER_TOKEN_OVER_HTTP.
// (The metrics source checks the same for the flags and the ConfigMap
// together.)
func checkBearer(ps *problems, p Prometheus) {
	if p.TokenInClearText() {
		ps.add("PROMETHEUS_BEARER_TOKEN_FILE", "the token would be sent in clear text to %s: use an https:// PROMETHEUS_BASE_URL, "+
			"or set PROMETHEUS_BEARER_TOKEN_OVER_HTTP to true to allow it", p.URL)
	}
}

// TokenInClearText says whether the bearer token would travel unencrypted:
// a token file, an http URL (its scheme read as URL parsing reads it, in
// any case) and no opt-in. The flags, the ConfigMap and the metrics source
// all ask this.
func (p Prometheus) TokenInClearText() bool {
	if p.BearerTokenFile == "" || p.BearerTokenOverHTTP {
		return false
	}
	u, err := url.Parse(p.URL)
	return err == nil && u.Scheme == "http"
}

// setter stores a trimmed, non-empty value in m or says what is wrong.
type setter func(m *Main, v string) error

var mainKeys = map[string]setter{
	"PROMETHEUS_BASE_URL": func(m *Main, v string) (err error) {
		m.Prometheus.URL, err = ParseURL(v)
		return err
	},
	"PROMETHEUS_BEARER_TOKEN_OVER_HTTP": func(m *Main, v string) (err error) {
		m.Prometheus.BearerTokenOverHTTP, err = parseBool(v)
		return err
	},
	"PROMETHEUS_TLS_INSECURE_SKIP_VERIFY": func(m *Main, v string) (err error) {
		m.Prometheus.InsecureSkipVerify, err = parseBool(v)
		return err
	},
	"PROMETHEUS_CA_CERT_PATH":      func(m *Main, v string) error { m.Prometheus.CAFile = v; return nil },
	"PROMETHEUS_CLIENT_CERT_PATH":  func(m *Main, v string) error { m.Prometheus.CertFile = v; return nil },
	"PROMETHEUS_CLIENT_KEY_PATH":   func(m *Main, v string) error { m.Prometheus.KeyFile = v; return nil },
	"PROMETHEUS_BEARER_TOKEN_FILE": func(m *Main, v string) error { m.Prometheus.BearerTokenFile = v; return nil },
	"PROMETHEUS_TIMEOUT": func(m *Main, v string) (err error) {
		m.Prometheus.Timeout, err = parseDurationIn(v, 1, MaxPrometheusTimeout, "10s")
		return err
	},
	"PROMETHEUS_WINDOW": func(m *Main, v string) (err error) {
		m.Prometheus.Window, err = parseDurationIn(v, MinPrometheusWindow, MaxPrometheusWindow, "1m")
		return err
	},
	"PROMETHEUS_NAMESPACE_LABEL": func(m *Main, v string) (err error) {
		m.Prometheus.NamespaceLabel, err = parseLabel(v)
		return err
	},
	"PROMETHEUS_POD_LABEL": func(m *Main, v string) (err error) {
		m.Prometheus.PodLabel, err = parseLabel(v)
		return err
	},
	"PROMETHEUS_METRICS_SCHEMA": func(m *Main, v string) error {
		if _, err := servermetrics.Lookup(v); err != nil {
			return err
		}
		m.Prometheus.MetricsSchema = v
		return nil
	},
	"GLOBAL_OPT_INTERVAL": func(m *Main, v string) (err error) {
		m.Interval, err = parseDurationIn(v, MinInterval, MaxInterval, "60s")
		return err
	},
	"WVA_SCALE_TO_ZERO": func(m *Main, v string) (err error) {
		m.ScaleToZero, err = parseBool(v)
		return err
	},
	"WVA_MODE":                     setMode,
	"WVA_OPTIMIZER":                setOptimizer,
	"WVA_CAPACITY_SOURCE":          setCapacitySource,
	"WVA_SCALE_FROM_ZERO_INTERVAL": setScaleFromZeroInterval,
	"WVA_SCALE_FROM_ZERO_QUERY": func(m *Main, v string) (err error) {
		m.ScaleFromZeroQuery, err = ParsePromQL(v)
		return err
	},
	"WVA_GATEWAY_RATE_QUERY": func(m *Main, v string) (err error) {
		if v == GatewayRateQueryOff {
			m.GatewayRateQuery = v
			return nil
		}
		m.GatewayRateQuery, err = ParsePromQL(v)
		if err != nil {
			err = fmt.Errorf("%w (or %q to disable the query)", err, GatewayRateQueryOff)
		}
		return err
	},
	"WVA_DRAIN_TIMEOUT": func(m *Main, v string) (err error) {
		if v == "0" {
			m.Drain.Timeout = 0
			return nil
		}
		m.Drain.Timeout, err = parseDurationIn(v, 0, MaxDrainTimeout, "5m (0 turns draining off)")
		return err
	},
	"WVA_DRAIN_METHOD": setDrainMethod,
	"WVA_SURGE": func(m *Main, v string) (err error) {
		m.Surge, err = parseBool(v)
		return err
	},
	"WVA_POD_VARIANT_LABEL": func(m *Main, v string) (err error) {
		m.PodVariantLabel, err = parseLabel(v)
		return err
	},
	"WVA_SCALE_TO_ZERO_RETENTION": func(m *Main, v string) (err error) {
		m.Engine.ScaleToZeroRetentionSeconds, err = parseSeconds(v, MaxRetention, "10m")
		return err
	},
	"WVA_SCALE_DOWN_STABILIZATION": func(m *Main, v string) (err error) {
		m.Engine.ScaleDownStabilizationSeconds, err = parseSeconds(v, MaxStabilization, "5m")
		return err
	},
	"WVA_METRICS_MAX_AGE": setMetricsMaxAge,
	"WVA_TRANSIENT_DELAY": func(m *Main, v string) (err error) {
		m.Engine.TransientDelaySeconds, err = parseSeconds(v, MaxEngineDelay, "2m")
		return err
	},
	"WVA_MAX_QUEUE_SIZE": func(m *Main, v string) (err error) {
		m.Engine.MaxQueueSize, err = parseCount(v, 1, engine.MaxQueueSizeLimit, "requests")
		return err
	},
	"WVA_MAX_REPLICAS_DEFAULT": func(m *Main, v string) (err error) {
		m.Engine.MaxReplicasDefault, err = parseCount(v, 1, engine.MaxReplicaCount, "replicas")
		return err
	},
	"WVA_SCALE_UP_LIMIT_FACTOR": func(m *Main, v string) (err error) {
		m.Engine.ScaleUpLimitFactor, err = parseFloat(v, rule{fmt.Sprintf("a number from 1 to %d", engine.MaxReplicaCount),
			func(x float64) bool { return x >= 1 && x <= engine.MaxReplicaCount }})
		return err
	},
	"WVA_SCALE_UP_LIMIT_REPLICAS": func(m *Main, v string) (err error) {
		m.Engine.ScaleUpLimitReplicas, err = parseCount(v, 1, engine.MaxReplicaCount, "replicas")
		return err
	},
	"WVA_MAX_POD_ARRIVAL_RATE": func(m *Main, v string) (err error) {
		m.Engine.MaxPodArrivalRPS, err = parseFloat(v, rule{"a number of requests/s > 0", func(x float64) bool { return x > 0 }})
		return err
	},
	"WVA_ALLOCATION_ALGORITHM": func(m *Main, v string) (err error) {
		m.Engine.AllocationAlgorithm, err = oneOf(v, "exact", "greedy")
		return err
	},
	"WVA_SATURATION_POLICY": func(m *Main, v string) (err error) {
		m.Engine.SaturationPolicy, err = oneOf(v, "None", "PriorityExhaustive", "PriorityRoundRobin", "RoundRobin")
		return err
	},
	"WVA_ACCELERATOR_PENALTY_FACTOR": func(m *Main, v string) error {
		x, err := parseFloat(v, nonNegative)
		m.Engine.AcceleratorPenaltyFactor = orExplicitZero(x)
		return err
	},
	"WVA_SLO_MULTIPLIER": func(m *Main, v string) (err error) {
		m.Engine.SLOMultiplier, err = parseFloat(v, above(1))
		return err
	},
	"WVA_SPARE_QUANTILE": func(m *Main, v string) (err error) {
		m.Engine.SpareQuantile, err = parseFloat(v, fraction(false))
		return err
	},
	"WVA_SURGE_RATIO": func(m *Main, v string) (err error) {
		m.Engine.SurgeRatio, err = parseFloat(v, surgeRatioRule)
		return err
	},
	"WVA_FORECAST": func(m *Main, v string) error {
		on, err := parseBool(v)
		m.Engine.DisableForecast = !on
		return err
	},
	"WVA_ATTAINMENT_FEEDBACK": func(m *Main, v string) error {
		on, err := parseBool(v)
		m.Engine.DisableFeedback = !on
		return err
	},
	"WVA_PROVISIONING_TIME": func(m *Main, v string) (err error) {
		m.Engine.ProvisioningSeconds, err = parseSeconds(v, MaxEngineDelay, "2m")
		return err
	},
	"WVA_CAPACITY_MODEL": func(m *Main, v string) error {
		s, err := oneOf(v, engine.CapacityQueueing, engine.CapacityFleet)
		m.Engine.CapacityModel = s
		return err
	},
	"WVA_ATTAINMENT": func(m *Main, v string) (err error) {
		m.Engine.Attainment, err = parseFloat(v, fraction(false))
		return err
	},
	"WVA_TOKEN_CV": func(m *Main, v string) (err error) {
		m.Engine.TokenCV, err = parseFloat(v, rule{"a number in (0, 10]", func(x float64) bool { return x > 0 && x <= 10 }})
		return err
	},
	"WVA_TTFT_ATTAINMENT": func(m *Main, v string) error {
		x, err := parseFloat(v, rule{"a number in [0, 1) (0 sizes for the mean TTFT)", func(x float64) bool { return x >= 0 && x < 1 }})
		m.Engine.TTFTAttainment = x
		return err
	},
}

func setMode(m *Main, v string) error {
	s, err := oneOf(v, string(engine.ModeCapacityOnly), string(engine.ModeModelOnly), string(engine.ModeHybrid))
	m.Mode = engine.Mode(s)
	return err
}

func setOptimizer(m *Main, v string) error {
	s, err := oneOf(v, string(engine.OptimizerUnlimited), string(engine.OptimizerLimited))
	m.Optimizer = engine.OptimizerKind(s)
	return err
}

func setCapacitySource(m *Main, v string) (err error) {
	m.CapacitySource, err = oneOf(v, "nodes", "configmap")
	return err
}

func setScaleFromZeroInterval(m *Main, v string) (err error) {
	m.ScaleFromZeroInterval, err = parseDurationIn(v, MinScaleFromZeroInterval, MaxScaleFromZeroInterval, "2s")
	return err
}

// setMetricsMaxAge wants a duration > 0: with 0 every sample would be
// stale (and engine.Config reads 0 as its default, 180 s).
func setMetricsMaxAge(m *Main, v string) error {
	d, err := parseDurationIn(v, 1, MaxEngineDelay, "3m")
	m.Engine.MetricsMaxAgeSeconds = d.Seconds()
	return err
}

// ParseURL checks a Prometheus URL: http:// or https://, a host, a port
// (if any) from 1 to 65535, no user name or password (they would be
// logged; use PROMETHEUS_BEARER_TOKEN_FILE), no query or fragment.
func ParseURL(v string) (string, error) {
	const example = "https://prometheus.monitoring.svc:9090"
	u, err := url.Parse(v)
	if err != nil || !isHTTPURL(u) {
		shown := v
		if err == nil && u.User != nil {
			shown = u.Redacted()
		}
		return "", fmt.Errorf("want an http:// or https:// URL such as %s, got %q", example, shown)
	}
	if u.User != nil {
		return "", fmt.Errorf("want no user name or password in the URL (they would be logged; use a bearer token file), got %q", u.Redacted())
	}
	if err := checkPort(u.Port(), v); err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(v, "?") || strings.HasSuffix(v, "#") {
		return "", fmt.Errorf("want no query or fragment in the URL, such as %s, got %q", example, v)
	}
	return v, nil
}

// isHTTPURL: an http or https scheme and a host name.
func isHTTPURL(u *url.URL) bool {
	return slices.Contains([]string{"http", "https"}, u.Scheme) && u.Host != "" && u.Hostname() != "" && u.Opaque == ""
}

// checkPort checks the port p of the URL v, if any: 1 to 65535.
func checkPort(p, v string) error {
	if p == "" {
		return nil
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want a port from 1 to 65535, got %q in %q", p, v)
	}
	return nil
}

// ParsePromQL checks a query with the Prometheus parser: it must parse and
// return an instant vector (series labelled by namespace and model_name).
func ParsePromQL(v string) (string, error) {
	if len(v) > MaxPromQLBytes {
		return "", fmt.Errorf("want a PromQL query of at most %d bytes, got %d", MaxPromQLBytes, len(v))
	}
	if d := nesting(v); d > MaxPromQLDepth {
		return "", fmt.Errorf("want a PromQL query nested at most %d deep (parentheses, brackets and braces), got %d", MaxPromQLDepth, d)
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(v)
	if err != nil {
		return "", fmt.Errorf("want a PromQL query: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	if t := expr.Type(); t != parser.ValueTypeVector {
		return "", fmt.Errorf("want a PromQL query returning an instant vector (series by namespace and model_name), got a %s: %q", t, v)
	}
	return v, nil
}

// MaxPromQLBytes and MaxPromQLDepth bound a query before it is parsed: the
// parser's time grows faster than linearly with the operators of a query
// and with its nesting (a 900 KB "up or up or …" took minutes). The
// shipped queries are under 200 bytes and 3 deep.
const (
	MaxPromQLBytes = 16 << 10
	MaxPromQLDepth = 64
)

// nesting is the deepest nesting of parentheses, brackets and braces in a
// query, outside its string literals ('…', "…" with backslash escapes,
// `…` raw).
func nesting(q string) int {
	depth, most := 0, 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
			most = max(most, depth)
		case c == ')' || c == ']' || c == '}':
			depth--
		}
	}
	return most
}

// setDrainMethod reads WVA_DRAIN_METHOD: "active-ports" or "label:KEY",
// KEY a label name.
func setDrainMethod(m *Main, v string) error {
	if v == DrainActivePorts {
		m.Drain.Method, m.Drain.Label = v, ""
		return nil
	}
	key, ok := strings.CutPrefix(v, DrainLabel+":")
	if !ok {
		return fmt.Errorf("want %q or %q with the label the InferencePool selects pods by, got %q", DrainActivePorts, DrainLabel+":KEY", v)
	}
	key = strings.TrimSpace(key)
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("%q is not a Kubernetes label key: %s", key, strings.Join(errs, "; "))
	}
	m.Drain.Method, m.Drain.Label = DrainLabel, key
	return nil
}
