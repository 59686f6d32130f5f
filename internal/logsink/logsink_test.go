package logsink_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/razao/razao/internal/logsink"
)

// writes records each Write call the sink makes.
type writes struct {
	mu    sync.Mutex
	calls []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func (w *writes) all() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.calls, ""), len(w.calls)
}

// Lines from many goroutines all arrive, each whole, in fewer writes
// than lines; Write does not keep the caller's buffer.
func TestLinesArriveWholeInFewerWrites(t *testing.T) {
	t.Parallel()
	var w writes
	s := logsink.New(&w)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := []byte{}
			for i := range 500 {
				buf = fmt.Appendf(buf[:0], "g%d line %d\n", g, i)
				s.Write(buf)
			}
		}()
	}
	wg.Wait()
	s.Close()
	out, calls := w.all()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines, want 4000", len(lines))
	}
	seen := map[string]bool{}
	next := map[string]int{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l, "g%d line %d", &g, &i); err != nil || seen[l] {
			t.Fatalf("line %q cut, mixed or repeated", l)
		}
		seen[l] = true
		if k := fmt.Sprint(g); next[k] != i {
			t.Fatalf("goroutine %d: line %d after %d: out of order", g, i, next[k]-1)
		}
		next[fmt.Sprint(g)]++
	}
	if calls >= 4000 {
		t.Errorf("%d writes for 4,000 lines: nothing gathered", calls)
	}
}

// A line alone is written within about the linger (5 ms), without Close.
func TestALineAloneIsWrittenSoon(t *testing.T) {
	t.Parallel()
	var w writes
	s := logsink.New(&w)
	defer s.Close()
	s.Write([]byte("one\n"))
	deadline := time.Now().Add(30 * time.Second) // a safety net: the linger is 5 ms
	for {
		if out, _ := w.all(); out == "one\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a lone line was not written within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// After Close, writes go straight through, after the lines before it.
func TestWritesAfterCloseFollowTheRest(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	var mu sync.Mutex
	s := logsink.New(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return b.Write(p) }))
	s.Write([]byte("a\n"))
	s.Write([]byte("b\n"))
	s.Close()
	s.Close()
	if _, err := s.Write([]byte("c\n")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if b.String() != "a\nb\nc\n" {
		t.Fatalf("wrote %q, want a, b, c in order", b.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A stuck log holds writers back once a megabyte waits, rather than
// letting the pending bytes grow; nothing is lost once it moves again.
func TestAStuckLogHoldsWritersBack(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var got int
	s := logsink.New(writerFunc(func(p []byte) (int, error) {
		<-release
		mu.Lock()
		defer mu.Unlock()
		got += len(p)
		return len(p), nil
	}))
	line := bytes.Repeat([]byte("x"), 1023)
	line = append(line, '\n')
	var written sync.WaitGroup
	var queued int64
	var qmu sync.Mutex
	written.Add(1)
	go func() {
		defer written.Done()
		for range 3 << 10 { // 3 MiB
			s.Write(line)
			qmu.Lock()
			queued += int64(len(line))
			qmu.Unlock()
		}
	}()
	accepted := func() int64 { qmu.Lock(); defer qmu.Unlock(); return queued }
	// The writer is stuck on the first batch, so a megabyte more is
	// accepted before writers are held back: wait for that much (on a
	// loaded machine the writing goroutine may take a while to get there;
	// a fixed sleep could judge before it had), then give it a moment to
	// overrun the limit, which only a wrong sink does.
	for deadline := time.Now().Add(30 * time.Second); accepted() < 1<<20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d bytes accepted in 30 s while the log was stuck, want a megabyte", accepted())
		}
	}
	time.Sleep(200 * time.Millisecond)
	held := accepted()
	// The writer holds one batch; at most a megabyte more waits.
	if held > 2<<20+int64(len(line)) {
		t.Fatalf("%d bytes accepted while the log was stuck, want at most about 2 MiB", held)
	}
	close(release)
	written.Wait()
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	if got != 3<<20 {
		t.Fatalf("%d bytes written, want %d", got, 3<<20)
	}
}
