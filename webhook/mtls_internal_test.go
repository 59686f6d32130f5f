package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A proxy's client-certificate header counts only from the addresses in
// trusted_proxies, matched on the connection's peer address (an IPv4
// client seen through a dual-stack socket included), never on anything
// the request says about itself.
func TestClientCertHeaderTrustsOnlyTheConfiguredProxyAddresses(t *testing.T) {
	t.Parallel()
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "PSP CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "psp"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	header := url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})))

	auth, err := newClientAuth("pix", MTLS{ClientCAFile: caFile, ClientCertHeader: "X-Client-Cert",
		TrustedProxies: []string{"10.0.0.5/32", "fd00::/8"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote string
		ok     bool
	}{
		{"10.0.0.5:41000", true},
		{"[::ffff:10.0.0.5]:41000", true},
		{"[fd00::7]:41000", true},
		{"10.0.0.6:41000", false},
		{"127.0.0.1:41000", false},
		{"[::1]:41000", false},
		{"not an address", false},
	} {
		r := httptest.NewRequest("POST", "/webhooks/pix/pix", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Client-Cert", header)
		r.Header.Set("X-Forwarded-For", "10.0.0.5") // says nothing about who connected
		if err := auth.verify(r, now); (err == nil) != tc.ok {
			t.Errorf("from %s: %v, want accepted %v", tc.remote, err, tc.ok)
		}
	}
}
