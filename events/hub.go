package events

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
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
)

// Hub keeps one LISTEN connection per process and wakes every subscriber
// when the outbox announces a commit. Subscribers also poll, because a
// notification is lost while the listener reconnects.
//
// The exported fields are settings: change them after NewHub and before Run
// or ServeHTTP are first called. A duration that is not positive means its
// default.
type Hub struct {
	// PollInterval is the longest a stream waits for a notification before
	// reading the outbox anyway.
	PollInterval time.Duration
	// KeepAlive is the interval of ": keepalive" comments, which keep
	// proxies from closing an idle stream and detect a client that is gone.
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a client; one that cannot take a
	// batch within it is dropped rather than holding a subscriber slot.
	WriteTimeout time.Duration
	// MaxSubscribers caps open streams; past it a client gets 503.
	MaxSubscribers int

	db    *sqlx.DB
	dbURL string
	log   *slog.Logger

	mu        sync.Mutex
	subs      map[chan struct{}]struct{}
	done      chan struct{}
	closeOnce sync.Once
	// listening is closed once LISTEN has taken effect (seen by tests).
	listening  chan struct{}
	listenOnce sync.Once
}

// NewHub returns a hub that reads events from db and listens through its own
// connection to dbURL. Streams poll only until Run is started. A nil logger
// means slog.Default().
func NewHub(db *sqlx.DB, dbURL string, logger *slog.Logger) *Hub {
	if logger == nil {
		logger = slog.Default()
	}
	return &Hub{
		PollInterval:   DefaultPollInterval,
		KeepAlive:      DefaultKeepAlive,
		WriteTimeout:   DefaultWriteTimeout,
		MaxSubscribers: DefaultMaxSubscribers,
		db:             db,
		dbURL:          dbURL,
		log:            logger,
		subs:           make(map[chan struct{}]struct{}),
		done:           make(chan struct{}),
		listening:      make(chan struct{}),
	}
}

// Run listens for outbox notifications until ctx ends or LISTEN is refused,
// reconnecting as needed. When Run returns the hub is closed: open streams
// end, so an http.Server's Shutdown is not held up by them.
func (h *Hub) Run(ctx context.Context) error {
	defer h.Close()
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
func (h *Hub) dispatch(ctx context.Context, notify <-chan *pq.Notification) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-notify:
			if !ok {
				return nil
			}
			h.wakeAll()
		}
	}
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

// Close ends every open stream and refuses new ones. It is safe to call more
// than once and concurrently with Run.
func (h *Hub) Close() {
	h.closeOnce.Do(func() { close(h.done) })
}

// subscribe registers a stream's wake channel, or reports false when the hub
// is closed or full. The channel holds one pending wake, so a notification
// that arrives while the stream is busy is remembered, not dropped, and the
// hub never blocks on a slow stream.
func (h *Hub) subscribe() (chan struct{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
		return nil, false
	default:
	}
	if len(h.subs) >= h.MaxSubscribers {
		return nil, false
	}
	ch := make(chan struct{}, 1)
	h.subs[ch] = struct{}{}
	return ch, true
}

// unsubscribe frees a stream's slot.
func (h *Hub) unsubscribe(ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, ch)
}

// wakeAll tells every stream to read the outbox again.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
