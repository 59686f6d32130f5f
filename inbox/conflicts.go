package inbox

import (
	"context"
	"fmt"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgarray"
	"github.com/razao/razao/webhook/scheme"
)

// A delivery under a stored key is a redelivery only if it states the
// same figures: the same bcb-pix endToEndId with another valor is the PSP
// saying two things of one payment, which finance must hear of, never a
// silent duplicate. Such a redelivery is kept as a delivery of its own,
// keyed by its key and its figures (conflictKey: the same conflicting
// delivery sent again is a duplicate of it), set aside at once with a
// divergence stating both amounts; the stored delivery is left as it is.

// storedFigures is what storedFiguresSQL reads of one delivery.
type storedFigures struct {
	Endpoint  string `db:"endpoint"`
	EventType string `db:"event_type"`
	EventID   string `db:"event_id"`
	ID        int64  `db:"id"`
	Amount    int64  `db:"amount"`
	HasAmount bool   `db:"has_amount"`
	Fee       int64  `db:"fee"`
	HasFee    bool   `db:"has_fee"`
}

// differs reports whether ev states other figures than the stored one.
func (f storedFigures) differs(ev scheme.Event) bool {
	return ev.HasAmount != f.HasAmount || ev.Amount != f.Amount || ev.HasFee != f.HasFee || ev.Fee != f.Fee
}

// conflictKey keys a redelivery of k stating other figures: by k and the
// figures, in a type of its own ("conflict:" and the event's type), so
// that it never takes a key a PSP's event could have.
func conflictKey(k Key, ev scheme.Event) Key {
	id := fmt.Sprintf("%s:amount=%d", k.EventID, ev.Amount)
	if !ev.HasAmount {
		id = k.EventID + ":amount=none"
	}
	if ev.HasFee {
		id += fmt.Sprintf(":fee=%d", ev.Fee)
	}
	return Key{k.Endpoint, "conflict:" + k.EventType, id}
}

// conflicts finds, among the batch's duplicates, the redeliveries that
// state other figures than the stored delivery, and keeps each as a
// divergent delivery of its own with its divergence (amount_mismatch for
// a payment, refund_amount_changed for a refund), in one transaction. A
// request whose conflict could not be kept fails (503): its redelivery
// finds it again.
func (in *Inbox) conflicts(ctx context.Context, batch []*putRequest) {
	var eps, types, ids []string
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i, s := range r.stored {
			if k := r.entries[i].key; s.Duplicate && r.entries[i].ev.Kind != scheme.KindTest {
				eps, types, ids = append(eps, k.Endpoint), append(types, k.EventType), append(ids, k.EventID)
			}
		}
	}
	if len(eps) == 0 {
		return
	}
	if err := in.keepConflicts(ctx, batch, eps, types, ids); err != nil {
		for _, r := range batch {
			if r.err == nil && r.hasDuplicate() {
				r.err = err
			}
		}
	}
}

func (r *putRequest) hasDuplicate() bool {
	for _, s := range r.stored {
		if s.Duplicate {
			return true
		}
	}
	return false
}

func (in *Inbox) keepConflicts(ctx context.Context, batch []*putRequest, eps, types, ids []string) error {
	var found []storedFigures
	if err := in.db.SelectContext(ctx, &found, storedFiguresSQL, pgarray.Text(eps), pgarray.Text(types), pgarray.Text(ids)); err != nil {
		return fmt.Errorf("inbox: compare redeliveries: %w", err)
	}
	stored := make(map[Key]storedFigures, len(found))
	for _, f := range found {
		stored[Key{f.Endpoint, f.EventType, f.EventID}] = f
	}
	type conflict struct {
		r     *putRequest
		i     int
		key   Key
		was   storedFigures
		entry entry
	}
	var cs []conflict
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i, s := range r.stored {
			e := r.entries[i]
			if f, ok := stored[e.key]; ok && s.Duplicate && e.ev.Kind != scheme.KindTest && f.differs(e.ev) {
				cs = append(cs, conflict{r: r, i: i, key: conflictKey(e.key, e.ev), was: f, entry: e})
			}
		}
	}
	if len(cs) == 0 {
		return nil
	}
	tx, err := in.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("inbox: keep conflicting redeliveries: %w", err)
	}
	defer tx.Rollback()
	var divs []divergences.Delivery
	kept := map[int64]int{} // inbox id → its conflict
	for n, c := range cs {
		var id int64
		err := tx.GetContext(ctx, &id, insertConflictSQL,
			c.key.String(), c.key.Endpoint, c.r.ep.Scheme.Name(), c.r.ep.Merchant, c.key.EventType, c.key.EventID,
			c.entry.chargeRef, string(c.entry.event), c.r.body, string(c.r.headers))
		if isNoRows(err) {
			continue // kept before: this conflict is a duplicate too
		}
		if err != nil {
			return fmt.Errorf("inbox: keep conflicting redelivery %s: %w", c.key, err)
		}
		kept[id] = n
		divs = append(divs, conflictDivergence(id, c.was, c.entry.ev))
	}
	opened, err := divergences.OpenForDeliveries(ctx, tx, divs)
	if err != nil {
		return err
	}
	var drafts []events.Draft
	for _, d := range divs {
		if id, ok := opened[d.InboxID]; ok {
			drafts = append(drafts, d.Event(id))
		}
	}
	if err := events.AppendAll(ctx, tx, drafts...); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("inbox: keep conflicting redeliveries: commit: %w", err)
	}
	for id, n := range kept {
		c := cs[n]
		c.r.stored[c.i] = Stored{ID: id, Key: c.key.String()}
	}
	if len(kept) > 0 {
		in.proc.committed()
	}
	return nil
}

// conflictDivergence is the divergence of the redelivery kept as inboxID,
// which states ev's figures of the delivery stored as was.
func conflictDivergence(inboxID int64, was storedFigures, ev scheme.Event) divergences.Delivery {
	reason := divergences.ReasonAmountMismatch
	if ev.RefundID != "" {
		reason = divergences.ReasonRefundAmountChanged
	}
	amount := was.Amount
	return divergences.Delivery{InboxID: inboxID, ChargeID: ev.ChargeID, Reason: reason,
		Detail: divergences.StatedAgain(ev.RefundID != "", ev.EventID, ev.Type, figures(was.Amount, was.HasAmount, was.Fee, was.HasFee), was.ID,
			figures(ev.Amount, ev.HasAmount, ev.Fee, ev.HasFee)),
		PSP:    &divergences.StatementSide{PSPID: ev.PSPRef, ChargeRef: ev.ChargeID, RefundID: ev.RefundID, Amount: ev.Amount},
		Ledger: &divergences.LedgerSide{RefundID: ev.RefundID, Amount: &amount}}
}

func figures(amount int64, hasAmount bool, fee int64, hasFee bool) divergences.Figures {
	var f divergences.Figures
	if hasAmount {
		f.Amount = &amount
	}
	if hasFee {
		f.Fee = &fee
	}
	return f
}
