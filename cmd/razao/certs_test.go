package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test with crypto/x509.
type testCA struct {
	cert  *x509.Certificate
	key   crypto.Signer
	chain [][]byte // DER of the intermediates between a leaf and the root, leaf side first
}

func newTestKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key := newTestKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// intermediate is a CA that ca signs: its leaves chain to ca through it.
func (ca *testCA) intermediate(t *testing.T, cn string) *testCA {
	t.Helper()
	key := newTestKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, chain: append([][]byte{der}, ca.chain...)}
}

// pemFile writes the CA's certificate as a PEM bundle and returns its path.
func (ca *testCA) pemFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pemCert(ca.cert.Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// leafOpts describe a leaf certificate; zero values are a client
// certificate valid now.
type leafOpts struct {
	serial   int64
	cn       string
	dns      []string
	uris     []string
	ips      []net.IP
	notAfter time.Time
	server   bool // serverAuth instead of clientAuth
	key      crypto.Signer
}

// testLeaf is an issued certificate with its key, as tls and as PEM.
type testLeaf struct {
	tls             tls.Certificate
	certPEM, keyPEM []byte // the certificate PEM holds the intermediates after the leaf
	serial          *big.Int
	certDER         []byte
}

func (ca *testCA) leaf(t *testing.T, o leafOpts) testLeaf {
	t.Helper()
	key := o.key
	if key == nil {
		key = newTestKey(t)
	}
	if o.serial == 0 {
		o.serial = 7
	}
	notAfter := o.notAfter
	if notAfter.IsZero() {
		notAfter = time.Now().Add(12 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(o.serial), Subject: pkix.Name{CommonName: o.cn},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: notAfter,
		DNSNames: o.dns, IPAddresses: o.ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if o.server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	for _, u := range o.uris {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	l := testLeaf{serial: big.NewInt(o.serial), certDER: der}
	l.certPEM = pemCert(der)
	for _, ic := range ca.chain {
		l.certPEM = append(l.certPEM, pemCert(ic)...)
	}
	l.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	l.tls, err = tls.X509KeyPair(l.certPEM, l.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// serverPair issues razao's serving certificate for 127.0.0.1.
func (ca *testCA) serverPair(t *testing.T, serial int64) testLeaf {
	t.Helper()
	return ca.leaf(t, leafOpts{serial: serial, cn: "razao", ips: []net.IP{net.IPv4(127, 0, 0, 1)}, server: true})
}

// writePair writes a leaf's certificate and key where the config names
// them, each atomically (temporary file, rename), as cert tools do.
func writePair(t *testing.T, certFile, keyFile string, l testLeaf) {
	t.Helper()
	writeAtomic(t, certFile, l.certPEM)
	writeAtomic(t, keyFile, l.keyPEM)
}

func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// logWatch collects what a command writes, line by line, and lets a test
// wait for a line: the command says when it has done something (listening,
// a certificate loaded), and the test acts on that, never on a sleep.
type logWatch struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

// waitFor returns the index and text of the first line at or after from
// that holds every one of parts. It gives up after a minute, a bound on a
// hung command, not a timing the test depends on.
func (w *logWatch) waitFor(t *testing.T, from int, parts ...string) (int, string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		for i := from; i < len(w.lines); i++ {
			if containsAll(w.lines[i], parts) {
				line := w.lines[i]
				w.mu.Unlock()
				return i, line
			}
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no line with %q after line %d; output:\n%s", parts, from, w.String())
		}
	}
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n") + string(w.partial)
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
