package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/auth"
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
//
// Nothing here waits for a time and then judges: the burst's NOTIFY must
// come no sooner than MinInterval after the first kick (it cannot be sent
// before the first NOTIFY, which follows that kick, plus the spacing),
// however late the notifications reach the test; and the kick held when
// Run stops comes from a notifier spaced by an hour, so only its way out
// can send it.
func TestNotifierSpacesItsNotifications(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	l := pq.NewListener(url, time.Second, time.Second, nil)
	defer l.Close()
	if err := l.Listen(events.Channel); err != nil {
		t.Fatal(err)
	}
	start := func(spacing time.Duration) (*events.Notifier, context.CancelFunc) {
		n := events.NewNotifier(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
		n.MinInterval = spacing
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { n.Run(ctx); close(done) }()
		return n, func() { cancel(); <-done }
	}
	expect := func(what string) time.Time {
		t.Helper()
		select {
		case <-l.Notify:
			return time.Now()
		case <-time.After(waitFor): // a safety net
			t.Fatalf("%s: no notification within %v", what, waitFor)
			return time.Time{}
		}
	}
	// Nothing may come: a wait that can only let a wrong NOTIFY through.
	expectNone := func(what string, d time.Duration) {
		t.Helper()
		select {
		case <-l.Notify:
			t.Fatalf("%s: a notification came, want none", what)
		case <-time.After(d):
		}
	}

	const spacing = time.Second
	n, stop := start(spacing)
	kicked := time.Now()
	n.Kick()
	expect("first kick")
	for range 10 {
		n.Kick()
	}
	if at := expect("the burst"); at.Sub(kicked) < spacing {
		t.Fatalf("the burst was announced %v after the first kick, within MinInterval (%v)", at.Sub(kicked), spacing)
	}
	expectNone("nothing left to announce", 500*time.Millisecond)
	stop()

	// A kick still waiting when Run stops is announced on the way out.
	n, stop = start(time.Hour)
	n.Kick()
	expect("first kick of a notifier spaced by an hour")
	n.Kick()
	stop()
	expect("the kick, when Run stops")
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

// newToken creates a read token and returns its plaintext and id.
func newToken(t *testing.T, h *testHub, name string) (string, int64) {
	t.Helper()
	plain, tok, err := auth.Create(context.Background(), h.db, name, []auth.Scope{auth.Read})
	if err != nil {
		t.Fatal(err)
	}
	return plain, tok.ID
}

// One read token must not take every stream slot: past its own limit it is
// told so (429), while another token still gets a stream.
func TestTokenOverItsStreamLimitGets429(t *testing.T) {
	t.Parallel()
	h := startAuthedHub(t, time.Hour, func(h *events.Hub, _ *http.Server) { h.MaxPerToken = 2 })
	a, _ := newToken(t, h, "app-a")
	b, _ := newToken(t, h, "app-b")
	openStreamAs(t, h, a, "", "")
	openStreamAs(t, h, a, "", "")
	resp := getAs(t, h, a, "", "")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream of one token: status %d %s, Retry-After %q; want 429 problem with Retry-After",
			resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"))
	}
	openStreamAs(t, h, b, "", "")
}

// Streams past the hub's byte budget fall behind and still receive every
// event, once and in order, with no notification to wake them (the hub
// paces itself), while they keep sharing their reads.
func TestStreamsPastTheByteBudgetReceiveEveryEventInOrder(t *testing.T) {
	t.Parallel()
	const streams, total = 8, 120
	h := startHub(t, time.Hour, func(h *events.Hub, _ *http.Server) { h.MaxBytesPerSecond = 64 << 10 })
	clients := make([]*sseClient, streams)
	for i := range clients {
		clients[i] = openStream(t, h, "", "")
	}
	for i := 0; i < total; i++ {
		appendCommitted(t, h.db, fmt.Sprint(i))
	}
	// One notification, then nothing: the paced wakes must do the rest.
	notifier := events.NewNotifier(h.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go notifier.Run(ctx)
	notifier.Kick()
	for i, c := range clients {
		for n := 0; n < total; n++ {
			if got := payloadName(t, decode(t, c.next(t)).Payload); got != fmt.Sprint(n) {
				t.Fatalf("stream %d: event %s, want %d", i, got, n)
			}
		}
	}
	// 8 streams of about 150-byte frames at 64 KiB/s: a few events a
	// stream per wake, so many reads, but shared: about one per wake.
	if r, w, p := h.Reads(), h.Wakes(), h.PacedReads(); p < 5 || r > 2*w+2*streams {
		t.Fatalf("%d reads, %d of them paced, for %d wakes: want the budget to have paced them (several paced reads), shared (about one read a wake)", r, p, w)
	}
}

// A stream far behind on a hub with few streams, whose share is more than
// the MaxLimit events of one read, still reads on at once only within its
// share of each wake: the backlog takes as many wakes as the budget says,
// not one wake at the database's speed.
func TestStreamCatchingUpReadsOnlyItsShareOfEachWake(t *testing.T) {
	t.Parallel()
	const total = 20_000
	h := startHub(t, time.Hour, func(h *events.Hub, _ *http.Server) { h.MaxBytesPerSecond = 1 << 20 })
	for i := 0; i < total; i += 5_000 {
		drafts := make([]events.Draft, 5_000)
		for j := range drafts {
			drafts[j] = events.Draft{Topic: events.TopicChargePaid, ChargeID: "c", Payload: map[string]int{"n": i + j}}
		}
		if err := events.AppendAll(context.Background(), h.db, drafts...); err != nil {
			t.Fatal(err)
		}
	}
	c := openStream(t, h, "", "")
	wakes := h.Wakes()
	bytes := 0
	for n := 0; n < total; n++ {
		f := c.next(t)
		bytes += len(f.ID) + len(f.Event) + len(f.Data)
	}
	// Each wake is at most 500 ms apart in the share's reckoning: at most
	// 512 KiB a wake at 1 MiB a second, whatever the gaps really were.
	if w, least := h.Wakes()-wakes, uint64(bytes/(512<<10)); w < least {
		t.Fatalf("%d events (%d bytes) sent over %d wakes; at 1 MiB a second they take at least %d", total, bytes, w, least)
	}
}

// Streams at one cursor are served by one read of the outbox per wake, not
// two per stream: the read is what the streams cost the database.
func TestStreamsAtOneCursorShareOneReadPerWake(t *testing.T) {
	t.Parallel()
	const n = 40
	h := startHub(t, time.Hour, nil)
	notifier := events.NewNotifier(h.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go notifier.Run(ctx)
	clients := make([]*sseClient, n)
	for i := range clients {
		clients[i] = openStream(t, h, "", "")
	}
	receive := func(want string) {
		t.Helper()
		appendCommitted(t, h.db, want)
		notifier.Kick()
		for i, c := range clients {
			if got := payloadName(t, decode(t, c.next(t)).Payload); got != want {
				t.Fatalf("stream %d: %s, want %s", i, got, want)
			}
		}
	}
	receive("first") // every stream is now at the same cursor
	// A read begun before "second" commits but counted here would deliver
	// it with no read or wake counted below: wait until the reads of
	// "first" (and any late wake of it) are over.
	settled(t, h)
	reads, wakes := h.Reads(), h.Wakes()
	receive("second")
	// One read per wake and per cursor the streams are at. They move from
	// one cursor to the next together, so a second wake (a read that found
	// an event held back for a moment wakes them again soon) can find them
	// at two: at most two reads per wake, whatever their number.
	r, w := h.Reads()-reads, h.Wakes()-wakes
	if w == 0 || r == 0 || r > 2*w {
		t.Fatalf("%d streams at one cursor: %d outbox reads for %d wakes, want at most two per wake", n, r, w)
	}
}

// However many streams read, they hold at most MaxReaders of the pool's
// connections: with every read stuck behind a lock, the webhook path still
// gets a connection.
func TestStreamsHoldAtMostMaxReadersConnections(t *testing.T) {
	t.Parallel()
	const readers = 2
	h := startHub(t, time.Hour, func(h *events.Hub, _ *http.Server) { h.MaxReaders = readers })
	h.db.SetMaxOpenConns(readers + 1)
	_, gatePool := lockOutbox(t, h)
	for i := range 3 * readers {
		// Distinct cursors: each stream needs a read of its own.
		openStream(t, h, fmt.Sprintf("?after=1-%d", i+1), "")
	}
	waiting := func() (n int) {
		t.Helper()
		// Not in gate's transaction: pg_stat_activity would show the same
		// snapshot until it ends.
		if err := gatePool.Get(&n, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(waitFor)
	for waiting() < readers {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d reads waiting on the gate after %v", readers, waitFor)
		}
		time.Sleep(10 * time.Millisecond)
	}
	qctx, qcancel := context.WithTimeout(context.Background(), waitFor)
	defer qcancel()
	if _, err := h.db.ExecContext(qctx, `SELECT 1`); err != nil {
		t.Fatalf("a query beside %d stuck streams: %v (the streams hold every connection)", 3*readers, err)
	}
	if n := waiting(); n > readers {
		t.Fatalf("%d reads waiting on the gate, want at most %d", n, readers)
	}
}

// A revoked token's open streams end at the next re-check, one keepalive
// later at most; another token's stream goes on.
func TestRevokedTokensStreamsEndWithinAKeepalive(t *testing.T) {
	t.Parallel()
	h := startAuthedHub(t, 50*time.Millisecond, func(h *events.Hub, _ *http.Server) { h.KeepAlive = 50 * time.Millisecond })
	a, aID := newToken(t, h, "app-a")
	b, _ := newToken(t, h, "app-b")
	revoked := []*sseClient{openStreamAs(t, h, a, "", ""), openStreamAs(t, h, a, "", "")}
	live := openStreamAs(t, h, b, "", "")
	if _, err := auth.Revoke(context.Background(), h.db, aID); err != nil {
		t.Fatal(err)
	}
	for _, c := range revoked {
		c.ended(t)
	}
	appendCommitted(t, h.db, "after")
	if name := payloadName(t, decode(t, live.next(t)).Payload); name != "after" {
		t.Fatalf("live token's stream: %s, want after", name)
	}
}

// Streams that open while a read at their cursor is in flight take that
// read, then read once more together (the read may have missed a commit
// announced before they subscribed): a crowd reconnecting at once costs
// two reads of the outbox, not one per stream. The read is held in
// flight by a lock on the outbox.
func TestStreamsOpeningDuringAReadShareIt(t *testing.T) {
	t.Parallel()
	const n = 30
	h := startHub(t, time.Hour, nil)
	appendCommitted(t, h.db, "before")
	gate, _ := lockOutbox(t, h)
	reads, wakes := h.Reads(), h.Wakes()
	clients := make([]*sseClient, n)
	for i := range clients {
		clients[i] = openStream(t, h, "", "")
	}
	deadline := time.Now().Add(waitFor)
	for h.Reads() == reads {
		if time.Now().After(deadline) {
			t.Fatalf("no read of the outbox started within %v", waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
	commit(t, gate)
	for i, c := range clients {
		if got := payloadName(t, decode(t, c.next(t)).Payload); got != "before" {
			t.Fatalf("stream %d: %s, want before", i, got)
		}
	}
	// Each stream's second read has begun once it sent its first batch;
	// wait until every client has had a moment to get that far.
	deadline = time.Now().Add(waitFor)
	for h.Reads()-reads < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	// The read they shared, the one read after it of those that subscribed
	// while it ran, and one more read per wake since (a read that saw the
	// gate's transaction holding events back wakes the streams again soon;
	// on a loaded machine, more than once).
	if r, w := h.Reads()-reads, h.Wakes()-wakes; r > 2+w {
		t.Fatalf("%d streams opened during one read: %d reads of the outbox for %d wakes, want at most %d", n, r, w, 2+w)
	}
}

// Over HTTP/1.1 a stream is sent unchunked and ends with its connection:
// each batch is then one write of the shared bytes, not a chunk size line,
// the bytes and a CRLF written apart.
func TestStreamIsSentUnchunkedOverHTTP1(t *testing.T) {
	t.Parallel()
	h := startHub(t, time.Hour, nil)
	resp := get(t, h, "", "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
		t.Fatalf("status %d over %s", resp.StatusCode, resp.Proto)
	}
	if len(resp.TransferEncoding) != 0 || !resp.Close {
		t.Fatalf("transfer encoding %v, close %v; want an unchunked body ended by closing the connection", resp.TransferEncoding, resp.Close)
	}
}

// settled waits until no read holds a reader slot (a read counted whose
// query may not have run yet: on a loaded machine it may run after the
// next commit and deliver it uncounted) and the hub has made no read nor
// wake for 200 ms, for a late wake's reads (30 s at most, a safety net).
func settled(t *testing.T, h *testHub) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for last := [2]uint64{h.Reads(), h.Wakes()}; ; {
		time.Sleep(200 * time.Millisecond)
		now := [2]uint64{h.Reads(), h.Wakes()}
		if now == last && h.ReadsInFlight() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub still reads or wakes after %v", waitFor)
		}
		last = now
	}
}
