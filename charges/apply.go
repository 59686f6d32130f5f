package charges

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/sqlstmt"
	"github.com/razao/razao/postings"
)

// Kind is what a PSP event means for a charge.
type Kind string

// The kinds of event a charge reacts to.
const (
	Paid     Kind = "paid"
	Refunded Kind = "refunded"
	Failed   Kind = "failed"
)

// Event is a PSP event as the charge sees it, already authenticated and
// stored in the inbox.
type Event struct {
	Kind Kind
	// ChargeID is our id as the PSP echoes it; may be empty. When given it
	// alone finds the charge: an id we do not know is an unknown charge,
	// never a fall back to another charge by PSPRef.
	ChargeID string
	PSPRef   string // the PSP's payment reference; finds the charge only when ChargeID is empty
	// PaymentRef is the identity of the payment a paid event reports: a
	// charge already paid under another PaymentRef (or under none that can
	// be compared) is paid a second time, never a redelivery. The caller
	// derives it per scheme, in the scheme's form (SchemePaymentRef,
	// EventPaymentRef); it is stored as the charge's paid_ref. For a
	// refund, it is the payment the refund names, in the same form, or ""
	// when the refund names none.
	PaymentRef string
	// Merchant is the merchant of the endpoint the event came through: it
	// acts only on that merchant's charges (and on legacy charges, which
	// have none).
	Merchant string
	RefundID string
	Amount   int64
	// HasAmount is false when the payload states no amount.
	HasAmount bool
	Fee       int64
	HasFee    bool
	// FullRefundIfNoAmount: the scheme documents a refund without an
	// amount as a refund of everything left.
	FullRefundIfNoAmount bool
	// At is the business time of the event (the PSP's paid or refund
	// time, else when we received it): it decides the competence.
	At      time.Time
	InboxID int64
}

// Outcome says what applying an event did.
type Outcome struct {
	Result   Result
	ChargeID string
	// Reason and Detail explain a divergence.
	Reason Reason
	Detail string
	// Events are the outbox events the change makes, in order, for the
	// caller to append in the same transaction.
	Events []events.Draft
}

// Result is the kind of outcome.
type Result string

// Results of Apply.
const (
	Applied    Result = "applied"    // money moved or state changed
	NoOp       Result = "noop"       // already applied: a redelivery
	Parked     Result = "parked"     // a refund before its payment: retried when the payment lands
	Divergence Result = "divergence" // permanent: recorded for finance, never retried
)

// Reason says why a delivery is a divergence. Every reason a divergence
// may carry is here, the ones the inbox decides too, and the list is the
// database's ck_divergences_reason constraint, word for word (a test
// compares them).
type Reason string

// Reasons for a divergence.
const (
	ReasonUnknownCharge        Reason = "unknown_charge"
	ReasonAmountMismatch       Reason = "amount_mismatch"
	ReasonCurrencyMismatch     Reason = "currency_mismatch"
	ReasonRefundExceedsPaid    Reason = "refund_exceeds_paid"
	ReasonRefundAmountMissing  Reason = "refund_amount_missing"
	ReasonMalformed            Reason = "malformed"
	ReasonDisputed             Reason = "disputed"
	ReasonSecondPayment        Reason = "second_payment"
	ReasonProcessingFailed     Reason = "processing_failed"
	ReasonRefundOfOtherPayment Reason = "refund_of_other_payment"
	ReasonRefundAmountChanged  Reason = "refund_amount_changed"
	ReasonRefundWithoutPayment Reason = "refund_without_payment"
	ReasonMerchantMismatch     Reason = "merchant_mismatch"
)

// Reasons lists every divergence reason.
var Reasons = []Reason{ReasonUnknownCharge, ReasonAmountMismatch, ReasonCurrencyMismatch, ReasonRefundExceedsPaid,
	ReasonRefundAmountMissing, ReasonMalformed, ReasonDisputed, ReasonSecondPayment, ReasonProcessingFailed,
	ReasonRefundOfOtherPayment, ReasonRefundAmountChanged, ReasonRefundWithoutPayment, ReasonMerchantMismatch}

// eventRefPrefix marks a PaymentRef made of an event id (EventPaymentRef),
// so that it is never compared with a PSP's payment reference.
const eventRefPrefix = "event:"

