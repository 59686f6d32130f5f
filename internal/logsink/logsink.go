// Package logsink writes a service's log lines from one goroutine, a few
// milliseconds' worth at a time. razao logs a line per HTTP request; with
// each line its own write(2), the log would be a system call per delivery
// on the request path (docs/performance.md, "The access line").
package logsink

import (
	"io"
	"sync"
	"time"
)

// linger is how long the sink gathers lines after a write before the next:
// a line waits at most this long, and a busy service writes at most
// 1/linger times a second.
const linger = 5 * time.Millisecond

// maxPending bounds the bytes waiting: past it, Write waits for the
// writer, so a stuck log slows the service down instead of growing.
const maxPending = 1 << 20

// Sink is an io.Writer that hands what it is given to a goroutine writing
// to the underlying writer. Write never returns before its bytes are
// copied; Close writes what is still waiting. Lines written while the
// process dies in a panic or by a signal may be lost: at most linger's
// worth.
type Sink struct {
	w    io.Writer
	mu   sync.Mutex
	room sync.Cond // signalled when the pending bytes have been taken
	buf  []byte    // bytes waiting, in order
	shut bool      // Close has begun: Write writes through
	wake chan struct{}
	done chan struct{}
}

// New returns a sink writing to w, and starts its writer.
func New(w io.Writer) *Sink {
	s := &Sink{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.room.L = &s.mu
	go s.run()
	return s
}

// Write queues a copy of p. It fails only after Close, with the
// underlying writer's error.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	for len(s.buf) > 0 && len(s.buf)+len(p) > maxPending && !s.shut {
		s.room.Wait()
	}
	if s.shut {
		s.mu.Unlock()
		<-s.done // after the lines queued before Close
		return s.w.Write(p)
	}
	s.buf = append(s.buf, p...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *Sink) run() {
	defer close(s.done)
	var out []byte
	for range s.wake {
		s.mu.Lock()
		out, s.buf = s.buf, out[:0]
		shut := s.shut
		s.room.Broadcast()
		s.mu.Unlock()
		if len(out) > 0 {
			s.w.Write(out) // a log has nowhere to report its own failure
		}
		if shut {
			return
		}
		time.Sleep(linger)
	}
}

// Close writes what is waiting and stops the writer; later writes go
// straight to the underlying writer. It is safe to call more than once.
func (s *Sink) Close() error {
	s.mu.Lock()
	already := s.shut
	s.shut = true
	s.room.Broadcast()
	s.mu.Unlock()
	if !already {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	<-s.done
	return nil
}
