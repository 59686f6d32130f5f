package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/auth"
)

// Channel is the NOTIFY channel on which writers announce committed outbox
// rows (see Notifier).
const Channel = "razao_outbox"

// Defaults of the Hub's settings.
const (
	DefaultPollInterval   = 3 * time.Second
	DefaultKeepAlive      = 15 * time.Second
	DefaultWriteTimeout   = 10 * time.Second
	DefaultMaxSubscribers = 1000
	DefaultMaxPerToken    = 8
	DefaultMaxReaders     = 2
	// DefaultMaxBytesPerSecond is 32 MiB: about 120,000 event frames a
	// second, summed over every open stream.
	DefaultMaxBytesPerSecond = 32 << 20
)

// Hub keeps one LISTEN connection per process and wakes every subscriber
// when the outbox announces a commit, every PollInterval (a notification
// is lost while the listener reconnects), and soon again while committed
// events are held back by an older transaction.
//
// Streams at one cursor share one read per wake: the first to ask reads the
// outbox and encodes the batch, the others take the same bytes. A stream
// behind them, at an event of a read of this wake, takes the rest of that
// read. Streams at other cursors (resuming with Last-Event-ID from further
// back) read for themselves until they reach the others, when they share
// too. Every
// database call of the hub (reads and token checks) holds one of
// MaxReaders slots, so streams never hold more than MaxReaders connections
// of the pool, whatever their number; the listener has a connection of its
// own, outside the pool. What the streams are sent together is bounded
// by MaxBytesPerSecond: past it they fall behind, together, rather than
// take the machine from the webhooks.
//
// The exported fields are settings: change them after NewHub and before Run
// or ServeHTTP are first called. A value that is not positive means its
// default.
type Hub struct {
	// PollInterval is the longest the hub waits for a notification before
	// waking the streams anyway.
	PollInterval time.Duration
	// KeepAlive is the interval of ": keepalive" comments, which keep
	// proxies from closing an idle stream and detect a client that is gone;
	// at the same interval the hub re-checks the tokens of open streams and
	// ends those of a revoked one. Streams with events to send do not wait
	// for it: every read that finds events checks the tokens after it, and
	// a revoked token's stream ends instead of sending them.
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a client; one that cannot take a
	// batch within it is dropped rather than holding a subscriber slot.
	WriteTimeout time.Duration
	// MaxSubscribers caps open streams; past it a client gets 503.
	MaxSubscribers int
	// MaxPerToken caps the open streams of one API token; past it the
	// client gets 429, so that one token cannot take every slot.
	MaxPerToken int
	// MaxReaders bounds the database connections the hub uses at once.
	MaxReaders int
	// MaxBytesPerSecond bounds what the streams together are sent a
	// second. Each wake a stream is sent about its share of it (the bound
	// times the time since the last wake, over the open streams: a read
	// is cut there, a stream reads on at once only while another batch
	// fits, and at least one event goes each wake whatever the share);
	// past it, the streams fall behind together and catch up when the
	// events slow down, sharing their reads as before. Nothing is dropped.
	// The bound exists because the webhooks share the machine with the
	// streams' writes and their readers: bytes written to many connections
	// cost the webhooks throughput whoever writes them (docs/performance.md,
	// "Event streams beside the webhooks").
	MaxBytesPerSecond int

	db    *sqlx.DB
	dbURL string
	log   *slog.Logger

	mu       sync.Mutex
	subs     map[*subscriber]struct{}
	perToken map[int64]int
	// batches are the reads started since the last wake, by cursor.
	batches map[string]*batch
	// within finds, by an event's cursor, a read of this wake or the one
	// before that returned that event and more after it: a stream behind
	// the others takes the rest of that read instead of reading again.
	// Events a read returned are final (nothing can commit before them any
	// more), so the rest stays true across wakes; only "nothing after the
	// last event" is forgotten at the next wake.
	within map[string]suffix
	// started counts reads started, to tell a stream that subscribed after
	// a read began not to share it.
	started uint64
	// retry is armed while some read found events held back; heldSeen says
	// whether a read since the last wake did.
	retry      *time.Timer
	retryDelay time.Duration
	heldSeen   bool
	// joined counts subscriptions, to spread streams over wake groups.
	joined int
	// afterFunc schedules the later groups of a wake (time.AfterFunc;
	// tests hold them).
	afterFunc func(time.Duration, func())
	// lastWake and wakeGap are when the last wake was and how long after
	// the one before it (within the bounds of the spacing): what a stream
	// may be sent in this wake is its share of MaxBytesPerSecond for that
	// long. frameBytes is the mean size of the last read's frames, to turn
	// that share into a number of events.
	lastWake   time.Time
	wakeGap    time.Duration
	frameBytes int
	// pace is armed while some stream waits with more to read: a read
	// of this wake stopped at the streams' share, or a stream stopped
	// reading on after a full one. It wakes them after the spacing even
	// if nothing new commits.
	pace *time.Timer

	slotsOnce sync.Once
	slots     chan struct{}
	reads     atomic.Uint64
	wakes     atomic.Uint64
	paced     atomic.Uint64

	ctx       context.Context // ends when the hub closes
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	// listening is closed once LISTEN has taken effect (seen by tests).
	listening  chan struct{}
	listenOnce sync.Once
}

