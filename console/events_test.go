package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
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
	srv := httptest.NewServer(f.router)
	defer srv.Close()

	anon := newClient(t, srv)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if res, _ := anon.do(req); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("stream without a session: %d", res.StatusCode)
	}

	c := newClient(t, srv)
	c.signIn(f.read)
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
