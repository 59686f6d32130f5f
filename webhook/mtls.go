package webhook

import (
	"regexp"

	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
)

// MTLS is an endpoint's mutual TLS: the CA bundle its PSP's client
// certificates must chain to, and optionally which of them it accepts.
// Only bcb-pix endpoints take it (the Pix API authenticates its callbacks
// by client certificate). It is inlined into the endpoint's YAML.
type MTLS struct {
	// ClientCAFile is a PEM bundle of the CA certificates the PSP's client
	// certificates chain to; only these are trusted for this endpoint.
	ClientCAFile string `yaml:"client_ca_file"`
	// ClientSubjects and ClientSANs narrow what the CA vouches for: when
	// either is set, the certificate's subject CN must be one of
	// ClientSubjects or one of its DNS or URI SANs one of ClientSANs.
	ClientSubjects []string `yaml:"client_subjects"`
	ClientSANs     []string `yaml:"client_sans"`
	// ClientCertHeader is the request header in which a proxy that ends
	// TLS passes the client certificate on, as URL-encoded PEM (nginx's
	// $ssl_client_escaped_cert). It is read only from TrustedProxies.
	ClientCertHeader string   `yaml:"client_cert_header"`
	TrustedProxies   []string `yaml:"trusted_proxies"` // CIDRs, e.g. 10.0.0.5/32
}

// clientAuth checks the client certificate of a request against one
// endpoint's CA bundle and names. Immutable after newClientAuth.
type clientAuth struct {
	cas      []*x509.Certificate
	roots    *x509.CertPool
	subjects []string
	sans     []string
	header   string // canonical; "" when no proxy passes the certificate on
	proxies  []netip.Prefix
}

// newClientAuth checks m and loads its CA bundle; nil without a
// client_ca_file. Errors name the endpoint and the key.
func newClientAuth(endpoint string, m MTLS) (*clientAuth, error) {
	if m.ClientCAFile == "" {
		if len(m.ClientSubjects)+len(m.ClientSANs)+len(m.TrustedProxies) > 0 || m.ClientCertHeader != "" {
			return nil, fmt.Errorf("%w: endpoint %s: client_subjects, client_sans, client_cert_header and trusted_proxies need client_ca_file", ErrConfig, endpoint)
		}
		return nil, nil
	}
	pemBytes, err := os.ReadFile(m.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint %s: client_ca_file: %w", ErrConfig, endpoint, err)
	}
	c := &clientAuth{roots: x509.NewCertPool(), subjects: m.ClientSubjects}
	for rest := pemBytes; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: endpoint %s: client_ca_file %s: %w", ErrConfig, endpoint, m.ClientCAFile, err)
		}
		c.cas = append(c.cas, ca)
		c.roots.AddCert(ca)
	}
	if len(c.cas) == 0 {
		return nil, fmt.Errorf("%w: endpoint %s: client_ca_file %s holds no PEM certificate", ErrConfig, endpoint, m.ClientCAFile)
	}
	c.sans = m.ClientSANs
	switch {
	case m.ClientCertHeader == "" && len(m.TrustedProxies) > 0:
		return nil, fmt.Errorf("%w: endpoint %s: trusted_proxies without client_cert_header", ErrConfig, endpoint)
	case m.ClientCertHeader != "" && len(m.TrustedProxies) == 0:
		// A header read from anyone is a certificate anyone can claim.
		return nil, fmt.Errorf("%w: endpoint %s: client_cert_header needs trusted_proxies, the addresses of the proxies that set it", ErrConfig, endpoint)
	}
	if m.ClientCertHeader != "" && !headerNameRE.MatchString(m.ClientCertHeader) {
		return nil, fmt.Errorf("%w: endpoint %s: client_cert_header %.64q is not a header name", ErrConfig, endpoint, m.ClientCertHeader)
	}
	c.header = http.CanonicalHeaderKey(m.ClientCertHeader)
	for _, cidr := range m.TrustedProxies {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("%w: endpoint %s: trusted_proxies: %q is not a CIDR (e.g. 10.0.0.5/32)", ErrConfig, endpoint, cidr)
		}
		if p.Bits() == 0 {
			// Every address: the header would be a certificate anyone can claim.
			return nil, fmt.Errorf("%w: endpoint %s: trusted_proxies: %q trusts every address; name the proxies", ErrConfig, endpoint, cidr)
		}
		c.proxies = append(c.proxies, p.Masked())
	}
	return c, nil
}

// headerNameRE is an HTTP field name (RFC 9110's token).
var headerNameRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")

// errNoClientCert says the request carried no client certificate this
// endpoint could read.
var errNoClientCert = errors.New("no client certificate")

// verify checks that r carries a client certificate that chains to this
// endpoint's CAs, is valid at now, is meant for client authentication
// and, when names are configured, names an accepted subject or SAN. The
// certificate comes from razao's own TLS handshake (which, requesting
// but not verifying certificates, has only proved the client holds its
// key) or, with no certificate there, from the header a trusted proxy
// sets. Only this endpoint's CAs are roots, so a certificate another
// endpoint's CA issued is refused here.
func (c *clientAuth) verify(r *http.Request, now time.Time) error {
	chain, err := c.presented(r)
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: c.roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("client certificate (subject %q, serial %x): %w", leaf.Subject.CommonName, leaf.SerialNumber, err)
	}
	if !c.accepts(leaf) {
		return fmt.Errorf("client certificate (subject %q, serial %x) chains to the endpoint's CA but names none of its client_subjects or client_sans",
			leaf.Subject.CommonName, leaf.SerialNumber)
	}
	return nil
}

