package events

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/problem"
)

// minRetry is the first delay before the hub wakes its streams again when
// committed events are held back by an older transaction; it doubles up to
// the poll interval.
const minRetry = 25 * time.Millisecond

// ServeHTTP streams events as Server-Sent Events (GET /v1/events). It
// resumes after the Last-Event-ID header or, failing that, the ?after=
// query; each event is sent as
//
//	id: <cursor>
//	event: <topic>
//	data: {"id":…,"topic":…,"charge_id":…,"payload":…,"created_at":…}
//
// A malformed cursor is answered 400, a cursor behind the outbox's purge
// watermark (an event after it may have been archived and purged by
// retention) 410, a token that already has MaxPerToken streams open 429,
// and a full or closed hub 503. The stream ends when the client goes
// away, the hub is closed, the token the request was authenticated with
// (auth.FromContext) is revoked, or a purge passes the stream's cursor
// before it has read what followed (its reconnection is then answered
// 410): a stream never skips an event silently.
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
	if err := h.checkCursor(r.Context(), cursor); errors.Is(err, ErrCursorExpired) {
		writeExpired(w, err)
		return
	}
	tok, hasToken := auth.FromContext(r.Context())
	sub, err := h.subscribe(tok.ID, hasToken)
	switch {
	case errors.Is(err, errTokenStreams):
		w.Header().Set("Retry-After", "5")
		problem.Write(w, http.StatusTooManyRequests, "too-many-streams", "Too many event streams",
			fmt.Sprintf("this token already has %d event streams open; close one first", positive(h.MaxPerToken, DefaultMaxPerToken)))
		return
	case err != nil:
		w.Header().Set("Retry-After", "5")
		problem.Write(w, http.StatusServiceUnavailable, "unavailable", "Service unavailable", "no event stream available; retry later")
		return
	}
	defer h.unsubscribe(sub)
	s := &stream{
		h: h, sub: sub, w: w, rc: http.NewResponseController(w), cursor: cursor, http1: r.ProtoMajor == 1,
		keepAlive:    orDefault(h.KeepAlive, DefaultKeepAlive),
		writeTimeout: orDefault(h.WriteTimeout, DefaultWriteTimeout),
	}
	if err := s.start(); err != nil {
		h.log.ErrorContext(r.Context(), "events: cannot start stream", "err", err)
		return
	}
	err = s.run(r.Context())
	h.log.DebugContext(r.Context(), "events: stream ended", "cursor", s.cursor, "err", err)
}

// checkCursor is CheckCursor holding one of the hub's reader slots. An
// error other than an expired cursor is logged and left to the stream's
// reads, which check the same (and end the stream on it): a database
// hiccup does not refuse a stream.
func (h *Hub) checkCursor(ctx context.Context, cursor string) error {
	if cursor == "" {
		return nil
	}
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer h.release()
	err := CheckCursor(ctx, h.db, cursor)
	if err != nil && !errors.Is(err, ErrCursorExpired) && ctx.Err() == nil {
		h.log.WarnContext(ctx, "events: cannot check the cursor against the purge watermark; the stream's reads will", "err", err)
	}
	return err
}

// writeExpired answers 410 Gone for an expired cursor: the oldest cursor
// the stream is complete from, and where the rest went. Nothing of the
// archive's location beyond its kind: the operator lists the files.
func writeExpired(w http.ResponseWriter, err error) {
	oldest := ""
	var e *ExpiredError
	if errors.As(err, &e) {
		oldest = e.Oldest
	}
	problem.Write(w, http.StatusGone, "cursor-expired", "Cursor expired",
		fmt.Sprintf("events after this cursor may have been archived and purged by retention; the stream is complete after cursor %s: "+
			"resume after it (after=%s, or Last-Event-ID, or with no cursor), accepting the gap. "+
			"The purged events are in the archive files of kind outbox: ask the operator (razao archive list)", oldest, oldest))
}

// errRevoked ends the stream of a revoked token.
var errRevoked = errors.New("the stream's token was revoked")