// subscriber is one open stream as the hub sees it.
type subscriber struct {
	// wake holds one pending wake, so a notification that arrives while the
	// stream is busy is remembered, not dropped, and the hub never blocks
	// on a slow stream.
	wake chan struct{}
	// revoked is closed when the stream's token is found revoked.
	revoked  chan struct{}
	token    int64
	hasToken bool
	// after is the read count when it subscribed: reads started before
	// may have missed a commit announced before it listened.
	after uint64
	// group places it among the groups a wake signals one after another
	// (its number of joining: the groups stay even).
	group int
}

// batch is one read of the outbox after a cursor, shared by every stream
// at that cursor until the next wake.
type batch struct {
	seq    uint64
	wake   uint64 // the wake during which it was read
	done   chan struct{}
	frames []byte // the events, encoded once as SSE frames
	n      int    // how many
	last   string // the cursor after them
	held   bool
	// full says the read stopped at MaxLimit: more may follow at once.
	full bool
	// share is what each stream may be sent this wake (bytes), and limit
	// how many events the read asks for (twice the share in frames of the
	// last read's mean size: the frames are cut at the share in bytes).
	// paced says the read stopped at the share, or at a limit below
	// MaxLimit: more follow at the next wake.
	share int
	limit int
	paced bool
	// cursors and offs are each event's cursor and where its frame starts.
	cursors []string
	offs    []int
	// tokens are the tokens of the streams open when the read was
	// checked for revocations, after it: true for those found revoked.
	// A stream is sent the batch only if its token is here and false
	// (tokensAllow).
	tokens map[int64]bool
	err    error
}

// suffix is the part of batch b after its event i.
type suffix struct {
	b *batch
	i int
}

// rest is the part of b after its event i, as a batch of its own. A rest
// of a read of an earlier wake says more may follow at once (full): the
// commit this wake announces may be after it.
func (b *batch) rest(i int, wake uint64) *batch {
	done := make(chan struct{})
	close(done)
	rest := &batch{seq: b.seq, wake: b.wake, done: done, n: b.n - i - 1, last: b.last, held: b.held,
		full: b.full || b.wake != wake, share: b.share, paced: b.paced, tokens: b.tokens}
	if i+1 < b.n {
		rest.frames = b.frames[b.offs[i+1]:]
	}
	return rest
}

// NewHub returns a hub that reads events from db and listens through its own
// connection to dbURL. Until Run is started, streams read only when they
// open. A nil logger means slog.Default().
func NewHub(db *sqlx.DB, dbURL string, logger *slog.Logger) *Hub {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{
		PollInterval:   DefaultPollInterval,
		KeepAlive:      DefaultKeepAlive,
		WriteTimeout:   DefaultWriteTimeout,
		MaxSubscribers: DefaultMaxSubscribers,
		MaxPerToken:    DefaultMaxPerToken,
		MaxReaders:     DefaultMaxReaders,
		db:             db,
		dbURL:          dbURL,
		log:            logger,
		subs:           make(map[*subscriber]struct{}),
		perToken:       make(map[int64]int),
		batches:        make(map[string]*batch),
		within:         make(map[string]suffix),
		ctx:            ctx,
		cancel:         cancel,
		done:           make(chan struct{}),
		listening:      make(chan struct{}),
		afterFunc:      func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		wakeGap:        maxWakeSpacing,
		frameBytes:     defaultFrameBytes,
	}
}

