package divergences

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/events"
)

// Delivery is a divergence of one inbox delivery, to open: a permanent
// problem with it, so the PSP gets a final answer and stops retrying, and
// a person decides.
type Delivery struct {
	InboxID  int64
	ChargeID string
	Reason   Reason
	// Detail is what is wrong, in both languages: its English is the
	// divergence's detail.
	Detail Said
	// PSP and Ledger are both sides, where the delivery path knows them:
	// what the PSP's notification says, and what the ledger has of it
	// (nil: nothing). They are read back as Divergence.Statement and
	// Divergence.Ledger.
	PSP    *StatementSide
	Ledger *LedgerSide
}

// Event is the divergence.opened event of d, opened as id: it tells the
// app, in the transaction that opened it.
func (d Delivery) Event(id int64) events.Draft {
	return events.Draft{Topic: events.TopicDivergenceOpened, ChargeID: d.ChargeID, Payload: map[string]any{
		"divergence_id": id, "source": SourceWebhook, "delivery_id": d.InboxID, "charge_id": d.ChargeID,
		"reason": d.Reason, "detail": d.Detail.English(),
	}}
}

// OpenForDeliveries records ds in one statement inside the caller's
// transaction and returns the id of each it opened by delivery; a
// delivery has at most one divergence (uq_divergences_inbox), so one
// already recorded is left as it is and not returned. The caller appends
// the events (Delivery.Event) in the order it wants them.
func OpenForDeliveries(ctx context.Context, tx sqlx.QueryerContext, ds []Delivery) (map[int64]int64, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	n := len(ds)
	inbox, chargeIDs, reasons, details := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	codes, args := make([]*string, n), make([]*string, n)
	// Both sides, NULL where a delivery states none.
	pspIDs, pspRefs, pspRefunds, ledgerRefunds := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	pspAmounts, ledgerAmounts := make([]*int64, n), make([]*int64, n)
	pspAt := make([]*time.Time, n)
	for i, d := range ds {
		inbox[i], chargeIDs[i], reasons[i], details[i] = d.InboxID, d.ChargeID, string(d.Reason), d.Detail.English()
		var err error
		if codes[i], args[i], err = d.Detail.stored(); err != nil {
			return nil, fmt.Errorf("open the divergence of delivery %d: %w", d.InboxID, err)
		}
		if p := d.PSP; p != nil {
			pspIDs[i], pspRefs[i], pspRefunds[i], pspAmounts[i], pspAt[i] = &p.PSPID, &p.ChargeRef, &p.RefundID, &p.Amount, p.At
		}
		if l := d.Ledger; l != nil {
			ledgerRefunds[i], ledgerAmounts[i] = &l.RefundID, l.Amount
		}
	}
	var rows []struct {
		InboxID int64 `db:"inbox_id"`
		ID      int64 `db:"id"`
	}
	err := sqlx.SelectContext(ctx, tx, &rows, openForDeliveriesSQL,
		pq.Array(inbox), pq.Array(chargeIDs), pq.Array(reasons), pq.Array(details), pq.Array(pspIDs), pq.Array(pspRefs),
		pq.Array(pspRefunds), pq.Array(pspAmounts), pq.Array(pspAt), pq.Array(ledgerRefunds), pq.Array(ledgerAmounts), pq.Array(codes), pq.Array(args))
	if err != nil {
		return nil, fmt.Errorf("open divergences for deliveries %v: %w", inbox, err)
	}
	opened := make(map[int64]int64, len(rows))
	for _, r := range rows {
		opened[r.InboxID] = r.ID
	}
	return opened, nil
}

// OpenForDelivery records one divergence and appends its event, inside
// the caller's transaction.
func OpenForDelivery(ctx context.Context, tx sqlx.ExtContext, d Delivery) error {
	opened, err := OpenForDeliveries(ctx, tx, []Delivery{d})
	if err != nil {
		return err
	}
	id, ok := opened[d.InboxID]
	if !ok {
		return nil
	}
	return events.AppendAll(ctx, tx, d.Event(id))
}
