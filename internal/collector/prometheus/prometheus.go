// Package prometheus reads model servers' metrics through the Prometheus
// HTTP API, by the names of a servermetrics.Schema (vLLM's by default):
// per pod, 1-minute rates of the counters (arrivals, tokens, TTFT and ITL
// sums and counts, divided in Go so that an idle pod reads 0, not NaN),
// max_over_time of the KV-cache usage and the queue, the running requests,
// the KV cache's size (vllm:cache_config_info), and the time of the newest
// sample (for staleness).
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/servermetrics"
)

// Config of the source. Zero values take the defaults.
type Config struct {
	// URL of the Prometheus server (required), e.g. http://prometheus:9090.
	URL string
	// Window of the rates and max_over_time (default 1m).
	Window time.Duration
	// Timeout of one query (default 10 s); Retries after a failed query
	// (default 2), Backoff before the first retry, doubling (default 500 ms).
	Timeout time.Duration
	Retries int
	Backoff time.Duration
	// BearerTokenFile is read at every query (tokens rotate). The token is
	// sent only over https:// and only to the host of URL (not across a
	// redirect to another host); BearerTokenOverHTTP allows plain http://
	// too, an explicit opt-in (New refuses a token with an http:// URL
	// without it).
	BearerTokenFile     string
	BearerTokenOverHTTP bool
	// TLS: a CA bundle, a client certificate and key, and — only when set
	// explicitly — no verification of the server's certificate.
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
	// NamespaceLabel and PodLabel name the series labels that identify a
	// pod (defaults "namespace" and "pod"; a Prometheus that scrapes pods
	// whose metrics carry their own namespace label renames the target's
	// to "exported_namespace").
	NamespaceLabel, PodLabel string
	// KeepLabels are further labels to return with each pod, for example
	// the label that names its variant.
	KeepLabels []string
	// Schema names the serving engine's metric names
	// (servermetrics.Lookup; default vllm, which reads vLLM's current and
	// older names alike).
	Schema string
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Retries < 0 {
		c.Retries = 0
	} else if c.Retries == 0 {
		c.Retries = 2
	}
	if c.Backoff <= 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.NamespaceLabel == "" {
		c.NamespaceLabel = "namespace"
	}
	if c.PodLabel == "" {
		c.PodLabel = "pod"
	}
	return c
}

// labelName is a label usable unquoted in a by() clause.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Source reads from one Prometheus server.
type Source struct {
	cfg    Config
	schema servermetrics.Schema
	api    v1.API
}

// New checks the configuration and builds the client; it does not contact
// the server.
func New(cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if cfg.URL == "" {
		return nil, errors.New("prometheus: the URL is required")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus: URL %q: want http:// or https:// and a host", cfg.URL)
	}
	if cfg.BearerTokenFile != "" && u.Scheme == "http" && !cfg.BearerTokenOverHTTP {
		return nil, fmt.Errorf("prometheus: refusing to send the bearer token (%s) in clear text to %s: use an https:// URL, "+
			"or opt in explicitly (wva controller: --prometheus-token-over-http, PROMETHEUS_BEARER_TOKEN_OVER_HTTP=true)", cfg.BearerTokenFile, cfg.URL)
	}
	schema, err := servermetrics.Lookup(cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	for _, l := range append([]string{cfg.NamespaceLabel, cfg.PodLabel}, cfg.KeepLabels...) {
		if !labelName.MatchString(l) {
			return nil, fmt.Errorf("prometheus: %q is not a valid label name", l)
		}
	}
	tr, err := transport(cfg, u)
	if err != nil {
		return nil, err
	}
	client, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: tr})
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	return &Source{cfg: cfg, schema: schema, api: v1.NewAPI(client)}, nil
}

func init() {
	collector.Register("prometheus", func(set map[string]string) (collector.Source, error) {
		cfg := Config{URL: set["url"], BearerTokenFile: set["bearerTokenFile"], CAFile: set["caFile"],
			CertFile: set["certFile"], KeyFile: set["keyFile"], NamespaceLabel: set["namespaceLabel"], PodLabel: set["podLabel"],
			Schema: set["metricsSchema"]}
		for key, dst := range map[string]*bool{"insecureSkipVerify": &cfg.InsecureSkipVerify, "bearerTokenOverHTTP": &cfg.BearerTokenOverHTTP} {
			if v := set[key]; v != "" {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("prometheus: %s: want true or false, got %q", key, v)
				}
				*dst = b
			}
		}
		for key, dst := range map[string]*time.Duration{"window": &cfg.Window, "timeout": &cfg.Timeout} {
			if v := set[key]; v != "" {
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("prometheus: %s: want a positive duration such as 1m, got %q", key, v)
				}
				*dst = d
			}
		}
		if v := set["keepLabels"]; v != "" {
			cfg.KeepLabels = strings.Split(v, ",")
		}
		return New(cfg)
	})
}

// Demand implements collector.DemandSource: it runs query (which must keep
// the namespace label and model_name) and sums the values per target.
// NaN, infinite and negative values are ignored.
func (s *Source) Demand(ctx context.Context, now time.Time, query string) (map[collector.Target]float64, error) {
	v, err := s.query(ctx, query, now)
	if err != nil {
		return nil, fmt.Errorf("prometheus: demand: %w", err)
	}
	out := map[collector.Target]float64{}
	for _, smp := range v {
		t := collector.Target{Namespace: string(smp.Metric[model.LabelName(s.cfg.NamespaceLabel)]), Model: string(smp.Metric["model_name"])}
		x := float64(smp.Value)
		if t.Model == "" || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			continue
		}
		out[t] += x
	}
	return out, nil
}