// Reads is how many times the hub has read the outbox, and Wakes how many
// times it has woken its streams: with every stream at one cursor, at most
// one read per wake, whatever their number.
func (h *Hub) Reads() uint64 { return h.reads.Load() }

// Wakes: see Reads.
func (h *Hub) Wakes() uint64 { return h.wakes.Load() }

// PacedReads is how many reads stopped at the streams' share of
// MaxBytesPerSecond, leaving them behind the outbox.
func (h *Hub) PacedReads() uint64 { return h.paced.Load() }

// Run listens for outbox notifications until ctx ends or LISTEN is refused,
// reconnecting as needed. When Run returns the hub is closed: open streams
// end, so an http.Server's Shutdown is not held up by them.
func (h *Hub) Run(ctx context.Context) error {
	defer h.Close()
	ctx, cancel := context.WithCancel(ctx) // the tickers end with Run
	defer cancel()
	go h.tick(ctx, orDefault(h.PollInterval, DefaultPollInterval), h.wakeAll)
	go h.tick(ctx, orDefault(h.KeepAlive, DefaultKeepAlive), func() { h.checkTokens(ctx) })
	l := pq.NewListener(h.dbURL, time.Second, 30*time.Second, h.logListener)
	// Close unblocks a Listen that is still waiting for a first connection.
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer func() {
		stop()
		l.Close()
		// The listener's goroutine may be blocked handing us a notification.
		go func() {
			for range l.Notify {
			}
		}()
	}()
	if err := l.Listen(Channel); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("listen on %s: %w", Channel, err)
	}
	h.listenOnce.Do(func() { close(h.listening) })
	// Events committed before LISTEN took effect were never announced.
	h.wakeAll()
	go h.pingListener(ctx, l)
	return h.dispatch(ctx, l.Notify)
}

// dispatch wakes subscribers on every notification, including the nil one
// pq sends after a reconnect, since notifications may have been lost then.
// After a wake, notifications coalesce for wakeSpacing: every stream
// writes to its socket once per wake, so the wakes a second times the
// open streams is what fan-out costs, whatever the events.
func (h *Hub) dispatch(ctx context.Context, notify <-chan *pq.Notification) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-notify:
			if !ok {
				return nil
			}
		}
		h.wakeAll()
		if ok := h.coalesce(ctx, notify, h.wakeSpacing()); !ok {
			return nil
		}
	}
}

// coalesce waits for d, taking the notifications that arrive meanwhile,
// and then wakes the streams once more if any did: the first
// notification after a quiet spell is not delayed, and none is lost. It
// reports false when ctx ends or notify closes.
func (h *Hub) coalesce(ctx context.Context, notify <-chan *pq.Notification, d time.Duration) bool {
	for d > 0 {
		t := time.NewTimer(d)
		pending := false
	wait:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return false
			case _, ok := <-notify:
				if !ok {
					t.Stop()
					return false
				}
				pending = true
			case <-t.C:
				break wait
			}
		}
		if !pending {
			return true
		}
		h.wakeAll()
		d = h.wakeSpacing()
	}
	return true
}

// StreamWritesPerSecond is the budget of stream writes a second the hub
// spaces its wakes by: with n streams open, one wake per n/budget seconds
// at most (and never less than 20 ms apart, the Notifier's own spacing,
// nor more than 500 ms). With 1,000 streams, 400 ms: each wake then
// carries that long's events (or its share of MaxBytesPerSecond) to each
// stream in one write. Every write has a fixed cost to razao and to the
// reader besides its bytes, so fewer, larger writes leave more of the
// machine to the webhooks; with MaxBytesPerSecond bounding their size,
// 2,500 did better than 5,000 in the load test's sse scenario
// (docs/performance.md, "Event streams beside the webhooks").
const StreamWritesPerSecond = 2_500

// Bounds of the spacing of wakes.
const (
	minWakeSpacing = 20 * time.Millisecond
	maxWakeSpacing = 500 * time.Millisecond
)

// wakeSpacing is how long notifications coalesce after a wake, for the
// streams open now.
func (h *Hub) wakeSpacing() time.Duration {
	h.mu.Lock()
	n := len(h.subs)
	h.mu.Unlock()
	return WakeSpacing(n)
}

