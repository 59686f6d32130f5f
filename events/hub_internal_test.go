package events

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/internal/pgtest"
)

// A stream behind the others, at an event a recent read returned, takes
// the rest of that read instead of reading the outbox again (nothing, at
// its last event within the same wake: it is as if it had read then; after
// a wake it reads again, the read may have missed what the wake
// announces).
func TestStreamBehindTakesTheRestOfARead(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	for i := 0; i < 5; i++ {
		if err := AppendAll(context.Background(), db, Draft{Topic: TopicChargePaid, ChargeID: "c", Payload: map[string]int{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	Settle(t, db)
	h := NewHub(db, url, nil)
	defer h.Close()
	ctx := context.Background()
	all, err := h.read(ctx, "", 0)
	if err != nil || all.n != 5 {
		t.Fatalf("first read: %v, %d events", err, all.n)
	}
	behind, err := h.read(ctx, all.cursors[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.Reads() != 1 {
		t.Fatalf("%d reads of the outbox, want 1: the stream behind should take the rest of the first", h.Reads())
	}
	if behind.n != 3 || behind.last != all.last || !bytes.Equal(behind.frames, all.frames[all.offs[2]:]) {
		t.Fatalf("the rest: %d events up to %s, want the 3 after %s", behind.n, behind.last, all.cursors[1])
	}
	caughtUp, err := h.read(ctx, all.last, 0)
	if err != nil || caughtUp.n != 0 || h.Reads() != 1 {
		t.Fatalf("a stream at the read's last event: %v, %d events, %d reads; want none and no new read", err, caughtUp.n, h.Reads())
	}
	// After a wake, the events of the first read are still final: a stream
	// behind takes their rest without reading, told to read again at once
	// (the commit the wake announces may follow them), while a stream at
	// the read's last event must read.
	h.wakeAll()
	late, err := h.read(ctx, all.cursors[1], 0)
	if err != nil || h.Reads() != 1 || late.n != 3 || !late.full {
		t.Fatalf("behind, after a wake: %v, %d events, full %v, %d reads; want the 3 after %s, full, no new read", err, late.n, late.full, h.Reads(), all.cursors[1])
	}
	if _, err := h.read(ctx, all.last, 0); err != nil || h.Reads() != 2 {
		t.Fatalf("at the last event, after a wake: %v, %d reads, want 2", err, h.Reads())
	}
	// Two wakes later the first read is forgotten.
	h.wakeAll()
	h.wakeAll()
	if _, err := h.read(ctx, all.cursors[1], 0); err != nil || h.Reads() != 3 {
		t.Fatalf("behind, two wakes later: %v, %d reads, want 3", err, h.Reads())
	}
}

// Past MaxBytesPerSecond a read stops at each stream's share of it for the
// time since the last wake; the streams at its last event read on (they
// are behind, not caught up), and a wake follows after the spacing with no
// notification, so that they catch up when the events slow down. Few
// streams under the default budget read everything at once, as before.
func TestReadsStopAtTheStreamsShareOfMaxBytesPerSecond(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	const total = 60
	for i := 0; i < total; i++ {
		if err := AppendAll(context.Background(), db, Draft{Topic: TopicChargePaid, ChargeID: "c", Payload: map[string]int{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	Settle(t, db)
	ctx := context.Background()

	few := NewHub(db, url, nil)
	defer few.Close()
	withSubscribers(few, 2)
	if b, err := few.read(ctx, "", 0); err != nil || b.n != total || b.paced {
		t.Fatalf("2 streams, default budget: %v, %d events, paced %v; want all %d at once", err, b.n, b.paced, total)
	}

	h := NewHub(db, url, nil)
	defer h.Close()
	h.MaxBytesPerSecond = 64 << 10
	const streams = 10
	withSubscribers(h, streams)
	share := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		share, _ := h.shareLocked()
		return share
	}
	first, err := h.read(ctx, "", 0)
	if err != nil || first.n == 0 || first.n >= total || !first.paced || first.full {
		t.Fatalf("10 streams at 64 KiB/s: %v, %d events, paced %v, full %v; want fewer than %d, paced", err, first.n, first.paced, first.full, total)
	}
	next, err := h.read(ctx, first.last, 0)
	if err != nil || h.Reads() != 2 || next.n == 0 {
		t.Fatalf("at the paced read's last event: %v, %d events, %d reads; want a read of the events after it", err, next.n, h.Reads())
	}
	if len(next.frames) > share() {
		t.Fatalf("a read of %d bytes for each of %d streams, want at most their share %d", len(next.frames), streams, share())
	}
	got := first.n + next.n
	wakes := h.Wakes()
	deadline := time.Now().Add(30 * time.Second)
	for cursor := next.last; got < total; {
		for h.Wakes() == wakes {
			if time.Now().After(deadline) {
				t.Fatalf("no wake after a paced read, %d of %d events read", got, total)
			}
			time.Sleep(time.Millisecond)
		}
		wakes = h.Wakes()
		b, err := h.read(ctx, cursor, 0)
		if err != nil {
			t.Fatal(err)
		}
		got += b.n
		if b.n > 0 {
			cursor = b.last
		}
		if b.n > 0 && !b.paced && got < total {
			t.Fatalf("a read of %d events not paced with %d still to come", b.n, total-got)
		}
	}
	if got != total {
		t.Fatalf("read %d events, want %d", got, total)
	}
}

// A read is cut at the streams' share in bytes, not at a number of events
// sized by an earlier read's frames: 40 small events and then 40 of 8 KiB
// fit a limit sized for small frames, not the share, and one event larger
// than the whole share still goes, alone.
func TestReadsAreCutAtTheShareInBytes(t *testing.T) {
	t.Parallel()
	db, url := pgtest.NewWithURL(t)
	ctx := context.Background()
	large := strings.Repeat("x", 8<<10)
	var drafts []Draft
	for i := 0; i < 40; i++ {
		drafts = append(drafts, Draft{Topic: TopicChargePaid, ChargeID: "c", Payload: map[string]int{"n": i}})
	}
	for i := 0; i < 40; i++ {
		drafts = append(drafts, Draft{Topic: TopicChargePaid, ChargeID: "c", Payload: map[string]string{"n": large}})
	}
	if err := AppendAll(ctx, db, drafts...); err != nil {
		t.Fatal(err)
	}
	Settle(t, db)
	h := NewHub(db, url, nil)
	defer h.Close()
	h.MaxBytesPerSecond = 1 << 20
	withSubscribers(h, 10)
	h.mu.Lock()
	share, limit := h.shareLocked()
	h.mu.Unlock()
	if limit < len(drafts) {
		t.Fatalf("limit %d: the test needs one that takes all %d events", limit, len(drafts))
	}
	b, err := h.read(ctx, "", 0)
	if err != nil || b.n <= 40 || b.n >= len(drafts) || !b.paced || len(b.frames) > share {
		t.Fatalf("small then 8 KiB events: %v, %d events of %d bytes, paced %v; want more than the 40 small, not all, within the share of %d bytes, paced",
			err, b.n, len(b.frames), b.paced, share)
	}
	h.MaxBytesPerSecond = 1
	h.wakeAll()
	one, err := h.read(ctx, b.last, 0)
	if err != nil || one.n != 1 || !one.paced {
		t.Fatalf("a share smaller than one event: %v, %d events, paced %v; want exactly one, paced", err, one.n, one.paced)
	}
}
