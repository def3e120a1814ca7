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
		{env: map[string]string{"GLOBAL_OPT_INTERVAL": "10ms"}, want: []string{"--interval: want at least 1s, got 10ms"}},
		{env: map[string]string{"GLOBAL_OPT_INTERVAL": "10ms"}, args: []string{"--interval", "30s", "--log-level", "loud"}, want: []string{`--log-level: want info or debug, got "loud"`}},
		{env: map[string]string{"GLOBAL_OPT_INTERVAL": "soon"}, want: []string{"$GLOBAL_OPT_INTERVAL (for --interval)"}},
		{args: []string{"--retry-period", "20s"}, want: []string{"want lease duration (15s) > renew deadline (10s) > retry period (20s)"}},
		{env: map[string]string{"POD_NAMESPACE": ""}, args: []string{"--namespace", ""}, want: []string{"--namespace: the controller's namespace is required"}},
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
	out, _, code := run(t, "controller", "--help")
	for _, w := range []string{"[$PROMETHEUS_BASE_URL]", "--watch-namespaces", "/tuner/params", "[$GLOBAL_OPT_INTERVAL]"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("--help lacks %q", w)
		}
	}
}
