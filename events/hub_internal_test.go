package events

import (
	"bytes"
	"context"
	"testing"

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
