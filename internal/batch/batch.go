// Package batch runs the work of concurrent callers together: each caller
// hands in an item and waits; a few loops take whatever items are waiting,
// up to a maximum, and run them as one batch. It is how razao group-commits
// inbox inserts and processes several deliveries in one transaction, with
// each request answered only after its batch has finished.
package batch

import (
	"context"
	"sync"
	"sync/atomic"
)

// Group batches items of type T. The zero value is not usable; use New.
type Group[T any] struct {
	run     func(ctx context.Context, items []T)
	max     int
	calls   chan *call[T]
	stopped chan struct{} // closed when Run has returned
	running atomic.Bool
}

type call[T any] struct {
	item T
	done chan struct{}
}

// New returns a group that runs batches of at most max items with run. run
// reports each item's result through the item itself (T is usually a
// pointer) and must not keep items after it returns.
func New[T any](max int, run func(ctx context.Context, items []T)) *Group[T] {
	if max < 1 {
		max = 1
	}
	return &Group[T]{run: run, max: max, calls: make(chan *call[T]), stopped: make(chan struct{})}
}

// Do runs item in the next batch and returns once that batch has run. While
// Run is not running (before it starts, after it stops) item runs alone,
// right away. If ctx ends first Do returns ctx.Err(); the batch may still
// run the item.
func (g *Group[T]) Do(ctx context.Context, item T) error {
	if !g.running.Load() {
		g.run(ctx, []T{item})
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
	g.run(ctx, []T{item})
	return nil
}

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
		// Take whoever queued while the last batch ran; never wait for more.
	collect:
		for len(calls) < g.max {
			select {
			case c := <-g.calls:
				calls = append(calls, c)
			default:
				break collect
			}
		}
		items := make([]T, len(calls))
		for i, c := range calls {
			items[i] = c.item
		}
		g.run(context.WithoutCancel(ctx), items)
		for _, c := range calls {
			close(c.done)
		}
	}
}
