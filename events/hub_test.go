package events_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
)

// wireEvent is the data of a frame as the selling app decodes it.
type wireEvent struct {
	ID        int64           `json:"id"`
	Topic     string          `json:"topic"`
	ChargeID  *string         `json:"charge_id"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"created_at"`
}

func decode(t *testing.T, f frame) wireEvent {
	t.Helper()
	var w wireEvent
	if err := json.Unmarshal([]byte(f.Data), &w); err != nil {
		t.Fatalf("frame data %q: %v", f.Data, err)
	}
	if f.Event != w.Topic || f.ID == "" || w.ID == 0 || w.CreatedAt.IsZero() {
		t.Fatalf("frame %+v: want event = topic, an id and created_at", f)
	}
	return w
}

func TestStreamDeliversCommittedEventsAndResumesAfterLastEventID(t *testing.T) {
	t.Parallel()
	h := startHub(t, 50*time.Millisecond, nil)
	c := openStream(t, h, "", "")
	ghost := begin(t, h.db)
	appendIn(t, ghost, "ghost")
	if err := ghost.Rollback(); err != nil {
		t.Fatal(err)
	}
	appendCommitted(t, h.db, "one")
	appendCommitted(t, h.db, "two")

	first, second := c.next(t), c.next(t)
	for i, f := range []frame{first, second} {
		w := decode(t, f)
		want := []string{"one", "two"}[i]
		if name := payloadName(t, w.Payload); name != want || w.Topic != "charge.paid" || w.ChargeID == nil || *w.ChargeID != "ch_"+want {
			t.Fatalf("frame %d: %+v, want %s", i, w, want)
		}
	}

	again := openStream(t, h, "", first.ID)
	if f := again.next(t); f.ID != second.ID {
		t.Fatalf("resumed after %s: got %s, want %s", first.ID, f.ID, second.ID)
	}
	appendCommitted(t, h.db, "three")
	if name := payloadName(t, decode(t, again.next(t)).Payload); name != "three" {
		t.Fatalf("next after resuming: %s, want three", name)
	}
}

func TestStreamResumesAfterQueryCursor(t *testing.T) {
	t.Parallel()
	h := startHub(t, 50*time.Millisecond, nil)
	appendCommitted(t, h.db, "one")
	appendCommitted(t, h.db, "two")
	evs := waitSince(t, h.db, "", 2)

	c := openStream(t, h, "?after="+evs[0].Cursor, "")
	if f := c.next(t); f.ID != evs[1].Cursor {
		t.Fatalf("got %s, want %s", f.ID, evs[1].Cursor)
	}
}

// With polling all but off, only the NOTIFY the Notifier sends after the
// commit can wake the stream before the deadline.
func TestStreamIsWokenByNotification(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, nil)
	n := events.NewNotifier(h.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.Run(ctx)
	c := openStream(t, h, "", "")
	appendCommitted(t, h.db, "now")
	n.Kick()
	if name := payloadName(t, decode(t, c.next(t)).Payload); name != "now" {
		t.Fatalf("got %s, want now", name)
	}
	appendCommitted(t, h.db, "later")
	n.Kick()
	if name := payloadName(t, decode(t, c.next(t)).Payload); name != "later" {
		t.Fatalf("got %s, want later", name)
	}
}

// Kicks within MinInterval of a NOTIFY share the next one: none is lost,
// and a burst costs one NOTIFY, not one per kick.
func TestNotifierSpacesItsNotifications(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	l := pq.NewListener(url, time.Second, time.Second, nil)
	defer l.Close()
	if err := l.Listen(events.Channel); err != nil {
		t.Fatal(err)
	}
	n := events.NewNotifier(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	n.MinInterval = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.Run(ctx)

	expect := func(what string, want bool, within time.Duration) {
		t.Helper()
		select {
		case <-l.Notify:
			if !want {
				t.Fatalf("%s: a notification came, want none", what)
			}
		case <-time.After(within):
			if want {
				t.Fatalf("%s: no notification within %v", what, within)
			}
		}
	}
	n.Kick()
	expect("first kick", true, 5*time.Second)
	for range 10 {
		n.Kick()
	}
	expect("a burst inside MinInterval", false, 300*time.Millisecond)
	expect("the burst, after MinInterval", true, 5*time.Second)
	expect("nothing left to announce", false, 500*time.Millisecond)

	// A kick still waiting when Run stops is announced on the way out.
	n.Kick()
	expect("a kick inside MinInterval", false, 100*time.Millisecond)
	cancel()
	expect("the kick, when Run stops", true, 5*time.Second)
}

// The service's http.Server fails writes once WriteTimeout has passed since
// the request; a stream must outlive it (and ReadTimeout).
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	h := startHub(t, 50*time.Millisecond, func(h *events.Hub, s *http.Server) {
		h.KeepAlive = 50 * time.Millisecond
		s.ReadTimeout, s.WriteTimeout = timeout, timeout
	})
	c := openStream(t, h, "", "")
	time.Sleep(4 * timeout)
	appendCommitted(t, h.db, "late")
	if name := payloadName(t, decode(t, c.next(t)).Payload); name != "late" {
		t.Fatalf("got %s, want late", name)
	}
}

func TestStreamRejectsMalformedCursor(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, nil)
	for _, tc := range []struct{ query, lastID string }{
		{"", "12"},
		{"?after=1-x", ""},
		{"?after=1-1", "bad"}, // the header wins over the query
	} {
		resp := get(t, h, tc.query, tc.lastID)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%+v: status %d %s, want 400 problem", tc, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

func TestStreamRefusedPastMaxSubscribers(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, func(h *events.Hub, _ *http.Server) { h.MaxSubscribers = 1 })
	openStream(t, h, "", "")
	resp := get(t, h, "", "")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream: status %d, want 503 with Retry-After", resp.StatusCode)
	}
}

func TestCloseEndsOpenStreams(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, nil)
	c := openStream(t, h, "", "")
	h.Close()
	c.ended(t)
	if resp := get(t, h, "", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Close: status %d, want 503", resp.StatusCode)
	}
}

// A server shutting down cancels Run; its streams must end or Shutdown
// would wait for them forever.
func TestRunEndingEndsOpenStreams(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, nil)
	c := openStream(t, h, "", "")
	if err := h.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	c.ended(t)
}
