package charges

import (
	"fmt"
	"slices"
	"time"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/money"
	"github.com/razao/razao/postings"
)

// ChargeState is what deciding an event reads of a charge: its row as the
// events before it have left it, whether its access grant exists, and the
// refunds booked against it (the PSP's refund id → amount).
type ChargeState struct {
	Charge
	Granted bool
	// Booked are the refunds booked against it, with what pairing a refund
	// known by two ids needs (see pairFor).
	Booked []BookedRefund
}

// booked is the refund booked under id, if any.
func (s *ChargeState) booked(id string) (BookedRefund, bool) {
	for _, b := range s.Booked {
		if b.ID == id {
			return b, true
		}
	}
	return BookedRefund{}, false
}

// BookedRefund is one refund booked against a charge.
type BookedRefund struct {
	ID     string
	Amount int64
	At     time.Time
	// Statement: booked from a statement file's line, under the file's own
	// refund id, not the notification's (see Event.StatementRefund).
	Statement bool
	// Alias is the other side's id for the same refund, once paired.
	Alias string
}

// RefundAlias pairs the id a refund is booked under with the other
// side's id for it (table refund_aliases).
type RefundAlias struct {
	ChargeID, RefundID, AliasID string
	InboxID                     int64
}

// aliased is the booked refund whose other id is id, or -1.
func (s *ChargeState) aliased(id string) int {
	for i, b := range s.Booked {
		if b.Alias == id {
			return i
		}
	}
	return -1
}

// pairFor is the booked refund that ev, a refund under an id not booked,
// is another name of, or -1: one booked from the other side (a statement
// file's line for a notification, a notification for a file's line), not
// paired yet, of the same amount; the nearest in time. The two sides
// share nothing else: the file's refund id is not the webhook's, and
// Hodle's refund webhook carries no time. Refunds of one charge and one
// amount are alike in everything the ledger books, so a refund that is in
// truth a second one, paired so, costs one booking until its own twin
// arrives: that one then finds nothing left to pair with and is booked.
// Paired one to one, the two ids of a refund never book it twice.
func (s *ChargeState) pairFor(ev Event) int {
	best, gap := -1, time.Duration(0)
	for i, b := range s.Booked {
		if b.Statement == ev.StatementRefund || b.Alias != "" || b.Amount != ev.Amount || b.ID == ev.RefundID {
			continue
		}
		g := b.At.Sub(ev.At).Abs()
		if best < 0 || g < gap {
			best, gap = i, g
		}
	}
	return best
}

// Rules are what deciding needs beyond the charge and the event: the
// ledger's amount limit, and the check of an event's time against the
// ledger's window (its calendar and clock: Ledger.CheckEventTime).
type Rules struct {
	Limit     money.Limit
	CheckTime func(time.Time) error
}

// Decision is what one event does to one charge.
type Decision struct {
	Outcome
	// State is the charge after the event; Changed says its row is to be
	// written.
	State   ChargeState
	Changed bool
	// Sets are the posting sets to write, in order.
	Sets []postings.Set
	// Grant says the charge's access grant is to be written.
	Grant bool
	// Alias, when set, is a refund found booked under the other side's
	// id: the pair is to be written, and nothing booked.
	Alias *RefundAlias
}

// Decide says what ev does to the charge s: the charge's new state, the
// posting sets, the outbox drafts, the grant, or the divergence. It does
// no I/O and changes nothing it is given: the locked transaction loads s,
// calls it and writes what it returns (see Locked.Apply).
//
// The rules, in order: an event through another merchant's endpoint
// changes nothing (merchant_mismatch); an event dated outside the ledger's
// window is malformed; then per kind, see paid, refunded and failed.
func Decide(s ChargeState, ev Event, r Rules) (Decision, error) {
	d := &Decision{State: s, Outcome: Outcome{ChargeID: s.ID}}
	if s.Merchant != nil && *s.Merchant != ev.Merchant {
		return d.diverge(divergences.ReasonMerchantMismatch, divergences.MerchantMismatch(*s.Merchant, ev.Merchant)), nil
	}
	if err := r.CheckTime(ev.At); err != nil {
		// Stored before intake checked the window: the ledger (or the
		// charge's timestamps) would refuse it on every attempt, so it is
		// a divergence now, not ten failures.
		return d.diverge(divergences.ReasonMalformed, divergences.EventRefused(err)), nil
	}
	var err error
	switch ev.Kind {
	case Paid:
		err = d.paid(ev, r.Limit)
	case Refunded:
		err = d.refunded(ev, r.Limit)
	case Failed:
		d.failed(ev)
	default:
		return Decision{}, fmt.Errorf("apply to charge %s: unknown event kind %q", s.ID, ev.Kind)
	}
	if err != nil {
		return Decision{}, err
	}
	return *d, nil
}

