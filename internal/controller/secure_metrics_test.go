package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/llm-d-incubation/wva/internal/testenv"
)

// TestSecureMetrics runs the manager with the default metrics serving on
// the real API server: /metrics and /tuner/params answer over HTTPS only
// to a bearer token the API server authenticates (TokenReview) and
// authorises (SubjectAccessReview) for the path — a service account bound
// to the generated wva-metrics-reader role — and refuse everyone else;
// --metrics-secure=false serves plain HTTP without authentication.
func TestSecureMetrics(t *testing.T) {
	f := newFixture(t)
	// The reader role as generated (config/rbac/role.yaml), applied for real.
	reader := generatedClusterRole(t, "wva-metrics-reader")
	reader.Name = "wva-metrics-reader-" + f.ns
	create(t, reader)
	metricsOnly := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-only-" + f.ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	create(t, metricsOnly)
	tokens := secureTokens{ns: f.ns, reader: saToken(t, f.ns, "scraper", reader.Name), stranger: saToken(t, f.ns, "stranger", ""),
		partial: saToken(t, f.ns, "partial", metricsOnly.Name)}

	o := DefaultOptions()
	if !o.MetricsSecure {
		t.Fatal("metrics are not secure by default")
	}
	o.Namespace, o.WatchNamespaces, o.LeaderElect = ctrlNS, []string{f.ns}, false
	o.MetricsSource, o.MetricsFile = "file", f.metrics
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	o.MetricsAddr, o.HealthAddr = addr, "0"
	stop := runManager(t, o)
	c := newMetricsClient(t)
	waitFor(t, 30*time.Second, "the metrics server", func() bool {
		code, _, _ := c.get("https://"+addr+"/metrics", "")
		return code != 0
	})
	checkSecureServer(t, c, addr, tokens)
	stop()

	// The explicit opt-out: plain HTTP, no authentication.
	o.MetricsSecure = false
	addr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	o.MetricsAddr = addr
	runManager(t, o)
	waitFor(t, 30*time.Second, "the insecure metrics server", func() bool {
		code, _, _ := c.get("http://"+addr+"/metrics", "")
		return code == http.StatusOK
	})
	if code, body, _ := c.get("http://"+addr+"/tuner/params", ""); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("insecure /tuner/params: %d %.200q", code, body)
	}
}

// secureTokens are service-account tokens: of a reader (bound to
// wva-metrics-reader), a stranger (no binding), and partial (may get
// /metrics only).
type secureTokens struct{ ns, reader, stranger, partial string }

// checkSecureServer asks the secure metrics server at addr with each
// token and without.
func checkSecureServer(t *testing.T, c metricsClient, addr string, tok secureTokens) {
	t.Helper()
	base := "https://" + addr
	for _, path := range []string{"/metrics", "/tuner/params"} {
		checkAuthentication(t, c, base+path, tok)
	}
	// Authorisation is per path.
	if code, _, _ := c.get(base+"/metrics", tok.partial); code != http.StatusOK {
		t.Errorf("/metrics for a role granting /metrics: %d", code)
	}
	if code, _, _ := c.get(base+"/tuner/params", tok.partial); code != http.StatusForbidden {
		t.Errorf("/tuner/params for a role granting only /metrics: %d, want 403", code)
	}
	// What is served to the reader is the real thing.
	if code, body, _ := c.get(base+"/tuner/params", tok.reader); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("/tuner/params: %d %.200q", code, body)
	}
	if code, body, _ := c.get(base+"/metrics", tok.reader); code != http.StatusOK || !strings.Contains(body, "# TYPE") {
		t.Errorf("/metrics: %d %.200q", code, body)
	}
	// Plain HTTP is not served on the secure port, not even with a token.
	if code, body, _ := c.get("http://"+addr+"/metrics", tok.reader); code == http.StatusOK {
		t.Errorf("plain HTTP answered: %.200q", body)
	}
}

