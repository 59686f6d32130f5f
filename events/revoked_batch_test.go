package events_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/events"
)

// A stream whose token is revoked is sent no event committed after the
// revocation: the read that finds the event checks the tokens of the open
// streams after it, and the stream ends instead of sending it. Nothing
// else could end it here: the keepalive (and its re-check) and the poll
// are an hour away; the streams wake on the Notifier's NOTIFY. Another
// token's stream gets the event.
func TestRevokedTokensStreamEndsBeforeTheNextBatch(t *testing.T) {
	t.Parallel()
	h := startAuthedHub(t, time.Hour, func(h *events.Hub, _ *http.Server) { h.KeepAlive = time.Hour })
	n := events.NewNotifier(h.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.Run(ctx)
	a, aID := newToken(t, h, "app-a")
	b, _ := newToken(t, h, "app-b")
	revoked, live := openStreamAs(t, h, a, "", ""), openStreamAs(t, h, b, "", "")
	appendCommitted(t, h.db, "before")
	n.Kick()
	for name, c := range map[string]*sseClient{"revoked": revoked, "live": live} {
		if got := payloadName(t, decode(t, c.next(t)).Payload); got != "before" {
			t.Fatalf("%s token's stream: %s, want before", name, got)
		}
	}
	if _, err := auth.Revoke(context.Background(), h.db, aID); err != nil {
		t.Fatal(err)
	}
	appendCommitted(t, h.db, "after")
	n.Kick()
	if got := payloadName(t, decode(t, live.next(t)).Payload); got != "after" {
		t.Fatalf("live token's stream: %s, want after", got)
	}
	revoked.ended(t)
}
