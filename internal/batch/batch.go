// Package batch runs the work of concurrent callers together: each caller
// hands in an item and waits; a few loops take whatever items are waiting,
// up to a maximum, and run them as one batch. It is how razao group-commits
// inbox inserts: each request waits until its batch has finished, or until
// the batch says its result is final (for the inbox, once the INSERT has
// committed).
//
// A batch costs a fixed price (round trips, a commit) plus a price per
// item, so fewer, larger batches are cheaper. A loop therefore starts a
// batch at once only when no other batch runs, or when it holds at least
// as many items as every batch running; otherwise it waits for more items
// or for a batch to end, at most MaxWait. Alone, an item never waits;
// under load, loops do not split the waiting callers into many small
// batches; behind a batch that is stuck, an item waits MaxWait at most.
package batch

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxWait is how long a loop waits by default, while a larger batch
// runs, before it starts a smaller one anyway: a few times one batch's
// usual length on a busy machine.
const DefaultMaxWait = 50 * time.Millisecond

// Group batches items of type T. The zero value is not usable; use New.
type Group[T any] struct {
	// MaxWait bounds how long a loop holds callers back, while a larger
	// batch runs, in the hope of a larger batch. Set it before Run.
	MaxWait time.Duration

	run     RunFunc[T]
	max     int
	calls   chan *call[T]
	stopped chan struct{} // closed when Run has returned
	running atomic.Bool

	mu       sync.Mutex
	inflight []int         // sizes of the batches running
	ended    chan struct{} // closed, and replaced, whenever a batch ends
}

type call[T any] struct {
	item T
	done chan struct{}
}

// RunFunc runs a batch. It reports each item's result through the item
// itself (T is usually a pointer) and must not keep items after it
// returns. In a loop of Run, it may call done(i) once item i's result is
// final, from its own goroutine: that caller then returns without waiting
// for the rest of the batch, and run must not touch items[i] again. An
// item run alone, outside Run, gets a nil done: its caller waits for run
// to return.
type RunFunc[T any] func(ctx context.Context, items []T, done func(i int))

// New returns a group that runs batches of at most max items with run.
func New[T any](max int, run RunFunc[T]) *Group[T] {
	if max < 1 {
		max = 1
	}
	return &Group[T]{run: run, max: max, calls: make(chan *call[T]), stopped: make(chan struct{}), ended: make(chan struct{}),
		MaxWait: DefaultMaxWait}
}

// Do runs item in the next batch and returns once that batch has run, or
// has called done for item. While Run is not running (before it starts,
// after it stops) item runs alone, right away. If ctx ends first Do
// returns ctx.Err(); the batch may still run the item.
func (g *Group[T]) Do(ctx context.Context, item T) error {
	if !g.running.Load() {
		g.run(ctx, []T{item}, nil)
		return nil
	}
	c := &call[T]{item: item, done: make(chan struct{})}
	select {
	case g.calls <- c:
		select {
		case <-c.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case <-g.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.run(ctx, []T{item}, nil)
	return nil
}

// Started reports whether Run has started: from then on, until it stops,
// Do hands its item to a loop.
func (g *Group[T]) Started() bool { return g.running.Load() }

// Run batches with loops batches running at once until ctx ends. A batch
// runs on a context that ctx's end does not cancel: its callers are waiting
// for the answer.
func (g *Group[T]) Run(ctx context.Context, loops int) {
	g.running.Store(true)
	var wg sync.WaitGroup
	for i := 0; i < loops; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); g.loop(ctx) }()
	}
	wg.Wait()
	close(g.stopped) // callers from now on run on their own
}

func (g *Group[T]) loop(ctx context.Context) {
	for {
		var calls []*call[T]
		select {
		case <-ctx.Done():
			return
		case c := <-g.calls:
			calls = append(calls, c)
		}
		calls = g.gather(ctx, g.collect(calls))
		items := make([]T, len(calls))
		for i, c := range calls {
			items[i] = c.item
		}
		closed := make([]bool, len(calls))
		done := func(i int) {
			if !closed[i] {
				closed[i] = true
				close(calls[i].done)
			}
		}
		g.run(context.WithoutCancel(ctx), items, done)
		g.end(len(calls))
		for i := range calls {
			done(i)
		}
	}
}

// collect adds whoever queued while the last batch ran, without waiting.
func (g *Group[T]) collect(calls []*call[T]) []*call[T] {
	for len(calls) < g.max {
		select {
		case c := <-g.calls:
			calls = append(calls, c)
		default:
			return calls
		}
	}
	return calls
}

// gather waits, while a larger batch runs, for more callers or for a batch
// to end, and returns the calls once they may start as a batch (counted
// as running from then on). After MaxWait, or when ctx ends, they start
// as they are.
func (g *Group[T]) gather(ctx context.Context, calls []*call[T]) []*call[T] {
	var timeout <-chan time.Time
	force := false
	for {
		ended, ok := g.start(len(calls), force)
		if ok {
			return calls
		}
		if timeout == nil {
			t := time.NewTimer(g.MaxWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case c := <-g.calls:
			calls = g.collect(append(calls, c))
		case <-ended:
		case <-timeout:
			force = true
		case <-ctx.Done():
			force = true
		}
	}
}

// start counts a batch of n as running and reports true, unless a larger
// batch is running (and force is false): then it returns a channel closed
// when some batch ends.
func (g *Group[T]) start(n int, force bool) (<-chan struct{}, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !force && n < g.max {
		for _, m := range g.inflight {
			if n < m {
				return g.ended, false
			}
		}
	}
	g.inflight = append(g.inflight, n)
	return nil, true
}

// end counts a batch of n as no longer running and wakes waiting loops.
func (g *Group[T]) end(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.inflight, n); i >= 0 {
		g.inflight = slices.Delete(g.inflight, i, i+1)
	}
	close(g.ended)
	g.ended = make(chan struct{})
}
