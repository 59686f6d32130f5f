package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/webhook"
)

// pixSecret is a bcb-pix URL secret (?hmac=) of the 32 characters the
// scheme demands.
const pixSecret = "pix-url-secret-0123456789abcdefghij"

// withTLS makes startServer end TLS with a fresh serving certificate of
// serverCA, written to files as an operator's config would name them.
func withTLS(t *testing.T, serverCA *testCA, minVersion uint16) func(*serveConfig) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePair(t, certFile, keyFile, serverCA.serverPair(t, 1001))
	return func(cfg *serveConfig) {
		cfg.tls = &tlsServing{certFile: certFile, keyFile: keyFile, minVersion: minVersion, poll: time.Hour}
	}
}

func withEndpoints(t *testing.T, cfgs ...webhook.EndpointConfig) func(*serveConfig) {
	t.Helper()
	var eps []*webhook.Endpoint
	for _, c := range cfgs {
		ep, err := webhook.NewEndpoint(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	return func(cfg *serveConfig) { cfg.endpoints = eps }
}

// clientWith is an HTTPS client that trusts roots and presents cert (nil:
// no certificate) whatever CAs the server names, so that the server, not
// the client's choice, decides. One connection per request.
func clientWith(roots *x509.CertPool, cert *tls.Certificate) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		},
	}}}
}

// pixCallback is a Pix API callback for one Pix of an unregistered
// charge: authentic, it is stored and answered 200 (a divergence).
func pixCallback(n int) string {
	return fmt.Sprintf(`{"pix":[{"endToEndId":"E%031d","txid":"order%d","valor":"49.90","horario":"%s"}]}`,
		n, n, time.Now().UTC().Format(time.RFC3339))
}

// postPix posts a callback and returns the status and the answer's status
// field, so a 401 is seen to come from the webhook handler.
func postPix(t *testing.T, c *http.Client, target string, n int, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(pixCallback(n)))
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	defer resp.Body.Close()
	var r webhook.Response
	json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r.Status
}

