package events

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// OfChargeSQL is the outbox's events about the charge $1, in append
// order, at most $2 (ix_outbox_charge, sql/0044). A plain read: what a
// snapshot sees of the outbox is committed, whatever the stream's
// horizon. Exported for the plan test of a charge's timeline.
const OfChargeSQL = `SELECT id, topic, created_at FROM outbox WHERE charge_id = $1 ORDER BY id LIMIT $2`

// ChargeEvent is an event about a charge, without its payload.
type ChargeEvent struct {
	ID        int64     `db:"id"`
	Topic     Topic     `db:"topic"`
	CreatedAt time.Time `db:"created_at"`
}

// OfCharge returns the events appended about the charge chargeID, in
// the order they were appended, at most limit: a charge's timeline. It
// is no cursor a reader resumes from, so the purge watermark does not
// bind it: the events retention purged are simply not listed (the API
// documents it), and what is listed is what the outbox still holds.
func OfCharge(ctx context.Context, q sqlx.QueryerContext, chargeID string, limit int) ([]ChargeEvent, error) {
	var rows []ChargeEvent
	if err := sqlx.SelectContext(ctx, q, &rows, OfChargeSQL, chargeID, limit); err != nil {
		return nil, fmt.Errorf("events of charge %s: %w", chargeID, err)
	}
	return rows, nil
}
