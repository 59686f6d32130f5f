package inbox

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/charges"
)

// The inbox's reads about one charge: its side of the charges' listing
// by a delivery's id (ChargeRefs) and the deliveries of a charge's
// timeline (ChargeDeliveries).

// maxRefsPerDeliveryID bounds the charge references one delivery id
// yields: an id is one delivery per endpoint and event type, a handful.
const maxRefsPerDeliveryID = 100

// ChargeRefs is the inbox's side of charges.Find's reference filters
// (charges.DeliveryRefs).
type ChargeRefs struct{}

// ChargeRefsSQL is a subquery: the charge references (our charge id, or
// the PSP reference the app registered, as the delivery named its
// charge) of the deliveries of scheme whose id is eventID, both SQL
// expressions (ix_inbox_event_id, sql/0044).
func (ChargeRefs) ChargeRefsSQL(scheme, eventID string) string {
	return fmt.Sprintf(`SELECT charge_ref FROM inbox WHERE event_id = %s AND scheme = %s AND charge_ref IS NOT NULL LIMIT %d`,
		eventID, scheme, maxRefsPerDeliveryID)
}

// ChargeDeliveriesSQL is the deliveries naming any of the references $1,
// oldest first, at most $2 (ix_inbox_charge_ref, sql/0044). Exported for
// the plan test of a charge's timeline.
const ChargeDeliveriesSQL = `SELECT id, endpoint, scheme, event_type, event_id, kind, status, attempts, received_at, processed_at
	FROM inbox WHERE charge_ref = ANY($1) ORDER BY received_at, id LIMIT $2`

// ChargeDeliveries returns the deliveries that name a charge by any of
// refs (its id, and the PSP reference the app registered), in the order
// they were received, at most limit: a charge's timeline
// (charges.TimelineSources).
func ChargeDeliveries(ctx context.Context, q sqlx.QueryerContext, refs []string, limit int) ([]charges.Delivery, error) {
	var rows []Summary
	if err := sqlx.SelectContext(ctx, q, &rows, ChargeDeliveriesSQL, pq.StringArray(refs), limit); err != nil {
		return nil, fmt.Errorf("deliveries of a charge: %w", err)
	}
	out := make([]charges.Delivery, len(rows))
	for i, r := range rows {
		out[i] = charges.Delivery{ID: r.ID, Endpoint: r.Endpoint, Scheme: r.Scheme, EventType: r.EventType, EventID: r.EventID,
			Kind: r.Kind, Status: string(r.Status), Attempts: r.Attempts, ReceivedAt: r.ReceivedAt, ProcessedAt: r.ProcessedAt}
	}
	return out, nil
}
