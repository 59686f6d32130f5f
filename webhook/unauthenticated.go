package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Until a delivery is authenticated, its bytes are anyone's. A flood of
// forged bodies must cost the genuine deliveries as little as possible,
// so what runs before authentication is bounded three ways:
//   - nothing costlier than reading the body, a bounded byte scan and the
//     MAC runs before Authenticate (see ServeHTTP);
//   - bodies larger than a genuine single delivery (smallBody) are read
//     and authenticated at most largeSlots at a time: a flood of them
//     then competes with the genuine deliveries for two goroutines'
//     worth of CPU, not for as many as it opens connections;
//   - refusals are logged at most 20 a second per endpoint, with how many
//     were not logged: a flood must not also be a flood of log lines.
const (
	smallBody  = 32 << 10
	largeSlots = 2
	// largeWait bounds how long a large body waits for a slot before it
	// is answered 503, which a PSP retries.
	largeWait = 5 * time.Second
)

// gate holds the slots of large unauthenticated bodies.
type gate chan struct{}

func newGate() gate { return make(gate, largeSlots) }

// enter takes a slot for r if its body may be large (over smallBody, or of
// unknown length) and returns the function that gives it back; ok is false
// when no slot freed up within largeWait or the request ended.
func (g gate) enter(ctx context.Context, r *http.Request) (leave func(), ok bool) {
	if r.ContentLength >= 0 && r.ContentLength <= smallBody {
		return func() {}, true
	}
	t := time.NewTimer(largeWait)
	defer t.Stop()
	select {
	case g <- struct{}{}:
		return func() { <-g }, true
	case <-t.C:
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
}

// refusalLog logs at most burst refused deliveries per endpoint and
// interval, and counts the ones it leaves out in the next line it logs.
type refusalLog struct {
	log      *slog.Logger
	interval time.Duration
	burst    int
	mu       sync.Mutex
	windows  map[string]*refusalWindow
}

type refusalWindow struct {
	start   time.Time
	logged  int
	dropped int
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, interval: time.Second, burst: 20, windows: map[string]*refusalWindow{}}
}

func (l *refusalLog) refused(ctx context.Context, endpoint string, reason error, attrs ...any) {
	now := time.Now()
	l.mu.Lock()
	w := l.windows[endpoint]
	if w == nil {
		w = &refusalWindow{}
		l.windows[endpoint] = w
	}
	if now.Sub(w.start) >= l.interval {
		w.start, w.logged = now, 0
	}
	if w.logged >= l.burst {
		w.dropped++
		l.mu.Unlock()
		return
	}
	w.logged++
	dropped := w.dropped
	w.dropped = 0
	l.mu.Unlock()
	l.log.WarnContext(ctx, "webhook refused", append([]any{"endpoint", endpoint, "reason", reason.Error(), "refusals_not_logged", dropped}, attrs...)...)
}