// presented is the certificate chain of r: the handshake's, else a
// trusted proxy's header. A header from any other address is ignored.
func (c *clientAuth) presented(r *http.Request) ([]*x509.Certificate, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return r.TLS.PeerCertificates, nil
	}
	if c.header == "" {
		return nil, errNoClientCert
	}
	values := r.Header.Values(c.header)
	if len(values) == 0 {
		return nil, errNoClientCert
	}
	if !c.fromTrustedProxy(r.RemoteAddr) {
		return nil, fmt.Errorf("%w: %s ignored from %s, which is not in trusted_proxies", errNoClientCert, c.header, r.RemoteAddr)
	}
	if len(values) > 1 {
		return nil, fmt.Errorf("%d %s headers, want one", len(values), c.header)
	}
	return parseHeaderCert(values[0])
}

func (c *clientAuth) fromTrustedProxy(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	return slices.ContainsFunc(c.proxies, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// parseHeaderCert reads URL-encoded PEM, leaf first. PathUnescape, not
// QueryUnescape: a '+' of the base64 stays a '+' if the proxy left it.
func parseHeaderCert(v string) ([]*x509.Certificate, error) {
	raw, err := url.PathUnescape(v)
	if err != nil {
		return nil, fmt.Errorf("client certificate header: not URL-encoded PEM: %w", err)
	}
	var chain []*x509.Certificate
	for rest := []byte(raw); ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("client certificate header: %w", err)
		}
		chain = append(chain, cert)
	}
	if len(chain) == 0 {
		return nil, errors.New("client certificate header: no PEM certificate")
	}
	return chain, nil
}

// accepts applies client_subjects and client_sans; with neither, any
// certificate the CAs vouch for is accepted.
func (c *clientAuth) accepts(leaf *x509.Certificate) bool {
	if len(c.subjects)+len(c.sans) == 0 {
		return true
	}
	if slices.Contains(c.subjects, leaf.Subject.CommonName) {
		return true
	}
	for _, san := range c.sans {
		// DNS names compare without case, URIs exactly.
		if slices.ContainsFunc(leaf.DNSNames, func(n string) bool { return strings.EqualFold(n, san) }) ||
			slices.ContainsFunc(leaf.URIs, func(u *url.URL) bool { return u.String() == san }) {
			return true
		}
	}
	return false
}

// ClientCAs is the pool of every endpoint's client CAs, nil when no
// endpoint takes client certificates. The TLS server names them in its
// certificate request so that a PSP's client picks the right certificate;
// it does not verify against them: each endpoint verifies against its own.
func ClientCAs(eps []*Endpoint) *x509.CertPool {
	var pool *x509.CertPool
	for _, ep := range eps {
		if ep.mtls == nil {
			continue
		}
		if pool == nil {
			pool = x509.NewCertPool()
		}
		for _, ca := range ep.mtls.cas {
			pool.AddCert(ca)
		}
	}
	return pool
}

// NeedsTLSHandshake reports whether the endpoint can only get its PSP's
// client certificate from razao's own TLS handshake: it takes mutual TLS
// and no proxy passes certificates on to it.
func (ep *Endpoint) NeedsTLSHandshake() bool { return ep.mtls != nil && ep.mtls.header == "" }

// newEndpointMTLS builds cfg's client-certificate check and refuses a
// bcb-pix endpoint that could authenticate nothing: with neither mutual
// TLS nor a URL secret it would answer 401 to every callback.
func newEndpointMTLS(cfg EndpointConfig, hasSecret bool) (*clientAuth, error) {
	mtls, err := newClientAuth(cfg.Name, cfg.MTLS)
	switch {
	case err != nil:
		return nil, err
	case mtls != nil && cfg.Scheme != bcbPixScheme:
		return nil, fmt.Errorf("%w: endpoint %s: client_ca_file is for bcb-pix endpoints; scheme %s authenticates otherwise", ErrConfig, cfg.Name, cfg.Scheme)
	case mtls == nil && !hasSecret && cfg.Scheme == bcbPixScheme:
		return nil, fmt.Errorf("%w: endpoint %s: a bcb-pix endpoint needs client_ca_file (mutual TLS) or a URL secret (secrets_env, sent as ?hmac=), else it refuses every callback", ErrConfig, cfg.Name)
	}
	return mtls, nil
}

// bcbPixScheme is the scheme whose callbacks take mutual TLS and arrive
// at {url}/pix.
const bcbPixScheme = "bcb-pix"

// isPixRoute reports whether r came in on /webhooks/{endpoint}/pix, where
// the Pix API posts: it appends /pix to the URL it was given.
func isPixRoute(r *http.Request) bool {
	route := mux.CurrentRoute(r)
	if route == nil {
		return false
	}
	tpl, err := route.GetPathTemplate()
	return err == nil && strings.HasSuffix(tpl, "/"+bcbCallbackSuffix)
}

const bcbCallbackSuffix = "pix"

// callbackQuery is r's query. For bcb-pix, a PSP that appends /pix to
// the registered URL as a string, query and all, turns ?hmac=S into
// ?hmac=S/pix; that trailing /pix is the callback's suffix, not the
// secret's (the PSPs' documented workaround, ?hmac=S&ignorar=, needs no
// help: the suffix lands in a parameter nobody reads).
func callbackQuery(ep *Endpoint, r *http.Request) url.Values {
	raw := r.URL.RawQuery
	if ep.Scheme.Name() == bcbPixScheme && !isPixRoute(r) {
		raw = strings.TrimSuffix(raw, "/"+bcbCallbackSuffix)
	}
	q, _ := url.ParseQuery(raw) // as r.URL.Query(): what parses is kept
	return q
}
