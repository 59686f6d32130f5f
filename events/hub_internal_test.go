package events

import (
	"bytes"
	"context"
	"testing"

	"github.com/razao/razao/internal/pgtest"
)

// A stream behind the others, at an event a read of this wake returned,
// takes the rest of that read instead of reading the outbox again (nothing,
// at its last event: it is as if it had read then); after
// the next wake it reads again (the read may have missed what the wake
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
	h.wakeAll()
	if _, err := h.read(ctx, all.cursors[1], 0); err != nil {
		t.Fatal(err)
	}
	if h.Reads() != 2 {
		t.Fatalf("%d reads after a wake, want 2", h.Reads())
	}
}
