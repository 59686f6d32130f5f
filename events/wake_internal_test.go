package events

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"
)

// withSubscribers registers n subscribers nobody reads, so that the hub
// spaces its wakes as it would for n open streams.
func withSubscribers(h *Hub, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for range n {
		h.subs[&subscriber{wake: make(chan struct{}, 1), revoked: make(chan struct{})}] = struct{}{}
	}
}

// With many streams open, a burst of notifications makes one wake per
// spacing, not one per notification, and a notification that arrives
// inside a spacing still gets its wake when the spacing ends.
func TestNotificationsCoalesceIntoSpacedWakes(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "", nil)
	defer h.Close()
	withSubscribers(h, 500)
	spacing := h.wakeSpacing()
	if want := 500 * time.Second / StreamWritesPerSecond; spacing != want {
		t.Fatalf("spacing for 500 streams %v, want %v", spacing, want)
	}
	notify := make(chan *pq.Notification) // unbuffered: a send returns once dispatch has it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.dispatch(ctx, notify)

	start := time.Now()
	const burst = 300
	for range burst {
		notify <- &pq.Notification{}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	// One leading wake, then at most one per spacing that passed.
	if w, most := h.Wakes(), uint64(elapsed/spacing)+2; w > most {
		t.Fatalf("%d notifications over %v: %d wakes, want at most %d (one per %v)", burst, elapsed, w, most, spacing)
	}
	// After a quiet spell, a notification wakes at once; one arriving
	// within the spacing that follows gets a wake of its own when it ends.
	time.Sleep(2 * spacing)
	before := h.Wakes()
	notify <- &pq.Notification{}
	notify <- &pq.Notification{}
	deadline := time.Now().Add(5 * time.Second)
	for h.Wakes() < before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("two notifications a moment apart: %d wakes, want 2 (the second's was lost)", h.Wakes()-before)
		}
		time.Sleep(time.Millisecond)
	}
}

// Few streams are woken 20 ms apart at most (the Notifier's own spacing),
// very many at most 250 ms apart.
func TestWakeSpacingIsBounded(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "", nil)
	defer h.Close()
	if d := h.wakeSpacing(); d != minWakeSpacing {
		t.Fatalf("no streams: spacing %v, want %v", d, minWakeSpacing)
	}
	withSubscribers(h, 100_000)
	if d := h.wakeSpacing(); d != maxWakeSpacing {
		t.Fatalf("100,000 streams: spacing %v, want %v", d, maxWakeSpacing)
	}
}
