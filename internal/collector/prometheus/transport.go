// The HTTP side of the source: TLS with a CA bundle and a client
// certificate that are re-read when they rotate, and the bearer token, sent
// only to the configured server.

package prometheus

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llm-d-incubation/wva/internal/boundedio"
)

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
		if _, err := loadKeyPair(cfg.CertFile, cfg.KeyFile); err != nil {
			return nil, fmt.Errorf("prometheus: client certificate: %w", err)
		}
		// Read at every handshake, so a rotated certificate is used
		// without a restart.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := loadKeyPair(cfg.CertFile, cfg.KeyFile)
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
	b := &bearer{file: cfg.BearerTokenFile, origin: origin(u), overHTTP: cfg.BearerTokenOverHTTP, next: base}
	if _, err := b.token(); err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	return b, nil
}

// Bounds of the files the source reads (a token or a bundle pointed at
// /dev/zero must not exhaust the controller's memory).
const (
	maxTokenBytes = 64 << 10 // a Kubernetes service-account token is about 1 KiB
	maxPEMBytes   = 4 << 20  // a CA bundle, a certificate, a key
)

// loadKeyPair is tls.LoadX509KeyPair with bounded reads.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	c, err := boundedio.ReadFile(certFile, maxPEMBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	k, err := boundedio.ReadFile(keyFile, maxPEMBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(c, k)
}

// caFile is a CA bundle re-read when its content changes.
type caFile struct {
	path string
	mu   sync.Mutex
	pem  []byte
	p    *x509.CertPool
}

func (c *caFile) pool() (*x509.CertPool, error) {
	pem, err := boundedio.ReadFile(c.path, maxPEMBytes)
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

	// The token as last read, with the file's size and modification time
	// then: it is read again only when they change (a rotated token).
	mu       sync.Mutex
	tok      string
	size     int64
	modified time.Time
}

// token returns the file's token, reading it only when the file changed.
func (b *bearer) token() (string, error) {
	st, err := os.Stat(b.file)
	if err != nil {
		return "", fmt.Errorf("bearer token file: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tok != "" && st.Size() == b.size && st.ModTime().Equal(b.modified) {
		return b.tok, nil
	}
	data, err := boundedio.ReadFile(b.file, maxTokenBytes)
	if err != nil {
		return "", fmt.Errorf("bearer token file: %w", err)
	}
	b.tok, b.size, b.modified = strings.TrimSpace(string(data)), st.Size(), st.ModTime()
	return b.tok, nil
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if !b.sendsTo(r.URL) {
		return b.next.RoundTrip(r)
	}
	tok, err := b.token()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
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