// WakeSpacing is the spacing of wakes for n open streams (scripts/load's
// fanout scenario reproduces the fan-out with it).
func WakeSpacing(n int) time.Duration {
	d := time.Duration(n) * time.Second / StreamWritesPerSecond
	return min(max(d, minWakeSpacing), maxWakeSpacing)
}

// pingListener makes a silently dropped listener connection fail, and so
// reconnect, instead of waiting for notifications that will never come.
func (h *Hub) pingListener(ctx context.Context, l *pq.Listener) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Ping(); err != nil {
				h.log.Debug("events: listener ping failed", "err", err)
			}
		}
	}
}

// logListener records the listener's connection changes; the errors are
// the driver's and carry no connection string.
func (h *Hub) logListener(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventConnected, pq.ListenerEventReconnected:
		h.log.Info("events: listener connected", "event", ev.String())
	default:
		h.log.Warn("events: listener connection problem", "event", ev.String(), "err", err)
	}
}

// orDefault guards the settings: a zero ticker panics and a zero poll
// would spin.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// tick calls f every d until ctx ends.
func (h *Hub) tick(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Close ends every open stream and refuses new ones. It is safe to call more
// than once and concurrently with Run.
func (h *Hub) Close() {
	h.closeOnce.Do(func() {
		close(h.done)
		h.cancel()
		h.mu.Lock()
		if h.retry != nil {
			h.retry.Stop()
		}
		if h.pace != nil {
			h.pace.Stop()
		}
		h.mu.Unlock()
	})
}

// Why a stream could not be opened.
var (
	errClosed       = errors.New("event hub closed")
	errFull         = errors.New("every event stream slot is taken")
	errTokenStreams = errors.New("too many event streams for this token")
)

// subscribe registers a stream of token (hasToken false: a hub mounted
// without authentication, capped only by MaxSubscribers).
func (h *Hub) subscribe(token int64, hasToken bool) (*subscriber, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		return nil, errClosed
	default:
	}
	if len(h.subs) >= positive(h.MaxSubscribers, DefaultMaxSubscribers) {
		return nil, errFull
	}
	if hasToken && h.perToken[token] >= positive(h.MaxPerToken, DefaultMaxPerToken) {
		return nil, errTokenStreams
	}
	h.joined++
	sub := &subscriber{wake: make(chan struct{}, 1), revoked: make(chan struct{}), token: token, hasToken: hasToken, after: h.started,
		group: h.joined}
	h.subs[sub] = struct{}{}
	if hasToken {
		h.perToken[token]++
	}
	return sub, nil
}

// unsubscribe frees a stream's slot.
func (h *Hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
	if sub.hasToken {
		if h.perToken[sub.token]--; h.perToken[sub.token] <= 0 {
			delete(h.perToken, sub.token)
		}
	}
}

// wakeAll tells every stream to read the outbox again. The reads of the
// last wake are no longer shared, and what they said about the end of the
// outbox is forgotten: a read that began before the wake may have missed
// the commit it announces. What they returned stays in within for one more
// wake, for the streams still behind.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	wake := h.wakes.Add(1)
	now := time.Now()
	if !h.lastWake.IsZero() {
		h.wakeGap = min(max(now.Sub(h.lastWake), minWakeSpacing), maxWakeSpacing)
	}
	h.lastWake = now
	if h.pace != nil {
		h.pace.Stop()
		h.pace = nil
	}
	clear(h.batches)
	for cursor, sfx := range h.within {
		if sfx.i == sfx.b.n-1 || sfx.b.wake+1 < wake {
			delete(h.within, cursor)
		}
	}
	if !h.heldSeen {
		h.retryDelay = 0
	}
	h.heldSeen = false
	groups := WakeGroups(len(h.subs))
	h.signal(0, groups)
	step := WakeSpacing(len(h.subs)) / time.Duration(groups)
	for g := 1; g < groups; g++ {
		h.afterFunc(time.Duration(g)*step, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.signal(g, groups)
		})
	}
}

// streamsPerGroup is how many streams a wake signals at once. Streams
// beyond it are signalled in groups spread over the spacing of wakes,
// each group reading the same read of the wake: when every stream writes
// at the same instant, each webhook answer waits behind the whole burst of
// their writes (docs/performance.md, "Event streams beside the webhooks").
const streamsPerGroup = 100

