package postings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/periods"
)

// The ledger's typed reads for other packages, so that their callers
// name no column of posting_sets or postings: a charge's sets, a
// partner's payouts, a month's journal (JSON pages and the CSV's stream),
// the set under a key. The posting transaction's statements are in
// ledger.go. Other packages still read these tables in statements of their
// own: verify (on purpose, an auditor independent of this package),
// periods (which this package imports, so it cannot call it: which months
// have sets), monthsums (the cache of their sums, and the sums a closing
// month's snapshot is computed from), and, in statements over several
// owners' tables that decide set by set, charges and reconcile.

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

// lastPayoutsSQL is each partner's newest payout set, one probe of
// ix_posting_sets_partner_payouts per partner (LastPayouts).
const lastPayoutsSQL = `SELECT p.partner, s.id, s.idempotency_key, s.amount, s.currency, s.competence, s.event_at, s.description
	FROM unnest($1::text[]) AS p (partner)
	CROSS JOIN LATERAL (SELECT id, idempotency_key, amount, currency, competence, event_at, description
		FROM posting_sets WHERE partner = p.partner AND kind = 'payout' ORDER BY id DESC LIMIT 1) s`

// LastPayouts returns, by partner, the newest payout set of each of
// partners that had one: the one booked last, whatever its effective date.
func LastPayouts(ctx context.Context, q sqlx.QueryerContext, partners []string) (map[string]PayoutSet, error) {
	var rows []struct {
		Partner string `db:"partner"`
		PayoutSet
	}
	if err := sqlx.SelectContext(ctx, q, &rows, lastPayoutsSQL, pq.StringArray(partners)); err != nil {
		return nil, fmt.Errorf("last payouts: %w", err)
	}
	out := make(map[string]PayoutSet, len(rows))
	for _, r := range rows {
		out[r.Partner] = r.PayoutSet
	}
	return out, nil
}

// storedSetColumns are the columns a StoredSet is read from.
const storedSetColumns = `id, kind, idempotency_key, amount, currency, competence, event_at, charge_id, refund_id,
	partner, inbox_id, description, created_at`

// StoredSet is a posting set as written.
type StoredSet struct {
	ID             int64          `db:"id"`
	Kind           string         `db:"kind"`
	IdempotencyKey string         `db:"idempotency_key"`
	Amount         int64          `db:"amount"`
	Currency       string         `db:"currency"`
	Competence     time.Time      `db:"competence"`
	EventAt        time.Time      `db:"event_at"`
	ChargeID       sql.NullString `db:"charge_id"`
	RefundID       sql.NullString `db:"refund_id"`
	Partner        sql.NullString `db:"partner"`
	InboxID        sql.NullInt64  `db:"inbox_id"`
	Description    string         `db:"description"`
	CreatedAt      time.Time      `db:"created_at"`
}

// StoredLeg is one posting of a set, its account named.
type StoredLeg struct {
	SetID    int64  `db:"posting_set_id"`
	ID       int64  `db:"id"`
	Account  string `db:"account"`
	Currency string `db:"currency"`
	Amount   int64  `db:"amount"`
}

// MonthSets returns at most limit sets of competence month m with an id
// above after, in id order (ix_posting_sets_competence_month), from the
// month's partition alone (inMonthSQL).
func MonthSets(ctx context.Context, q sqlx.QueryerContext, m periods.Month, after int64, limit int) ([]StoredSet, error) {
	var sets []StoredSet
	err := sqlx.SelectContext(ctx, q, &sets, monthSetsSQL, m.First(), after, limit)
	return sets, err
}

const monthSetsSQL = `SELECT ` + storedSetColumns + ` FROM posting_sets s WHERE ` + inMonthSQL + ` AND s.id > $2 ORDER BY s.id LIMIT $3`

// inMonthSQL is the condition that set s is of the competence month
// whose first day is $1: competence_month, which ix_posting_sets_competence_month
// reads in id order, and the same month as a range of competence,
// posting_sets' partition key (sql/0056), so that the planner reads the
// month's partition only. A statement's parameters are its plan's
// constants (lib/pq's unnamed statements are planned for their values),
// so the range is pruned when the statement is planned.
const inMonthSQL = `s.competence_month = $1 AND s.competence >= $1::date AND s.competence < ($1::date + interval '1 month')::date`

