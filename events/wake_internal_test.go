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
	// The quiet spell is a dispatcher that has had no notification yet: a
	// sleep of two spacings after the burst was not one when the burst's
	// last rounds ran late (the two then shared one wake).
	quiet := NewHub(nil, "", nil)
	defer quiet.Close()
	withSubscribers(quiet, 500)
	notify = make(chan *pq.Notification)
	go quiet.dispatch(ctx, notify)
	notify <- &pq.Notification{}
	notify <- &pq.Notification{}
	deadline := time.Now().Add(30 * time.Second) // a safety net
	for quiet.Wakes() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("two notifications a moment apart: %d wakes, want 2 (the second's was lost)", quiet.Wakes())
		}
		time.Sleep(time.Millisecond)
	}
}

// Few streams are woken 20 ms apart at most (the Notifier's own spacing),
// very many at most 500 ms apart.
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

// A wake signals its streams in groups of streamsPerGroup spread over the
// spacing of wakes, not all at once: each later group is scheduled a step
// further, and every stream is signalled exactly once.
func TestWakeSignalsManyStreamsInGroupsOverItsSpacing(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "", nil)
	defer h.Close()
	var later []func()
	var delays []time.Duration
	h.afterFunc = func(d time.Duration, f func()) { delays, later = append(delays, d), append(later, f) }
	const n = 250 // three groups
	subs := make([]*subscriber, n)
	for i := range subs {
		sub, err := h.subscribe(0, false)
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = sub
	}
	woken := func() (k int) {
		for _, s := range subs {
			select {
			case <-s.wake:
				k++
			default:
			}
		}
		return k
	}
	h.wakeAll()
	first := woken()
	step := WakeSpacing(n) / 3
	if len(later) != 2 || delays[0] != step || delays[1] != 2*step {
		t.Fatalf("later groups scheduled after %v, want %v and %v", delays, step, 2*step)
	}
	later[0]()
	second := woken()
	later[1]()
	third := woken()
	if first+second+third != n || first == 0 || second == 0 || third == 0 || max(first, second, third) > streamsPerGroup {
		t.Fatalf("%d streams signalled as %d, %d, %d: want each once, in three groups of at most %d", n, first, second, third, streamsPerGroup)
	}
	// Few streams: one group, at once.
	few := NewHub(nil, "", nil)
	defer few.Close()
	few.afterFunc = func(time.Duration, func()) { t.Fatal("a wake of few streams scheduled a later group") }
	s, err := few.subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	few.wakeAll()
	select {
	case <-s.wake:
	default:
		t.Fatal("a wake of one stream did not signal it")
	}
}