// WakeGroups is how many groups a wake signals n streams in.
func WakeGroups(n int) int { return max(1, (n+streamsPerGroup-1)/streamsPerGroup) }

// signal wakes the subscribers of group g of groups. h.mu is held.
func (h *Hub) signal(g, groups int) {
	for sub := range h.subs {
		if sub.group%groups != g {
			continue
		}
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// positive is n, or def when n is not positive.
func positive(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// acquire takes one of the MaxReaders database slots; release gives it
// back.
func (h *Hub) acquire(ctx context.Context) error {
	h.slotsOnce.Do(func() { h.slots = make(chan struct{}, positive(h.MaxReaders, DefaultMaxReaders)) })
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hub) release() { <-h.slots }

// readTimeout bounds one shared read, which no single stream's context
// governs.
const readTimeout = 30 * time.Second

// read returns the batch after cursor: one started since the last wake
// (and, if after is set, after that many reads had started) when there is
// one, else a new one. It waits for the batch or ctx.
func (h *Hub) read(ctx context.Context, cursor string, after uint64) (*batch, error) {
	h.mu.Lock()
	b := h.batches[cursor]
	if sfx, ok := h.within[cursor]; (b == nil || b.seq <= after) && ok && sfx.b.seq > after {
		h.mu.Unlock()
		return sfx.b.rest(sfx.i, h.wakes.Load()), nil
	}
	if b == nil || b.seq <= after {
		h.started++
		b = &batch{seq: h.started, wake: h.wakes.Load(), done: make(chan struct{})}
		b.share, b.limit = h.shareLocked()
		h.batches[cursor] = b
		go h.fill(b, cursor)
	}
	h.mu.Unlock()
	select {
	case <-b.done:
		return b, b.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		return nil, errClosed
	}
}

// fill reads the batch after cursor and encodes it once for every stream
// that shares it.
func (h *Hub) fill(b *batch, cursor string) {
	defer close(b.done)
	ctx, cancel := context.WithTimeout(h.ctx, readTimeout)
	defer cancel()
	if b.err = h.acquire(ctx); b.err != nil {
		return
	}
	h.reads.Add(1)
	evs, held, err := read(ctx, h.db, cursor, b.limit)
	if err == nil && len(evs) > 0 {
		b.tokens, err = h.revocations(ctx)
	}
	h.release()
	if err != nil {
		b.err = err
		return
	}
	if b.err = b.encode(evs); b.err != nil {
		return
	}
	// held is asked after cursor, not after the batch: for a batch cut at
	// the share it may be an event the next wake reads anyway, and the
	// retry it arms is one more wake.
	b.held = held
	h.share(b, cursor)
	h.heldBack(held)
}

// encode writes evs as SSE frames, the first one always and the others
// while the frames stay within b.share: a read is cut at what a stream
// may be sent this wake, whatever the size of its events.
func (b *batch) encode(evs []Event) error {
	var buf bytes.Buffer
	b.cursors, b.offs = make([]string, 0, len(evs)), make([]int, 0, len(evs))
	cut := false
	for _, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event %s: %w", ev.Cursor, err)
		}
		off := buf.Len()
		fmt.Fprintf(&buf, "id: %s\nevent: %s\ndata: %s\n\n", ev.Cursor, ev.Topic, data)
		if off > 0 && buf.Len() > b.share {
			buf.Truncate(off)
			cut = true
			break
		}
		b.cursors, b.offs = append(b.cursors, ev.Cursor), append(b.offs, off)
	}
	b.frames, b.n = buf.Bytes(), len(b.cursors)
	b.full = !cut && len(evs) == MaxLimit
	b.paced = cut || (len(evs) == b.limit && b.limit < MaxLimit)
	if b.n > 0 {
		b.last = b.cursors[b.n-1]
	}
	return nil
}

// defaultFrameBytes is the size of an event frame assumed before the first
// read (a charge.paid frame is about 270 bytes).
const defaultFrameBytes = 256

// shareLocked is what each open stream may be sent in this wake, its
// share of MaxBytesPerSecond for the time since the last wake, and how
// many events a read for it asks for: twice that share in frames of the
// last read's mean size (the frames are then cut at the share in bytes),
// at least one and at most MaxLimit. h.mu is held.
func (h *Hub) shareLocked() (share, limit int) {
	perStream := float64(positive(h.MaxBytesPerSecond, DefaultMaxBytesPerSecond)) * h.wakeGap.Seconds() / float64(max(1, len(h.subs)))
	share = int(min(perStream, float64(1<<30)))
	return share, int(min(max(2*perStream/float64(h.frameBytes), 1), MaxLimit))
}

// share lets streams at any of b's events take the rest of b, as long as
// b is a read of the current wake (a wake forgets it: it may have missed
// the commit the wake announces). A stream at b's last event takes an
// empty rest, as if it had read when b did, unless b stopped at MaxLimit
// or at the streams' share and more may follow. It also keeps b's mean
// frame size for the next reads' limit, and arms the pace of a read that
// stopped at the share (after a full read, the stream that stops reading
// on arms it: paceSoon).
func (h *Hub) share(b *batch, cursor string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b.n > 0 {
		h.frameBytes = max(1, (len(b.frames)+b.n-1)/b.n)
	}
	if b.paced {
		h.paced.Add(1)
		h.paceLocked()
	}
	if h.batches[cursor] != b {
		return
	}
	upTo := b.n - 1
	if !b.full && !b.paced {
		upTo = b.n
	}
	for i := 0; i < upTo; i++ {
		if _, ok := h.within[b.cursors[i]]; !ok {
			h.within[b.cursors[i]] = suffix{b, i}
		}
	}
}

// heldBack arms a wake soon while committed events wait for an older
// transaction, whose end may never be announced: after 25 ms, doubling up
// to PollInterval while events stay held.
func (h *Hub) heldBack(held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !held {
		return
	}
	h.heldSeen = true
	if h.retry != nil || h.closedLocked() {
		return
	}
	h.retryDelay = min(max(2*h.retryDelay, minRetry), orDefault(h.PollInterval, DefaultPollInterval))
	h.retry = time.AfterFunc(h.retryDelay, func() {
		h.mu.Lock()
		h.retry = nil
		h.mu.Unlock()
		h.wakeAll()
	})
}

// paceSoon is paceLocked for a stream that has had its share of this wake
// and waits for the next one with more to read.
func (h *Hub) paceSoon() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paceLocked()
}