// LegsOf returns the postings of the sets ids, by set then posting id.
func LegsOf(ctx context.Context, q sqlx.QueryerContext, ids []int64) ([]StoredLeg, error) {
	var legs []StoredLeg
	err := sqlx.SelectContext(ctx, q, &legs, `
		SELECT p.posting_set_id, p.id, a.code AS account, p.currency, p.amount
		FROM postings p JOIN accounts a ON a.id = p.account_id
		WHERE p.posting_set_id = ANY($1) ORDER BY p.posting_set_id, p.id`, pq.Array(ids))
	return legs, err
}

// legsIn is LegsOf for sets of the competence months given (their first
// days, YYYY-MM-DD): a posting's competence_month is its set's, and is
// postings' partition key (sql/0056), so only those months' partitions
// are read. Without the months, a page's legs are looked up in every
// month's partition.
func legsIn(ctx context.Context, q sqlx.QueryerContext, ids []int64, months []string) ([]StoredLeg, error) {
	var legs []StoredLeg
	err := sqlx.SelectContext(ctx, q, &legs, legsInSQL, pq.Array(ids), pq.StringArray(months))
	return legs, err
}

const legsInSQL = `
		SELECT p.posting_set_id, p.id, a.code AS account, p.currency, p.amount
		FROM postings p JOIN accounts a ON a.id = p.account_id
		WHERE p.posting_set_id = ANY($1) AND p.competence_month = ANY($2::date[]) ORDER BY p.posting_set_id, p.id`

// MonthPosting is one posting of a month's journal with its set's header,
// as EachMonthPosting reads it: the competence as text (YYYY-MM-DD) and
// the event time as epoch microseconds, both exact and cheaper to decode
// than dates and timestamps; the account by id (accounts.Codes names it).
type MonthPosting struct {
	SetID                       int64
	Kind, Competence            string
	EventUS                     int64
	ChargeID, RefundID, Partner string
	IdempotencyKey, Description string
	PostingID, AccountID        int64
	Currency                    string
	Amount                      int64
}

// MonthPostingsSQL selects a month's postings in journal order: each set
// of the month (ix_posting_sets_competence_month), then its postings
// (ix_postings_set), so the cost follows the month's size, never the
// ledger's. Both from the month's partitions alone (inMonthSQL; a
// posting's competence_month is its set's): without the month a set's
// postings would be looked up in every month's partition of postings.
// Exported for the export benchmark, which runs it through psql's COPY to
// compare.
const MonthPostingsSQL = `
SELECT s.id, s.kind, s.competence::text,
	(extract(epoch FROM s.event_at) * 1000000)::bigint AS event_us,
	coalesce(s.charge_id, ''), coalesce(s.refund_id, ''), coalesce(s.partner, ''),
	s.idempotency_key, s.description, p.id, p.account_id, p.currency, p.amount
FROM posting_sets s
CROSS JOIN LATERAL (
	SELECT p.id, p.account_id, p.currency, p.amount FROM postings p
	WHERE p.posting_set_id = s.id AND p.competence_month = $1 ORDER BY p.id
) p
WHERE ` + inMonthSQL + `
ORDER BY s.id, p.id`

// EachMonthPosting calls fn with every posting of competence month m in
// journal order (set id, then posting id), streamed: a month is read once,
// whatever its size. It stops at fn's first error and returns it as is;
// then it cancels the query, so the driver abandons the rest of the result
// instead of draining it (a client that went away). p is reused between
// calls.
func EachMonthPosting(ctx context.Context, q sqlx.QueryerContext, m periods.Month, fn func(p *MonthPosting) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows, err := q.QueryContext(ctx, MonthPostingsSQL, m.First())
	if err != nil {
		return err
	}
	defer rows.Close()
	var p MonthPosting
	for rows.Next() {
		if err := rows.Scan(&p.SetID, &p.Kind, &p.Competence, &p.EventUS, &p.ChargeID, &p.RefundID, &p.Partner,
			&p.IdempotencyKey, &p.Description, &p.PostingID, &p.AccountID, &p.Currency, &p.Amount); err != nil {
			return err
		}
		if err := fn(&p); err != nil {
			cancel()
			return err
		}
	}
	return rows.Err()
}

// SetByKey returns the set written under idempotency key, and false when
// there is none. The key is found in posting_set_keys, whose row says the
// set's month: one partition of posting_sets is read.
func SetByKey(ctx context.Context, q sqlx.QueryerContext, key string) (StoredSet, bool, error) {
	var s StoredSet
	err := sqlx.GetContext(ctx, q, &s, `SELECT `+storedSetColumns+` FROM posting_sets
		WHERE (id, competence) = (SELECT id, competence FROM posting_set_keys WHERE idempotency_key = $1)`, key)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredSet{}, false, nil
	}
	return s, err == nil, err
}