// checkAuthentication asks url without a token, with a stranger's, with a
// reader's and with a forged one: only the reader is served, over
// HTTP/1.1.
func checkAuthentication(t *testing.T, c metricsClient, url string, tok secureTokens) {
	t.Helper()
	for _, tc := range []struct {
		who, token string
		code       int
		body       string
	}{
		{"no token", "", http.StatusUnauthorized, "Unauthorized"},
		{"an account without the role", tok.stranger, http.StatusForbidden, "Authorization denied for user system:serviceaccount:" + tok.ns + ":stranger"},
		{"a metrics reader", tok.reader, http.StatusOK, ""},
	} {
		code, body, proto := c.get(url, tc.token)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s with %s: %d %.200q, want %d %q", url, tc.who, code, body, tc.code, tc.body)
		}
		if code == http.StatusOK && proto != "HTTP/1.1" {
			t.Errorf("%s: served over %s; HTTP/2 is off by default", url, proto)
		}
	}
	// A token the API server cannot read: the filter reports the failed
	// review as a server error (controller-runtime's choice), and serves
	// nothing.
	code, body, _ := c.get(url, "not-a-token")
	if (code != http.StatusUnauthorized && code != http.StatusInternalServerError) || strings.Contains(body, "# TYPE") || strings.Contains(body, "[") {
		t.Errorf("%s with a forged token: %d %.200q", url, code, body)
	}
}

// metricsClient asks the metrics server. The server's certificate is
// self-signed: it checks authentication, not the server's identity.
type metricsClient struct {
	t *testing.T
	c *http.Client
}

func newMetricsClient(t *testing.T) metricsClient {
	return metricsClient{t: t, c: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, // a self-signed test server
		ForceAttemptHTTP2: true}}}
}

// get returns the status code (0 when there was none), the body (or the
// error) and the protocol.
func (m metricsClient) get(url, tok string) (code int, body, proto string) {
	m.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	if err != nil {
		m.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := m.c.Do(req)
	if err != nil {
		return 0, err.Error(), ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Proto
}

// saToken creates the service account ns/name, binds it to the
// ClusterRole role (if any) and returns a token of it.
func saToken(t *testing.T, ns, name, role string) string {
	t.Helper()
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	if role != "" {
		create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}})
	}
	exp := int64(3600)
	tr, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestMetricsCertDir: a certificate in --metrics-cert-dir is served
// instead of the self-signed one.
func TestMetricsCertDir(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	cert, key := selfSigned(t)
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Namespace, o.WatchNamespaces, o.LeaderElect = ctrlNS, []string{f.ns}, false
	o.MetricsSource, o.MetricsFile, o.MetricsCertDir = "file", f.metrics, dir
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	o.MetricsAddr, o.HealthAddr = addr, "0"
	stop := runManager(t, o)
	defer stop()
	pool := x509Pool(t, cert)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	waitFor(t, 30*time.Second, "the metrics server with the given certificate", func() bool {
		resp, err := c.Get("https://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
}

// runManager builds the manager as Run does (with /tuner/params) and
// starts it; the returned function stops it and waits (once).
func runManager(t *testing.T, o Options) func() {
	t.Helper()
	o.metricsRegistry = prometheus.NewRegistry()
	mgr, err := buildManager(context.Background(), env.Config, o, clock.RealClock{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// generatedClusterRole returns the ClusterRole name of config/rbac/role.yaml.
func generatedClusterRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "ClusterRole" && r.Name == name {
			r.ResourceVersion = ""
			return &r
		}
	}
	t.Fatalf("config/rbac/role.yaml has no ClusterRole %s: run make generate", name)
	return nil
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// selfSigned makes a certificate for 127.0.0.1 (PEM: the serving
// certificate and its CA) and its key.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func x509Pool(t *testing.T, pem []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate")
	}
	return p
}

// metricsReaderToken writes to a file the token of a new service account
// in ns bound to the generated wva-metrics-reader role, as a Prometheus
// would have.
func metricsReaderToken(t *testing.T, ns string) string {
	t.Helper()
	role := generatedClusterRole(t, "wva-metrics-reader")
	role.Name = "wva-metrics-reader-" + ns
	create(t, role)
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(saToken(t, ns, "prometheus", role.Name)), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
