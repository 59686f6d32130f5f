package events_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgtest"
)

// waitFor bounds every wait for something to happen; it is a deadline for
// a test that would otherwise hang, not a claim about speed. Waits are
// needed because the horizon is the server's: a transaction that ends while
// a read classifies it still holds events back until the next read.
const waitFor = 30 * time.Second

// begin starts a transaction that is rolled back at the end of the test
// unless committed.
func begin(t *testing.T, db *sqlx.DB) *sqlx.Tx {
	t.Helper()
	tx, err := db.BeginTxx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// appendIn appends a charge.paid event marked with name inside tx.
func appendIn(t *testing.T, tx *sqlx.Tx, name string) {
	t.Helper()
	err := events.Append(context.Background(), tx, events.TopicChargePaid, "ch_"+name, map[string]string{"n": name})
	if err != nil {
		t.Fatalf("append %s: %v", name, err)
	}
}

func commit(t *testing.T, tx *sqlx.Tx) {
	t.Helper()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// appendCommitted appends an event marked with name in a transaction of its
// own and commits it.
func appendCommitted(t *testing.T, db *sqlx.DB, name string) {
	t.Helper()
	tx := begin(t, db)
	appendIn(t, tx, name)
	commit(t, tx)
}

// names returns the markers of evs, in order.
func names(t *testing.T, evs []events.Event) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = payloadName(t, ev.Payload)
	}
	return out
}

func payloadName(t *testing.T, payload []byte) string {
	t.Helper()
	var p struct{ N string }
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatalf("payload %s: %v", payload, err)
	}
	return p.N
}

func since(t *testing.T, db *sqlx.DB, cursor string) []events.Event {
	t.Helper()
	evs, err := events.Since(context.Background(), db, cursor, 0)
	if err != nil {
		t.Fatalf("since %q: %v", cursor, err)
	}
	return evs
}

// waitSince reads until at least n events after cursor are safe to publish
// and returns them all.
func waitSince(t *testing.T, db *sqlx.DB, cursor string, n int) []events.Event {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		evs := since(t, db, cursor)
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %d events after %q, want %d", waitFor, len(evs), cursor, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func equal(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// testHub is a running hub behind a test HTTP server.
type testHub struct {
	*events.Hub
	db     *sqlx.DB
	url    string
	srv    *httptest.Server
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startHub runs a hub on a fresh database, polling every poll, and waits
// until it listens. configure, if not nil, adjusts the hub and server
// before they start.
func startHub(t *testing.T, poll time.Duration, configure func(*events.Hub, *http.Server)) *testHub {
	t.Helper()
	return startHubAuth(t, poll, false, configure)
}

// startAuthedHub is startHub with the hub behind the API's bearer-token
// authentication and its read scope, as razao serve mounts it.
func startAuthedHub(t *testing.T, poll time.Duration, configure func(*events.Hub, *http.Server)) *testHub {
	t.Helper()
	return startHubAuth(t, poll, true, configure)
}

// lockOutbox locks the outbox from a pool of its own, so that every read
// of the hub waits on it, and returns the transaction that holds the lock
// until it ends (at the latest with the test) and that pool, for queries
// beside it.
func lockOutbox(t *testing.T, h *testHub) (*sqlx.Tx, *sqlx.DB) {
	t.Helper()
	gatePool, err := sqlx.Open("postgres", h.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gatePool.Close() })
	gate := begin(t, gatePool)
	gate.MustExec(`LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE`)
	return gate, gatePool
}

func startHubAuth(t *testing.T, poll time.Duration, authed bool, configure func(*events.Hub, *http.Server)) *testHub {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := &testHub{Hub: events.NewHub(db, url, logger), db: db, url: url, done: make(chan error, 1)}
	h.PollInterval = poll
	var handler http.Handler = h.Hub
	if authed {
		handler = auth.Middleware(db, logger)(auth.Require(auth.Read)(h.Hub))
	}
	h.srv = httptest.NewUnstartedServer(handler)
	if configure != nil {
		configure(h.Hub, h.srv.Config)
	}
	h.srv.Start()
	t.Cleanup(h.srv.Close) // registered first so it runs after the hub stops
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.Run(ctx) }()
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case <-h.Listening():
	case err := <-h.done:
		t.Fatalf("hub stopped before listening: %v", err)
	case <-time.After(waitFor):
		t.Fatal("hub not listening")
	}
	return h
}

// stop ends Run, waits for it and returns its error; later calls return
// the same error at once.
func (h *testHub) stop() error {
	h.once.Do(func() {
		h.cancel()
		h.err = <-h.done
	})
	return h.err
}

// frame is one Server-Sent Event.
type frame struct{ ID, Event, Data string }

// sseClient reads frames from a stream in the background.
type sseClient struct {
	frames <-chan frame
}

// openStream connects to the hub with an optional query, resuming after
// lastID when it is set.
func openStream(t *testing.T, h *testHub, query, lastID string) *sseClient {
	t.Helper()
	return openStreamAs(t, h, "", query, lastID)
}

// openStreamAs is openStream with a bearer token ("" for none).
func openStreamAs(t *testing.T, h *testHub, token, query, lastID string) *sseClient {
	t.Helper()
	resp := getAs(t, h, token, query, lastID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	ch := make(chan frame)
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	go readFrames(resp, ch, quit)
	return &sseClient{frames: ch}
}

// get requests the stream with an optional query and Last-Event-ID; the
// request is cancelled when the test ends.
func get(t *testing.T, h *testHub, query, lastID string) *http.Response {
	t.Helper()
	return getAs(t, h, "", query, lastID)
}

// getAs is get with a bearer token ("" for none).
func getAs(t *testing.T, h *testHub, token, query, lastID string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readFrames parses the SSE wire format, skipping comments, until the body
// ends or quit closes; then it closes ch.
func readFrames(resp *http.Response, ch chan<- frame, quit <-chan struct{}) {
	defer close(ch)
	sc := bufio.NewScanner(resp.Body)
	var f frame
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ": ")
		switch {
		case line == "":
			if f != (frame{}) {
				select {
				case ch <- f:
				case <-quit:
					return
				}
			}
			f = frame{}
		case strings.HasPrefix(line, ":"):
		case field == "id":
			f.ID = value
		case field == "event":
			f.Event = value
		case field == "data":
			f.Data = value
		}
	}
}

// next returns the next frame, failing if none comes before the deadline.
func (c *sseClient) next(t *testing.T) frame {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			t.Fatal("stream ended, want a frame")
		}
		return f
	case <-time.After(waitFor):
		t.Fatalf("no frame within %v", waitFor)
	}
	return frame{}
}

// ended waits for the stream to end, failing on a frame or the deadline.
func (c *sseClient) ended(t *testing.T) {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		if ok {
			t.Fatalf("got frame %+v, want the stream to end", f)
		}
	case <-time.After(waitFor):
		t.Fatalf("stream still open after %v", waitFor)
	}
}
