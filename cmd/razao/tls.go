package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/razao/razao/webhook"
)

// tlsConfig is the tls section of the config file: razao ends TLS itself.
type tlsConfig struct {
	CertFile     string        `yaml:"cert_file"`     // PEM: the certificate, then its intermediates
	KeyFile      string        `yaml:"key_file"`      // PEM private key
	MinVersion   string        `yaml:"min_version"`   // "1.2" (default) or "1.3"
	PollInterval time.Duration `yaml:"poll_interval"` // how often the files are checked for a change (default 10s)
}

// tlsServing is the checked tls section.
type tlsServing struct {
	certFile, keyFile string
	minVersion        uint16
	poll              time.Duration
}

const defaultTLSPoll = 10 * time.Second

// build checks the tls section; nil when it is absent. The files are read
// by newServer, which refuses to start on a bad pair.
func (c tlsConfig) build() (*tlsServing, error) {
	if c == (tlsConfig{}) {
		return nil, nil
	}
	if c.CertFile == "" || c.KeyFile == "" {
		return nil, fmt.Errorf("config: tls needs both cert_file and key_file")
	}
	s := &tlsServing{certFile: c.CertFile, keyFile: c.KeyFile, minVersion: tls.VersionTLS12, poll: defaultTLSPoll}
	switch c.MinVersion {
	case "", "1.2":
	case "1.3":
		s.minVersion = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("config: tls.min_version %q: must be \"1.2\" or \"1.3\"", c.MinVersion)
	}
	if c.PollInterval != 0 {
		if c.PollInterval < 100*time.Millisecond {
			return nil, fmt.Errorf("config: tls.poll_interval %s: must be at least 100ms", c.PollInterval)
		}
		s.poll = c.PollInterval
	}
	return s, nil
}

// checkExposure refuses to serve plain HTTP beyond loopback unless the
// operator says TLS ends at a proxy in front: API bearer tokens and PSP
// callbacks would cross the network in clear text.
func checkExposure(listen string, tlsOn, behindProxy bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("config: listen %q: %w", listen, err)
	}
	if tlsOn || behindProxy || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("config: refusing to listen on %s without TLS: beyond loopback, API bearer tokens and PSP callbacks would cross the network in clear text. "+
		"Configure tls (cert_file, key_file) in the config file, or, if a proxy in front of razao terminates TLS, say so with -behind-proxy (behind_proxy: true)", listen)
}

// isLoopback reports whether host names only this machine: "localhost" or
// a loopback address. An empty host (":8080") is every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkMTLSReachable refuses an endpoint whose client certificates could
// never arrive: it takes them only from a TLS handshake, and razao ends
// no TLS.
func checkMTLSReachable(eps []*webhook.Endpoint, tlsOn bool) error {
	if tlsOn {
		return nil
	}
	for _, ep := range eps {
		if ep.NeedsTLSHandshake() {
			return fmt.Errorf("config: endpoint %s: client_ca_file needs razao to end TLS (tls: cert_file, key_file), or, behind a proxy that ends it, client_cert_header and trusted_proxies", ep.Name)
		}
	}
	return nil
}

// certReloader holds the serving certificate and replaces it when its
// files change or on SIGHUP. New handshakes read the current one through
// GetCertificate; open connections keep theirs. A pair that fails to load
// leaves the previous one in place.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time
	cert              atomic.Pointer[tls.Certificate]
	seen              fileStamp // of the files when last loaded or tried; watch's alone
}

// newCertReloader loads the pair once: a bad pair at start is an error.
func newCertReloader(s *tlsServing, log *slog.Logger, now func() time.Time) (*certReloader, error) {
	c := &certReloader{certFile: s.certFile, keyFile: s.keyFile, log: log, now: now}
	c.seen = c.stamp()
	if err := c.load("start"); err != nil {
		return nil, err
	}
	return c, nil
}

// serverTLS is the server's TLS configuration. With endpoints that take
// client certificates it requests one (never requires or verifies it: the
// API's clients have none, and each endpoint verifies against its own CA
// bundle, so that a certificate another endpoint's CA issued is refused,
// with a 401 rather than a failed handshake), naming every endpoint's CAs
// so that a PSP's client picks the right certificate.
func (c *certReloader) serverTLS(minVersion uint16, eps []*webhook.Endpoint) *tls.Config {
	cfg := &tls.Config{
		MinVersion:     minVersion,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cert.Load(), nil },
	}
	if pool := webhook.ClientCAs(eps); pool != nil {
		cfg.ClientAuth = tls.RequestClientCert
		cfg.ClientCAs = pool
	}
	return cfg
}

func (c *certReloader) load(trigger string) error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("tls: cert_file %s, key_file %s: %w", c.certFile, c.keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil { // GODEBUG=x509keypairleaf=0
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("tls: cert_file %s: %w", c.certFile, err)
		}
	}
	if now := c.now(); now.After(leaf.NotAfter) {
		return fmt.Errorf("tls: cert_file %s: the certificate (serial %x) expired at %s", c.certFile, leaf.SerialNumber, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	c.cert.Store(&pair)
	c.log.Info("tls certificate loaded", "trigger", trigger, "serial", fmt.Sprintf("%x", leaf.SerialNumber),
		"subject", leaf.Subject.CommonName, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// reload loads the pair again, keeping the current one if it fails.
func (c *certReloader) reload(trigger string) {
	if err := c.load(trigger); err != nil {
		c.log.Error("tls certificate reload failed; serving the previous one", "trigger", trigger, "error", err)
	}
}

// watch reloads on every signal from hup and whenever a poll finds either
// file changed, until ctx ends. The stamp is taken before the files are
// read, so a write that lands during a load is seen at the next poll; a
// pair half-written when polled fails to load (and is logged once) and
// loads at the poll after its second file is written.
func (c *certReloader) watch(ctx context.Context, every time.Duration, hup <-chan os.Signal) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			c.seen = c.stamp()
			c.reload("SIGHUP")
		case <-t.C:
			if st := c.stamp(); !st.same(c.seen) {
				c.seen = st
				c.reload("files changed")
			}
		}
	}
}

// fileStamp identifies the versions of the two files: which file (a
// rename swaps it), its size and its modification time. A missing file
// stamps as nil.
type fileStamp struct{ cert, key os.FileInfo }

func (c *certReloader) stamp() fileStamp {
	var s fileStamp
	s.cert, _ = os.Stat(c.certFile)
	s.key, _ = os.Stat(c.keyFile)
	return s
}

func (s fileStamp) same(o fileStamp) bool { return sameFile(s.cert, o.cert) && sameFile(s.key, o.key) }

func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
