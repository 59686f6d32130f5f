// Package monthsums keeps and reads the month sums (sql/0021): a month's
// postings summed per account and kind of set, every report's reading of
// the postings. A month's stored sums (month_sums, month_sum_lines) cover
// the sets a database snapshot saw; a reading adds the sets it did not
// see, so the figures are always the postings' and the cache only changes
// what they cost. The sums are stored by one function in the database
// (month_sums_refresh, sql/0041), refreshed off the hot path by Run.
//
// A Reader reads them: Cached (the stored sums and the sets since, what
// the reports read) or Postings (the postings alone, for what must not
// rest on a cache the service role writes: a payout, a snapshot, verify),
// and turns them into a month's figures (Lines, Income). Books is where
// the reports read every figure: a closed month's snapshot, else its sums;
// Closing is what closing a month keeps.
package monthsums

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/periods"
)

// A month's sums are read from its stored sums (month_sums, the sets
// visible in a database snapshot S) plus the sets S did not see, or, for a
// month without stored sums, from all its postings. Both halves are read
// by one statement, so a refresh that commits meanwhile is seen whole or
// not at all, in any isolation level. Since the sums only ever cover
// sealed, append-only sets, the figures are the same as summing the
// postings; only the cost differs.

// RevenueAccount is the account of the sums of the revenue accounts
// together (month_sum_lines' account_id 0), which count their sets.
const RevenueAccount = 0

// monthSumsSQL returns (month, account_id, kind, debits, credits, sets)
// rows whose sums per (month, account_id, kind) are the month's: $1 the
// months (NULL: every month from the ledger's first to its last), $2 the
// accounts (NULL: all), $3 the revenue accounts, summed together as
// account 0 with their sets counted (empty: no such rows), $4 true to
// ignore stored sums (sum the postings themselves: Postings).
//
// The branches are gated per month by conditions on the month's row only
// (one-time filters): a month with sums reads its lines and the sets its
// snapshot did not see (ix_posting_sets_month_xid, then each set's
// postings by ix_postings_set: the OFFSET 0 keeps the planner from a scan
// of postings, however many sets it guesses), one without reads
// its postings, by account (ix_postings_account_month) when accounts are
// given, else by set (ix_posting_sets_competence_month).
const monthSumsSQL = `
WITH m AS (
	SELECT d AS month FROM unnest($1::date[]) d
	UNION ALL
	SELECT d::date FROM generate_series((SELECT min(competence_month) FROM posting_sets),
		(SELECT max(competence_month) FROM posting_sets), interval '1 month') d
	WHERE $1::date[] IS NULL
), ms AS (
	SELECT m.month, s.snapshot FROM m LEFT JOIN month_sums s ON s.month = m.month AND NOT $4::boolean
		AND pg_snapshot_xmax(s.snapshot) <= pg_snapshot_xmax(pg_current_snapshot())
)
SELECT ms.month, x.account_id, x.kind, x.debits, x.credits, x.sets
FROM ms CROSS JOIN LATERAL (
	WITH r AS MATERIALIZED (
		SELECT p.account_id, s.id AS set_id, s.kind, p.amount
		FROM posting_sets s CROSS JOIN LATERAL (
			SELECT p.account_id, p.amount FROM postings p WHERE p.posting_set_id = s.id OFFSET 0) p
		WHERE ms.snapshot IS NOT NULL AND s.competence_month = ms.month
			AND s.created_xid >= pg_snapshot_xmin(ms.snapshot) AND NOT pg_visible_in_snapshot(s.created_xid, ms.snapshot)
			AND ($2::bigint[] IS NULL OR p.account_id = ANY($2::bigint[]))
		UNION ALL
		SELECT p.account_id, s.id, s.kind, p.amount
		FROM posting_sets s JOIN postings p ON p.posting_set_id = s.id AND p.competence_month = ms.month
		WHERE ms.snapshot IS NULL AND $2::bigint[] IS NULL AND s.competence_month = ms.month
		UNION ALL
		SELECT p.account_id, s.id, s.kind, p.amount
		FROM postings p JOIN posting_sets s ON s.id = p.posting_set_id
		WHERE ms.snapshot IS NULL AND p.account_id = ANY($2::bigint[]) AND p.competence_month = ms.month
	)
	SELECT r.account_id, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0), 0) AS debits,
		coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0), 0) AS credits, 0::bigint AS sets
	FROM r GROUP BY r.account_id, r.kind
	UNION ALL
	SELECT 0, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0), 0),
		coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0), 0), count(DISTINCT r.set_id)
	FROM r WHERE r.account_id = ANY($3::bigint[]) GROUP BY r.kind
	UNION ALL
	SELECT l.account_id, l.kind, l.debits, l.credits, l.sets FROM month_sum_lines l
	WHERE ms.snapshot IS NOT NULL AND l.month = ms.month
		AND (CASE WHEN l.account_id = 0 THEN cardinality($3::bigint[]) > 0
			ELSE $2::bigint[] IS NULL OR l.account_id = ANY($2::bigint[]) END)
) x`

// Key names one figure of month sums.
type Key struct {
	Month   periods.Month
	Account int64
	Kind    string
}

