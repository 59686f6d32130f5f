package console

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/events"
)

// withHub returns a fixture whose console serves the events of a running
// hub, as razao serve wires it.
func withHub(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.runHub(t)
	return f
}

// runHub runs f's hub until the test ends. The hub's settings are to be
// changed before.
func (f *fixture) runHub(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// appendEvent commits one event, as the webhook processor does with the
// charge it books.
func appendEvent(t *testing.T, f *fixture, topic events.Topic, charge string) {
	t.Helper()
	tx, err := f.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := events.AppendAll(context.Background(), tx, events.Draft{Topic: topic, ChargeID: charge, Payload: map[string]string{"charge_id": charge}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// sse is an open event stream.
type sse struct {
	res *http.Response
	r   *bufio.Reader
}

func openStream(t *testing.T, ctx context.Context, c *client, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.srv.URL+"/console/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return &sse{res: res, r: bufio.NewReader(res.Body)}
}

// next returns the next event's id, topic and data.
func (s *sse) next(t *testing.T) (id, topic, data string) {
	t.Helper()
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			topic = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && topic != "":
			return id, topic, data
		}
	}
}

func TestLiveStripStreamsEventsWithTheSessionAndResumes(t *testing.T) {
	t.Parallel()
	f := withHub(t)
	srv := serve(t, f.router)

	anon := newClient(t, srv)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if res, _ := anon.do(req); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("stream without a session: %d", res.StatusCode)
	}

	c := signedIn(t, srv, f.read)
	// Bounds the test if an event never came; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openStream(t, ctx, c, "")
	appendEvent(t, f, events.TopicChargePaid, "order-<1>")
	id, topic, data := s.next(t)
	if topic != "charge.paid" || !strings.Contains(data, `"charge_id":"order-\u003c1\u003e"`) || id == "" {
		t.Fatalf("first event: %q %q %q", id, topic, data)
	}
	s.res.Body.Close()

	// Reconnecting with Last-Event-ID resumes after the first event.
	appendEvent(t, f, events.TopicChargeRefunded, "order-2")
	s = openStream(t, ctx, c, id)
	if _, topic, data := s.next(t); topic != "charge.refunded" || !strings.Contains(data, "order-2") {
		t.Fatalf("after reconnect: %q %q, want the refund only", topic, data)
	}
}

// Signing out cuts the session's open event stream at the next keepalive,
// though the session's token stays live (other sessions of it go on): the
// stream belongs to the session, not only to the token.
func TestSignOutCutsTheSessionsEventStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.hub.KeepAlive = 20 * time.Millisecond
	f.runHub(t)
	srv := serve(t, f.router)

	// Bounds the test if the stream were never cut; nothing is timed.
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	c, other := signedIn(t, srv, f.read), signedIn(t, srv, f.read)
	s, kept := openStream(t, sctx, c, ""), openStream(t, sctx, other, "")
	// Both streams are open and delivering.
	appendEvent(t, f, events.TopicChargePaid, "before-sign-out")
	for _, st := range []*sse{s, kept} {
		if _, topic, _ := st.next(t); topic != "charge.paid" {
			t.Fatalf("first event: %q", topic)
		}
	}

	c.signOut()
	// The signed-out stream ends (keepalive comments, then EOF), without
	// the event appended after the sign-out.
	appendEvent(t, f, events.TopicChargeRefunded, "after-sign-out")
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if sctx.Err() != nil {
				t.Fatal("the signed-out session's stream was still open a minute after sign-out")
			}
			break
		}
		if strings.Contains(line, "after-sign-out") {
			// Delivered before the cut took effect: allowed, the cut is
			// at the next keepalive, not at once.
			continue
		}
	}
	// The other session of the same token keeps its stream.
	if _, topic, data := kept.next(t); topic != "charge.refunded" || !strings.Contains(data, "after-sign-out") {
		t.Fatalf("other session's stream: %q %q", topic, data)
	}
}