// diverge makes d a divergence: the charge stays as it was.
func (d *Decision) diverge(reason divergences.Reason, said divergences.Said) Decision {
	return Decision{State: d.State, Outcome: diverge(d.State.ID, reason, said)}
}

// ensureGrant gives the charge's access if it is not there, whatever
// happened before: it is how a redelivery repairs a partial state.
func (d *Decision) ensureGrant() {
	if d.State.Granted {
		return
	}
	d.State.Granted, d.Grant = true, true
	d.Events = append(d.Events, events.Draft{Topic: events.TopicAccessGranted, ChargeID: d.State.ID,
		Payload: map[string]any{"charge_id": d.State.ID, "access": d.State.Access}})
}

// paid: a first payment of the charge's amount books the sale (and the
// partner's commission) and grants access; the same payment again (the
// same PaymentRef and figures) re-ensures the grant; another payment, or
// the same one with other figures, is a divergence.
func (d *Decision) paid(ev Event, limit money.Limit) error {
	c := &d.State
	if c.isPaid() {
		// Only the same payment, provably (the same PaymentRef), is a
		// redelivery. A charge paid before payments carried a comparable
		// identity (paid_ref NULL) cannot prove it: a second notice.
		if c.PaidRef == nil || ev.PaymentRef == "" || *c.PaidRef != ev.PaymentRef {
			paidBy := "" // a payment of unknown reference
			if c.PaidRef != nil {
				paidBy = *c.PaidRef
			}
			*d = d.diverge(divergences.ReasonSecondPayment, divergences.SecondPayment(paidBy, ev.PaymentRef, ev.Amount))
			return nil
		}
		// The same reference is the same payment only with the same
		// figures. When they differ it is amount_mismatch, not
		// second_payment: the PSP names the payment already booked, so
		// what finance must settle is what that one payment was worth
		// (check it on the PSP's statement), not a second transfer to
		// return to the payer.
		if paidAmount, fee := derefOr(c.PaidAmount), derefOr(c.Fee); paidFor(ev) != paidAmount || ev.Fee != fee {
			*d = d.diverge(divergences.ReasonAmountMismatch,
				divergences.PaymentRestated(ev.PaymentRef, paidAmount, fee, paidFor(ev), ev.Fee))
			return nil
		}
		// A redelivery: repair the grant if a partial state left it out.
		d.Result = NoOp
		d.ensureGrant()
		return nil
	}
	// The webhook front refuses an amount above the limit at intake; this
	// is for a delivery stored before the limit was lowered, or a charge
	// registered above it: the ledger would refuse the sale on every retry.
	tooLarge := limit.Check("paid amount", ev.Amount)
	if tooLarge == nil && ev.Parts.Stated() {
		// The sale's set moves the reductions too (see postings.SaleOf).
		tooLarge = limit.Check("paid amount with its rebate and discount", ev.Amount+ev.Parts.Rebate+ev.Parts.Discount)
	}
	switch {
	case !ev.HasAmount:
		*d = d.diverge(divergences.ReasonAmountMismatch, divergences.PaymentWithoutAmount(c.Amount))
		return nil
	case tooLarge != nil:
		*d = d.diverge(divergences.ReasonMalformed, divergences.EventRefused(tooLarge))
		return nil
	case ev.Parts.Stated() && ev.Parts.Sum() != ev.Amount:
		// The PSP's own figures disagree: nothing of it can be booked as
		// what it is. Both sides, for finance.
		*d = d.diverge(divergences.ReasonAmountMismatch, divergences.PartsDoNotAddUp(ev.Amount, ev.Parts, ev.Parts.Sum()))
		return nil
	case ev.Parts.Stated() && ev.Parts.Original != c.Amount:
		*d = d.diverge(divergences.ReasonAmountMismatch,
			divergences.OriginalIsNotCharge(ev.Amount, ev.Parts.Original, ev.Parts, c.Amount))
		return nil
	case ev.Parts.Stated() && paidFor(ev) <= 0:
		// Rebates and discounts as large as the sale leave nothing paid
		// for the charge: no refund could be booked against it.
		*d = d.diverge(divergences.ReasonAmountMismatch,
			divergences.PartsLeaveNothingPaid(ev.Amount, paidFor(ev), c.Amount, ev.Parts))
		return nil
	case !ev.Parts.Stated() && ev.Amount != c.Amount:
		*d = d.diverge(divergences.ReasonAmountMismatch, divergences.PaidOtherAmount(ev.Amount, c.Amount))
		return nil
	case ev.HasFee && (ev.Fee < 0 || ev.Fee >= ev.Amount):
		*d = d.diverge(divergences.ReasonAmountMismatch, divergences.FeeOutOfRange(ev.Fee, ev.Amount))
		return nil
	}
	if err := d.bookSale(ev); err != nil {
		return err
	}
	commission := int64(0)
	if c.Partner != nil && c.CommissionBP > 0 {
		commission = postings.Commission(c.Amount, c.CommissionBP)
	}
	amount, fee, at := paidFor(ev), ev.Fee, ev.At
	c.State, c.PaidAmount, c.Fee, c.Commission, c.PaidAt = StatePaid, &amount, &fee, commission, &at
	c.PaidRef = nil
	if ev.PaymentRef != "" {
		ref := ev.PaymentRef
		c.PaidRef = &ref
	}
	d.Result, d.Changed = Applied, true
	d.Events = append(d.Events, events.Draft{Topic: events.TopicChargePaid, ChargeID: c.ID, Payload: map[string]any{
		"charge_id": c.ID, "amount": amount, "fee": ev.Fee, "paid_at": ev.At,
	}})
	d.ensureGrant()
	return nil
}