func TestBCBPixMutualTLSPerEndpoint(t *testing.T) {
	t.Parallel()
	serverCA, caA, caB, caOther := newTestCA(t, "server CA"), newTestCA(t, "PSP A CA"), newTestCA(t, "PSP B CA"), newTestCA(t, "unknown CA")
	interA := caA.intermediate(t, "PSP A issuing CA")
	fileA, fileB := caA.pemFile(t), caB.pemFile(t)
	log := newLogWatch()
	base, _, _, stop := startServerLogging(t, log, withTLS(t, serverCA, tls.VersionTLS12), withEndpoints(t,
		webhook.EndpointConfig{Name: "pix-a", Scheme: "bcb-pix", Merchant: "loja", MTLS: webhook.MTLS{ClientCAFile: fileA}},
		webhook.EndpointConfig{Name: "pix-b", Scheme: "bcb-pix", Merchant: "loja", MTLS: webhook.MTLS{ClientCAFile: fileB}},
		webhook.EndpointConfig{Name: "pix-san", Scheme: "bcb-pix", Merchant: "loja", MTLS: webhook.MTLS{ClientCAFile: fileA,
			ClientSANs: []string{"webhook.psp-a.example", "spiffe://psp-a/pix"}}},
		webhook.EndpointConfig{Name: "pix-cn", Scheme: "bcb-pix", Merchant: "loja", MTLS: webhook.MTLS{ClientCAFile: fileA,
			ClientSubjects: []string{"PSP A Pix"}}},
	))
	defer stop()
	base = strings.Replace(base, "http://", "https://", 1)
	roots := serverCA.pool()

	leaf := func(ca *testCA, o leafOpts) *tls.Certificate { l := ca.leaf(t, o); return &l.tls }
	rightA := leaf(caA, leafOpts{cn: "PSP A Pix", dns: []string{"webhook.psp-a.example"}})
	const (
		unknownCA = "x509: certificate signed by unknown authority"
		expired   = "x509: certificate has expired"
		noCert    = `"client_certificate":"no client certificate"`
		badUsage  = "x509: certificate specifies an incompatible key usage"
		badName   = "names none of its client_subjects or client_sans"
	)
	cases := []struct {
		name, endpoint string
		cert           *tls.Certificate
		want           int
		why            string // in the refusal's log line
	}{
		{"right CA", "pix-a", rightA, 200, ""},
		{"right CA through an intermediate it sends", "pix-a", leaf(interA, leafOpts{cn: "PSP A Pix"}), 200, ""},
		{"right CA at /pix", "pix-a/pix", rightA, 200, ""},
		{"wrong CA", "pix-a", leaf(caOther, leafOpts{cn: "PSP A Pix", dns: []string{"webhook.psp-a.example"}}), 401, unknownCA},
		{"expired", "pix-a", leaf(caA, leafOpts{cn: "PSP A Pix", notAfter: time.Now().Add(-time.Minute)}), 401, expired},
		{"no certificate", "pix-a", nil, 401, noCert},
		{"server certificate, not for client authentication", "pix-a", leaf(caA, leafOpts{cn: "PSP A Pix", server: true}), 401, badUsage},
		{"another endpoint's CA", "pix-a", leaf(caB, leafOpts{cn: "PSP B Pix"}), 401, unknownCA},
		{"its own CA on the other endpoint", "pix-b", leaf(caB, leafOpts{cn: "PSP B Pix"}), 200, ""},
		{"endpoint A's certificate on endpoint B", "pix-b", rightA, 401, unknownCA},
		{"accepted DNS SAN", "pix-san", rightA, 200, ""},
		{"accepted URI SAN", "pix-san", leaf(caA, leafOpts{cn: "x", uris: []string{"spiffe://psp-a/pix"}}), 200, ""},
		{"wrong SAN", "pix-san", leaf(caA, leafOpts{cn: "PSP A Pix", dns: []string{"webhook.psp-b.example"}}), 401, badName},
		{"accepted subject", "pix-cn", rightA, 200, ""},
		{"wrong subject", "pix-cn", leaf(caA, leafOpts{cn: "PSP B Pix", dns: []string{"webhook.psp-a.example"}}), 401, badName},
	}
	refusals := 0
	for i, tc := range cases {
		code, status := postPix(t, clientWith(roots, tc.cert), base+"/webhooks/"+tc.endpoint, i+1, nil)
		if code != tc.want || code == 401 && status != "unauthorized" {
			t.Errorf("%s: POST /webhooks/%s answered %d %q, want %d", tc.name, tc.endpoint, code, status, tc.want)
		}
		if tc.why != "" && code == 401 {
			// Refused for the reason the row is about, not another.
			at, line := log.waitFor(t, refusals, `"msg":"webhook refused"`)
			refusals = at + 1
			if !strings.Contains(line, tc.why) {
				t.Errorf("%s: refused with %s, want %q", tc.name, line, tc.why)
			}
		}
	}

	// A client-certificate header is no certificate on an endpoint that
	// trusts no proxy, wherever it comes from.
	pemA := url.PathEscape(string(caA.leaf(t, leafOpts{cn: "PSP A Pix"}).certPEM))
	if code, _ := postPix(t, clientWith(roots, nil), base+"/webhooks/pix-a", 100, http.Header{"X-Client-Cert": {pemA}}); code != 401 {
		t.Errorf("a certificate header on an endpoint without trusted proxies: %d, want 401", code)
	}
	// The API's clients have no certificate: the server asks, never demands.
	if resp, err := clientWith(roots, nil).Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz without a client certificate: %v %v", err, resp)
	}
}

func TestBCBPixClientCertHeaderOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	caA, caOther := newTestCA(t, "PSP A CA"), newTestCA(t, "unknown CA")
	fileA := caA.pemFile(t)
	// The test's requests come from 127.0.0.1: a proxy for pix-proxy, a
	// stranger for pix-far.
	log := newLogWatch()
	base, _, _, stop := startServerLogging(t, log, withEndpoints(t,
		webhook.EndpointConfig{Name: "pix-proxy", Scheme: "bcb-pix", Merchant: "loja", MTLS: webhook.MTLS{ClientCAFile: fileA,
			ClientCertHeader: "x-client-cert", TrustedProxies: []string{"127.0.0.0/8"}}},
		webhook.EndpointConfig{Name: "pix-far", Scheme: "bcb-pix", Merchant: "loja", MTLS: webhook.MTLS{ClientCAFile: fileA,
			ClientCertHeader: "X-Client-Cert", TrustedProxies: []string{"10.0.0.0/8", "::1/128"}}},
	))
	defer stop()
	escaped := func(ca *testCA, o leafOpts) string { return url.PathEscape(string(ca.leaf(t, o).certPEM)) }
	good := escaped(caA, leafOpts{cn: "PSP A Pix"})
	cases := []struct {
		name, endpoint string
		header         []string
		want           int
		why            string
	}{
		{"trusted proxy, right CA", "pix-proxy", []string{good}, 200, ""},
		{"trusted proxy, unescaped PEM", "pix-proxy", []string{strings.ReplaceAll(string(caA.leaf(t, leafOpts{}).certPEM), "\n", " ")}, 401, "no PEM certificate"},
		{"trusted proxy, wrong CA", "pix-proxy", []string{escaped(caOther, leafOpts{cn: "PSP A Pix"})}, 401, "signed by unknown authority"},
		{"trusted proxy, expired", "pix-proxy", []string{escaped(caA, leafOpts{notAfter: time.Now().Add(-time.Minute)})}, 401, "certificate has expired"},
		{"trusted proxy, no header", "pix-proxy", nil, 401, `"client_certificate":"no client certificate"`},
		{"trusted proxy, two headers", "pix-proxy", []string{good, good}, 401, "2 X-Client-Cert headers"},
		{"trusted proxy, not a certificate", "pix-proxy", []string{"-----BEGIN%20CERTIFICATE-----%0Anope"}, 401, "no PEM certificate"},
		{"untrusted address, right CA", "pix-far", []string{good}, 401, "X-Client-Cert ignored from 127.0.0.1:"},
	}
	refusals := 0
	for i, tc := range cases {
		h := http.Header{}
		for _, v := range tc.header {
			h.Add("X-Client-Cert", v)
		}
		code, status := postPix(t, http.DefaultClient, base+"/webhooks/"+tc.endpoint, i+1, h)
		if code != tc.want || code == 401 && status != "unauthorized" {
			t.Errorf("%s: %d %q, want %d", tc.name, code, status, tc.want)
		}
		if tc.why != "" && code == 401 {
			at, line := log.waitFor(t, refusals, `"msg":"webhook refused"`)
			refusals = at + 1
			if !strings.Contains(line, tc.why) {
				t.Errorf("%s: refused with %s, want %q", tc.name, line, tc.why)
			}
		}
	}
}

func TestBCBPixCallbackAtPixSuffix(t *testing.T) {
	t.Parallel()
	base, _, _, stop := startServer(t, withEndpoints(t,
		webhook.EndpointConfig{Name: "psp", Scheme: "standard", Merchant: "loja", Secrets: []string{e2eSecret}},
		webhook.EndpointConfig{Name: "pix", Scheme: "bcb-pix", Merchant: "loja", Secrets: []string{pixSecret}},
	))
	defer stop()
	q := "hmac=" + url.QueryEscape(pixSecret)
	cases := []struct {
		name, target string
		want         int
	}{
		{"registered URL", "/webhooks/pix?" + q, 200},
		{"/pix appended to the path", "/webhooks/pix/pix?" + q, 200},
		{"/pix appended to the whole URL, query and all", "/webhooks/pix?" + q + "/pix", 200},
		{"the PSPs' workaround, ?hmac=&ignorar=", "/webhooks/pix?" + q + "&ignorar=/pix", 200},
		{"/pix without the secret", "/webhooks/pix/pix", 401},
		{"/pix with a wrong secret", "/webhooks/pix/pix?hmac=" + strings.Repeat("x", 40), 401},
		{"a secret with /pix inside the path's query", "/webhooks/pix/pix?" + q + "/pix", 401},
		{"/pix on an endpoint of another scheme", "/webhooks/psp/pix", 404},
		{"/pix on no endpoint", "/webhooks/nope/pix", 404},
	}
	for i, tc := range cases {
		if code, status := postPix(t, http.DefaultClient, base+tc.target, i+1, nil); code != tc.want {
			t.Errorf("%s: POST %s answered %d %q, want %d", tc.name, tc.target, code, status, tc.want)
		}
	}
	resp, err := http.Get(base + "/webhooks/pix/pix")
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET /webhooks/pix/pix: %v %v, want 405 with Allow: POST", err, resp)
	}
}

func TestServeTLSEnforcesMinVersion(t *testing.T) {
	t.Parallel()
	serverCA := newTestCA(t, "server CA")
	for _, tc := range []struct {
		name          string
		min           uint16
		refused, ok   uint16
		refusedString string
	}{
		{"default 1.2", tls.VersionTLS12, tls.VersionTLS11, tls.VersionTLS12, "1.1"},
		{"1.3", tls.VersionTLS13, tls.VersionTLS12, tls.VersionTLS13, "1.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, _, _, stop := startServer(t, withTLS(t, serverCA, tc.min))
			defer stop()
			addr := strings.TrimPrefix(base, "http://")
			if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: serverCA.pool(), MinVersion: tls.VersionTLS10, MaxVersion: tc.refused}); err == nil {
				c.Close()
				t.Errorf("a TLS %s client got through", tc.refusedString)
			}
			c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: serverCA.pool(), MaxVersion: tc.ok})
			if err != nil {
				t.Fatalf("a client at the minimum version: %v", err)
			}
			c.Close()
		})
	}
}