// SchemePaymentRef is the PaymentRef of a payment the PSP names: the
// scheme, ":", the PSP's reference (hodle:track-1, bcb-pix:E…). The
// scheme is part of it because references of two schemes are two
// namespaces: a Hodle trackId may be spelled like another scheme's
// reference (even like "event:msg_1") without being that payment.
func SchemePaymentRef(scheme, ref string) string {
	if ref == "" {
		return ""
	}
	return scheme + ":" + ref
}

// EventPaymentRef is the PaymentRef of a payment whose scheme states no
// payment reference of the PSP: the stable id of the event that reports
// it (the same on every retry of that event), as standard:event:msg_1. A
// refund's PSP reference is not compared with it: the payment never named
// its reference.
func EventPaymentRef(scheme, eventID string) string {
	if eventID == "" {
		return ""
	}
	return scheme + ":" + eventRefPrefix + eventID
}

// isEventRef reports whether a stored paid_ref was made of an event id:
// scheme:event:… , or event:… as stored before references carried their
// scheme (migration 0019 prefixes those). A PSP reference that itself
// starts with "event:" is then not compared with its refunds either: the
// lenient side, as for every payment that named no reference.
func isEventRef(ref string) bool {
	if strings.HasPrefix(ref, eventRefPrefix) {
		return true
	}
	_, rest, ok := strings.Cut(ref, ":")
	return ok && strings.HasPrefix(rest, eventRefPrefix)
}

// Applier applies PSP events to charges and the ledger.
type Applier struct {
	Ledger *postings.Ledger
	// AfterSale, when set, runs inside the transaction right after the
	// sales are written; an error aborts the transaction. Tests use it to
	// crash between steps.
	AfterSale func() error

	// The statements of every delivery, prepared once.
	lock, lockSkip, exist, readGrantsRefunds, write *sqlstmt.Stmt
}

// NewApplier returns an applier writing to ledger, with its statements
// prepared on db.
func NewApplier(db *sqlx.DB, ledger *postings.Ledger) *Applier {
	return &Applier{Ledger: ledger,
		lock:              sqlstmt.New(db, lockChargesSQL),
		lockSkip:          sqlstmt.New(db, lockChargesSQL+` SKIP LOCKED`),
		exist:             sqlstmt.New(db, `SELECT id, psp_ref FROM charges WHERE id = ANY($1) OR psp_ref = ANY($2)`),
		readGrantsRefunds: sqlstmt.New(db, readGrantsRefundsSQL),
		write:             sqlstmt.New(db, writeChargesSQL),
	}
}

// lockChargesSQL locks charges by id or PSP reference in id order.
const lockChargesSQL = `SELECT ` + chargeColumns + ` FROM charges
	WHERE id = ANY($1) OR psp_ref = ANY($2) ORDER BY id FOR UPDATE`

// readGrantsRefundsSQL reads which charges have their grant and which of
// the refunds named are booked.
const readGrantsRefundsSQL = `
	SELECT charge_id, '' AS refund_id, 0::bigint AS amount FROM access_grants WHERE charge_id = ANY($1)
	UNION ALL
	SELECT charge_id, refund_id, amount FROM posting_sets
	WHERE kind = 'refund' AND charge_id = ANY($1) AND refund_id = ANY($2)`

// writeChargesSQL writes the changed charges and the new grants in one
// statement; either array may be empty.
const writeChargesSQL = `
	WITH changed AS (
		UPDATE charges c SET state = u.state, paid_amount = u.paid_amount, fee = u.fee,
			commission = u.commission, paid_at = u.paid_at, paid_ref = u.paid_ref, refunded_amount = u.refunded_amount,
			failed_at = u.failed_at, updated_at = now()
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::timestamptz[], $7::text[],
			$8::bigint[], $9::timestamptz[]) AS u (id, state, paid_amount, fee, commission, paid_at, paid_ref, refunded_amount, failed_at)
		WHERE c.id = u.id
	)
	INSERT INTO access_grants (charge_id, access)
	SELECT * FROM unnest($10::text[], $11::text[]) ON CONFLICT DO NOTHING`

// exec runs the prepared statement s in tx.
func exec(ctx context.Context, tx *sqlx.Tx, s *sqlstmt.Stmt, args ...any) error {
	stmt, err := s.In(ctx, tx)
	if err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx, args...)
	return err
}

