package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
)

// Notifier announces committed outbox rows to the hubs of every replica
// with a NOTIFY sent after the writer's commit, outside its transaction
// (inside, NOTIFY would serialise all writers' commits on one lock).
// Bursts of Kick collapse into one NOTIFY: a hub re-reads everything after
// its cursor, so one announcement covers many rows.
type Notifier struct {
	// MinInterval is the least time between two NOTIFYs; the kicks in
	// between share the next one. Set it before Run.
	MinInterval time.Duration

	db   *sqlx.DB
	log  *slog.Logger
	kick chan struct{}
}

// DefaultNotifyInterval spaces NOTIFYs by default. Each NOTIFY is a
// transaction of its own, with a commit to flush and every listening
// session to wake, so one per processing transaction takes a visible share
// of the webhooks' throughput (docs/performance.md, "NOTIFY spacing").
// Every 20 ms makes at most 50 a second, and delays an event on the stream
// by about 20 ms (plus the NOTIFY in flight, if any).
const DefaultNotifyInterval = 20 * time.Millisecond

// NewNotifier returns a notifier over db; start it with Run.
func NewNotifier(db *sqlx.DB, log *slog.Logger) *Notifier {
	return &Notifier{db: db, log: log, kick: make(chan struct{}, 1), MinInterval: DefaultNotifyInterval}
}

// Kick asks for an announcement; it never blocks. Call it after a commit
// that appended events.
func (n *Notifier) Kick() {
	if n == nil {
		return
	}
	select {
	case n.kick <- struct{}{}:
	default: // one is already due: it will cover this commit too
	}
}

// Run sends the announcements until ctx ends, and then the one still due,
// if any: the commits of the last requests of a shutdown.
func (n *Notifier) Run(ctx context.Context) {
	defer n.flush()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		n.notify(ctx)
		// Kicks meanwhile wait in n.kick, and share the next NOTIFY.
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.MinInterval):
		}
	}
}

// flush sends the announcement still due when Run stops, within a short
// time of its own.
func (n *Notifier) flush() {
	select {
	case <-n.kick:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n.notify(ctx)
	default:
	}
}

func (n *Notifier) notify(ctx context.Context) {
	if _, err := n.db.ExecContext(ctx, `SELECT pg_notify($1, '')`, Channel); err != nil && ctx.Err() == nil {
		// The hubs' poll delivers the events anyway, a little later.
		n.log.Warn("outbox notify failed", "error", err)
	}
}