// paidFor is what a payment paid for its charge: its amount less the
// cash handed over the counter (a Pix's saque and troco), which came in
// by Pix and went out of the till. It is the charge's paid_amount: the
// sale, with a cobv's interest and fines and less its rebates and
// discounts, and what the refunds of the sale are bounded by.
func paidFor(ev Event) int64 { return ev.Amount - ev.Parts.CashOut() }

// bookSale adds the sale and, when the charge has a partner, its
// commission.
func (d *Decision) bookSale(ev Event) error {
	c := &d.State
	var sale postings.Set
	var err error
	if ev.Parts.Stated() {
		sale, err = postings.SaleOf(c.ID, c.Currency, ev.Parts, ev.Fee, ev.At)
	} else {
		sale, err = postings.Sale(c.ID, c.Currency, ev.Amount, ev.Fee, ev.At)
	}
	if err != nil {
		return err
	}
	sale.InboxID = ev.InboxID
	d.Sets = append(d.Sets, sale)
	if c.Partner == nil {
		return nil
	}
	comm, ok, err := postings.CommissionSet(c.ID, *c.Partner, c.Currency, c.Amount, c.CommissionBP, ev.At)
	if err != nil || !ok {
		return err
	}
	comm.InboxID = ev.InboxID
	d.Sets = append(d.Sets, comm)
	return nil
}

