package outgoing_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/razao/razao/events"
	"github.com/razao/razao/outgoing"
)

// Only global unicast addresses are sent to, and an IPv4 address carried
// in an IPv6 one is judged itself.
func TestRefusedAddresses(t *testing.T) {
	t.Parallel()
	for addr, refused := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "fd00:ec2::254": true, "fc00::1": true, "0.0.0.0": true, "::": true,
		"100.64.0.1": true, "224.0.0.1": true, "ff02::1": true, "::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true,
		"64:ff9b::a9fe:a9fe": true, "2002:7f00:1::1": true, "255.255.255.255": true, "198.18.0.1": true,
		"93.184.216.34": false, "8.8.8.8": false, "2606:4700::1111": false, "100.128.0.1": false, "64:ff9b::808:808": false,
		// IPv4 embedded in forms a translator or tunnel reaches, and
		// the ranges outside global unicast.
		"::ffff:0:a9fe:a9fe": true, "::ffff:0:808:808": true, "64:ff9b:1::a9fe:a9fe": true, "64:ff9b:1::808:808": true,
		"::a9fe:a9fe": true, "::808:808": true, "fec0::1": true, "2001::a9fe:a9fe": true, "2001:0:4136:e378:8000:63bf:3fff:fdd2": true,
		"2001:db8::1": true, "3fff::1": true, "2002:a9fe:a9fe::1": true, "2002:808:808::1": false, "4000::1": true,
		"192.0.2.1": true, "203.0.113.9": true, "198.51.100.1": true, "fe80::1%eth0": true, "2a00:1450:4001:80b::200e": false,
	} {
		if got := outgoing.Refused(netip.MustParseAddr(addr)); got != refused {
			t.Errorf("Refused(%s) = %v, want %v", addr, got, refused)
		}
	}
}

// Creating an endpoint whose URL names a refused address, or a name that
// resolves to one, is refused; with private targets allowed it is not.
func TestCreateRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) {
		c.AllowPrivateTargets = false
		c.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "inside.example" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
	})
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://[::1]/", "http://169.254.169.254/latest/meta-data",
		"http://localhost/", "https://inside.example/hook", "http://10.0.0.5/", "http://[fd00:ec2::254]/"} {
		if _, err := b.svc.Create(context.Background(), outgoing.NewEndpoint{URL: u}); !errors.Is(err, outgoing.ErrRefusedTarget) {
			t.Errorf("%s: %v, want ErrRefusedTarget", u, err)
		}
	}
	for _, u := range []string{"ftp://x.example/", "http://user:pw@x.example/", "http:///nohost", "http://x.example/#frag", ""} {
		if _, err := b.svc.Create(context.Background(), outgoing.NewEndpoint{URL: u}); !errors.Is(err, outgoing.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", u, err)
		}
	}
	if _, err := b.svc.Create(context.Background(), outgoing.NewEndpoint{URL: "https://hooks.example/razao"}); err != nil {
		t.Errorf("a public target: %v", err)
	}
}

// The check is made on the address dialled: a receiver on 127.0.0.1,
// reached by its address, by a name that resolves to it, or by a name
// whose DNS answer changes between the check at creation and the dial,
// is never called; each attempt fails with the address refused.
func TestDeliveryRefusesPrivateAddressesAtDial(t *testing.T) {
	t.Parallel()
	var lookups atomic.Int64
	rcv := newReceiver(t, nil)
	port := rcv.srv.URL[strings.LastIndex(rcv.srv.URL, ":"):]
	b := setup(t, func(c *outgoing.Config) {
		c.AllowPrivateTargets = false
		c.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "loopback.example":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "rebind.example":
				// Public when checked at creation, loopback when dialled.
				if lookups.Add(1) == 1 {
					return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
				}
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		}
	})
	rebind, err := b.svc.Create(context.Background(), outgoing.NewEndpoint{URL: "http://rebind.example" + port + "/hook"})
	if err != nil {
		t.Fatalf("the name resolved to a public address when checked: %v", err)
	}
	// The other two are stored as an older release or a changed config
	// would have let them be: straight into the table.
	direct := insertUnchecked(t, b, rcv.srv.URL)
	named := insertUnchecked(t, b, "http://loopback.example"+port+"/")
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid)
	for _, id := range []int64{rebind.ID, direct, named} {
		deadline := time.Now().Add(waitFor)
		var as []outgoing.Attempt
		for len(as) == 0 && time.Now().Before(deadline) {
			if as, err = b.svc.Attempts(context.Background(), id, 0, 0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(as) == 0 || as[0].Error == nil || !strings.Contains(*as[0].Error, "refused address: 127.0.0.1") || as[0].Status != nil {
			t.Errorf("endpoint %d: attempts %+v, want the address refused", id, as)
		}
	}
	if n := len(rcv.deliveries()); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
}

// insertUnchecked creates an endpoint with private targets allowed, as
// a development config would, for a dispatcher that refuses them.
func insertUnchecked(t *testing.T, b *bundle, url string) int64 {
	t.Helper()
	dev := b.svc
	dev.Config.AllowPrivateTargets = true
	dev.Config.AllowHTTPTargets = true
	e, err := dev.Create(context.Background(), outgoing.NewEndpoint{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}
