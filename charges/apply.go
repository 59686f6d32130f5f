package charges

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgarray"
	"github.com/razao/razao/internal/sqlstmt"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
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
	// Parts is what Amount is made of, when the payment says so (a Pix's
	// componentesValor); the zero Parts when it says nothing, and all of
	// Amount is the sale. See paid.
	Parts money.Parts
	// OfCashOut marks a refund of cash handed over the counter (a Pix
	// devolução of natureza RETIRADA), not of the sale.
	OfCashOut bool
	// StatementRefund: a refund read from a PSP's statement file under
	// the file's own refund id (StatementRefundType), which its webhook
	// may name by another: the two are paired, not booked twice (see
	// ChargeState.pairFor).
	StatementRefund bool
	// ReturnID and Nature are a refund's return id and natureza as the
	// PSP stated them, kept with its posting set; a MED_* nature is a
	// return under the MED, booked apart (postings.Refund).
	ReturnID, Nature string
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
	// Reason and Detail explain a divergence: Detail is Said's English,
	// Said the detail in both languages (divergences.Delivery.Detail).
	Reason divergences.Reason
	Detail string
	Said   divergences.Said
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
	return schemePaymentRefPrefix(scheme) + ref
}

func schemePaymentRefPrefix(scheme string) string { return scheme + ":" }

// EventPaymentRef is the PaymentRef of a payment whose scheme states no
// payment reference of the PSP: the stable id of the event that reports
// it (the same on every retry of that event), as standard:event:msg_1. A
// refund's PSP reference is not compared with it: the payment never named
// its reference.
func EventPaymentRef(scheme, eventID string) string {
	if eventID == "" {
		return ""
	}
	return eventPaymentRefPrefix(scheme) + eventID
}

func eventPaymentRefPrefix(scheme string) string {
	return schemePaymentRefPrefix(scheme) + eventRefPrefix
}

// standardScheme is the Standard Webhooks scheme: razao's body carries no
// payment reference of the PSP, so the message is the payment.
const standardScheme = "standard"

// NamesPayments reports whether the payments of scheme are named by a
// reference of the PSP (SchemePaymentRef); those of one that names none
// (standard) are known by the event that reports them (EventPaymentRef).
func NamesPayments(scheme string) bool { return scheme != standardScheme }

// PaymentRefPrefix is what a payment's PaymentRef in scheme puts before
// the id a statement knows the payment by: "hodle:" before the PSP's
// reference (SchemePaymentRef), "standard:event:" before the event's id
// for a scheme that names no payments (EventPaymentRef). The prefix and a
// statement line's id are the paid_ref of the charge that payment paid.
func PaymentRefPrefix(scheme string) string {
	if !NamesPayments(scheme) {
		return eventPaymentRefPrefix(scheme)
	}
	return schemePaymentRefPrefix(scheme)
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
		exist:             sqlstmt.New(db, existChargesSQL),
		readGrantsRefunds: sqlstmt.New(db, readGrantsRefundsSQL),
		write:             sqlstmt.New(db, writeChargesSQL),
	}
}

// StatementRefundType is the inbox event type of a refund read from a
// statement file, under the file's own refund id (reconcile's CSV lines).
const StatementRefundType = "statement:refunded"

func diverge(chargeID string, reason divergences.Reason, said divergences.Said) Outcome {
	return Outcome{Result: Divergence, ChargeID: chargeID, Reason: reason, Detail: said.English(), Said: said}
}

// Locked is the charges a run of events names, locked in the caller's
// transaction, and what applying those events has changed so far. The
// decisions are made in memory, each seeing the ones before it, and WriteTx
// writes them all: a batch of deliveries costs a handful of statements
// whatever its size, and a single delivery no more than before.
type Locked struct {
	a     *Applier
	byID  map[string]*lockedCharge
	byRef map[string]*lockedCharge
	sets  []postings.Set
	sales int
	// busyIDs and busyRefs are charges that exist but were held by
	// another transaction when LockTx skipped them.
	busyIDs, busyRefs map[string]bool
	// changed and grants keep the order things happened in, so writes
	// are deterministic.
	changed []*lockedCharge
	grants  []*lockedCharge
	aliases []RefundAlias
}

