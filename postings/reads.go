package postings

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// The ledger's typed reads for other packages, so that their callers
// name no column of posting_sets or postings; the posting transaction's
// statements are in ledger.go. Other packages still read these tables in
// statements of their own: reports, partners, verify (on purpose, an
// auditor independent of this package), periods (which this package
// imports, so it cannot call it), and, in statements over several
// owners' tables, charges and reconcile.

// chargeRefundsSQL, chargeSetsSQL and chargeLegsSQL: see ChargeRefunds,
// ChargeSets and ChargeLegs.
const (
	chargeRefundsSQL = `SELECT refund_id, amount, competence::text AS competence, event_at
		FROM posting_sets WHERE charge_id = $1 AND kind = 'refund' ORDER BY id`
	chargeSetsSQL = `SELECT id, kind, amount, competence::text AS competence, event_at
		FROM posting_sets WHERE charge_id = $1 ORDER BY id`
	chargeLegsSQL = `SELECT p.posting_set_id, a.code, p.amount
		FROM postings p JOIN accounts a ON a.id = p.account_id JOIN posting_sets s ON s.id = p.posting_set_id
		WHERE s.charge_id = $1 ORDER BY p.id`
)

// recentPayoutsSQL: see RecentPayouts.
const recentPayoutsSQL = `SELECT id, idempotency_key, amount, currency, competence, event_at, description
		FROM posting_sets WHERE partner = $1 AND kind = 'payout' ORDER BY id DESC LIMIT $2`

// ChargeRefund is a refund set booked against a charge.
type ChargeRefund struct {
	RefundID   string    `db:"refund_id"`
	Amount     int64     `db:"amount"`
	Competence string    `db:"competence"` // YYYY-MM-DD
	EventAt    time.Time `db:"event_at"`
}

// ChargeRefunds returns the refund sets of the charge chargeID, in the
// order they were booked.
func ChargeRefunds(ctx context.Context, q sqlx.QueryerContext, chargeID string) ([]ChargeRefund, error) {
	var rows []ChargeRefund
	if err := sqlx.SelectContext(ctx, q, &rows, chargeRefundsSQL, chargeID); err != nil {
		return nil, err
	}
	return rows, nil
}

// ChargeSet is a posting set of a charge, without its postings (see
// ChargeLegs).
type ChargeSet struct {
	ID         int64     `db:"id"`
	Kind       string    `db:"kind"`
	Amount     int64     `db:"amount"`
	Competence string    `db:"competence"` // YYYY-MM-DD
	EventAt    time.Time `db:"event_at"`
}

// ChargeSets returns every posting set of the charge chargeID, in the
// order they were booked.
func ChargeSets(ctx context.Context, q sqlx.QueryerContext, chargeID string) ([]ChargeSet, error) {
	var rows []ChargeSet
	if err := sqlx.SelectContext(ctx, q, &rows, chargeSetsSQL, chargeID); err != nil {
		return nil, err
	}
	return rows, nil
}

// ChargeLeg is one posting of a charge's set SetID, on the account of
// code Account.
type ChargeLeg struct {
	SetID   int64  `db:"posting_set_id"`
	Account string `db:"code"`
	Amount  int64  `db:"amount"`
}

// ChargeLegs returns the postings of every set of the charge chargeID,
// in the order they were written.
func ChargeLegs(ctx context.Context, q sqlx.QueryerContext, chargeID string) ([]ChargeLeg, error) {
	var rows []ChargeLeg
	if err := sqlx.SelectContext(ctx, q, &rows, chargeLegsSQL, chargeID); err != nil {
		return nil, err
	}
	return rows, nil
}

// PayoutSet is one payout set of a partner.
type PayoutSet struct {
	ID          int64     `db:"id"`
	Key         string    `db:"idempotency_key"`
	Amount      int64     `db:"amount"`
	Currency    string    `db:"currency"`
	Competence  time.Time `db:"competence"`
	EventAt     time.Time `db:"event_at"`
	Description string    `db:"description"`
}

// RecentPayouts returns the partner's latest payout sets, newest (highest
// id) first, at most limit.
func RecentPayouts(ctx context.Context, q sqlx.QueryerContext, partner string, limit int) ([]PayoutSet, error) {
	var rows []PayoutSet
	if err := sqlx.SelectContext(ctx, q, &rows, recentPayoutsSQL, partner, limit); err != nil {
		return nil, err
	}
	return rows, nil
}