// refunded: a refund before its payment is parked; one of another payment
// than the one booked, or of more than is left, or without an amount the
// scheme does not read as "everything left", is a divergence; the same
// refund again does nothing, unless it states another amount; otherwise
// it books the refund (and takes back its share of the commission).
func (d *Decision) refunded(ev Event, limit money.Limit) error {
	c := &d.State
	if !c.isPaid() {
		d.Result = Parked
		return nil
	}
	if ev.RefundID == "" {
		*d = d.diverge(divergences.ReasonMalformed, divergences.RefundWithoutID())
		return nil
	}
	if ev.PaymentRef != "" && c.PaidRef != nil && !isEventRef(*c.PaidRef) && *c.PaidRef != ev.PaymentRef {
		// The refund of a payment that is not the one booked (a second
		// payment, itself a divergence): booking it would cancel the sale.
		// Both sides are in the scheme's form (SchemePaymentRef).
		*d = d.diverge(divergences.ReasonRefundOfOtherPayment,
			divergences.RefundOfOtherPayment(ev.RefundID, ev.PaymentRef, *c.PaidRef))
		return nil
	}
	if ev.OfCashOut {
		// A Pix devolução of natureza RETIRADA gives back a Pix Saque's
		// cash or a Pix Troco's change: money that never was the sale's.
		// Booked against the sale it would cut revenue; razao books
		// refunds of the sale only, so finance books this one.
		*d = d.diverge(divergences.ReasonRefundExceedsPaid,
			divergences.RefundOfCashOut(ev.RefundID, ev.Amount, derefOr(c.PaidAmount)))
		return nil
	}
	b, ok := c.booked(ev.RefundID)
	if i := c.aliased(ev.RefundID); !ok && i >= 0 {
		b, ok = c.Booked[i], true
	}
	if ok {
		if ev.HasAmount && ev.Amount != b.Amount {
			*d = d.diverge(divergences.ReasonRefundAmountChanged,
				divergences.RefundRestated(ev.RefundID, b.Amount, b.ID, ev.Amount))
			return nil
		}
		d.Result = NoOp
		return nil
	}
	if i := c.pairFor(ev); ev.HasAmount && i >= 0 {
		// The same refund under the other side's id: booked once, paired.
		c.Booked = slices.Clone(c.Booked) // the caller's slice stays as it was
		c.Booked[i].Alias = ev.RefundID
		d.Alias = &RefundAlias{ChargeID: c.ID, RefundID: c.Booked[i].ID, AliasID: ev.RefundID, InboxID: ev.InboxID}
		d.Result = NoOp
		return nil
	}
	remaining := *c.PaidAmount - c.RefundedAmount
	amount := ev.Amount
	switch {
	case !ev.HasAmount && !ev.FullRefundIfNoAmount:
		*d = d.diverge(divergences.ReasonRefundAmountMissing, divergences.RefundWithoutAmount(ev.RefundID))
		return nil
	case !ev.HasAmount:
		amount = remaining
	}
	if err := limit.Check("refund amount", amount); err != nil {
		*d = d.diverge(divergences.ReasonMalformed, divergences.RefundRefused(ev.RefundID, err))
		return nil
	}
	if amount <= 0 || amount > remaining {
		*d = d.diverge(divergences.ReasonRefundExceedsPaid,
			divergences.RefundExceedsLeft(ev.RefundID, amount, remaining, *c.PaidAmount))
		return nil
	}
	if err := d.bookRefund(ev, amount); err != nil {
		return err
	}
	c.Booked = append(slices.Clone(c.Booked), BookedRefund{ID: ev.RefundID, Amount: amount, At: ev.At, Statement: ev.StatementRefund})
	c.RefundedAmount += amount
	c.State = StatePartiallyRefunded
	if amount == remaining {
		c.State = StateRefunded
	}
	d.Result, d.Changed = Applied, true
	d.Events = append(d.Events, events.Draft{Topic: events.TopicChargeRefunded, ChargeID: c.ID,
		Payload: map[string]any{
			"charge_id": c.ID, "refund_id": ev.RefundID, "amount": amount,
			"refunded_total": c.RefundedAmount, "refunded_at": ev.At,
		}})
	return nil
}

// bookRefund adds the refund and, when the charge paid a commission, the
// part of it the refund takes back. It runs before the refund is counted
// in the state's RefundedAmount.
func (d *Decision) bookRefund(ev Event, amount int64) error {
	c := &d.State
	refund, err := postings.RefundAs(c.ID, ev.RefundID, c.Currency, amount, ev.At, ev.ReturnID, ev.Nature)
	if err != nil {
		return err
	}
	refund.InboxID = ev.InboxID
	d.Sets = append(d.Sets, refund)
	if c.Partner == nil || c.Commission == 0 {
		return nil
	}
	rev := postings.ReversalAmount(c.Commission, *c.PaidAmount, c.RefundedAmount, amount)
	set, ok, err := postings.CommissionReversalSet(c.ID, ev.RefundID, *c.Partner, c.Currency, rev, ev.At)
	if err != nil || !ok {
		return err
	}
	set.InboxID = ev.InboxID
	d.Sets = append(d.Sets, set)
	return nil
}

// failed records a failure. A failure is not a refund: no money moves, and
// a charge already paid stays paid.
func (d *Decision) failed(ev Event) {
	c := &d.State
	at := ev.At
	c.FailedAt = &at
	if c.State == StatePending {
		c.State = StateFailed
	}
	d.Result, d.Changed = Applied, true
	d.Events = append(d.Events, events.Draft{Topic: events.TopicChargeFailed, ChargeID: c.ID,
		Payload: map[string]any{"charge_id": c.ID, "failed_at": ev.At}})
}
