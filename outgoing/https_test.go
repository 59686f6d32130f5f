package outgoing_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/events"
	"github.com/razao/razao/outgoing"
)

// Without webhooks.allow_http_targets an endpoint must be https: a plain
// http URL is refused when created and when changed to, whatever its
// address, and an https one is taken.
func TestPlainHTTPRefusedWhenSaved(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *outgoing.Config) {
		c.AllowHTTPTargets = false
		c.Resolve = func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
	})
	ctx := context.Background()
	for _, u := range []string{"http://app.example/hook", "HTTP://app.example/hook", "http://127.0.0.1:8080/"} {
		if _, err := b.svc.Create(ctx, outgoing.NewEndpoint{URL: u}); !errors.Is(err, outgoing.ErrPlainHTTP) {
			t.Errorf("create %s: %v, want ErrPlainHTTP", u, err)
		}
	}
	e, err := b.svc.Create(ctx, outgoing.NewEndpoint{URL: "https://app.example/hook"})
	if err != nil {
		t.Fatalf("create https: %v", err)
	}
	plain := "http://app.example/hook"
	if _, err := b.svc.Update(ctx, e.ID, outgoing.Patch{URL: &plain}); !errors.Is(err, outgoing.ErrPlainHTTP) {
		t.Errorf("update to http: %v, want ErrPlainHTTP", err)
	}
}

// An endpoint saved as http while it was allowed is not sent to by a
// dispatcher that no longer allows it: the attempt fails, saying why,
// and the receiver gets nothing. The same events reach an https
// receiver, verified.
func TestPlainHTTPNotSentToOnceRefused(t *testing.T) {
	t.Parallel()
	tlsRcv := newTLSReceiver(t, nil)
	roots := x509.NewCertPool()
	roots.AddCert(tlsRcv.srv.Certificate())
	b := setup(t, func(c *outgoing.Config) {
		c.AllowHTTPTargets = false
		c.RootCAs = roots
	})
	plainRcv := newReceiver(t, nil)
	plain := insertUnchecked(t, b, plainRcv.srv.URL+"/hook")
	secure := b.create(t, tlsRcv.srv.URL+"/hook")
	tlsRcv.trust(secure.Secret)
	b.run(t)
	b.appendEvents(t, events.TopicChargePaid, events.TopicAccessGranted)

	got := tlsRcv.waitUntil(func(ds []delivery) bool { return len(ds) >= 2 })
	tlsRcv.checkVerified()
	if got[0].Event.Topic != string(events.TopicChargePaid) || got[1].Event.Topic != string(events.TopicAccessGranted) {
		t.Errorf("https receiver got %s, %s", got[0].Event.Topic, got[1].Event.Topic)
	}
	var as []outgoing.Attempt
	for deadline := time.Now().Add(waitFor); len(as) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if as, err = b.svc.Attempts(context.Background(), plain, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(as) == 0 || as[0].Error == nil || !strings.Contains(*as[0].Error, "must be https") || as[0].Status != nil {
		t.Errorf("http endpoint: attempts %+v, want the plain http refused", as)
	}
	if n := len(plainRcv.deliveries()); n != 0 {
		t.Errorf("the plain http receiver got %d requests", n)
	}
}