// serveCommand runs `razao serve` in this process with the config file
// written from yaml, until the test ends; it returns the address the
// command says it listens on and its log.
func serveCommand(t *testing.T, yaml string) (addr string, log *logWatch) {
	t.Helper()
	_, dbURL := pgtest.NewWithURL(t)
	path := writeConfig(t, yaml)
	stdout, stderr := newLogWatch(), newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	// The admin listener on a port of its own: tests run at once.
	go func() {
		done <- run(ctx, []string{"serve", "-config", path, "-database-url", dbURL, "-admin-listen", "127.0.0.1:0"}, stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("razao serve exited %d:\n%s", code, stderr)
		}
	})
	_, line := stderr.waitFor(t, 0, `"msg":"razao listening"`, `"url":"https://`)
	addr = regexp.MustCompile(`https://([^"]+)`).FindStringSubmatch(line)[1]
	return addr, stderr
}

// keptConn is one keep-alive connection to the server.
type keptConn struct {
	conn *tls.Conn
	r    *bufio.Reader
}

func dialKept(t *testing.T, addr string, roots *x509.CertPool) *keptConn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keptConn{conn: c, r: bufio.NewReader(c)}
}

// serial is the serving certificate's serial this connection saw.
func (k *keptConn) serial() string {
	return fmt.Sprintf("%x", k.conn.ConnectionState().PeerCertificates[0].SerialNumber)
}