// lockedCharge is a locked charge as the events so far have left it.
type lockedCharge struct {
	ChargeState
	changed bool // its row is among the ones to write
}

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
	l := &Locked{a: a, byID: map[string]*lockedCharge{}, byRef: map[string]*lockedCharge{}}
	var ids, refs []string
	for _, ev := range evs {
		if ev.ChargeID != "" {
			ids = append(ids, ev.ChargeID)
		}
		if ev.ChargeID == "" && ev.PSPRef != "" {
			// Only an event without our id is found by the PSP's reference
			// (see find): the others do not lock a charge they will not touch.
			refs = append(refs, ev.PSPRef)
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
	if err := query(ctx, tx, &rows, lock, pgarray.Text(ids), pgarray.Text(refs)); err != nil {
		return nil, fmt.Errorf("lock charges %v: %w", ids, err)
	}
	locked := make([]string, len(rows))
	for i := range rows {
		c := &lockedCharge{ChargeState: ChargeState{Charge: rows[i]}}
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
	return l, l.readGrantsAndRefunds(ctx, tx, locked)
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
func (l *Locked) readGrantsAndRefunds(ctx context.Context, tx *sqlx.Tx, ids []string) error {
	var rows []struct {
		ChargeID  string     `db:"charge_id"`
		RefundID  string     `db:"refund_id"`
		Amount    int64      `db:"amount"`
		At        *time.Time `db:"at"`
		Statement bool       `db:"statement"`
		AliasID   string     `db:"alias_id"`
	}
	err := query(ctx, tx, &rows, l.a.readGrantsRefunds, pq.Array(ids), StatementRefundType)
	if err != nil {
		return fmt.Errorf("read grants and refunds of %v: %w", ids, err)
	}
	for _, r := range rows {
		c := l.byID[r.ChargeID]
		if r.RefundID == "" {
			c.Granted = true
			continue
		}
		c.Booked = append(c.Booked, BookedRefund{ID: r.RefundID, Amount: r.Amount, At: *r.At, Statement: r.Statement, Alias: r.AliasID})
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
// after every event applied before it (Decide), and keeps what is to be
// written. Nothing is written until WriteTx.
func (l *Locked) Apply(ev Event) (Outcome, error) {
	c := l.find(ev.ChargeID, ev.PSPRef)
	if c == nil {
		if ev.ChargeID != "" {
			return diverge(ev.ChargeID, divergences.ReasonUnknownCharge, divergences.UnknownChargeID(ev.ChargeID)), nil
		}
		return diverge("", divergences.ReasonUnknownCharge, divergences.UnknownChargeRef(ev.PSPRef)), nil
	}
	d, err := Decide(c.ChargeState, ev, Rules{Limit: l.a.Ledger.Limit(), CheckTime: l.a.Ledger.CheckEventTime})
	if err != nil {
		return Outcome{}, err
	}
	c.ChargeState = d.State
	l.keep(c, d)
	return d.Outcome, nil
}

// keep queues what a decision writes: its sets, the charge's row, its
// grant.
func (l *Locked) keep(c *lockedCharge, d Decision) {
	for _, s := range d.Sets {
		if s.Kind == postings.KindSale {
			l.sales++
		}
		l.sets = append(l.sets, s)
	}
	if d.Changed && !c.changed {
		c.changed = true
		l.changed = append(l.changed, c)
	}
	if d.Grant {
		l.grants = append(l.grants, c)
	}
	if d.Alias != nil {
		l.aliases = append(l.aliases, *d.Alias)
	}
}

func (c *Charge) isPaid() bool {
	return c.State == StatePaid || c.State == StatePartiallyRefunded || c.State == StateRefunded
}

// WriteTx writes what the applied events decided: every posting set in one
// statement, every changed charge and new grant in another. tx holds the
// close lock, last being the last closed month read under it
// (postings.Ledger.PostAllLockedTx). The events' outbox rows are the
// caller's to append.
func (l *Locked) WriteTx(ctx context.Context, tx *sqlx.Tx, last periods.Month) error {
	if len(l.sets) > 0 {
		if _, err := l.a.Ledger.PostAllLockedTx(ctx, tx, last, l.sets...); err != nil {
			return err
		}
		if l.sales > 0 && l.a.AfterSale != nil {
			if err := l.a.AfterSale(); err != nil {
				return err
			}
		}
	}
	if err := l.writeAliases(ctx, tx); err != nil {
		return err
	}
	return l.writeCharges(ctx, tx)
}

// writeAliases writes the refunds paired with their other id. The unique
// keys hold each booked refund to one pair, whatever code decided.
func (l *Locked) writeAliases(ctx context.Context, tx *sqlx.Tx) error {
	if len(l.aliases) == 0 {
		return nil
	}
	n := len(l.aliases)
	charges, refunds, aliases, inbox := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, a := range l.aliases {
		charges[i], refunds[i], aliases[i], inbox[i] = a.ChargeID, a.RefundID, a.AliasID, a.InboxID
	}
	_, err := tx.ExecContext(ctx, insertAliasesSQL,
		pq.Array(charges), pq.Array(refunds), pq.Array(aliases), pq.Array(inbox))
	if err != nil {
		return fmt.Errorf("pair refunds %v with %v: %w", refunds, aliases, err)
	}
	return nil
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
	err := exec(ctx, tx, l.a.write, pgarray.Text(ids), pgarray.Text(states), pgarray.NullInt64(paid), pgarray.NullInt64(fees),
		pq.Array(commissions), pgarray.NullTime(paidAt), pgarray.NullText(refs), pq.Array(refunded), pgarray.NullTime(failedAt),
		pgarray.Text(granted), pgarray.Text(access))
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
	d := Decision{State: c.ChargeState}
	d.ensureGrant()
	c.ChargeState = d.State
	l.keep(c, d)
	return d.Events, l.writeCharges(ctx, tx)
}

// derefOr is *p, or 0 for a charge column that is NULL.
func derefOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
