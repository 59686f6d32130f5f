package events

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/jsonrows"
)

// The outbox's side of retention (package archive decides which events
// go, and when: never one a webhook endpoint has yet to deliver).

// ArchiveEvents calls emit with each event among ids as one JSON object,
// in id order.
func ArchiveEvents(ctx context.Context, q sqlx.QueryerContext, ids []int64, emit func([]byte) error) error {
	const query = `SELECT row_to_json(o)::text FROM outbox o WHERE o.id = ANY($1) ORDER BY o.id`
	if err := jsonrows.Emit(ctx, q, query, emit, pq.Array(ids)); err != nil {
		return fmt.Errorf("events: read events to archive: %w", err)
	}
	return nil
}

// DeleteArchived deletes the events ids, once archived, in the caller's
// transaction, and returns how many it deleted. The outbox's trigger
// (trg_outbox_record_purge, sql/0058) moves the purge watermark past them
// in the same transaction: a reader whose cursor they were after is told
// (ExpiredError) rather than passed over them.
func DeleteArchived(ctx context.Context, tx sqlx.ExecerContext, ids []int64) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE id = ANY($1)`, pq.Array(ids))
	if err != nil {
		return 0, fmt.Errorf("events: delete archived events: %w", err)
	}
	return res.RowsAffected()
}
