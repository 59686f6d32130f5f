package webhook

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers of a key in flight wait for that call instead of making their
// own; another key runs at once; a caller whose context ends stops waiting.
func TestFlightsJoinConcurrentCallsOfOneKey(t *testing.T) {
	var f flights
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	leaderDone := make(chan struct{})
	go func() {
		f.do(ctx, "k", func() { close(started); <-release })
		close(leaderDone)
	}()
	<-started

	var returned atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.do(ctx, "k", func() {})
			returned.Add(1)
		}()
	}
	ran := false
	f.do(ctx, "other", func() { ran = true })
	if !ran {
		t.Fatal("a call of another key did not run while k was in flight")
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	f.do(gone, "k", func() { t.Error("a caller of a key in flight ran its own call") })

	time.Sleep(50 * time.Millisecond) // let the joiners reach do
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d callers returned while the call of their key was in flight", n)
	}
	close(release)
	<-leaderDone
	wg.Wait()
}
