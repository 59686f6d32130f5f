package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/razao/razao/internal/problem"
)

// minRetry is the first delay before re-reading when committed events are
// held back by an older transaction; it doubles up to the poll interval.
const minRetry = 25 * time.Millisecond

// ServeHTTP streams events as Server-Sent Events (GET /v1/events). It
// resumes after the Last-Event-ID header or, failing that, the ?after=
// query; each event is sent as
//
//	id: <cursor>
//	event: <topic>
//	data: {"id":…,"topic":…,"charge_id":…,"payload":…,"created_at":…}
//
// A malformed cursor is answered 400 and a full or closed hub 503. The
// stream ends when the client goes away or the hub is closed.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		problem.Write(w, http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed", "events are read with GET")
		return
	}
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = r.URL.Query().Get("after")
	}
	if err := ValidCursor(cursor); err != nil {
		problem.Write(w, http.StatusBadRequest, "invalid-cursor", "Invalid cursor", "Last-Event-ID or after is not a cursor from this stream")
		return
	}
	wake, ok := h.subscribe()
	if !ok {
		w.Header().Set("Retry-After", "5")
		problem.Write(w, http.StatusServiceUnavailable, "unavailable", "Service unavailable", "no event stream available; retry later")
		return
	}
	defer h.unsubscribe(wake)
	s := &stream{
		h: h, w: w, rc: http.NewResponseController(w), cursor: cursor,
		poll:         orDefault(h.PollInterval, DefaultPollInterval),
		keepAlive:    orDefault(h.KeepAlive, DefaultKeepAlive),
		writeTimeout: orDefault(h.WriteTimeout, DefaultWriteTimeout),
	}
	if err := s.start(); err != nil {
		h.log.ErrorContext(r.Context(), "events: cannot start stream", "err", err)
		return
	}
	err := s.run(r.Context(), wake)
	h.log.DebugContext(r.Context(), "events: stream ended", "cursor", s.cursor, "err", err)
}

// stream is one subscriber's connection and its position in the outbox.
type stream struct {
	h       *Hub
	w       http.ResponseWriter
	rc      *http.ResponseController
	cursor  string
	backoff time.Duration
	// The hub's settings, defaulted.
	poll, keepAlive, writeTimeout time.Duration
}

// start sends the headers at once, so the client knows it is subscribed.
func (s *stream) start() error {
	hdr := s.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	return s.write(nil)
}

// run sends events until the client goes away or the hub closes; it returns
// the write error that ended it, if any.
func (s *stream) run(ctx context.Context, wake <-chan struct{}) error {
	keepalive := time.NewTicker(s.keepAlive)
	defer keepalive.Stop()
	for {
		wait, err := s.next(ctx)
		if err != nil {
			return err
		}
		if err := s.sleep(ctx, wait, wake, keepalive.C); err != nil {
			return err
		}
		if ctx.Err() != nil || s.closed() {
			return nil
		}
	}
}

// next sends one batch and says how long to wait before reading again
// unless woken: at once while a full batch suggests more, soon while
// committed events are held back by an older transaction (whose end may
// never be announced), else PollInterval. Only a write error is returned; a
// database error is logged and retried, since the stream can outlive it.
func (s *stream) next(ctx context.Context) (time.Duration, error) {
	events, err := Since(ctx, s.h.db, s.cursor, MaxLimit)
	if err != nil {
		return s.readFailed(ctx, err), nil
	}
	if err := s.send(events); err != nil {
		return 0, err
	}
	if len(events) == MaxLimit {
		return 0, nil
	}
	waiting, err := held(ctx, s.h.db, s.cursor)
	if err != nil {
		return s.readFailed(ctx, err), nil
	}
	if !waiting {
		s.backoff = 0
		return s.poll, nil
	}
	s.backoff = min(max(2*s.backoff, minRetry), s.poll)
	return s.backoff, nil
}

// readFailed logs a database error unless the stream is ending anyway.
func (s *stream) readFailed(ctx context.Context, err error) time.Duration {
	if ctx.Err() == nil && !s.closed() {
		s.h.log.WarnContext(ctx, "events: read for stream failed", "err", err)
	}
	return s.poll
}

// sleep waits d, or less if woken or ending, sending keepalives meanwhile.
func (s *stream) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}, tick <-chan time.Time) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.h.done:
			return nil
		case <-wake:
			return nil
		case <-t.C:
			return nil
		case <-tick:
			if err := s.write([]byte(": keepalive\n\n")); err != nil {
				return err
			}
		}
	}
}

// closed reports whether the hub has been closed.
func (s *stream) closed() bool {
	select {
	case <-s.h.done:
		return true
	default:
		return false
	}
}

// send writes a batch as one write and advances the cursor only once that
// write has succeeded.
func (s *stream) send(events []Event) error {
	if len(events) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event %s: %w", ev.Cursor, err)
		}
		fmt.Fprintf(&buf, "id: %s\nevent: %s\ndata: %s\n\n", ev.Cursor, ev.Topic, data)
	}
	if err := s.write(buf.Bytes()); err != nil {
		return err
	}
	s.cursor = events[len(events)-1].Cursor
	return nil
}

// write sends b and flushes it. Each write extends the deadline, so the
// server's WriteTimeout bounds one write, not the life of the stream.
func (s *stream) write(b []byte) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}
