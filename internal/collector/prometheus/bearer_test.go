package prometheus

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llm-d-incubation/wva/internal/collector"
)

// recorder is a Prometheus stand-in that records the Authorization header
// of every request and answers an empty vector (or redirects, when to is
// set).
type recorder struct {
	mu   sync.Mutex
	auth []string
	to   string // redirect every request here (same path and query)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.auth = append(rec.auth, r.Header.Get("Authorization"))
	rec.mu.Unlock()
	if rec.to != "" {
		http.Redirect(w, r, rec.to+r.URL.RequestURI(), http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
}

func (rec *recorder) headers() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.auth...)
}

func tokenFile(t *testing.T) string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tok
}

// caOf writes the CA file that verifies an httptest TLS server.
func caOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	write(t, ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return ca
}

func collectOnce(t *testing.T, cfg Config) error {
	t.Helper()
	cfg.Retries, cfg.Timeout = -1, 5*time.Second
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Collect(context.Background(), time.Now(), collector.Target{Namespace: "a", Model: "b"})
	return err
}

// TestBearerOverHTTPS: the token goes to the configured server over
// https.
func TestBearerOverHTTPS(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	if err := collectOnce(t, Config{URL: srv.URL, BearerTokenFile: tokenFile(t), CAFile: caOf(t, srv)}); err != nil {
		t.Fatal(err)
	}
	got := rec.headers()
	if len(got) == 0 {
		t.Fatal("no request")
	}
	for _, h := range got {
		if h != "Bearer s3cret" {
			t.Errorf("Authorization %q, want the token", h)
		}
	}
}

// TestBearerRefusedOverHTTP: a token with an http:// URL is a
// configuration error unless opted in; the opt-in sends it.
func TestBearerRefusedOverHTTP(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	tok := tokenFile(t)
	_, err := New(Config{URL: srv.URL, BearerTokenFile: tok})
	want := "prometheus: refusing to send the bearer token (" + tok + ") in clear text to " + srv.URL +
		": use an https:// URL, or opt in explicitly (wva controller: --prometheus-token-over-http, PROMETHEUS_BEARER_TOKEN_OVER_HTTP=true)"
	if err == nil || err.Error() != want {
		t.Errorf("token over http: %v\nwant %s", err, want)
	}
	if len(rec.headers()) != 0 {
		t.Error("New contacted the server")
	}
	if err := collectOnce(t, Config{URL: srv.URL, BearerTokenFile: tok, BearerTokenOverHTTP: true}); err != nil {
		t.Fatal(err)
	}
	if got := rec.headers(); len(got) == 0 || got[0] != "Bearer s3cret" {
		t.Errorf("with the opt-in: Authorization %q", got)
	}
}

// TestBearerNotAcrossRedirect: Prometheus (or a proxy) redirecting to
// another host, or down to http on the same one, does not get the token
// sent there; the configured server still gets it.
func TestBearerNotAcrossRedirect(t *testing.T) {
	for _, other := range []struct {
		name string
		new  func(http.Handler) *httptest.Server
	}{
		{"another https host", httptest.NewTLSServer},
		{"plain http", httptest.NewServer},
	} {
		t.Run(other.name, func(t *testing.T) {
			evil := &recorder{}
			evilSrv := other.new(evil)
			defer evilSrv.Close()
			prom := &recorder{to: evilSrv.URL}
			promSrv := httptest.NewTLSServer(prom)
			defer promSrv.Close()
			// One CA file trusting both test servers.
			ca := caOf(t, promSrv)
			if evilSrv.TLS != nil {
				b, err := os.ReadFile(caOf(t, evilSrv))
				if err != nil {
					t.Fatal(err)
				}
				f, err := os.OpenFile(ca, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(b); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			if err := collectOnce(t, Config{URL: promSrv.URL, BearerTokenFile: tokenFile(t), CAFile: ca}); err != nil {
				t.Fatal(err)
			}
			if got := prom.headers(); len(got) == 0 || got[0] != "Bearer s3cret" {
				t.Errorf("configured server: Authorization %q", got)
			}
			got := evil.headers()
			if len(got) == 0 {
				t.Fatal("the redirect was not followed: the test proves nothing")
			}
			for _, h := range got {
				if h != "" {
					t.Errorf("redirect target got Authorization %q", h)
				}
			}
		})
	}
}

// TestBearerOrigin: which URLs get the token.
func TestBearerOrigin(t *testing.T) {
	b := &bearer{origin: "prom.monitoring.svc:443"}
	bh := &bearer{origin: "prom:9090", overHTTP: true}
	for _, c := range []struct {
		b    *bearer
		url  string
		want bool
	}{
		{b, "https://prom.monitoring.svc/api/v1/query", true},
		{b, "https://PROM.monitoring.svc:443/api/v1/query", true},
		{b, "https://prom.monitoring.svc:8443/", false},
		{b, "http://prom.monitoring.svc:443/", false},
		{b, "https://evil.example/", false},
		{b, "https://prom.monitoring.svc.evil.example/", false},
		{bh, "http://prom:9090/", true},
		{bh, "https://prom:9090/", true},
		{bh, "http://prom:9091/", false},
		{bh, "ftp://prom:9090/", false},
	} {
		r, err := http.NewRequest(http.MethodGet, c.url, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.b.sendsTo(r.URL); got != c.want {
			t.Errorf("%s (origin %s, overHTTP %v): sends %v, want %v", c.url, c.b.origin, c.b.overHTTP, got, c.want)
		}
	}
	if _, err := New(Config{URL: "https://p", BearerTokenFile: tokenFile(t)}); err != nil {
		t.Errorf("token over https: %v", err)
	}
	if _, err := New(Config{URL: "ftp://p"}); err == nil || !strings.Contains(err.Error(), `URL "ftp://p": want http:// or https://`) {
		t.Errorf("ftp URL: %v", err)
	}
}

// TestSecretFilesBounded: a token or CA file that never ends (/dev/zero)
// is an error at start, not a controller killed for memory; a rotated token
// is read again, an unchanged one is not.
func TestSecretFilesBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	if _, err := New(Config{URL: "https://p", BearerTokenFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "/dev/zero is larger than 64 KiB") {
		t.Errorf("token /dev/zero: %v", err)
	}
	if _, err := New(Config{URL: "https://p", CAFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "/dev/zero is larger than 4 MiB") {
		t.Errorf("CA /dev/zero: %v", err)
	}
	if _, err := New(Config{URL: "https://p", CertFile: "/dev/zero", KeyFile: "/dev/zero"}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("client certificate /dev/zero: %v", err)
	}

	file := tokenFile(t)
	b := &bearer{file: file}
	if tok, err := b.token(); err != nil || tok != "s3cret" {
		t.Fatalf("token %q, %v", tok, err)
	}
	b.tok = "cached" // an unchanged file is not read again
	if tok, _ := b.token(); tok != "cached" {
		t.Errorf("unchanged file read again: %q", tok)
	}
	if err := os.WriteFile(file, []byte("rotated-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, _ := b.token(); tok != "rotated-token" {
		t.Errorf("rotated token: %q", tok)
	}
}