// errUnchecked ends a stream given a batch that no check of its token
// covers, which the hub never gives: it sends nothing unchecked.
var errUnchecked = errors.New("a batch read since the stream subscribed was not checked for its token")

// stream is one subscriber's connection and its position in the outbox.
type stream struct {
	h      *Hub
	sub    *subscriber
	w      http.ResponseWriter
	rc     *http.ResponseController
	cursor string
	// http1 says the stream is an HTTP/1.x response, sent unchunked.
	http1 bool
	// The hub's settings, defaulted.
	keepAlive, writeTimeout time.Duration
}

// start sends the headers at once, so the client knows it is subscribed.
//
// Over HTTP/1.1 the body is sent unchunked and ends when the connection
// closes (Transfer-Encoding: identity, which net/http turns into a
// close-delimited body, the setup the SSE specification recommends). A
// chunked batch costs the server two or three writes to the socket (the
// chunk's size line, the frames, the closing CRLF, split where its 4 KiB
// buffer fills), each a segment the reader wakes for; unchunked, a batch
// is one write of the bytes every stream shares. With many streams
// receiving every event, those writes are what the streams cost razao's
// CPU, so their number is what matters.
func (s *stream) start() error {
	hdr := s.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	if s.http1 {
		hdr.Set("Transfer-Encoding", "identity")
	}
	s.w.WriteHeader(http.StatusOK)
	return s.write(nil)
}

// run sends events until the client goes away, the hub closes or the token
// is revoked; it returns the error that ended it, if any. It reads when it
// opens, again at once after a full batch, and otherwise when the hub
// wakes it. A database error is logged and waits for the next wake, since
// the stream can outlive it.
func (s *stream) run(ctx context.Context) error {
	keepalive := time.NewTicker(s.keepAlive)
	defer keepalive.Stop()
	// The first read takes any read of this wake at the stream's cursor,
	// even one begun before it subscribed: a thousand clients reconnecting
	// at once (after a deploy, say) would otherwise each read the outbox
	// alone, from the same cursor. A read begun before may have missed a
	// commit whose wake came before the stream subscribed, so a stream
	// that took one reads once more at once, taking only reads begun since.
	var after uint64
	sent := 0 // bytes of events sent since the last wake
	for first := true; ; first = false {
		b, err := s.h.read(ctx, s.cursor, after)
		after = 0
		if err != nil {
			if ctx.Err() != nil || s.closed() {
				return nil
			}
			if errors.Is(err, ErrCursorExpired) {
				// A purge passed the cursor: what followed it is gone.
				// The reconnection, at this cursor, is answered 410.
				return err
			}
			s.h.log.Warn("events: read for stream failed", "err", err)
		} else {
			switch revoked, checked := b.tokens[s.sub.token]; {
			case !s.sub.hasToken || b.n == 0:
			case revoked:
				return errRevoked
			case !checked && b.seq <= s.sub.after:
				// Checked before this stream subscribed, for other
				// tokens: a read begun since checks its own.
				after = s.sub.after
				continue
			case !checked:
				return errUnchecked // a read begun since it subscribed checks its token
			}
			if err := s.send(b); err != nil {
				return err
			}
			sent += len(b.frames)
			if first && b.seq <= s.sub.after {
				after = s.sub.after
				continue
			}
			// More may follow at once: read on while another batch of
			// this size stays within the stream's share of this wake,
			// else at the next wake, which the hub arms.
			if b.full {
				if sent+len(b.frames) <= b.share {
					continue
				}
				s.h.paceSoon()
			}
		}
		if err := s.sleep(ctx, keepalive.C); err != nil {
			return err
		}
		sent = 0
		if ctx.Err() != nil || s.closed() {
			return nil
		}
	}
}

// sleep waits until woken or ending, sending keepalives meanwhile.
func (s *stream) sleep(ctx context.Context, tick <-chan time.Time) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.h.done:
			return nil
		case <-s.sub.revoked:
			return errRevoked
		case <-s.sub.wake:
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
func (s *stream) send(b *batch) error {
	if b.n == 0 {
		return nil
	}
	if err := s.write(b.frames); err != nil {
		return err
	}
	s.cursor = b.last
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
