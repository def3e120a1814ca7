package config

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/llm-d-incubation/wva/internal/engine"
)

// Defaults of the main ConfigMap.
const (
	DefaultInterval              = 60 * time.Second
	DefaultScaleFromZeroInterval = 2 * time.Second
	DefaultCapacitySource        = "nodes"
	// MinPrometheusWindow is the shortest PROMETHEUS_WINDOW: rate() needs
	// at least two samples at the usual 15 s scrape interval.
	MinPrometheusWindow = 15 * time.Second
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

// setter stores a trimmed, non-empty value in m or says what is wrong.
type setter func(m *Main, v string) error

var mainKeys = map[string]setter{
	"PROMETHEUS_BASE_URL": func(m *Main, v string) (err error) {
		m.Prometheus.URL, err = parseURL(v)
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
		m.Prometheus.Timeout, err = parsePositiveDuration(v, "10s")
		return err
	},
	"PROMETHEUS_WINDOW": func(m *Main, v string) (err error) {
		m.Prometheus.Window, err = parseDuration(v, MinPrometheusWindow, "1m")
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
	"GLOBAL_OPT_INTERVAL": func(m *Main, v string) (err error) {
		m.Interval, err = parseDuration(v, time.Second, "60s")
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
	"WVA_SCALE_FROM_ZERO_QUERY":    func(m *Main, v string) error { m.ScaleFromZeroQuery = v; return nil },
	"WVA_GATEWAY_RATE_QUERY":       func(m *Main, v string) error { m.GatewayRateQuery = v; return nil },
	"WVA_SURGE": func(m *Main, v string) (err error) {
		m.Surge, err = parseBool(v)
		return err
	},
	"WVA_POD_VARIANT_LABEL": func(m *Main, v string) (err error) {
		m.PodVariantLabel, err = parseLabel(v)
		return err
	},
	"WVA_SCALE_TO_ZERO_RETENTION": func(m *Main, v string) (err error) {
		m.Engine.ScaleToZeroRetentionSeconds, err = parseSeconds(v, "10m")
		return err
	},
	"WVA_SCALE_DOWN_STABILIZATION": func(m *Main, v string) (err error) {
		m.Engine.ScaleDownStabilizationSeconds, err = parseSeconds(v, "5m")
		return err
	},
	"WVA_METRICS_MAX_AGE": setMetricsMaxAge,
	"WVA_TRANSIENT_DELAY": func(m *Main, v string) (err error) {
		m.Engine.TransientDelaySeconds, err = parseSeconds(v, "2m")
		return err
	},
	"WVA_MAX_QUEUE_SIZE": func(m *Main, v string) (err error) {
		m.Engine.MaxQueueSize, err = parseIntIn(v, 1, engine.MaxQueueSizeLimit)
		return err
	},
	"WVA_MAX_REPLICAS_DEFAULT": func(m *Main, v string) (err error) {
		m.Engine.MaxReplicasDefault, err = parseIntIn(v, 1, math.MaxInt32)
		return err
	},
	"WVA_SCALE_UP_LIMIT_FACTOR": func(m *Main, v string) (err error) {
		m.Engine.ScaleUpLimitFactor, err = parseFloat(v, rule{"a number ≥ 1", func(x float64) bool { return x >= 1 }})
		return err
	},
	"WVA_SCALE_UP_LIMIT_REPLICAS": func(m *Main, v string) (err error) {
		m.Engine.ScaleUpLimitReplicas, err = parseIntIn(v, 1, math.MaxInt32)
		return err
	},
	"WVA_MAX_POD_ARRIVAL_RATE": func(m *Main, v string) (err error) {
		m.Engine.MaxPodArrivalRPS, err = parseFloat(v, above(0))
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
	"WVA_FORECAST": func(m *Main, v string) error {
		on, err := parseBool(v)
		m.Engine.DisableForecast = !on
		return err
	},
	"WVA_PROVISIONING_TIME": func(m *Main, v string) (err error) {
		m.Engine.ProvisioningSeconds, err = parseSeconds(v, "2m")
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
	m.ScaleFromZeroInterval, err = parseDuration(v, 100*time.Millisecond, "2s")
	return err
}

// setMetricsMaxAge wants a duration > 0: with 0 every sample would be
// stale (and engine.Config reads 0 as its default, 180 s).
func setMetricsMaxAge(m *Main, v string) error {
	d, err := parsePositiveDuration(v, "3m")
	m.Engine.MetricsMaxAgeSeconds = d.Seconds()
	return err
}

// parseURL checks an http:// or https:// URL with a host.
func parseURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || !slices.Contains([]string{"http", "https"}, u.Scheme) || u.Host == "" {
		return "", fmt.Errorf("want an http:// or https:// URL such as https://prometheus.monitoring.svc:9090, got %q", v)
	}
	return v, nil
}
