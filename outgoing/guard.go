package outgoing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrRefusedAddress is the dial error for an address razao does not send
// to; an attempt that meets it is a failed attempt like any other.
var ErrRefusedAddress = errors.New("refused address")

// refused4 are the IPv4 ranges no webhook goes to unless the config
// allows private targets, besides what netip classifies (loopback,
// RFC 1918 private, link-local, multicast, unspecified, broadcast): "this
// network", the shared address space of carrier-grade NAT, the IETF
// protocol assignments, the documentation ranges, the 6to4 relay
// anycast, the benchmarking range and the reserved class E.
var refused4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// IPv6 is judged by an allow-list: only global unicast (2000::/3) is
// sent to, less its special ranges, and the well-known NAT64 prefix,
// judged on the IPv4 address it carries. Everything else is refused:
// loopback, unspecified, ULA, link- and site-local, multicast, the
// IPv4-compatible (::/96) and SIIT (::ffff:0:0/96) forms, the
// local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215), whose translator
// may reach a private network, and whatever is allocated later.
var (
	global6 = netip.MustParsePrefix("2000::/3")
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToF  = netip.MustParsePrefix("2002::/16")
	// refused6 are ranges of 2000::/3 that are not plain global
	// unicast: the IETF protocol assignments (Teredo 2001::/32
	// among them, whose address hides an IPv4 one), the
	// documentation ranges.
	refused6 = []netip.Prefix{
		netip.MustParsePrefix("2001::/23"),
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("3fff::/20"),
	}
)

// Refused reports whether a webhook may not be sent to addr. The cloud
// metadata address 169.254.169.254 is link-local, AWS's fd00:ec2::254 a
// ULA. An IPv6 address that carries an IPv4 one a translator or tunnel
// reaches (mapped, NAT64, 6to4) is judged on the IPv4 address.
func Refused(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return true
	}
	if addr.Is4() {
		if !addr.IsGlobalUnicast() || addr.IsPrivate() {
			return true
		}
		for _, p := range refused4 {
			if p.Contains(addr) {
				return true
			}
		}
		return false
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return Refused(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case !global6.Contains(addr) || addr.Zone() != "":
		return true
	case sixToF.Contains(addr):
		return Refused(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, p := range refused6 {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Guard dials webhook targets. The check is made in the dialer's Control
// function, on the address the socket is about to connect to: whatever
// name was resolved, however often its answer changes (DNS rebinding),
// the address actually dialled is the one judged.
type Guard struct {
	AllowPrivate bool
	// Resolve resolves a host name; nil: the system's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	Timeout time.Duration // connection timeout
}

func (g Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if g.Resolve != nil {
		return g.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// control refuses the connection before it is made, on its address.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrRefusedAddress, address, err)
	}
	if Refused(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, ap.Addr().Unmap())
	}
	return nil
}

// DialContext resolves addr's host and dials its addresses in turn, each
// through control.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	d := net.Dialer{Timeout: g.Timeout, Control: g.control}
	var errs []error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Check refuses a target URL whose host is, or now resolves to, a refused
// address: an early answer when an endpoint is created or changed. It
// proves nothing about later: every dial is checked again (control). A
// name that does not resolve now is let through; its deliveries will
// fail until it does.
func (g Guard) Check(ctx context.Context, u *url.URL) error {
	if g.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return fmt.Errorf("%w: %s", ErrRefusedTarget, host)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil
	}
	for _, ip := range ips {
		switch {
		case !Refused(ip):
		case ip.String() == host:
			return fmt.Errorf("%w: %s", ErrRefusedTarget, ip.Unmap())
		default:
			return fmt.Errorf("%w: %s resolves to %s", ErrRefusedTarget, host, ip.Unmap())
		}
	}
	return nil
}

// parseTarget checks a webhook URL's form: http or https, a host, no
// credentials (they would be shown to every admin and logged with the
// URL), no fragment.
func parseTarget(raw string) (*url.URL, error) {
	if raw == "" || len(raw) > MaxURLLength {
		return nil, fmt.Errorf("%w: url must be 1 to %d bytes", ErrInvalid, MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: url: not a URL", ErrInvalid)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: url must be http or https", ErrInvalid)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: url has no host", ErrInvalid)
	case u.User != nil:
		return nil, fmt.Errorf("%w: url must not carry credentials", ErrInvalid)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%w: url must not have a fragment", ErrInvalid)
	}
	for _, r := range raw {
		if r < 0x21 || r == 0x7f {
			return nil, fmt.Errorf("%w: url has a space or control character", ErrInvalid)
		}
	}
	return u, nil
}
