package prometheus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type issued struct {
	cert    tls.Certificate
	certPEM []byte
	keyPEM  []byte
	x509    *x509.Certificate
	key     *ecdsa.PrivateKey
}

// issue makes a certificate for cn, signed by parent (self-signed, a CA,
// when parent is nil), valid for 127.0.0.1.
func issue(t *testing.T, cn string, parent *issued) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	signer, signKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
	} else {
		signer, signKey = parent.x509, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	out := issued{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), key: key}
	if out.x509, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	if out.cert, err = tls.X509KeyPair(out.certPEM, out.keyPEM); err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// rotatingServer is an HTTPS server that presents the certificate current
// holds at each handshake, requires a client certificate, and answers the
// client certificate's common name. Keep-alives are off, so every request
// is a new handshake.
func rotatingServer(t *testing.T, current *atomic.Pointer[tls.Certificate]) *httptest.Server {
	t.Helper()
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fmt.Fprint(w, cn)
	}))
	// Per connection, so that the rotation takes effect (a client dialing
	// an IP sends no server name, and httptest's own certificate would win
	// over GetCertificate).
	server.TLS = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.RequireAnyClientCert, Certificates: []tls.Certificate{*current.Load()}}, nil
	}}
	server.Config.SetKeepAlivesEnabled(false) // every request is a new handshake
	server.StartTLS()
	t.Cleanup(server.Close)
	return server
}

// getBody returns the body of a GET of url.
func getBody(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestTLSRotation: the CA bundle and the client certificate are re-read
// when they change (cert-manager rotates both), without rebuilding the
// source; the server's name is still checked.
func TestTLSRotation(t *testing.T) {
	ca1, ca2 := issue(t, "ca-1", nil), issue(t, "ca-2", nil)
	srv1, srv2 := issue(t, "prometheus", &ca1), issue(t, "prometheus", &ca2)
	cl1, cl2 := issue(t, "wva-1", &ca1), issue(t, "wva-2", &ca1)
	var current atomic.Pointer[tls.Certificate]
	current.Store(&srv1.cert)
	server := rotatingServer(t, &current)

	dir := t.TempDir()
	caPath, certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write(t, caPath, ca1.certPEM)
	write(t, certPath, cl1.certPEM)
	write(t, keyPath, cl1.keyPEM)
	rt, err := transport(Config{CAFile: caPath, CertFile: certPath, KeyFile: keyPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rt, Timeout: 5 * time.Second}
	get := func(url string) (string, error) { return getBody(c, url) }
	if cn, err := get(server.URL); err != nil || cn != "wva-1" {
		t.Fatalf("first request: %q, %v", cn, err)
	}
	// The server's name must match: the certificate is for 127.0.0.1.
	if _, err := get(strings.Replace(server.URL, "127.0.0.1", "localhost", 1)); err == nil {
		t.Error("a certificate for another name was accepted")
	}
	// The server rotates to a certificate of another CA: refused until the
	// bundle has that CA, then accepted — same transport.
	current.Store(&srv2.cert)
	if _, err := get(server.URL); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a certificate of an unknown CA: %v", err)
	}
	write(t, caPath, append(append([]byte{}, ca1.certPEM...), ca2.certPEM...))
	if cn, err := get(server.URL); err != nil || cn != "wva-1" {
		t.Fatalf("after the CA bundle changed: %q, %v", cn, err)
	}
	// The client certificate rotates.
	write(t, certPath, cl2.certPEM)
	write(t, keyPath, cl2.keyPEM)
	if cn, err := get(server.URL); err != nil || cn != "wva-2" {
		t.Fatalf("after the client certificate changed: %q, %v", cn, err)
	}
	// An explicit opt-out of verification accepts a server of any CA.
	other := issue(t, "other", nil)
	current.Store(&other.cert)
	insecure, err := transport(Config{CAFile: caPath, CertFile: certPath, KeyFile: keyPath, InsecureSkipVerify: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Transport = insecure
	if cn, err := get(server.URL); err != nil || cn != "wva-2" {
		t.Fatalf("insecureSkipVerify: %q, %v", cn, err)
	}
}
