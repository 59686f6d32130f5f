package batch

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type item struct {
	n     int
	batch int // which batch ran it
}

// While one batch runs, the callers that arrive queue, and the next batch
// takes them all at once; every caller returns only after its own batch.
func TestCallersArrivingDuringABatchShareTheNext(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	g := New(64, func(ctx context.Context, items []*item, _ func(int)) {
		mu.Lock()
		sizes = append(sizes, len(items))
		nb := len(sizes)
		mu.Unlock()
		if nb == 1 {
			<-gate // hold the first batch until the others have queued
		}
		for _, it := range items {
			it.batch = nb
		}
	})
	stop := runGroup(g, 1)

	first := &item{n: 0}
	firstDone := make(chan struct{})
	go func() { g.Do(context.Background(), first); close(firstDone) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })

	const n = 10
	items := make([]*item, n)
	var wg sync.WaitGroup
	for i := range items {
		items[i] = &item{n: i + 1}
		wg.Add(1)
		go func() { defer wg.Done(); g.Do(context.Background(), items[i]) }()
	}
	// The loop is busy with the first batch, so the ten wait to be taken:
	// wait until each is parked in Do (the first waits for its batch).
	parkedInDo(t, n+1)
	select {
	case <-firstDone:
		t.Fatal("the first caller returned before its batch finished")
	default:
	}
	close(gate)
	<-firstDone
	wg.Wait()
	if first.batch != 1 {
		t.Fatalf("first item ran in batch %d", first.batch)
	}
	for _, it := range items {
		if it.batch < 2 {
			t.Fatalf("item %d not run after the first batch: %d", it.n, it.batch)
		}
	}
	total := 0
	for _, s := range sizes[1:] {
		total += s
	}
	// One caller may have been taken alone before the rest queued, but no
	// more than two batches hold the ten.
	if total != n || len(sizes) > 3 {
		t.Fatalf("batch sizes %v, want the ten callers in at most two batches", sizes)
	}
	stop()

	// Stopped: a caller runs alone, at once.
	late := &item{n: 99}
	g.Do(context.Background(), late)
	if late.batch != len(sizes) {
		t.Fatalf("a caller after Run stopped did not run")
	}
}

// With two loops, a loop does not start a batch smaller than the one
// running: it waits for more callers, or for that batch to end.
func TestNoSmallerBatchStartsWhileALargerRuns(t *testing.T) {
	release := make([]chan struct{}, 8)
	for i := range release {
		release[i] = make(chan struct{})
	}
	started := make(chan int, 8) // the size of each batch as it starts
	var mu sync.Mutex
	nb := 0
	g := New(64, func(ctx context.Context, items []*item, _ func(int)) {
		mu.Lock()
		b := nb
		nb++
		mu.Unlock()
		for _, it := range items {
			it.batch = b
		}
		started <- len(items)
		<-release[b]
	})
	g.MaxWait = time.Minute // the test waits; nothing else ends a wait
	stop := runGroup(g, 2)
	var wg sync.WaitGroup
	var calling atomic.Int32
	call := func(n int) *item {
		it := &item{n: n, batch: -1}
		wg.Add(1)
		go func() { defer wg.Done(); calling.Add(1); g.Do(context.Background(), it) }()
		return it
	}
	expect := func(size int) { t.Helper(); expectStart(t, started, size) }
	expectNone := func() {
		t.Helper()
		select {
		case got := <-started:
			t.Fatalf("a batch of %d started while a larger one ran", got)
		case <-time.After(50 * time.Millisecond):
		}
	}

	// Nothing runs: a lone caller starts at once, and so does the next,
	// as large as the one running.
	call(1)
	expect(1)
	call(2)
	expect(1)
	// Both loops busy: three callers queue, and start together when
	// batch 0 ends.
	call(3)
	call(4)
	call(5)
	queued(t, &calling, 5)
	close(release[0])
	expect(3)
	close(release[1])
	// Batch 2 (three) runs: one caller waits rather than start alone...
	lone := call(6)
	expectNone()
	// ...until two more make a batch as large.
	call(7)
	call(8)
	expect(3)
	if lone.batch != 3 {
		t.Fatalf("the waiting caller ran in batch %d, want 3", lone.batch)
	}
	// With no batch running, a lone caller starts at once again.
	close(release[2])
	close(release[3])
	call(9)
	expect(1)
	close(release[4])
	wg.Wait()
	stop()
}

// Behind a larger batch that does not end, a caller waits MaxWait at most,
// then starts alone.
func TestWaitBehindAStuckBatchIsBounded(t *testing.T) {
	release := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{}), 3: make(chan struct{})}
	started := make(chan int, 8) // the size of each batch as it starts
	g := New(64, func(ctx context.Context, items []*item, _ func(int)) {
		started <- len(items)
		for _, it := range items {
			if r, ok := release[min(it.n, 3)]; ok {
				<-r // 1, 2, then 3, 4 and 5 together, are stuck until released
				return
			}
		}
	})
	g.MaxWait = 20 * time.Millisecond
	stop := runGroup(g, 2)
	var wg sync.WaitGroup
	var calling atomic.Int32
	call := func(n int) {
		wg.Add(1)
		go func() { defer wg.Done(); calling.Add(1); g.Do(context.Background(), &item{n: n}) }()
	}
	expect := func(size int) time.Time { t.Helper(); expectStart(t, started, size); return time.Now() }
	call(1)
	expect(1)
	call(2)
	expect(1)
	for _, n := range []int{3, 4, 5} {
		call(n)
	}
	queued(t, &calling, 5)
	close(release[2])
	expect(3) // 3, 4 and 5, stuck on release[3]
	close(release[1])
	// One loop is free, the other stuck on a batch of three: a lone
	// caller waits for company, but not past MaxWait (its own batch then
	// sticks on release[3] too).
	before := time.Now()
	call(6)
	if waited := expect(1).Sub(before); waited < g.MaxWait {
		t.Fatalf("the lone caller started after %v, before MaxWait", waited)
	}
	close(release[3])
	wg.Wait()
	stop()
}

