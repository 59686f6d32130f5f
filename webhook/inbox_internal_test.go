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
		f.do(ctx, "k", func() (int64, error) { close(started); <-release; return 7, nil })
		close(leaderDone)
	}()
	<-started

	var returned atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := f.do(ctx, "k", func() (int64, error) { return 0, nil })
			if id != 7 || err != nil {
				t.Errorf("a joiner got %d, %v: want the call's result, 7", id, err)
			}
			returned.Add(1)
		}()
	}
	ran := false
	f.do(ctx, "other", func() (int64, error) { ran = true; return 0, nil })
	if !ran {
		t.Fatal("a call of another key did not run while k was in flight")
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.do(gone, "k", func() (int64, error) {
		t.Error("a caller of a key in flight ran its own call")
		return 0, nil
	}); err == nil {
		t.Error("a caller whose context ended got no error")
	}

	for f.joiners("k") < 11 { // the ten, and the one whose context ended
		time.Sleep(time.Millisecond)
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d callers returned while the call of their key was in flight", n)
	}
	close(release)
	<-leaderDone
	wg.Wait()
}

func (f *flights) joiners(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.flying[key]; ok {
		return fl.joined
	}
	return 0
}
