package webhook

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/events"
)

// divergence is a permanent problem with a delivery, recorded for finance:
// the PSP gets a final answer and stops retrying, and a person decides.
type divergence struct {
	inboxID          int64
	chargeID, detail string
	reason           charges.Reason
}

// event tells the app about the divergence once it has its id.
func (d divergence) event(id int64) events.Draft {
	return events.Draft{Topic: events.TopicDivergenceOpened, ChargeID: d.chargeID, Payload: map[string]any{
		"divergence_id": id, "delivery_id": d.inboxID, "charge_id": d.chargeID, "reason": d.reason, "detail": d.detail,
	}}
}

// insertDivergences records divs in one statement and returns the id of
// each it opened by delivery; a delivery has at most one divergence, so
// one already recorded is left as it is and not returned.
func insertDivergences(ctx context.Context, tx *sqlx.Tx, divs []divergence) (map[int64]int64, error) {
	if len(divs) == 0 {
		return nil, nil
	}
	inbox, chargeIDs, reasons, details := make([]int64, len(divs)), make([]string, len(divs)), make([]string, len(divs)), make([]string, len(divs))
	for i, d := range divs {
		inbox[i], chargeIDs[i], reasons[i], details[i] = d.inboxID, d.chargeID, string(d.reason), d.detail
	}
	var rows []struct {
		InboxID int64 `db:"inbox_id"`
		ID      int64 `db:"id"`
	}
	err := tx.SelectContext(ctx, &rows, `INSERT INTO divergences (inbox_id, charge_id, reason, detail)
		SELECT i, NULLIF(c, ''), r, d FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u (i, c, r, d, n)
		ORDER BY n
		ON CONFLICT (inbox_id) DO NOTHING RETURNING inbox_id, id`,
		pq.Array(inbox), pq.Array(chargeIDs), pq.Array(reasons), pq.Array(details))
	if err != nil {
		return nil, fmt.Errorf("open divergences for deliveries %v: %w", inbox, err)
	}
	opened := make(map[int64]int64, len(rows))
	for _, r := range rows {
		opened[r.InboxID] = r.ID
	}
	return opened, nil
}

// openDivergence records one divergence and tells the app.
func openDivergence(ctx context.Context, tx *sqlx.Tx, inboxID int64, chargeID string, reason charges.Reason, detail string) error {
	d := divergence{inboxID: inboxID, chargeID: chargeID, reason: reason, detail: detail}
	opened, err := insertDivergences(ctx, tx, []divergence{d})
	if err != nil {
		return err
	}
	id, ok := opened[inboxID]
	if !ok {
		return nil
	}
	return events.AppendAll(ctx, tx, d.event(id))
}
