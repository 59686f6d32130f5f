package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"
)

// ErrXidsAhead says the outbox holds events stamped with transaction ids
// the cluster has not reached: the database was restored logically
// (pg_dump, or a copy by rows) into a cluster whose counter starts lower.
// Events appended from then on would sort before those, behind every
// reader's cursor, and no stream would ever send them.
var ErrXidsAhead = errors.New("outbox transaction ids ahead of this cluster's")

// xidsSQL is the newest event's transaction id (one probe of
// ix_outbox_cursor) and the next id the cluster will assign, as xid8:
// reading it assigns none.
const xidsSQL = `SELECT (SELECT xid::text FROM outbox ORDER BY xid DESC LIMIT 1) AS newest,
	pg_snapshot_xmax(pg_current_snapshot())::text AS next`

// CheckXids fails with ErrXidsAhead when the outbox holds an event
// stamped at or beyond the cluster's next transaction id, and says how to
// move the counter past it: pg_resetwal's epoch, with the server stopped.
// razao serve runs it at start and refuses to serve on it.
func CheckXids(ctx context.Context, q sqlx.QueryerContext) error {
	var r struct {
		Newest *string `db:"newest"`
		Next   string  `db:"next"`
	}
	if err := sqlx.GetContext(ctx, q, &r, xidsSQL); err != nil {
		return fmt.Errorf("check outbox transaction ids: %w", err)
	}
	if r.Newest == nil {
		return nil
	}
	newest, err1 := strconv.ParseUint(*r.Newest, 10, 64)
	next, err2 := strconv.ParseUint(r.Next, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("check outbox transaction ids: %w", err)
	}
	if newest < next {
		return nil
	}
	return fmt.Errorf("%w: the newest event is at %d, the cluster's next transaction at %d: this database was restored from a logical dump, "+
		"and new events would sort behind every stream's cursor. Restore physically (docs/operations.md, \"Backup and restore\"), or stop PostgreSQL and "+
		"move its counter past the dump's: pg_resetwal --epoch=%d -D <data directory>, then start it",
		ErrXidsAhead, newest, next, newest>>32+1)
}
