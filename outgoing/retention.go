package outgoing

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/jsonrows"
)

// The attempts log's side of retention: package archive decides which
// attempts go (webhooks' retention.webhook_attempts), archives them and
// then deletes them here.

// ArchiveAttempts calls emit with each attempt among ids as one JSON
// object, in id order.
func ArchiveAttempts(ctx context.Context, q sqlx.QueryerContext, ids []int64, emit func([]byte) error) error {
	const query = `SELECT row_to_json(a)::text FROM webhook_attempts a WHERE a.id = ANY($1) ORDER BY a.id`
	if err := jsonrows.Emit(ctx, q, query, emit, pq.Array(ids)); err != nil {
		return fmt.Errorf("webhooks: read attempts to archive: %w", err)
	}
	return nil
}

// DeleteAttempts deletes the attempts ids, once archived, in the
// caller's transaction, and returns how many it deleted.
func DeleteAttempts(ctx context.Context, tx sqlx.ExecerContext, ids []int64) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE id = ANY($1)`, pq.Array(ids))
	if err != nil {
		return 0, fmt.Errorf("webhooks: delete archived attempts: %w", err)
	}
	return res.RowsAffected()
}
