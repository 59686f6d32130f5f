package inbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/webhook/scheme"
)

// judgeEach makes each event of a delivery whose events are judged one by
// one (a bcb-pix callback: each Pix and each devolução, PSP-SCHEMES.md)
// that is dated outside the ledger's window, or states an amount or fee
// over its limit, unbookable: a malformed divergence of its own, while
// the rest of the callback is booked, where a delivery of one event is
// refused whole (checkTimes, checkAmounts). An amount over the limit is
// kept in the divergence's detail only: no figure beyond the limit is
// stored where sums are taken.
func judgeEach(evs []scheme.Event, cal periods.Calendar, limit money.Limit, now time.Time) []scheme.Event {
	for i, ev := range evs {
		one := []scheme.Event{ev}
		err := checkTimes(one, cal, now)
		if err == nil {
			if err = checkAmounts(one, limit); err != nil {
				ev.Amount, ev.HasAmount, ev.Fee, ev.HasFee = 0, false, 0, false
			}
		}
		if err == nil {
			continue
		}
		ev.Kind, ev.OccurredAt = scheme.KindUnbookable, time.Time{}
		ev.Problem = &scheme.Problem{Reason: scheme.ProblemMalformed, Detail: fmt.Sprintf("%s %s: %v", ev.Type, ev.EventID, err)}
		evs[i] = ev
	}
	return evs
}

// unbookableDivergence is the divergence of an event razao read but cannot
// book (scheme.KindUnbookable), with what the PSP said of it; the ledger's
// side is added before it is opened (addLedgerSides).
func unbookableDivergence(inboxID int64, ev scheme.Event) *divergences.Delivery {
	reason, detail := divergences.ReasonMalformed, "an event razao cannot book ("+ev.Type+")"
	if ev.Problem != nil {
		reason, detail = divergences.Reason(ev.Problem.Reason), ev.Problem.Detail
	}
	if !slices.Contains(divergences.Reasons, reason) {
		// A reason of a newer scheme than this database knows.
		reason = divergences.ReasonMalformed
	}
	side := &divergences.StatementSide{PSPID: ev.PSPRef, ChargeRef: ev.ChargeID, RefundID: ev.RefundID}
	if ev.HasAmount {
		side.Amount = ev.Amount
	}
	return &divergences.Delivery{InboxID: inboxID, ChargeID: ev.ChargeID, Reason: reason, Detail: detail, PSP: side}
}

// addLedgerSides sets on the divergences of unbookable events what the
// ledger has of them, in one statement (charges.BookedFor).
func addLedgerSides(ctx context.Context, tx *sqlx.Tx, decided []*delivery) error {
	var which []*delivery
	var refs []charges.BookingRef
	for _, d := range decided {
		if d.div == nil || d.ev.Kind != scheme.KindUnbookable {
			continue
		}
		which = append(which, d)
		refs = append(refs, charges.BookingRef{ChargeID: d.ev.ChargeID, RefundID: d.ev.RefundID,
			PaymentRef: paymentRef(d.Scheme, scheme.Event{Kind: scheme.KindPaid, PSPRef: d.ev.PSPRef, EventID: d.ev.EventID})})
	}
	if len(which) == 0 {
		return nil
	}
	booked, err := charges.BookedFor(ctx, tx, refs)
	if err != nil {
		return fmt.Errorf("the ledger's side of %d unbookable events: %w", len(which), err)
	}
	for _, b := range booked {
		amount := b.Amount
		which[b.Index].div.Ledger = &divergences.LedgerSide{RefundID: b.RefundID, Amount: &amount}
	}
	return nil
}
