package webhook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Until a delivery is authenticated, its bytes are anyone's. A flood of
// forged bodies must cost the genuine deliveries as little as possible,
// so what runs before authentication is bounded four ways:
//   - nothing costlier than reading the body, a bounded byte scan and the
//     MAC runs before Authenticate (see ServeHTTP);
//   - bodies larger than a genuine single delivery (smallBody) are read
//     and authenticated at most largeSlots at a time: a flood of them
//     then competes with the genuine deliveries for two goroutines'
//     worth of CPU, not for as many as it opens connections;
//   - those large bodies are read at most largeRate bytes a second in all.
//     Two slots alone still let a flood on the same machine push bodies
//     through as fast as it can send them (read, MAC'd and refused), and
//     the flood's sender and the kernel's copies take the CPU the genuine
//     deliveries need (docs/performance.md, "Unauthenticated bodies").
//     What is not read stays in the sender's socket: TCP slows
//     the sender down instead of razao speeding it up. largeRate is
//     far above what genuine large deliveries need (a 2,000-item bcb-pix
//     callback is about 250 KB, and PSPs send a few a second at most);
//   - refusals are logged at most 20 a second per endpoint, with how many
//     were not logged: a flood must not also be a flood of log lines.
const (
	smallBody  = 32 << 10
	largeSlots = 2
	largeRate  = 16 << 20
	// largeBurst lets the first large bodies after a quiet spell be read
	// at once; largeChunk is the most read per wait for the budget.
	largeBurst = 1 << 20
	largeChunk = 32 << 10
	// largeWait bounds how long a large body waits for a slot and for the
	// budget to read it before it is answered 503, which a PSP retries.
	largeWait = 5 * time.Second
	// largeReadWithin, plus the budget's time for the body (readDeadline),
	// bounds how long a large body may take to arrive once it holds a slot: a sender that stalls mid-body must not keep the
	// slot until the server's read timeout, or two idle connections turn
	// away every large genuine delivery. A PSP's 256 KB crosses a data
	// centre's link in milliseconds.
	largeReadWithin = 2 * time.Second
)

// errGateBusy says a large unauthenticated body could not be read within
// largeWait: too many large bodies at once.
var errGateBusy = errors.New("too many large deliveries at once")

// gate holds the slots and the read budget of large unauthenticated bodies.
type gate struct {
	slots      chan struct{}
	budget     *rate.Limiter
	wait       time.Duration
	readWithin time.Duration
}

func newGate() *gate {
	return &gate{slots: make(chan struct{}, largeSlots), budget: rate.NewLimiter(largeRate, largeBurst),
		wait: largeWait, readWithin: largeReadWithin}
}

// large says whether r's body may be large: over smallBody, or of unknown
// length.
func large(r *http.Request) bool { return r.ContentLength < 0 || r.ContentLength > smallBody }

// enter takes a slot for r if its body may be large and returns the
// function that gives it back and the body to read, which for a large body
// waits for the budget and must arrive within readWithin; ok is false when
// no slot freed up within the gate's wait or the request ended.
func (g *gate) enter(w http.ResponseWriter, r *http.Request, maxBody int64) (body io.Reader, leave func(), ok bool) {
	if !large(r) {
		return r.Body, func() {}, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.wait)
	select {
	case g.slots <- struct{}{}:
		// Not supported by a test's recorder; a real connection has it.
		// The deadline is lifted once the body is read to its end (leave):
		// left set, it would end the server's background read of the
		// connection while the delivery is stored, and with it the
		// request's context. A body not read to its end keeps it: net/http
		// reads what is left of a body after the handler (up to 256 KiB,
		// to reuse the connection), and with no deadline a sender that
		// trickled the rest held the connection for as long as it went on.
		// The gate only ever shortens the time a body may take: the
		// deadline replaces the server's read timeout, so it is never
		// later than that timeout would have been.
		d := g.readDeadline(r.ContentLength, maxBody)
		if rt := serverReadTimeout(r); rt > 0 && rt < d {
			d = rt
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(d))
		b := &budgeted{r: r.Body, g: g, ctx: ctx}
		return b, func() {
			cancel()
			if b.sawEOF {
				_ = rc.SetReadDeadline(time.Time{})
			}
			<-g.slots
		}, true
	case <-ctx.Done():
		cancel()
		return nil, nil, false
	}
}

// readDeadline is how long a large body of length n (unknown: -1) may
// take to arrive once it holds a slot: readWithin, plus the time the
// budget needs to let the whole body in while every slot reads, so that
// the largest body an endpoint takes (max_body_bytes, up to 16 MiB) is
// never cut by the deadline alone.
func (g *gate) readDeadline(n, maxBody int64) time.Duration {
	if n < 0 || n > maxBody {
		n = maxBody
	}
	perSecond := float64(g.budget.Limit())
	if perSecond <= 0 || g.budget.Limit() == rate.Inf {
		return g.readWithin
	}
	return g.readWithin + time.Duration(float64(n)*float64(cap(g.slots))/perSecond*float64(time.Second))
}

// serverReadTimeout is the ReadTimeout of the server r came in on (0: none,
// or not served by an *http.Server). It is counted here from the handler's
// start rather than from the request's first byte: the headers' time,
// bounded by ReadHeaderTimeout, is not in it.
func serverReadTimeout(r *http.Request) time.Duration {
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok {
		return srv.ReadTimeout
	}
	return 0
}

// budgeted reads r no faster than its gate's budget allows, failing with
// errGateBusy once the budget cannot be had before ctx's deadline (the gate's
// wait, counted from entering it).
type budgeted struct {
	r      io.Reader
	g      *gate
	ctx    context.Context
	sawEOF bool // the body was read to its end
}

func (b *budgeted) Read(p []byte) (int, error) {
	if len(p) > largeChunk {
		p = p[:largeChunk]
	}
	if err := b.g.budget.WaitN(b.ctx, len(p)); err != nil {
		return 0, errGateBusy // the wait would outlast the deadline, or the request ended
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.sawEOF = true
	}
	return n, err
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