// paceLocked arms a wake after the spacing, for the streams a read left
// behind at their share: the events after it have committed, and no
// notification may come to announce them again. h.mu is held.
func (h *Hub) paceLocked() {
	if h.pace != nil || h.closedLocked() {
		return
	}
	h.pace = time.AfterFunc(WakeSpacing(len(h.subs)), h.wakeAll)
}

func (h *Hub) closedLocked() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// checkTokens ends the streams of tokens revoked since they opened, with one
// query for all of them: idle streams, which no read checks, end within a
// keepalive.
func (h *Hub) checkTokens(ctx context.Context) {
	if err := h.acquire(ctx); err != nil {
		return
	}
	_, err := h.revocations(ctx)
	h.release()
	if err != nil && ctx.Err() == nil {
		h.log.Warn("events: cannot re-check the tokens of open streams", "err", err)
	}
}

// revocations checks the tokens of the open streams for revocation, in one
// query, and ends the streams of those revoked; it returns every token
// checked, true for a revoked one. The caller holds a reader slot.
//
// A read checks after it has read, so its batch goes to no stream whose
// token was revoked before one of its events committed: the check sees
// every revocation committed before the read, and the read no event
// committed after it.
func (h *Hub) revocations(ctx context.Context) (map[int64]bool, error) {
	h.mu.Lock()
	ids := make([]int64, 0, len(h.perToken))
	for id := range h.perToken {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return nil, nil
	}
	revoked, err := auth.RevokedAmong(ctx, h.db, ids)
	if err != nil {
		return nil, err
	}
	tokens := make(map[int64]bool, len(ids))
	for _, id := range ids {
		tokens[id] = false
	}
	for _, id := range revoked {
		tokens[id] = true
	}
	if len(revoked) == 0 {
		return tokens, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		if sub.hasToken && tokens[sub.token] {
			select {
			case <-sub.revoked:
			default:
				close(sub.revoked)
			}
		}
	}
	return tokens, nil
}