// A caller whose item's result is final (done) returns while the rest of
// its batch still runs.
func TestDoneLetsACallerGoBeforeItsBatchEnds(t *testing.T) {
	release := make(chan struct{})
	g := New(64, func(ctx context.Context, items []*item, done func(int)) {
		for i, it := range items {
			if it.n == 0 {
				it.batch = 1
				done(i)
				done(i) // twice is harmless
			}
		}
		<-release
	})
	// Two loops: the callers may share a batch or not, and either way
	// the held batch must not hold the early one.
	stop := runGroup(g, 2)
	early, late := &item{n: 0}, &item{n: 1}
	lateDone := make(chan struct{})
	go func() { g.Do(context.Background(), late); close(lateDone) }()
	earlyDone := make(chan struct{})
	go func() { g.Do(context.Background(), early); close(earlyDone) }()
	select {
	case <-earlyDone: // returned though its batch is held
	case <-time.After(30 * time.Second): // a safety net
		t.Fatal("the caller released by done is still waiting")
	}
	if early.batch != 1 {
		t.Fatal("the early caller returned before its result was set")
	}
	select {
	case <-lateDone:
		t.Fatal("a caller not done returned before its batch ended")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-lateDone
	stop()
}

// Before Run starts, each caller runs its item alone.
func TestWithoutRunEachCallerRunsAlone(t *testing.T) {
	var sizes []int
	g := New(8, func(ctx context.Context, items []*item, _ func(int)) { sizes = append(sizes, len(items)) })
	for i := 0; i < 3; i++ {
		g.Do(context.Background(), &item{n: i})
	}
	if len(sizes) != 3 || sizes[0] != 1 || sizes[1] != 1 || sizes[2] != 1 {
		t.Fatalf("batch sizes %v, want [1 1 1]", sizes)
	}
}

// A caller whose context ends stops waiting; the batch still runs its item.
func TestCallerContextEndsWhileItsBatchRuns(t *testing.T) {
	gate := make(chan struct{})
	ran := make(chan int, 1)
	taken := make(chan struct{})
	g := New(8, func(ctx context.Context, items []*item, _ func(int)) {
		close(taken)
		<-gate
		if ctx.Err() != nil {
			t.Error("the batch ran on a cancelled context")
		}
		ran <- len(items)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx, 1); close(done) }()
	for !g.Started() {
		time.Sleep(time.Millisecond)
	}
	// The caller's context ends once the loop has taken its item: ended
	// before, Do may return without handing it in, and nothing would run.
	callCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { <-taken; stop() }()
	if err := g.Do(callCtx, &item{}); err == nil {
		t.Fatal("Do returned nil though its context ended first")
	}
	cancel() // stopping Run does not cancel the batch in flight either
	close(gate)
	if n := <-ran; n != 1 {
		t.Fatalf("batch of %d", n)
	}
	<-done
}

// queued waits until n callers have called Do and every one of them is
// parked in it: handed to a loop and waiting for its batch, or waiting to
// be taken. With every loop busy, the last ones are then surely queued,
// where a "moment more" of sleep only hoped so.
func queued(t *testing.T, calling *atomic.Int32, n int32) {
	t.Helper()
	waitFor(t, func() bool { return calling.Load() >= n })
	parkedInDo(t, int(n))
}

// parkedInDo waits until at least n goroutines are parked in a select of
// Group.Do: a caller waiting to hand its item to a loop (it is then in the
// channel's queue, and a loop's next receive takes it) or waiting for its
// batch to end. Only the runtime knows that a goroutine is parked on a
// channel, so this reads the goroutines' stacks.
func parkedInDo(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	waitFor(t, func() bool {
		for {
			m := runtime.Stack(buf, true)
			if m < len(buf) {
				buf = buf[:m]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		parked := 0
		for _, g := range strings.Split(string(buf), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "[select") && strings.Contains(g, "batch.(*Group[...]).Do(") {
				parked++
			}
		}
		buf = buf[:cap(buf)]
		return parked >= n
	})
}

// runGroup runs g with loops loops until the returned stop is called, and
// returns once Run is running.
func runGroup(g *Group[*item], loops int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx, loops); close(done) }()
	for !g.Started() {
		time.Sleep(time.Millisecond)
	}
	return func() { cancel(); <-done }
}

// expectStart waits for the next batch to start and checks its size.
func expectStart(t *testing.T, started <-chan int, size int) {
	t.Helper()
	select {
	case got := <-started:
		if got != size {
			t.Fatalf("a batch of %d started, want %d", got, size)
		}
	case <-time.After(30 * time.Second): // a safety net
		t.Fatalf("no batch of %d started", size)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30s")
		}
		time.Sleep(time.Millisecond)
	}
}
