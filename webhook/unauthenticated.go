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
//   - refusals are logged at most once a second per endpoint, with how
//     many were not logged: a flood must not also be a flood of log lines.
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

// refusalLog logs refused deliveries at most once per interval and
// endpoint, counting the ones it left out.
type refusalLog struct {
	log      *slog.Logger
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
	dropped  map[string]int
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, interval: time.Second, last: map[string]time.Time{}, dropped: map[string]int{}}
}

func (l *refusalLog) refused(ctx context.Context, endpoint string, reason error) {
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.last[endpoint]) < l.interval {
		l.dropped[endpoint]++
		l.mu.Unlock()
		return
	}
	dropped := l.dropped[endpoint]
	l.last[endpoint], l.dropped[endpoint] = now, 0
	l.mu.Unlock()
	l.log.WarnContext(ctx, "webhook refused", "endpoint", endpoint, "reason", reason.Error(), "refusals_not_logged", dropped)
}
