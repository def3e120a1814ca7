// Package prometheus reads vLLM metrics through the Prometheus HTTP API:
// per pod, 1-minute rates of vLLM's counters (arrivals, tokens, TTFT and
// ITL sums and counts, divided in Go so that an idle pod reads 0, not
// NaN), max_over_time of the KV-cache usage and the queue, the running
// requests, the KV-cache geometry from vllm:cache_config_info, and the time
// of the newest sample (for staleness).
package prometheus

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/llm-d-incubation/wva/internal/collector"
	"github.com/llm-d-incubation/wva/internal/engine"
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
	cfg Config
	api v1.API
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
	return &Source{cfg: cfg, api: v1.NewAPI(client)}, nil
}

// transport is the client side of TLS and the bearer token; u is cfg.URL
// as New parsed it (read only with a token).
func transport(cfg Config, u *url.URL) (http.RoundTripper, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // an explicit opt-in
	if cfg.CAFile != "" {
		ca := &caFile{path: cfg.CAFile}
		if _, err := ca.pool(); err != nil {
			return nil, err
		}
		if !cfg.InsecureSkipVerify {
			// The CA bundle is re-read when it changes (cert-manager rotates
			// it), so Go's built-in verification, which takes a fixed pool,
			// is replaced by the same check against the current pool.
			tc.InsecureSkipVerify = true // verified in VerifyConnection
			tc.VerifyConnection = ca.verify
		}
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("prometheus: a client certificate needs both the certificate and the key file")
	}
	if cfg.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile); err != nil {
			return nil, fmt.Errorf("prometheus: client certificate: %w", err)
		}
		// Read at every handshake, so a rotated certificate is used
		// without a restart.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("prometheus: client certificate: %w", err)
			}
			return &cert, nil
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tc
	if cfg.BearerTokenFile == "" {
		return base, nil
	}
	if _, err := os.ReadFile(cfg.BearerTokenFile); err != nil {
		return nil, fmt.Errorf("prometheus: bearer token file: %w", err)
	}
	return &bearer{file: cfg.BearerTokenFile, origin: origin(u), overHTTP: cfg.BearerTokenOverHTTP, next: base}, nil
}

// caFile is a CA bundle re-read when its content changes.
type caFile struct {
	path string
	mu   sync.Mutex
	pem  []byte
	p    *x509.CertPool
}

func (c *caFile) pool() (*x509.CertPool, error) {
	pem, err := os.ReadFile(c.path)
	if err != nil {
		return nil, fmt.Errorf("prometheus: CA file: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil && bytes.Equal(pem, c.pem) {
		return c.p, nil
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("prometheus: CA file %s holds no PEM certificate", c.path)
	}
	c.pem, c.p = pem, p
	return p, nil
}

// verify checks the server's chain and name against the current bundle,
// as crypto/tls does when it verifies.
func (c *caFile) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("prometheus: the server sent no certificate")
	}
	roots, err := c.pool()
	if err != nil {
		return err
	}
	opts := x509.VerifyOptions{DNSName: cs.ServerName, Roots: roots, Intermediates: x509.NewCertPool()}
	for _, ic := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(ic)
	}
	_, err = cs.PeerCertificates[0].Verify(opts)
	return err
}

