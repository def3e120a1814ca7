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
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-front-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: frontProxyClient},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	fp := FrontProxy{CAFile: filepath.Join(dir, "front-proxy-ca.crt"), CertFile: filepath.Join(dir, "front-proxy-client.crt"),
		KeyFile: filepath.Join(dir, "front-proxy-client.key")}
	writePEM(t, fp.CAFile, "CERTIFICATE", caDER)
	writePEM(t, fp.CertFile, "CERTIFICATE", der)
	writePEM(t, fp.KeyFile, "EC PRIVATE KEY", keyDER)
	return fp
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
