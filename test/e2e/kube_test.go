//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes an admin kubeconfig for cfg (envtest's client
// certificate) to path, for the components run as processes and for
// kubectl by hand.
func writeKubeconfig(t testing.TB, cfg *rest.Config, path string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// FrontProxy is the aggregation layer's PKI: kube-apiserver presents the
// client certificate to aggregated API servers (prometheus-adapter), which
// trust the CA through the extension-apiserver-authentication ConfigMap.
type FrontProxy struct {
	CAFile, CertFile, KeyFile string
}

// frontProxyClient is the name aggregated API servers accept
// (--requestheader-allowed-names).
const frontProxyClient = "front-proxy-client"

func newFrontProxy(t testing.TB, dir string) FrontProxy {
	t.Helper()
	ca := newTestCA(t, "e2e-front-proxy-ca")
	fp := FrontProxy{CAFile: filepath.Join(dir, "front-proxy-ca.crt"), CertFile: filepath.Join(dir, "front-proxy-client.crt"),
		KeyFile: filepath.Join(dir, "front-proxy-client.key")}
	ca.writeCA(t, fp.CAFile)
	ca.issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: frontProxyClient},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, fp.CertFile, fp.KeyFile)
	return fp
}

// testCA is a certificate authority of one test (a day's validity).
type testCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, serial: 1}
}

// writeCA writes the CA's certificate (PEM) to path, creating its folder.
func (ca *testCA) writeCA(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "CERTIFICATE", ca.cert.Raw)
}

// issue signs tmpl (its subject, names and extended key usages; the
// serial, validity and key usage are set here) for a new key and writes
// the certificate and the key (PEM) to certFile and keyFile.
func (ca *testCA) issue(t testing.TB, tmpl *x509.Certificate, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.serial++
	tmpl.SerialNumber = big.NewInt(ca.serial)
	tmpl.NotBefore, tmpl.NotAfter = ca.cert.NotBefore, ca.cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o750); err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// apiServerArgs are kube-apiserver's aggregation-layer flags.
func (fp FrontProxy) apiServerArgs() map[string][]string {
	return map[string][]string{
		"requestheader-client-ca-file":       {fp.CAFile},
		"requestheader-allowed-names":        {frontProxyClient},
		"requestheader-username-headers":     {"X-Remote-User"},
		"requestheader-group-headers":        {"X-Remote-Group"},
		"requestheader-extra-headers-prefix": {"X-Remote-Extra-"},
		"proxy-client-cert-file":             {fp.CertFile},
		"proxy-client-key-file":              {fp.KeyFile},
	}
}