// bearer adds the token from its file to the requests to the configured
// server: same host and port, over https (or http with overHTTP). The
// http.Client sends a redirect's request through the same RoundTripper, so
// a Prometheus (or anything between) that redirects to another host, or
// down to http, does not get the token.
type bearer struct {
	file     string
	origin   string // host:port of the configured URL, lower case
	overHTTP bool
	next     http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if !b.sendsTo(r.URL) {
		return b.next.RoundTrip(r)
	}
	tok, err := os.ReadFile(b.file)
	if err != nil {
		return nil, fmt.Errorf("bearer token file: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	return b.next.RoundTrip(r)
}

// sendsTo says whether a request to u gets the token.
func (b *bearer) sendsTo(u *url.URL) bool {
	switch u.Scheme {
	case "https":
	case "http":
		if !b.overHTTP {
			return false
		}
	default:
		return false
	}
	return origin(u) == b.origin
}

// origin is u's host and port (the scheme's default when absent), lower
// case: https://Prom and https://prom:443 are one server.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// podKey identifies a pod's series.
type podKey struct{ ns, pod string }

// The queries: what each reads and how the by() clause groups it.
const (
	qArrivals   = "arrivals"
	qPromptSum  = "promptSum"
	qPromptCnt  = "promptCount"
	qGenSum     = "genSum"
	qGenCnt     = "genCount"
	qTTFTSum    = "ttftSum"
	qTTFTCnt    = "ttftCount"
	qITLSum     = "itlSum"
	qITLCnt     = "itlCount"
	qKV         = "kv"
	qWaiting    = "waiting"
	qRunning    = "running"
	qSampled    = "sampled"
	qSamples    = "samples"
	qCacheBlock = "cache"
)

func (s *Source) queries(t collector.Target) map[string]string {
	sel := fmt.Sprintf(`{%s=%q,model_name=%q}`, s.cfg.NamespaceLabel, t.Namespace, t.Model)
	by := s.by("")
	w := model.Duration(s.cfg.Window).String()
	rate := func(m string) string { return fmt.Sprintf("sum %s (rate(%s%s[%s]))", by, m, sel, w) }
	return map[string]string{
		qArrivals:  rate("vllm:request_success_total"),
		qPromptSum: rate("vllm:request_prompt_tokens_sum"),
		qPromptCnt: rate("vllm:request_prompt_tokens_count"),
		qGenSum:    rate("vllm:request_generation_tokens_sum"),
		qGenCnt:    rate("vllm:request_generation_tokens_count"),
		qTTFTSum:   rate("vllm:time_to_first_token_seconds_sum"),
		qTTFTCnt:   rate("vllm:time_to_first_token_seconds_count"),
		qITLSum:    rate("vllm:time_per_output_token_seconds_sum"),
		qITLCnt:    rate("vllm:time_per_output_token_seconds_count"),
		qKV:        fmt.Sprintf("max %s (max_over_time(vllm:kv_cache_usage_perc%s[%s]))", by, sel, w),
		qWaiting:   fmt.Sprintf("max %s (max_over_time(vllm:num_requests_waiting%s[%s]))", by, sel, w),
		qRunning:   fmt.Sprintf("max %s (vllm:num_requests_running%s)", by, sel),
		qSampled:   fmt.Sprintf("max %s (timestamp(vllm:num_requests_waiting%s))", by, sel),
		// How many scrapes of the pod fall in the window: with two or more,
		// a rate that is absent means the counter is, not that the pod is
		// too new to have one.
		qSamples: fmt.Sprintf("max %s (count_over_time(vllm:num_requests_waiting%s[%s]))", by, sel, w),
		// vLLM's cache_config_info has no model_name label: read the
		// namespace's and keep the pods the other queries found.
		qCacheBlock: fmt.Sprintf("max %s (vllm:cache_config_info{%s=%q})", s.by("num_gpu_blocks,block_size"), s.cfg.NamespaceLabel, t.Namespace),
	}
}

func (s *Source) by(extra string) string {
	labels := append([]string{s.cfg.NamespaceLabel, s.cfg.PodLabel}, s.cfg.KeepLabels...)
	if extra != "" {
		labels = append(labels, extra)
	}
	return "by (" + strings.Join(labels, ",") + ")"
}

// Collect implements collector.Source.
func (s *Source) Collect(ctx context.Context, now time.Time, t collector.Target) (collector.Report, error) {
	rep := collector.Report{Target: t, Time: now}
	qs := s.queries(t)
	names := make([]string, 0, len(qs))
	for n := range qs {
		names = append(names, n)
	}
	sort.Strings(names)
	// The cache geometry last: it only annotates pods found by the others.
	names = append(slices.DeleteFunc(names, func(n string) bool { return n == qCacheBlock }), qCacheBlock)
	res := map[string]model.Vector{}
	for _, n := range names {
		v, err := s.query(ctx, qs[n], now)
		if err != nil {
			return rep, fmt.Errorf("prometheus: %s: %w", t, err)
		}
		res[n] = v
	}
	pods := map[podKey]*collector.PodMetrics{}
	val := map[podKey]map[string]float64{}
	for _, n := range names {
		for _, smp := range res[n] {
			k := podKey{string(smp.Metric[model.LabelName(s.cfg.NamespaceLabel)]), string(smp.Metric[model.LabelName(s.cfg.PodLabel)])}
			if k.pod == "" {
				continue
			}
			pm, ok := pods[k]
			if !ok && n == qCacheBlock {
				continue // a pod of another model
			}
			if !ok {
				pm = &collector.PodMetrics{Namespace: k.ns, Pod: engine.Pod{Name: k.pod}, Labels: map[string]string{}}
				pods[k] = pm
				val[k] = map[string]float64{}
			}
			for _, l := range s.cfg.KeepLabels {
				if v, ok := smp.Metric[model.LabelName(l)]; ok {
					pm.Labels[l] = string(v)
				}
			}
			val[k][n] = float64(smp.Value)
			if n == qCacheBlock {
				pm.Pod.KVBlocks, _ = strconv.Atoi(string(smp.Metric["num_gpu_blocks"]))
				pm.Pod.BlockSize, _ = strconv.Atoi(string(smp.Metric["block_size"]))
			}
		}
	}
	keys := make([]podKey, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ns+"/"+keys[i].pod < keys[j].ns+"/"+keys[j].pod })
	for _, k := range keys {
		pm := pods[k]
		rep.Problems = append(rep.Problems, fill(&pm.Pod, val[k])...)
		rep.Pods = append(rep.Pods, *pm)
	}
	if len(rep.Pods) == 0 {
		rep.Problems = append(rep.Problems, collector.NoPods(t))
	}
	return rep, nil
}

// counters are the rates the engine needs, each as sum and count (the
// arrival rate alone); a pod that lacks one is Missing, not idle.
var counters = []struct{ name, sum, count string }{
	{"vllm:request_success_total", qArrivals, qArrivals},
	{"vllm:request_prompt_tokens", qPromptSum, qPromptCnt},
	{"vllm:request_generation_tokens", qGenSum, qGenCnt},
	{"vllm:time_to_first_token_seconds", qTTFTSum, qTTFTCnt},
	{"vllm:time_per_output_token_seconds", qITLSum, qITLCnt},
}

// fill sets a pod's record from its query values and returns its problems.
//
// A rate needs two samples in the window, so a pod scraped once has none
// yet: it reads as idle, with a problem saying why. A pod scraped twice or
// more that still lacks a counter's rate does not export it, and its zero
// would be a lie (a saturated pod reading 0 rps looks idle): it is
// Missing, which holds its variant.
func fill(p *engine.Pod, v map[string]float64) []collector.Problem {
	var problems []collector.Problem
	missing := func(metric, format string, args ...any) {
		problems = append(problems, collector.Problem{Pod: p.Name, Metric: metric, Kind: engine.HoldMissing, Detail: fmt.Sprintf(format, args...)})
	}
	ratio := func(sum, cnt string, scale float64) float64 {
		c, okC := v[cnt]
		s, okS := v[sum]
		if !okC || !okS || c == 0 {
			return 0 // no requests in the window (or not two samples yet)
		}
		return scale * s / c
	}
	p.ArrivalRateRPS = v[qArrivals]
	p.AvgInputTokens = ratio(qPromptSum, qPromptCnt, 1)
	p.AvgOutputTokens = ratio(qGenSum, qGenCnt, 1)
	p.AvgTTFTMs = ratio(qTTFTSum, qTTFTCnt, 1000)
	p.AvgITLMs = ratio(qITLSum, qITLCnt, 1000)
	p.RunningRequests = v[qRunning]
	kv, okKV := v[qKV]
	wq, okW := v[qWaiting]
	switch {
	case !okKV || !okW:
		p.Missing = true
		missing("vllm:kv_cache_usage_perc", "missing vllm:kv_cache_usage_perc or vllm:num_requests_waiting")
	default:
		p.KVCacheUsage, p.WaitingRequests = kv, wq
	}
	var absent []string
	for _, c := range counters {
		_, okS := v[c.sum]
		_, okC := v[c.count]
		if !okS || !okC {
			absent = append(absent, c.name)
		}
	}
	switch {
	case len(absent) == 0 || p.Missing:
	case v[qSamples] >= 2:
		p.Missing = true
		missing(absent[0], "missing %s (scraped %g times in the window, so not too new for a rate)", strings.Join(absent, ", "), v[qSamples])
	case slices.Contains(absent, counters[0].name):
		// A new pod: it reads idle, and the problem is only information
		// (the pod is not Missing, nothing holds).
		problems = append(problems, collector.Problem{Pod: p.Name, Metric: counters[0].name, Kind: "",
			Detail: "no request rate yet (fewer than two samples in the window)"})
	}
	if ts, ok := v[qSampled]; ok {
		sec, frac := math.Modf(ts)
		p.SampledAt = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	}
	problems = append(problems, collector.InvalidPod(p)...)
	collector.SortProblems(problems)
	return problems
}

// query runs an instant query with the timeout, retrying with backoff.
func (s *Source) query(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	wait := s.cfg.Backoff
	var last error
	for attempt := 0; attempt <= s.cfg.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			wait *= 2
		}
		qctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		val, _, err := s.api.Query(qctx, q, at)
		cancel()
		if err == nil {
			vec, ok := val.(model.Vector)
			if !ok {
				return nil, fmt.Errorf("query %s: want a vector, got %s", q, val.Type())
			}
			return vec, nil
		}
		last = err
		var perr *v1.Error
		if errors.As(err, &perr) && perr.Type == v1.ErrBadData {
			return nil, fmt.Errorf("query %s: %w", q, err) // a bad query does not get better
		}
	}
	return nil, fmt.Errorf("after %d attempts: %w", s.cfg.Retries+1, last)
}

func init() {
	collector.Register("prometheus", func(set map[string]string) (collector.Source, error) {
		cfg := Config{URL: set["url"], BearerTokenFile: set["bearerTokenFile"], CAFile: set["caFile"],
			CertFile: set["certFile"], KeyFile: set["keyFile"], NamespaceLabel: set["namespaceLabel"], PodLabel: set["podLabel"]}
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
