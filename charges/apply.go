package charges

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/events"
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
	Kind     Kind
	ChargeID string // our id as the PSP echoes it; may be empty
	PSPRef   string // the PSP's payment reference; may be empty
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
	Reason string
	Detail string
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

// Reasons for a divergence.
const (
	ReasonUnknownCharge        = "unknown_charge"
	ReasonAmountMismatch       = "amount_mismatch"
	ReasonCurrencyMismatch     = "currency_mismatch"
	ReasonRefundExceedsPaid    = "refund_exceeds_paid"
	ReasonRefundAmountMissing  = "refund_amount_missing"
	ReasonSecondPayment        = "second_payment"
	ReasonMalformed            = "malformed"
	ReasonRefundOfOtherPayment = "refund_of_other_payment"
	ReasonRefundAmountChanged  = "refund_amount_changed"
)

// Applier applies PSP events to charges and the ledger.
type Applier struct {
	Ledger *postings.Ledger
	// AfterSale, when set, runs inside the transaction right after the
	// sale is written; an error aborts the transaction. Tests use it to
	// crash between steps.
	AfterSale func() error
}

func diverge(chargeID, reason, format string, args ...any) Outcome {
	return Outcome{Result: Divergence, ChargeID: chargeID, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// ApplyTx applies ev inside tx: it locks the charge row, decides with the
// row locked, writes the posting sets "if absent", updates the charge,
// ensures the access grant and appends the outbox events. The caller owns
// tx and commits it.
func (a *Applier) ApplyTx(ctx context.Context, tx *sqlx.Tx, ev Event) (Outcome, error) {
	c, err := lockCharge(ctx, tx, ev.ChargeID, ev.PSPRef)
	if errors.Is(err, ErrNotFound) {
		return diverge(ev.ChargeID, ReasonUnknownCharge, "no charge with id %q or psp reference %q", ev.ChargeID, ev.PSPRef), nil
	}
	if err != nil {
		return Outcome{}, err
	}
	switch ev.Kind {
	case Paid:
		return a.paid(ctx, tx, c, ev)
	case Refunded:
		return a.refunded(ctx, tx, c, ev)
	case Failed:
		return failed(ctx, tx, c, ev)
	}
	return Outcome{}, fmt.Errorf("apply to charge %s: unknown event kind %q", c.ID, ev.Kind)
}

// lockCharge takes the charge's row lock, by its id, else by the PSP's
// reference; both are indexed, so the lock is a point lookup.
func lockCharge(ctx context.Context, tx *sqlx.Tx, id, pspRef string) (Charge, error) {
	var c Charge
	err := sql.ErrNoRows
	if id != "" {
		err = tx.GetContext(ctx, &c, `SELECT `+chargeColumns+` FROM charges WHERE id = $1 FOR UPDATE`, id)
	}
	if errors.Is(err, sql.ErrNoRows) && pspRef != "" {
		err = tx.GetContext(ctx, &c, `SELECT `+chargeColumns+` FROM charges WHERE psp_ref = $1 FOR UPDATE`, pspRef)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Charge{}, ErrNotFound
	}
	if err != nil {
		return Charge{}, fmt.Errorf("lock charge %s: %w", id, err)
	}
	return c, nil
}

func (c *Charge) isPaid() bool {
	return c.State == StatePaid || c.State == StatePartiallyRefunded || c.State == StateRefunded
}

func (a *Applier) paid(ctx context.Context, tx *sqlx.Tx, c Charge, ev Event) (Outcome, error) {
	if c.isPaid() {
		if c.PaidRef != nil && ev.PSPRef != "" && *c.PaidRef != ev.PSPRef {
			return diverge(c.ID, ReasonSecondPayment, "charge already paid by %s; payment %s of %d arrived too", *c.PaidRef, ev.PSPRef, ev.Amount), nil
		}
		// A redelivery: repair the grant if a partial state left it out.
		return Outcome{Result: NoOp, ChargeID: c.ID}, ensureGrant(ctx, tx, c)
	}
	switch {
	case !ev.HasAmount:
		return diverge(c.ID, ReasonAmountMismatch, "payment states no amount; charge is %d", c.Amount), nil
	case ev.Amount != c.Amount:
		return diverge(c.ID, ReasonAmountMismatch, "paid %d, charge is %d", ev.Amount, c.Amount), nil
	case ev.HasFee && (ev.Fee < 0 || ev.Fee >= ev.Amount):
		return diverge(c.ID, ReasonAmountMismatch, "PSP fee %d on a payment of %d", ev.Fee, ev.Amount), nil
	}
	if err := a.postSale(ctx, tx, c, ev); err != nil {
		return Outcome{}, err
	}
	commission := int64(0)
	if c.Partner != nil && c.CommissionBP > 0 {
		commission = postings.Commission(c.Amount, c.CommissionBP)
	}
	// The state and the grant in one statement, the events in another.
	var granted bool
	err := tx.GetContext(ctx, &granted, `WITH paid AS (
			UPDATE charges SET state = 'paid', paid_amount = $2, fee = $3, commission = $4,
				paid_at = $5, paid_ref = NULLIF($6, ''), updated_at = now()
			WHERE id = $1 RETURNING id, access
		), new_grant AS (
			INSERT INTO access_grants (charge_id, access) SELECT id, access FROM paid
			ON CONFLICT DO NOTHING RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM new_grant)`,
		c.ID, ev.Amount, ev.Fee, commission, ev.At, ev.PSPRef)
	if err != nil {
		return Outcome{}, fmt.Errorf("mark charge %s paid: %w", c.ID, err)
	}
	drafts := []events.Draft{{Topic: events.TopicChargePaid, ChargeID: c.ID, Payload: map[string]any{
		"charge_id": c.ID, "amount": ev.Amount, "fee": ev.Fee, "paid_at": ev.At,
	}}}
	if granted {
		drafts = append(drafts, grantedEvent(c))
	}
	return Outcome{Result: Applied, ChargeID: c.ID}, events.AppendAll(ctx, tx, drafts...)
}

func grantedEvent(c Charge) events.Draft {
	return events.Draft{Topic: events.TopicAccessGranted, ChargeID: c.ID,
		Payload: map[string]any{"charge_id": c.ID, "access": c.Access}}
}

// postSale writes the sale and, when the charge has a partner, its
// commission, in one statement.
func (a *Applier) postSale(ctx context.Context, tx *sqlx.Tx, c Charge, ev Event) error {
	sale, err := postings.Sale(c.ID, c.Currency, ev.Amount, ev.Fee, ev.At)
	if err != nil {
		return err
	}
	sale.InboxID = ev.InboxID
	sets := []postings.Set{sale}
	if c.Partner != nil {
		comm, ok, err := postings.CommissionSet(c.ID, *c.Partner, c.Currency, c.Amount, c.CommissionBP, ev.At)
		if err != nil {
			return err
		}
		if ok {
			comm.InboxID = ev.InboxID
			sets = append(sets, comm)
		}
	}
	if _, err := a.Ledger.PostAllTx(ctx, tx, sets...); err != nil {
		return fmt.Errorf("post sale of %s: %w", c.ID, err)
	}
	if a.AfterSale != nil {
		return a.AfterSale()
	}
	return nil
}

// EnsureGrantTx locks the charge and, if it is paid, makes sure its access
// grant exists.
func EnsureGrantTx(ctx context.Context, tx *sqlx.Tx, id, pspRef string) error {
	c, err := lockCharge(ctx, tx, id, pspRef)
	if err != nil {
		return err
	}
	if !c.isPaid() {
		return nil
	}
	return ensureGrant(ctx, tx, c)
}

// ensureGrant gives the charge's access if it is not there, whatever
// happened before: it is how a redelivery repairs a partial state.
func ensureGrant(ctx context.Context, tx *sqlx.Tx, c Charge) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO access_grants (charge_id, access) VALUES ($1, $2) ON CONFLICT DO NOTHING`, c.ID, c.Access)
	if err != nil {
		return fmt.Errorf("grant access for %s: %w", c.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	return events.AppendAll(ctx, tx, grantedEvent(c))
}

func (a *Applier) refunded(ctx context.Context, tx *sqlx.Tx, c Charge, ev Event) (Outcome, error) {
	if !c.isPaid() {
		return Outcome{Result: Parked, ChargeID: c.ID}, nil
	}
	if ev.RefundID == "" {
		return diverge(c.ID, ReasonMalformed, "refund without a refund id"), nil
	}
	if ev.PSPRef != "" && c.PaidRef != nil && *c.PaidRef != ev.PSPRef {
		// The refund of a payment that is not the one booked (a second
		// payment, itself a divergence): booking it would cancel the sale.
		return diverge(c.ID, ReasonRefundOfOtherPayment, "refund %s is of payment %s; the charge was paid by %s",
			ev.RefundID, ev.PSPRef, *c.PaidRef), nil
	}
	var booked []int64
	if err := tx.SelectContext(ctx, &booked, `SELECT amount FROM posting_sets
		WHERE kind = 'refund' AND charge_id = $1 AND refund_id = $2`, c.ID, ev.RefundID); err != nil {
		return Outcome{}, fmt.Errorf("look up refund %s of %s: %w", ev.RefundID, c.ID, err)
	}
	if len(booked) > 0 {
		if ev.HasAmount && ev.Amount != booked[0] {
			return diverge(c.ID, ReasonRefundAmountChanged, "refund %s was booked for %d; now stated as %d",
				ev.RefundID, booked[0], ev.Amount), nil
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
	if amount <= 0 || amount > remaining {
		return diverge(c.ID, ReasonRefundExceedsPaid, "refund %s of %d; %d of %d left to refund", ev.RefundID, amount, remaining, *c.PaidAmount), nil
	}
	if err := a.postRefund(ctx, tx, c, ev, amount); err != nil {
		return Outcome{}, err
	}
	state := StatePartiallyRefunded
	if amount == remaining {
		state = StateRefunded
	}
	if _, err := tx.ExecContext(ctx, `UPDATE charges SET refunded_amount = refunded_amount + $2, state = $3, updated_at = now()
		WHERE id = $1`, c.ID, amount, state); err != nil {
		return Outcome{}, fmt.Errorf("record refund of %s: %w", c.ID, err)
	}
	err := events.Append(ctx, tx, events.TopicChargeRefunded, c.ID, map[string]any{
		"charge_id": c.ID, "refund_id": ev.RefundID, "amount": amount,
		"refunded_total": c.RefundedAmount + amount, "refunded_at": ev.At,
	})
	return Outcome{Result: Applied, ChargeID: c.ID}, err
}

// postRefund writes the refund and, when the charge paid a commission,
// the part of it the refund takes back, in one statement.
func (a *Applier) postRefund(ctx context.Context, tx *sqlx.Tx, c Charge, ev Event, amount int64) error {
	refund, err := postings.Refund(c.ID, ev.RefundID, c.Currency, amount, ev.At)
	if err != nil {
		return err
	}
	refund.InboxID = ev.InboxID
	sets := []postings.Set{refund}
	if c.Partner != nil && c.Commission > 0 {
		rev := postings.ReversalAmount(c.Commission, *c.PaidAmount, c.RefundedAmount, amount)
		set, ok, err := postings.CommissionReversalSet(c.ID, ev.RefundID, *c.Partner, c.Currency, rev, ev.At)
		if err != nil {
			return err
		}
		if ok {
			set.InboxID = ev.InboxID
			sets = append(sets, set)
		}
	}
	if _, err := a.Ledger.PostAllTx(ctx, tx, sets...); err != nil {
		return fmt.Errorf("post refund %s of %s: %w", ev.RefundID, c.ID, err)
	}
	return nil
}

// failed records a failure. A failure is not a refund: no money moves.
func failed(ctx context.Context, tx *sqlx.Tx, c Charge, ev Event) (Outcome, error) {
	_, err := tx.ExecContext(ctx, `UPDATE charges SET failed_at = $2,
		state = CASE WHEN state = 'pending' THEN 'failed' ELSE state END, updated_at = now() WHERE id = $1`, c.ID, ev.At)
	if err != nil {
		return Outcome{}, fmt.Errorf("record failure of %s: %w", c.ID, err)
	}
	err = events.Append(ctx, tx, events.TopicChargeFailed, c.ID, map[string]any{"charge_id": c.ID, "failed_at": ev.At})
	return Outcome{Result: Applied, ChargeID: c.ID}, err
}