// get sends a request on the connection and reads the answer, so it
// fails if the server closed the connection.
func (k *keptConn) get(t *testing.T, path string) {
	t.Helper()
	if _, err := fmt.Fprintf(k.conn, "GET %s HTTP/1.1\r\nHost: razao\r\n\r\n", path); err != nil {
		t.Fatalf("write on the kept connection: %v", err)
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		t.Fatalf("read on the kept connection: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("GET %s on the kept connection: %d (close %v)", path, resp.StatusCode, resp.Close)
	}
}

// newHandshakeSerial is the serial a new connection is served.
func newHandshakeSerial(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	k := dialKept(t, addr, roots)
	defer k.conn.Close()
	return k.serial()
}

func tlsYAML(certFile, keyFile, poll string) string {
	return fmt.Sprintf("listen: 127.0.0.1:0\ntls:\n  cert_file: %s\n  key_file: %s\n  poll_interval: %s\n", certFile, keyFile, poll)
}

// Not parallel: it sends SIGHUP to the test process, which every
// `razao serve` running in it would take. Sequential tests run alone.
func TestServeTLSReloadsCertificateOnSIGHUP(t *testing.T) {
	serverCA := newTestCA(t, "server CA")
	roots := serverCA.pool()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first, second := serverCA.serverPair(t, 0x1001), serverCA.serverPair(t, 0x1002)
	writePair(t, certFile, keyFile, first)
	// The poll is an hour away: only SIGHUP can make the change seen.
	addr, log := serveCommand(t, tlsYAML(certFile, keyFile, "1h"))

	kept := dialKept(t, addr, roots)
	kept.get(t, "/healthz")
	if kept.serial() != "1001" {
		t.Fatalf("serial %s at start, want 1001", kept.serial())
	}
	writePair(t, certFile, keyFile, second)
	at, _ := log.waitFor(t, 0, `"msg":"tls certificate loaded"`, `"trigger":"start"`)
	syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
	at, _ = log.waitFor(t, at, `"msg":"tls certificate loaded"`, `"trigger":"SIGHUP"`, `"serial":"1002"`)
	kept.get(t, "/healthz")
	if kept.serial() != "1001" {
		t.Errorf("the open connection's certificate changed to %s", kept.serial())
	}
	if got := newHandshakeSerial(t, addr, roots); got != "1002" {
		t.Fatalf("a new handshake after SIGHUP sees serial %s, want 1002", got)
	}

	// Bad pairs keep the certificate in place: a key that is not the
	// certificate's, then a certificate that has expired.
	writeAtomic(t, keyFile, first.keyPEM)
	syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
	at, _ = log.waitFor(t, at, `"msg":"tls certificate reload failed; serving the previous one"`, `"trigger":"SIGHUP"`)
	if got := newHandshakeSerial(t, addr, roots); got != "1002" {
		t.Fatalf("after a mismatched pair a new handshake sees serial %s, want 1002 still", got)
	}
	writePair(t, certFile, keyFile, serverCA.leaf(t, leafOpts{serial: 0x1003, server: true, notAfter: time.Now().Add(-time.Minute)}))
	syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
	log.waitFor(t, at, `"msg":"tls certificate reload failed; serving the previous one"`, "expired")
	if got := newHandshakeSerial(t, addr, roots); got != "1002" {
		t.Fatalf("after an expired pair a new handshake sees serial %s, want 1002 still", got)
	}
	kept.get(t, "/healthz")
}

func TestServeTLSReloadsCertificateWhenFilesChange(t *testing.T) {
	t.Parallel()
	serverCA := newTestCA(t, "server CA")
	roots := serverCA.pool()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePair(t, certFile, keyFile, serverCA.serverPair(t, 0x2001))
	addr, log := serveCommand(t, tlsYAML(certFile, keyFile, "100ms"))

	kept := dialKept(t, addr, roots)
	kept.get(t, "/healthz")
	at, _ := log.waitFor(t, 0, `"msg":"tls certificate loaded"`, `"trigger":"start"`)
	// Written as a renewal tool does, certificate then key: a poll between
	// the two sees a mismatched pair, fails, and the next one loads it.
	writePair(t, certFile, keyFile, serverCA.serverPair(t, 0x2002))
	at, _ = log.waitFor(t, at, `"msg":"tls certificate loaded"`, `"trigger":"files changed"`, `"serial":"2002"`)
	kept.get(t, "/healthz")
	if kept.serial() != "2001" {
		t.Errorf("the open connection's certificate changed to %s", kept.serial())
	}
	if got := newHandshakeSerial(t, addr, roots); got != "2002" {
		t.Fatalf("a new handshake after the files changed sees serial %s, want 2002", got)
	}

	// A certificate whose key is not in key_file keeps the previous pair.
	writeAtomic(t, certFile, serverCA.serverPair(t, 0x2003).certPEM)
	log.waitFor(t, at, `"msg":"tls certificate reload failed; serving the previous one"`, `"trigger":"files changed"`)
	if got := newHandshakeSerial(t, addr, roots); got != "2002" {
		t.Fatalf("after a bad pair a new handshake sees serial %s, want 2002 still", got)
	}
	kept.get(t, "/healthz")
}

func TestServeRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"0.0.0.0:0", ":8080", "[::]:0", "192.0.2.10:8080"} {
		// A database that never answers: the refusal must come first. The
		// deadline only ends the command if it does not refuse.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out strings.Builder
		code := run(ctx, []string{"serve", "-listen", listen, "-database-url", "postgres://127.0.0.1:1/none?connect_timeout=1"}, &out, &out)
		cancel()
		if code != 1 || !containsAll(out.String(), []string{"refusing to listen on " + listen + " without TLS", "clear text", "tls (cert_file, key_file)", "-behind-proxy"}) {
			t.Errorf("serve -listen %s: exit %d\n%s", listen, code, out.String())
		}
	}
}