// Flow is a month's debits and credits on an account by one kind of set,
// summed in 128 bits (checked by whoever reads them), and the sets counted
// (RevenueAccount's only).
type Flow struct {
	Debits, Credits exact.Wide
	Sets            int64
}

// Net returns the flow's debits less its credits.
func (f Flow) Net() exact.Wide {
	n := f.Debits
	n.SubWide(f.Credits)
	return n
}

// Query says what Flows reads.
type Query struct {
	// Months to sum; nil: every month of the ledger.
	Months []periods.Month
	// Accounts to sum; nil: all.
	Accounts []int64
	// Revenue, when not empty, adds the sums of these accounts together,
	// as RevenueAccount's.
	Revenue []int64
}

// Reader says where month sums are read from.
type Reader int

const (
	// Cached reads each month's stored sums and the sets they did not
	// see: what the reports read.
	Cached Reader = iota
	// Postings reads the postings alone: for what must not rest on a
	// cache the service role writes (a payout, a snapshot, verify).
	Postings
)

// Flows reads the month sums that sq asks for (monthSumsSQL) and adds
// their halves up.
func (r Reader) Flows(ctx context.Context, q sqlx.QueryerContext, sq Query) (map[Key]*Flow, error) {
	var months pq.StringArray
	if sq.Months != nil {
		months = make(pq.StringArray, len(sq.Months))
		for i, m := range sq.Months {
			months[i] = m.First().Format(time.DateOnly)
		}
	}
	var accts any
	if sq.Accounts != nil {
		accts = pq.Array(sq.Accounts)
	}
	revenue := sq.Revenue
	if revenue == nil {
		revenue = []int64{}
	}
	rows, err := q.QueryxContext(ctx, monthSumsSQL, months, accts, pq.Array(revenue), r == Postings)
	if err != nil {
		return nil, fmt.Errorf("month sums: %w", err)
	}
	defer rows.Close()
	out := map[Key]*Flow{}
	for rows.Next() {
		var row struct {
			Month   time.Time `db:"month"`
			Account int64     `db:"account_id"`
			Kind    string    `db:"kind"`
			Debits  exact.Sum `db:"debits"`
			Credits exact.Sum `db:"credits"`
			Sets    int64     `db:"sets"`
		}
		if err := rows.StructScan(&row); err != nil {
			return nil, fmt.Errorf("month sums: %w", err)
		}
		k := Key{Month: monthOf(row.Month), Account: row.Account, Kind: row.Kind}
		// A stored sum and its delta each fit numeric; each must fit
		// int64 to be added exactly here (a ledger's figure that does
		// not is refused by the report that reads it anyway).
		if row.Debits.Overflow || row.Credits.Overflow {
			return nil, fmt.Errorf("%w: sums of account %d in %s", exact.ErrSumOverflow, row.Account, k.Month)
		}
		f := out[k]
		if f == nil {
			f = &Flow{}
			out[k] = f
		}
		f.Debits.Add(row.Debits.Value)
		f.Credits.Add(row.Credits.Value)
		f.Sets += row.Sets
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("month sums: %w", err)
	}
	return out, nil
}

// MonthsBetween returns the months after from (or from the ledger's first
// month when from is NULL) and before to.
func MonthsBetween(ctx context.Context, q sqlx.QueryerContext, from sql.NullTime, to periods.Month) ([]periods.Month, error) {
	start := periods.Month{}
	if from.Valid {
		start = monthOf(from.Time).Next()
	} else {
		var first sql.NullTime
		if err := sqlx.GetContext(ctx, q, &first, `SELECT min(competence_month) FROM posting_sets`); err != nil {
			return nil, fmt.Errorf("first month of the ledger: %w", err)
		}
		if !first.Valid {
			return nil, nil
		}
		start = monthOf(first.Time)
	}
	var out []periods.Month
	for m := start; m.Before(to); m = m.Next() {
		out = append(out, m)
	}
	return out, nil
}

// RevenueAccounts returns the ids of the revenue accounts: income:revenue
// and the accounts under it, in its currency.
func RevenueAccounts(ctx context.Context, q sqlx.QueryerContext) ([]int64, error) {
	ids := []int64{}
	err := sqlx.SelectContext(ctx, q, &ids, `SELECT a.id FROM accounts a JOIN accounts r ON r.code = $1 AND r.currency = a.currency
		WHERE a.code = $1 OR starts_with(a.code, $1 || ':')`, accounts.Revenue)
	if err != nil {
		return nil, fmt.Errorf("revenue accounts: %w", err)
	}
	return ids, nil
}

// read runs fn in one read-only snapshot of its own when q can begin
// transactions, else directly on q (the caller's transaction), as the
// reports read (JIT off for these index range scans); a sum refused by
// the database (22003) is named an overflow.
func read(ctx context.Context, q sqlx.QueryerContext, fn func(q sqlx.QueryerContext) error) error {
	return exact.SumError(snapshot.Read(ctx, q, fn, `SET LOCAL jit = off`), "")
}

// monthOf converts a date column to a Month.
func monthOf(t time.Time) periods.Month { return periods.MonthOf(t.UTC()) }
