package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/razao/razao/events"
)

// fanoutWriteTimeout bounds one write of the fan-out, as razao's
// events.DefaultWriteTimeout bounds one write to a stream.
const fanoutWriteTimeout = events.DefaultWriteTimeout

// fanout: the distinct payments beside the fan-out of the sse scenario
// with no razao in it. This tool opens -streams loopback TCP connections
// to itself and, like razao's event hub, gives each its own goroutine and
// wakes them in events.WakeGroups groups spread over every
// events.WakeSpacing, each wake one write of what a stream of the sse
// scenario of this run received in that time; as many readers only count
// the bytes, which costs less than reading events. What distinct loses
// beside it is what this machine loses to that fan-out whoever serves
// it: the yardstick of sse, as pgbench (a) is of distinct. Needs the sse
// scenario earlier in the same run, or -fanout-kb-per-s.
func (l *loader) fanout(ctx context.Context) *result {
	perS := float64(l.opt.fanoutKBPerS) * 1e3
	if perS == 0 {
		perS = l.streamBytesPerS
	}
	if perS <= 0 {
		res := newResult(l, "fanout", l.opt.n, l.opt.c)
		res.violate("fanout needs the sse scenario earlier in the same run (-scenario all) or -fanout-kb-per-s")
		return res
	}
	return l.payments(ctx, "fanout", func(ctx context.Context, res *result) func() {
		k := l.opt.streams
		spacing := events.WakeSpacing(k)
		payload := fanoutPayload(int(perS * spacing.Seconds()))
		f, err := openFanout(ctx, k)
		if err != nil {
			res.violate("fanout: %v", err)
			return func() {}
		}
		fctx, cancel := context.WithCancel(ctx)
		f.start(fctx, spacing, payload)
		start := time.Now()
		l.logf("fanout: %d loopback connections, %d bytes each every %s, in %d groups", k, len(payload), spacing, events.WakeGroups(k))
		return func() {
			cancel()
			f.stop()
			secs := time.Since(start).Seconds()
			res.Extra["streams_open"] = k
			res.Extra["write_bytes"] = len(payload)
			res.Extra["writes"] = f.writes.Load()
			if secs > 0 {
				res.Extra["stream_kb_per_s"] = round1(float64(f.read.Load()) / float64(k) / secs / 1e3)
			}
			if n := f.failed.Load(); n > 0 {
				res.violate("%d fan-out writes failed (first: %v)", n, f.firstErr())
			}
			if f.writes.Load() == 0 {
				res.violate("the fan-out wrote nothing")
			}
		}
	})
}

// fanoutPayload is n bytes of event frames (at least one frame).
func fanoutPayload(n int) []byte {
	frame := []byte("id: 123456-7890123\nevent: charge.paid\ndata: {\"id\":7890123,\"topic\":\"charge.paid\",\"charge_id\":\"lt0000-e-0\"," +
		"\"payload\":{\"fee\":0,\"amount\":1000,\"paid_at\":\"2026-12-01T00:00:00Z\",\"charge_id\":\"lt0000-e-0\"},\"created_at\":\"2026-12-01T00:00:00.000000Z\"}\n\n")
	return bytes.Repeat(frame, max(1, n/len(frame)))
}

// fanoutConns is the fan-out's connections: a writer and a reader end of
// each, within this process.
type fanoutConns struct {
	writers, readers []net.Conn
	wake             []chan struct{}
	wg               sync.WaitGroup
	writes, read     atomic.Int64
	failed           atomic.Int64
	errMu            sync.Mutex
	err              error
}

// openFanout connects k loopback TCP connections to a listener of its own.
func openFanout(ctx context.Context, k int) (*fanoutConns, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	f := &fanoutConns{}
	accepted := make(chan net.Conn, k)
	go func() {
		for i := 0; i < k; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var d net.Dialer
	for i := 0; i < k; i++ {
		r, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			f.close()
			return nil, fmt.Errorf("dial %d of %d: %w", i+1, k, err)
		}
		f.readers = append(f.readers, r)
		select {
		case w := <-accepted:
			f.writers = append(f.writers, w)
		case <-time.After(10 * time.Second):
			f.close()
			return nil, fmt.Errorf("accept %d of %d: timed out", i+1, k)
		}
	}
	return f, nil
}

// start runs a reader and a writer goroutine per connection, and wakes
// the writers group by group until ctx ends.
func (f *fanoutConns) start(ctx context.Context, spacing time.Duration, payload []byte) {
	for _, r := range f.readers {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := r.Read(buf)
				f.read.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	f.wake = make([]chan struct{}, len(f.writers))
	for i, w := range f.writers {
		f.wake[i] = make(chan struct{}, 1)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-f.wake[i]:
				}
				w.SetWriteDeadline(time.Now().Add(fanoutWriteTimeout))
				if _, err := w.Write(payload); err != nil {
					if ctx.Err() == nil {
						f.fail(err)
					}
					return
				}
				f.writes.Add(1)
			}
		}()
	}
	groups := events.WakeGroups(len(f.writers))
	for g := 0; g < groups; g++ {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(g) * spacing / time.Duration(groups)):
			}
			t := time.NewTicker(spacing)
			defer t.Stop()
			for {
				for i := g; i < len(f.wake); i += groups {
					select {
					case f.wake[i] <- struct{}{}:
					default:
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
}

func (f *fanoutConns) fail(err error) {
	f.failed.Add(1)
	f.errMu.Lock()
	defer f.errMu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *fanoutConns) firstErr() error {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	return f.err
}

// stop closes every connection and waits for the goroutines (ctx must
// have ended).
func (f *fanoutConns) stop() {
	f.close()
	f.wg.Wait()
}

func (f *fanoutConns) close() {
	for _, c := range f.writers {
		c.Close()
	}
	for _, c := range f.readers {
		c.Close()
	}
}