func TestListenGuardLetsLoopbackTLSAndBehindProxyThrough(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "server CA")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePair(t, certFile, keyFile, ca.serverPair(t, 1))
	for _, tc := range []struct {
		name, yaml string
		args       []string
	}{
		{"loopback v4", "listen: 127.0.0.1:8080", nil},
		{"loopback v6", "listen: '[::1]:8080'", nil},
		{"localhost", "listen: localhost:8080", nil},
		{"TLS", "listen: 0.0.0.0:8443\ntls: {cert_file: " + certFile + ", key_file: " + keyFile + "}", nil},
		{"behind_proxy in the file", "listen: 0.0.0.0:8080\nbehind_proxy: true", nil},
		{"-behind-proxy", "listen: 0.0.0.0:8080", []string{"-behind-proxy"}},
	} {
		args := append([]string{"-config", writeConfig(t, tc.yaml)}, tc.args...)
		if _, err := parseServeConfig(args, newFlagSet("serve", io.Discard), func(string) string { return "" }, true); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestTLSAndMTLSConfigErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "PSP CA")
	caFile := ca.pemFile(t)
	notPEM := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(notPEM, []byte("no certificate here\n"), 0o600)
	env := map[string]string{"PIX_SECRET": pixSecret}
	getenv := func(k string) string { return env[k] }
	pix := func(extra string) string {
		return "endpoints: [{name: pix-1, scheme: bcb-pix, merchant: m" + extra + "}]"
	}
	const behind = "behind_proxy: true\n"
	tests := []struct{ name, yaml, want string }{
		{"min_version 1.1", "tls: {cert_file: c.pem, key_file: k.pem, min_version: '1.1'}", `tls.min_version "1.1"`},
		{"min_version junk", "tls: {cert_file: c.pem, key_file: k.pem, min_version: tls13}", `tls.min_version "tls13"`},
		{"cert without key", "tls: {cert_file: c.pem}", "cert_file and key_file"},
		{"poll too fast", "tls: {cert_file: c.pem, key_file: k.pem, poll_interval: 1ms}", "tls.poll_interval"},
		{"bcb-pix with neither mTLS nor URL secret", pix(""), "endpoint pix-1: a bcb-pix endpoint needs client_ca_file (mutual TLS) or a URL secret"},
		{"client_ca_file missing", pix(", client_ca_file: /nonexistent/ca.pem"), "endpoint pix-1: client_ca_file"},
		{"client_ca_file without a certificate", pix(", client_ca_file: " + notPEM), "endpoint pix-1: client_ca_file " + notPEM + " holds no PEM certificate"},
		{"client_ca_file on another scheme", "endpoints: [{name: h, scheme: hodle, merchant: m, secrets_env: [PIX_SECRET], client_ca_file: " + caFile + "}]", "endpoint h: client_ca_file is for bcb-pix"},
		{"subjects without a CA", pix(", secrets_env: [PIX_SECRET], client_subjects: [x]"), "endpoint pix-1: client_subjects"},
		{"header without trusted proxies", behind + pix(", client_ca_file: "+caFile+", client_cert_header: X-Client-Cert"), "endpoint pix-1: client_cert_header needs trusted_proxies"},
		{"trusted proxies without header", behind + pix(", client_ca_file: "+caFile+", trusted_proxies: [10.0.0.0/8]"), "endpoint pix-1: trusted_proxies without client_cert_header"},
		{"bad CIDR", behind + pix(", client_ca_file: "+caFile+", client_cert_header: X-Client-Cert, trusted_proxies: [10.0.0.300/8]"), `endpoint pix-1: trusted_proxies: "10.0.0.300/8"`},
		{"a proxy CIDR of every IPv4 address", behind + pix(", client_ca_file: "+caFile+", client_cert_header: X-Client-Cert, trusted_proxies: [0.0.0.0/0]"), `trusts every address`},
		{"a proxy CIDR of every IPv6 address", behind + pix(", client_ca_file: "+caFile+", client_cert_header: X-Client-Cert, trusted_proxies: [\"::/0\"]"), `trusts every address`},
		{"a header name with a space", behind + pix(", client_ca_file: "+caFile+", client_cert_header: \"X Client Cert\", trusted_proxies: [10.0.0.0/8]"), `is not a header name`},
		{"mTLS without TLS or proxy header", pix(", client_ca_file: " + caFile), "endpoint pix-1: client_ca_file needs razao to end TLS"},
	}
	for _, tc := range tests {
		_, err := parseServeConfig([]string{"-config", writeConfig(t, tc.yaml)}, newFlagSet("serve", io.Discard), getenv, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), pixSecret) {
			t.Errorf("%s: the error leaks the secret: %v", tc.name, err)
		}
	}
	// What does start: a URL secret alone, mTLS behind a trusting proxy.
	for _, yaml := range []string{
		pix(", secrets_env: [PIX_SECRET]"),
		behind + pix(", client_ca_file: "+caFile+", client_cert_header: X-Client-Cert, trusted_proxies: [10.0.0.5/32]"),
	} {
		if _, err := parseServeConfig([]string{"-config", writeConfig(t, yaml)}, newFlagSet("serve", io.Discard), getenv, true); err != nil {
			t.Errorf("%s: %v", yaml, err)
		}
	}
}

// The real command stops at start on a bcb-pix endpoint that could
// authenticate nothing, naming it.
func TestServeRefusesBCBPixWithoutMTLSOrSecret(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "endpoints: [{name: pix-1, scheme: bcb-pix, merchant: m}]")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net: the refusal comes first
	defer cancel()
	var out strings.Builder
	code := run(ctx, []string{"serve", "-config", path, "-database-url", "postgres://127.0.0.1:1/none?connect_timeout=1"}, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "endpoint pix-1: a bcb-pix endpoint needs client_ca_file (mutual TLS) or a URL secret") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
}
