package events

import (
	"context"
	"log/slog"

	"github.com/jmoiron/sqlx"
)

// Notifier announces committed outbox rows to the hubs of every replica
// with a NOTIFY sent after the writer's commit, outside its transaction
// (inside, NOTIFY would serialise all writers' commits on one lock).
// Bursts of Kick collapse into one NOTIFY: a hub re-reads everything after
// its cursor, so one announcement covers many rows.
type Notifier struct {
	db   *sqlx.DB
	log  *slog.Logger
	kick chan struct{}
}

// NewNotifier returns a notifier over db; start it with Run.
func NewNotifier(db *sqlx.DB, log *slog.Logger) *Notifier {
	return &Notifier{db: db, log: log, kick: make(chan struct{}, 1)}
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

// Run sends the announcements until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		if _, err := n.db.ExecContext(ctx, `SELECT pg_notify($1, '')`, Channel); err != nil && ctx.Err() == nil {
			// The hubs' poll delivers the events anyway, a little later.
			n.log.Warn("outbox notify failed", "error", err)
		}
	}
}
