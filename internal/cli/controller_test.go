package cli

import (
	"strings"
	"testing"
)

// The controller command validates its flags and their environment
// fallbacks before it touches a cluster.
func TestControllerOptions(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{args: []string{"--metrics-source", "kafka"}, want: []string{`--metrics-source: want prometheus or file, got "kafka"`}},
		{args: []string{"--metrics-source", "file"}, want: []string{"--metrics-file is required"}},
		{env: map[string]string{"GLOBAL_OPT_INTERVAL": "10ms"}, want: []string{"--interval ($GLOBAL_OPT_INTERVAL): want a duration from 1s to 1h, got 10ms"}},
		{args: []string{"--interval", "2h"}, want: []string{"--interval: want a duration from 1s to 1h, got 2h0m0s"}},
		{env: map[string]string{"GLOBAL_OPT_INTERVAL": "10ms"}, args: []string{"--interval", "30s", "--log-level", "loud"}, want: []string{`--log-level: want info or debug, got "loud"`}},
		// Every problem at once, flags and logging alike.
		{args: []string{"--log-format", "xml", "--prometheus-url", "ftp://x"}, want: []string{`--log-format: want json or text, got "xml"`, `--prometheus-url: want an http:// or https:// URL`}},
		{args: []string{"--prometheus-url", "ftp://x"}, want: []string{`--prometheus-url: want an http:// or https:// URL such as https://prometheus.monitoring.svc:9090, got "ftp://x"`}},
		{args: []string{"--prometheus-url", "https://prometheus:99999"}, want: []string{`--prometheus-url: want a port from 1 to 65535, got "99999"`}},
		{args: []string{"--prometheus-url", "https://admin:hunter2@prometheus"}, want: []string{`--prometheus-url: want no user name or password in the URL`, `"https://admin:xxxxx@prometheus"`}},
		{args: []string{"--prometheus-timeout", "-5s"}, want: []string{"--prometheus-timeout: want a duration from 0 (the default, 10s) to 5m, got -5s"}},
		{env: map[string]string{"PROMETHEUS_TIMEOUT": "1h"}, want: []string{"--prometheus-timeout ($PROMETHEUS_TIMEOUT): want a duration from 0 (the default, 10s) to 5m, got 1h0m0s"}},
		{args: []string{"--prometheus-url", "http://prometheus:9090", "--prometheus-token-file", "/var/run/token"},
			want: []string{"--prometheus-token-file: the token would be sent in clear text to http://prometheus:9090: use an https:// --prometheus-url, or --prometheus-token-over-http to allow it"}},
		{args: []string{"--prometheus-cert-file", "tls.crt"}, want: []string{"--prometheus-key-file is required with --prometheus-cert-file"}},
		{args: []string{"--metrics-bind-address", ":99999"}, want: []string{`--metrics-bind-address: want a port from 0 to 65535, got "99999" in ":99999"`}},
		{env: map[string]string{"METRICS_BIND_ADDRESS": "8443"}, want: []string{`--metrics-bind-address ($METRICS_BIND_ADDRESS): want host:port such as :8443 or 127.0.0.1:8443 (0 disables), got "8443"`}},
		{args: []string{"--health-probe-bind-address", "localhost"}, want: []string{`--health-probe-bind-address: want host:port such as :8443 or 127.0.0.1:8443 (0 disables), got "localhost"`}},
		{args: []string{"--health-probe-bind-address", "bad_host!:8081"}, want: []string{`--health-probe-bind-address: want an IP address or a host name before the port, got "bad_host!"`}},
		{args: []string{"--health-probe-bind-address", ":-1"}, want: []string{`--health-probe-bind-address: want a port from 0 to 65535, got "-1"`}},
		{args: []string{"--metrics-bind-address", ":8081"}, want: []string{`--metrics-bind-address and --health-probe-bind-address: both are ":8081"; want two addresses`}},
		{args: []string{"--metrics-cert-dir", "/nonexistent"}, want: []string{"--metrics-cert-dir: tls.crt (--metrics-cert-name) is not readable", "--metrics-cert-dir: tls.key (--metrics-key-name) is not readable"}},
		{args: []string{"--metrics-secure=false", "--metrics-cert-dir", "/tmp"}, want: []string{"--metrics-cert-dir: needs --metrics-secure (the default)"}},
		{env: map[string]string{"METRICS_SECURE": "maybe"}, want: []string{`$METRICS_SECURE (for --metrics-secure): invalid argument "maybe"`}},
		{args: []string{"--watch-namespaces", "llm-d, Bad_NS"}, want: []string{`--watch-namespaces: "Bad_NS" is not a namespace name`}},
		{args: []string{"--namespace", "WVA"}, want: []string{`--namespace: "WVA" is not a namespace name`}},
		{args: []string{"--leader-election-namespace", "a.b"}, want: []string{`--leader-election-namespace: "a.b" is not a namespace name`}},
		{args: []string{"--config-map", ""}, want: []string{"--config-map: a ConfigMap name is required"}},
		{args: []string{"--tuner-state-config-map", "state/../x"}, want: []string{`--tuner-state-config-map: "state/../x" is not an object name`}},
		{args: []string{"--leader-election-id", "WVA LEASE"}, want: []string{`--leader-election-id: "WVA LEASE" is not an object name`}},
		{env: map[string]string{"GLOBAL_OPT_INTERVAL": "soon"}, want: []string{"$GLOBAL_OPT_INTERVAL (for --interval)"}},
		{args: []string{"--retry-period", "20s"}, want: []string{"want lease duration (15s) > renew deadline (10s) > retry period (20s)"}},
		{args: []string{"--lease-duration", "1h"}, want: []string{"--lease-duration: want at most 10m (a stopped leader is replaced only after it), got 1h0m0s"}},
		{env: map[string]string{"POD_NAMESPACE": ""}, args: []string{"--namespace", ""}, want: []string{"--namespace: the controller's namespace is required"}},
		{args: []string{"--replay-dir", "/nonexistent"}, want: []string{`--replay-dir: want an existing folder, got "/nonexistent"`}},
		{env: map[string]string{"WVA_REPLAY_KEEP": "0"}, args: []string{"--replay-dir", "/tmp"}, want: []string{"--replay-keep ($WVA_REPLAY_KEEP): want from 1 to 1000 files, got 0"}},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		_, stderr, code := run(t, append([]string{"controller"}, c.args...)...)
		if code == 0 {
			t.Errorf("%v %v: accepted", c.env, c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v %v: stderr %q lacks %q", c.env, c.args, stderr, w)
			}
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
	// Valid flags, the opt-ins included, pass validation: the command gets
	// as far as the cluster.
	_, stderr, code := run(t, "controller", "--kubeconfig", "/nonexistent/kubeconfig", "--metrics-secure=false", "--metrics-bind-address", "127.0.0.1:8080",
		"--prometheus-url", "http://prometheus:9090", "--prometheus-token-file", "/var/run/token", "--prometheus-token-over-http",
		"--prometheus-timeout", "30s", "--watch-namespaces", "llm-d,llm-d-staging", "--health-probe-bind-address", "0")
	if code == 0 || !strings.HasPrefix(stderr, "wva controller: --kubeconfig /nonexistent/kubeconfig") {
		t.Errorf("valid flags: exit %d, %s", code, stderr)
	}
	out, _, code := run(t, "controller", "--help")
	for _, w := range []string{"[$PROMETHEUS_BASE_URL]", "--watch-namespaces", "/tuner/params", "/debug/snapshot", "[$WVA_REPLAY_KEEP] (default 10)", "[$GLOBAL_OPT_INTERVAL]", "[$METRICS_SECURE] (default true)",
		"[$PROMETHEUS_BEARER_TOKEN_OVER_HTTP]", `(default ":8443")`} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("--help lacks %q", w)
		}
	}
}