// query runs the prepared statement s in tx and scans its rows into dest.
func query(ctx context.Context, tx *sqlx.Tx, dest any, s *sqlstmt.Stmt, args ...any) error {
	stmt, err := s.In(ctx, tx)
	if err != nil {
		return err
	}
	return stmt.SelectContext(ctx, dest, args...)
}

func diverge(chargeID string, reason Reason, format string, args ...any) Outcome {
	return Outcome{Result: Divergence, ChargeID: chargeID, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Locked is the charges a run of events names, locked in the caller's
// transaction, and what applying those events has changed so far. The
// decisions are made in memory, each seeing the ones before it, and WriteTx
// writes them all: a batch of deliveries costs a handful of statements
// whatever its size, and a single delivery no more than before.
type Locked struct {
	a      *Applier
	byID   map[string]*lockedCharge
	byRef  map[string]*lockedCharge
	booked map[refundKey]int64 // refunds booked, by charge and PSP refund id
	sets   []postings.Set
	sales  int
	// busyIDs and busyRefs are charges that exist but were held by
	// another transaction when LockTx skipped them.
	busyIDs, busyRefs map[string]bool
	// changed and grants keep the order things happened in, so writes
	// are deterministic.
	changed []*lockedCharge
	grants  []*lockedCharge
}

// lockedCharge is a locked charge row as the events so far have left it.
type lockedCharge struct {
	Charge
	granted bool // its access grant exists, or is among the ones to write
	changed bool
}

type refundKey struct{ charge, refund string }

// Lock modes of LockTx.
const (
	// Wait for charges another transaction holds.
	Wait = false
	// SkipLocked leaves out charges another transaction holds, without
	// waiting: their events are not to be applied here (see Busy). A batch
	// takes its charges so, and no delivery in it waits behind another's
	// lock.
	SkipLocked = true
)

// LockTx locks every charge the events name, by id or by the PSP's
// reference, in one statement and in id order: two transactions locking
// overlapping sets of charges take them in the same order, so they queue
// instead of deadlocking. When the events need it (see needsRead) it then
// reads, under those locks, which charges have their grant and which
// refunds are booked.
func (a *Applier) LockTx(ctx context.Context, tx *sqlx.Tx, evs []Event, skipLocked bool) (*Locked, error) {
	l := &Locked{a: a, byID: map[string]*lockedCharge{}, byRef: map[string]*lockedCharge{}, booked: map[refundKey]int64{}}
	var ids, refs, refunds []string
	for _, ev := range evs {
		if ev.ChargeID != "" {
			ids = append(ids, ev.ChargeID)
		}
		if ev.ChargeID == "" && ev.PSPRef != "" {
			// Only an event without our id is found by the PSP's reference
			// (see find): the others do not lock a charge they will not touch.
			refs = append(refs, ev.PSPRef)
		}
		if ev.Kind == Refunded && ev.RefundID != "" {
			refunds = append(refunds, ev.RefundID)
		}
	}
	if len(ids)+len(refs) == 0 {
		return l, nil
	}
	lock := a.lock
	if skipLocked {
		lock = a.lockSkip
	}
	var rows []Charge
	if err := query(ctx, tx, &rows, lock, pq.Array(ids), pq.Array(refs)); err != nil {
		return nil, fmt.Errorf("lock charges %v: %w", ids, err)
	}
	locked := make([]string, len(rows))
	for i := range rows {
		c := &lockedCharge{Charge: rows[i]}
		l.byID[c.ID] = c
		if c.PSPRef != nil {
			l.byRef[*c.PSPRef] = c
		}
		locked[i] = c.ID
	}
	if skipLocked && l.missesAny(evs) {
		if err := l.readBusy(ctx, tx, ids, refs); err != nil {
			return nil, err
		}
	}
	if !l.needsRead(evs) {
		return l, nil
	}
	return l, l.readGrantsAndRefunds(ctx, tx, locked, refunds)
}

// missesAny reports whether some event names a charge not locked here.
func (l *Locked) missesAny(evs []Event) bool {
	for _, ev := range evs {
		if (ev.ChargeID != "" || ev.PSPRef != "") && l.find(ev.ChargeID, ev.PSPRef) == nil {
			return true
		}
	}
	return false
}

// readBusy reads, without a lock, which of the charges named and not
// locked exist: those another transaction holds. The others are unknown.
func (l *Locked) readBusy(ctx context.Context, tx *sqlx.Tx, ids, refs []string) error {
	var rows []struct {
		ID     string  `db:"id"`
		PSPRef *string `db:"psp_ref"`
	}
	if err := query(ctx, tx, &rows, l.a.exist, pq.Array(ids), pq.Array(refs)); err != nil {
		return fmt.Errorf("read held charges of %v: %w", ids, err)
	}
	l.busyIDs, l.busyRefs = map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if _, ok := l.byID[r.ID]; ok {
			continue
		}
		l.busyIDs[r.ID] = true
		if r.PSPRef != nil {
			l.busyRefs[*r.PSPRef] = true
		}
	}
	return nil
}

// needsRead reports whether deciding evs needs to know grants and booked
// refunds: refunds do, and payments of charges already paid (a redelivery
// repairs a missing grant). A first payment does not: a grant is written
// only with the payment, in the transaction that marks the charge paid.
func (l *Locked) needsRead(evs []Event) bool {
	for _, ev := range evs {
		if ev.Kind == Refunded {
			return true
		}
		if c := l.find(ev.ChargeID, ev.PSPRef); ev.Kind == Paid && c != nil && c.isPaid() {
			return true
		}
	}
	return false
}

// readGrantsAndRefunds runs after the locks are held, in a statement of its
// own, so it sees what a transaction we queued behind committed.
func (l *Locked) readGrantsAndRefunds(ctx context.Context, tx *sqlx.Tx, ids, refunds []string) error {
	var rows []struct {
		ChargeID string `db:"charge_id"`
		RefundID string `db:"refund_id"`
		Amount   int64  `db:"amount"`
	}
	err := query(ctx, tx, &rows, l.a.readGrantsRefunds, pq.Array(ids), pq.Array(refunds))
	if err != nil {
		return fmt.Errorf("read grants and refunds of %v: %w", ids, err)
	}
	for _, r := range rows {
		if r.RefundID == "" {
			l.byID[r.ChargeID].granted = true
			continue
		}
		l.booked[refundKey{r.ChargeID, r.RefundID}] = r.Amount
	}
	return nil
}

// find is the locked charge an event names: by our id when it names one,
// else by the PSP's reference. An id we do not know finds nothing: falling
// back to the reference would book a payment for an order we cannot name
// on whichever charge holds that reference (Hodle: an unknown externalId
// with a known trackId).
func (l *Locked) find(id, pspRef string) *lockedCharge {
	if id != "" {
		return l.byID[id]
	}
	if c, ok := l.byRef[pspRef]; ok && pspRef != "" {
		return c
	}
	return nil
}

// Busy reports whether the charge ev names, by the id it names if it
// names one, exists but was held by another transaction when LockTx
// skipped it: ev is to be decided later, never against another charge
// found by its PSP reference. A charge that does not exist is not busy:
// Apply decides ev as an unknown charge.
func (l *Locked) Busy(ev Event) bool {
	if ev.ChargeID != "" {
		return l.busyIDs[ev.ChargeID]
	}
	return ev.PSPRef != "" && l.busyRefs[ev.PSPRef]
}

// Apply decides what ev does to its charge, which LockTx must have locked,
// after every event applied before it. Nothing is written until WriteTx.
func (l *Locked) Apply(ev Event) (Outcome, error) {
	c := l.find(ev.ChargeID, ev.PSPRef)
	if c == nil {
		if ev.ChargeID != "" {
			return diverge(ev.ChargeID, ReasonUnknownCharge, "no charge with id %q", ev.ChargeID), nil
		}
		return diverge("", ReasonUnknownCharge, "no charge with psp reference %q", ev.PSPRef), nil
	}
	if c.Merchant != nil && *c.Merchant != ev.Merchant {
		// Checked before anything else, whatever the event: another
		// merchant's endpoint neither books, parks nor changes the charge.
		return diverge(c.ID, ReasonMerchantMismatch, "charge of merchant %q; event through an endpoint of merchant %q",
			*c.Merchant, ev.Merchant), nil
	}
	if err := l.a.Ledger.CheckEventTime(ev.At); err != nil {
		// Stored before intake checked the window: the ledger (or the
		// charge's timestamps) would refuse it on every attempt, so it is
		// a divergence now, not ten failures.
		return diverge(c.ID, ReasonMalformed, "%v", err), nil
	}
	switch ev.Kind {
	case Paid:
		return l.paid(c, ev)
	case Refunded:
		return l.refunded(c, ev)
	case Failed:
		return l.failed(c, ev), nil
	}
	return Outcome{}, fmt.Errorf("apply to charge %s: unknown event kind %q", c.ID, ev.Kind)
}

func (c *Charge) isPaid() bool {
	return c.State == StatePaid || c.State == StatePartiallyRefunded || c.State == StateRefunded
}

func (l *Locked) touch(c *lockedCharge) {
	if !c.changed {
		c.changed = true
		l.changed = append(l.changed, c)
	}
}

// ensureGrant gives the charge's access if it is not there, whatever
// happened before: it is how a redelivery repairs a partial state.
func (l *Locked) ensureGrant(c *lockedCharge) []events.Draft {
	if c.granted {
		return nil
	}
	c.granted = true
	l.grants = append(l.grants, c)
	return []events.Draft{{Topic: events.TopicAccessGranted, ChargeID: c.ID,
		Payload: map[string]any{"charge_id": c.ID, "access": c.Access}}}
}

func (l *Locked) paid(c *lockedCharge, ev Event) (Outcome, error) {
	if c.isPaid() {
		// Only the same payment, provably (the same PaymentRef), is a
		// redelivery. A charge paid before payments carried a comparable
		// identity (paid_ref NULL) cannot prove it: a second notice.
		if c.PaidRef == nil || ev.PaymentRef == "" || *c.PaidRef != ev.PaymentRef {
			paidBy := "a payment of unknown reference"
			if c.PaidRef != nil {
				paidBy = *c.PaidRef
			}
			return diverge(c.ID, ReasonSecondPayment, "charge already paid by %s; payment %s of %d arrived too",
				paidBy, ev.PaymentRef, ev.Amount), nil
		}
		// The same reference is the same payment only with the same
		// figures. When they differ it is amount_mismatch, not
		// second_payment: the PSP names the payment already booked, so
		// what finance must settle is what that one payment was worth
		// (check it on the PSP's statement), not a second transfer to
		// return to the payer.
		if paidAmount, fee := derefOr(c.PaidAmount), derefOr(c.Fee); ev.Amount != paidAmount || ev.Fee != fee {
			return diverge(c.ID, ReasonAmountMismatch, "payment %s was booked for %d (PSP fee %d); now stated as %d (PSP fee %d)",
				ev.PaymentRef, paidAmount, fee, ev.Amount, ev.Fee), nil
		}
		// A redelivery: repair the grant if a partial state left it out.
		return Outcome{Result: NoOp, ChargeID: c.ID, Events: l.ensureGrant(c)}, nil
	}
	// The webhook front refuses an amount above the limit at intake; this
	// is for a delivery stored before the limit was lowered, or a charge
	// registered above it: the ledger would refuse the sale on every retry.
	tooLarge := l.a.Ledger.Limit().Check("paid amount", ev.Amount)
	switch {
	case !ev.HasAmount:
		return diverge(c.ID, ReasonAmountMismatch, "payment states no amount; charge is %d", c.Amount), nil
	case tooLarge != nil:
		return diverge(c.ID, ReasonMalformed, "%v", tooLarge), nil
	case ev.Amount != c.Amount:
		return diverge(c.ID, ReasonAmountMismatch, "paid %d, charge is %d", ev.Amount, c.Amount), nil
	case ev.HasFee && (ev.Fee < 0 || ev.Fee >= ev.Amount):
		return diverge(c.ID, ReasonAmountMismatch, "PSP fee %d on a payment of %d", ev.Fee, ev.Amount), nil
	}
	if err := l.bookSale(c, ev); err != nil {
		return Outcome{}, err
	}
	commission := int64(0)
	if c.Partner != nil && c.CommissionBP > 0 {
		commission = postings.Commission(c.Amount, c.CommissionBP)
	}
	amount, fee, at := ev.Amount, ev.Fee, ev.At
	c.State, c.PaidAmount, c.Fee, c.Commission, c.PaidAt = StatePaid, &amount, &fee, commission, &at
	c.PaidRef = nil
	if ev.PaymentRef != "" {
		ref := ev.PaymentRef
		c.PaidRef = &ref
	}
	l.touch(c)
	drafts := []events.Draft{{Topic: events.TopicChargePaid, ChargeID: c.ID, Payload: map[string]any{
		"charge_id": c.ID, "amount": ev.Amount, "fee": ev.Fee, "paid_at": ev.At,
	}}}
	return Outcome{Result: Applied, ChargeID: c.ID, Events: append(drafts, l.ensureGrant(c)...)}, nil
}

// bookSale queues the sale and, when the charge has a partner, its
// commission.
func (l *Locked) bookSale(c *lockedCharge, ev Event) error {
	sale, err := postings.Sale(c.ID, c.Currency, ev.Amount, ev.Fee, ev.At)
	if err != nil {
		return err
	}
	sale.InboxID = ev.InboxID
	l.sets = append(l.sets, sale)
	l.sales++
	if c.Partner == nil {
		return nil
	}
	comm, ok, err := postings.CommissionSet(c.ID, *c.Partner, c.Currency, c.Amount, c.CommissionBP, ev.At)
	if err != nil || !ok {
		return err
	}
	comm.InboxID = ev.InboxID
	l.sets = append(l.sets, comm)
	return nil
}

func (l *Locked) refunded(c *lockedCharge, ev Event) (Outcome, error) {
	if !c.isPaid() {
		return Outcome{Result: Parked, ChargeID: c.ID}, nil
	}
	if ev.RefundID == "" {
		return diverge(c.ID, ReasonMalformed, "refund without a refund id"), nil
	}
	if ev.PaymentRef != "" && c.PaidRef != nil && !isEventRef(*c.PaidRef) && *c.PaidRef != ev.PaymentRef {
		// The refund of a payment that is not the one booked (a second
		// payment, itself a divergence): booking it would cancel the sale.
		// Both sides are in the scheme's form (SchemePaymentRef).
		return diverge(c.ID, ReasonRefundOfOtherPayment, "refund %s is of payment %s; the charge was paid by %s",
			ev.RefundID, ev.PaymentRef, *c.PaidRef), nil
	}
	key := refundKey{c.ID, ev.RefundID}
	if booked, ok := l.booked[key]; ok {
		if ev.HasAmount && ev.Amount != booked {
			return diverge(c.ID, ReasonRefundAmountChanged, "refund %s was booked for %d; now stated as %d",
				ev.RefundID, booked, ev.Amount), nil
		}
		return Outcome{Result: NoOp, ChargeID: c.ID}, nil
	}
	remaining := *c.PaidAmount - c.RefundedAmount
	amount := ev.Amount
	switch {
	case !ev.HasAmount && !ev.FullRefundIfNoAmount:
		return diverge(c.ID, ReasonRefundAmountMissing, "refund %s states no amount", ev.RefundID), nil
	case !ev.HasAmount:
		amount = remaining
	}
	if err := l.a.Ledger.Limit().Check("refund amount", amount); err != nil {
		return diverge(c.ID, ReasonMalformed, "refund %s: %v", ev.RefundID, err), nil
	}
	if amount <= 0 || amount > remaining {
		return diverge(c.ID, ReasonRefundExceedsPaid, "refund %s of %d; %d of %d left to refund", ev.RefundID, amount, remaining, *c.PaidAmount), nil
	}
	if err := l.bookRefund(c, ev, amount); err != nil {
		return Outcome{}, err
	}
	l.booked[key] = amount
	c.RefundedAmount += amount
	c.State = StatePartiallyRefunded
	if amount == remaining {
		c.State = StateRefunded
	}
	l.touch(c)
	return Outcome{Result: Applied, ChargeID: c.ID, Events: []events.Draft{{Topic: events.TopicChargeRefunded, ChargeID: c.ID,
		Payload: map[string]any{
			"charge_id": c.ID, "refund_id": ev.RefundID, "amount": amount,
			"refunded_total": c.RefundedAmount, "refunded_at": ev.At,
		}}}}, nil
}

// bookRefund queues the refund and, when the charge paid a commission, the
// part of it the refund takes back. It runs before the refund is counted
// in c.RefundedAmount.
func (l *Locked) bookRefund(c *lockedCharge, ev Event, amount int64) error {
	refund, err := postings.Refund(c.ID, ev.RefundID, c.Currency, amount, ev.At)
	if err != nil {
		return err
	}
	refund.InboxID = ev.InboxID
	l.sets = append(l.sets, refund)
	if c.Partner == nil || c.Commission == 0 {
		return nil
	}
	rev := postings.ReversalAmount(c.Commission, *c.PaidAmount, c.RefundedAmount, amount)
	set, ok, err := postings.CommissionReversalSet(c.ID, ev.RefundID, *c.Partner, c.Currency, rev, ev.At)
	if err != nil || !ok {
		return err
	}
	set.InboxID = ev.InboxID
	l.sets = append(l.sets, set)
	return nil
}

// failed records a failure. A failure is not a refund: no money moves.
func (l *Locked) failed(c *lockedCharge, ev Event) Outcome {
	at := ev.At
	c.FailedAt = &at
	if c.State == StatePending {
		c.State = StateFailed
	}
	l.touch(c)
	return Outcome{Result: Applied, ChargeID: c.ID, Events: []events.Draft{{Topic: events.TopicChargeFailed, ChargeID: c.ID,
		Payload: map[string]any{"charge_id": c.ID, "failed_at": ev.At}}}}
}

// WriteTx writes what the applied events decided: every posting set in one
// statement, every changed charge and new grant in another. The events'
// outbox rows are the caller's to append.
func (l *Locked) WriteTx(ctx context.Context, tx *sqlx.Tx) error {
	if len(l.sets) > 0 {
		if _, err := l.a.Ledger.PostAllTx(ctx, tx, l.sets...); err != nil {
			return err
		}
		if l.sales > 0 && l.a.AfterSale != nil {
			if err := l.a.AfterSale(); err != nil {
				return err
			}
		}
	}
	return l.writeCharges(ctx, tx)
}

func (l *Locked) writeCharges(ctx context.Context, tx *sqlx.Tx) error {
	n := len(l.changed)
	if n == 0 && len(l.grants) == 0 {
		return nil
	}
	ids, states, refs := make([]string, n), make([]string, n), make([]*string, n)
	paid, fees, commissions, refunded := make([]*int64, n), make([]*int64, n), make([]int64, n), make([]int64, n)
	paidAt, failedAt := make([]*time.Time, n), make([]*time.Time, n)
	for i, c := range l.changed {
		ids[i], states[i], refs[i] = c.ID, string(c.State), c.PaidRef
		paid[i], fees[i], commissions[i], refunded[i] = c.PaidAmount, c.Fee, c.Commission, c.RefundedAmount
		paidAt[i], failedAt[i] = c.PaidAt, c.FailedAt
	}
	granted, access := make([]string, len(l.grants)), make([]string, len(l.grants))
	for i, c := range l.grants {
		granted[i], access[i] = c.ID, c.Access
	}
	err := exec(ctx, tx, l.a.write, pq.Array(ids), pq.Array(states), pq.Array(paid), pq.Array(fees), pq.Array(commissions),
		pq.Array(paidAt), pq.Array(refs), pq.Array(refunded), pq.Array(failedAt), pq.Array(granted), pq.Array(access))
	if err != nil {
		return fmt.Errorf("update charges %v, grant %v: %w", ids, granted, err)
	}
	return nil
}

// EnsureGrantTx locks the charge and, if it is paid, makes sure its access
// grant exists; it returns the events to append (access.granted when it
// wrote the grant).
func (a *Applier) EnsureGrantTx(ctx context.Context, tx *sqlx.Tx, id, pspRef string) ([]events.Draft, error) {
	l, err := a.LockTx(ctx, tx, []Event{{Kind: Paid, ChargeID: id, PSPRef: pspRef}}, Wait)
	if err != nil {
		return nil, err
	}
	c := l.find(id, pspRef)
	if c == nil || !c.isPaid() {
		return nil, nil
	}
	drafts := l.ensureGrant(c)
	return drafts, l.writeCharges(ctx, tx)
}

// derefOr is *p, or 0 for a charge column that is NULL.
func derefOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
