package periods

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/exact"
)

// A closed month never changes (the database refuses postings into it),
// so closing one keeps its figures (month_snapshots, its income statement;
// trial_balance_snapshots, its trial balance lines): its reports are
// lookups, and an open month's opening balances start from the latest
// snapshot rather than from the beginning of the ledger. These are every
// statement over the two tables; the figures are computed elsewhere (the
// Figures given to Close) and read back by whoever assembles reports. A
// month closed before snapshots existed has none, and is reported from
// its postings.

// Line is one account's own figures in a month: its postings only, not
// its descendants'. Opening and the figures are signed centavos, debit
// positive; Debits and Credits are both positive.
type Line struct {
	AccountID  int64  `db:"account_id"`
	Code       string `db:"code"`
	Type       string `db:"type"`
	NormalSide string `db:"normal_side"`
	Currency   string `db:"currency"`
	Opening    int64  `db:"opening"`
	Debits     int64  `db:"debits"`
	Credits    int64  `db:"credits"`
}

// Income is a month's income statement figures, as a snapshot keeps them;
// the rest (net revenue, net income) is derived.
type Income struct {
	// Currency is the revenue account's.
	Currency     string
	Sales        int64
	SalesCount   int64
	Refunds      int64
	RefundsCount int64
	// Lines holds each of IncomeLines by name. A snapshot taken before a
	// line had its column has none for it: its amounts are in Other, as
	// the month showed them.
	Lines map[string]int64
	Other int64
}

// Snapshot is what closing a month keeps: its trial balance lines (the
// accounts it shows) and its income statement figures.
type Snapshot struct {
	Lines  []Line
	Income Income
}

// Figures computes the snapshot of month m inside tx, the transaction
// that closes it (monthsums.Closing: the month's reports' figures).
type Figures func(ctx context.Context, tx *sqlx.Tx, m Month) (Snapshot, error)

// writeSnapshot stores month m's snapshot, as figures computes it, in the
// closing transaction tx. The database refuses a snapshot of an open
// month, so this cannot close anything.
func writeSnapshot(ctx context.Context, tx *sqlx.Tx, m Month, figures Figures) error {
	s, err := figures(ctx, tx, m)
	if err != nil {
		return err
	}
	f := s.Income
	// The values in incomeColumns' order, the lines' count last.
	args := []any{m.First(), f.Currency, f.Sales, f.SalesCount, f.Refunds, f.RefundsCount, f.Other}
	for _, l := range IncomeLines {
		args = append(args, f.Lines[l.Name])
	}
	args = append(args, len(s.Lines))
	params := make([]string, len(args))
	for i := range args {
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO month_snapshots (month, `+incomeColumns()+`, lines)
		VALUES (`+strings.Join(params, ", ")+`) ON CONFLICT (month) DO NOTHING`, args...)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", m, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // n == 0: the month had its snapshot already
	}
	ids := make([]int64, len(s.Lines))
	opening := make([]int64, len(s.Lines))
	debits := make([]int64, len(s.Lines))
	credits := make([]int64, len(s.Lines))
	for i, l := range s.Lines {
		ids[i], opening[i], debits[i], credits[i] = l.AccountID, l.Opening, l.Debits, l.Credits
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO trial_balance_snapshots (month, account_id, opening, debits, credits, closing)
		SELECT $1, u.account_id, u.opening, u.debits, u.credits, u.opening + u.debits - u.credits
		FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS u (account_id, opening, debits, credits)`,
		m.First(), pq.Array(ids), pq.Array(opening), pq.Array(debits), pq.Array(credits))
	if err != nil {
		return fmt.Errorf("snapshot %s: lines: %w", m, err)
	}
	return nil
}

// incomeColumns lists month_snapshots' income columns: the figures of
// every month, then a column per income line, in IncomeLines' order.
func incomeColumns() string {
	cols := []string{"currency", "sales", "sales_count", "refunds", "refunds_count", "other"}
	for _, l := range IncomeLines {
		cols = append(cols, pq.QuoteIdentifier(l.Name))
	}
	return strings.Join(cols, ", ")
}

// incomeScan returns where to scan the values of incomeColumns into f, and
// the function that files the lines' in f.Lines once they are scanned. A
// line that is NULL (a month closed before the line had its column) is
// left out.
func incomeScan(f *Income) (dest []any, file func()) {
	lines := make([]sql.NullInt64, len(IncomeLines))
	dest = []any{&f.Currency, &f.Sales, &f.SalesCount, &f.Refunds, &f.RefundsCount, &f.Other}
	for i := range lines {
		dest = append(dest, &lines[i])
	}
	return dest, func() {
		f.Lines = make(map[string]int64, len(IncomeLines))
		for i, l := range IncomeLines {
			if lines[i].Valid {
				f.Lines[l.Name] = lines[i].Int64
			}
		}
	}
}

// MonthSnapshot is what a report needs to know about a month before
// reading its figures.
type MonthSnapshot struct {
	// Closed: the month is closed (Closed).
	Closed bool         `db:"-"`
	Last   sql.NullTime `db:"last_closed"`
	// Snapshot: the month has its snapshot.
	Snapshot bool `db:"snapshot"`
	// Base is the latest month before it with a snapshot, if any.
	Base sql.NullTime `db:"base"`
}

// SnapshotState reads month m's state.
func SnapshotState(ctx context.Context, q sqlx.QueryerContext, m Month) (MonthSnapshot, error) {
	var st MonthSnapshot
	err := sqlx.GetContext(ctx, q, &st, `SELECT
		(SELECT max(month) FROM closed_periods) AS last_closed,
		EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1) AS snapshot,
		(SELECT max(month) FROM month_snapshots WHERE month < $1) AS base`, m.First())
	if err != nil {
		return MonthSnapshot{}, fmt.Errorf("month %s: read state: %w", m, err)
	}
	st.Closed = Closed(m, MonthOrZero(st.Last))
	return st, nil
}

// SnapshotLines returns the trial balance lines month m's snapshot kept.
func SnapshotLines(ctx context.Context, q sqlx.QueryerContext, m Month) ([]Line, error) {
	var lines []Line
	err := sqlx.SelectContext(ctx, q, &lines, `
		SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency, s.opening, s.debits, s.credits
		FROM trial_balance_snapshots s JOIN accounts a ON a.id = s.account_id
		WHERE s.month = $1`, m.First())
	return lines, err
}

// SnapshotIncome returns the income figures month m's snapshot kept.
func SnapshotIncome(ctx context.Context, q sqlx.QueryerContext, m Month) (Income, error) {
	var f Income
	dest, file := incomeScan(&f)
	if err := q.QueryRowxContext(ctx, `SELECT `+incomeColumns()+` FROM month_snapshots WHERE month = $1`, m.First()).Scan(dest...); err != nil {
		return Income{}, err
	}
	file()
	return f, nil
}

// SnapshotOpenings returns a line of every account, its Opening the closing
// balance its line in base's snapshot kept (0 without one, or without
// base) and no figures.
func SnapshotOpenings(ctx context.Context, q sqlx.QueryerContext, base sql.NullTime) ([]Line, error) {
	var lines []Line
	err := sqlx.SelectContext(ctx, q, &lines, `SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency,
		coalesce(s.closing, 0) AS opening, 0 AS debits, 0 AS credits
		FROM accounts a LEFT JOIN trial_balance_snapshots s ON s.month = $1::date AND s.account_id = a.id`, base)
	return lines, err
}

// RangeSnapshots is what the snapshots say of a range of months.
type RangeSnapshots struct {
	// Base is the latest month before the range with a snapshot, if any.
	Base sql.NullTime
	// Snapshot and Closed hold the range's months (YYYY-MM) that have
	// their snapshot, and that are closed.
	Snapshot, Closed map[string]bool
}

// SnapshotRange reads the state of the months from from to to.
func SnapshotRange(ctx context.Context, q sqlx.QueryerContext, from, to Month) (RangeSnapshots, error) {
	var st struct {
		Base    sql.NullTime   `db:"base"`
		Snapped pq.StringArray `db:"snapped"`
		Last    sql.NullTime   `db:"last_closed"`
	}
	err := sqlx.GetContext(ctx, q, &st, `SELECT
		(SELECT max(month) FROM month_snapshots WHERE month < $1) AS base,
		ARRAY(SELECT to_char(month, 'YYYY-MM') FROM month_snapshots WHERE month BETWEEN $1 AND $2) AS snapped,
		(SELECT max(month) FROM closed_periods) AS last_closed`,
		from.First(), to.First())
	if err != nil {
		return RangeSnapshots{}, err
	}
	last, closed := MonthOrZero(st.Last), map[string]bool{}
	for m := from; !to.Before(m); m = m.Next() {
		if Closed(m, last) {
			closed[m.String()] = true
		}
	}
	return RangeSnapshots{Base: st.Base, Snapshot: monthSet(st.Snapped), Closed: closed}, nil
}

func monthSet(ss []string) map[string]bool {
	out := make(map[string]bool, len(ss))
	for _, s := range ss {
		out[s] = true
	}
	return out
}

// AccountsSnapshots are accounts' figures together as the snapshots kept
// them, summed exactly (exact.Sum).
type AccountsSnapshots struct {
	// Closing is their closing balance in the base month's snapshot.
	Closing exact.Sum
	// Months are their debits and credits in each snapshotted month
	// asked for that has lines of theirs.
	Months []SnapshotMonth
}

// SnapshotMonth is a month's debits and credits.
type SnapshotMonth struct {
	Month           Month
	Debits, Credits exact.Sum
}

// accountsSnapshotsSQL returns a row with a NULL month holding the
// closing balance of the accounts $1 in the snapshot of $2 (or 0 when
// NULL) in debits, then (month, debits, credits) for the snapshotted
// months $3 in which they have lines, as exact numerics.
const accountsSnapshotsSQL = `
SELECT NULL::date AS month, coalesce((SELECT sum(s.closing) FROM trial_balance_snapshots s
		WHERE s.month = $2::date AND s.account_id = ANY($1::bigint[])), 0) AS debits, 0 AS credits
UNION ALL
SELECT s.month, sum(s.debits), sum(s.credits)
FROM trial_balance_snapshots s
WHERE s.month = ANY($3::date[]) AND s.account_id = ANY($1::bigint[])
GROUP BY s.month`

// SnapshotSums returns the figures of accounts ids together as the
// snapshots kept them: their closing balance in base's, and their debits
// and credits in each of months (which have their snapshot).
func SnapshotSums(ctx context.Context, q sqlx.QueryerContext, ids []int64, base sql.NullTime, months []Month) (AccountsSnapshots, error) {
	dates := make(pq.StringArray, len(months))
	for i, m := range months {
		dates[i] = m.First().Format(time.DateOnly)
	}
	var rows []struct {
		Month   sql.NullTime `db:"month"`
		Debits  exact.Sum    `db:"debits"`
		Credits exact.Sum    `db:"credits"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, accountsSnapshotsSQL, pq.Array(ids), base, dates); err != nil {
		return AccountsSnapshots{}, err
	}
	var out AccountsSnapshots
	for _, r := range rows {
		if !r.Month.Valid {
			out.Closing = r.Debits
			continue
		}
		out.Months = append(out.Months, SnapshotMonth{Month: snapshotMonth(r.Month.Time), Debits: r.Debits, Credits: r.Credits})
	}
	return out, nil
}

// KeptTotals are every snapshot's figures, summed per account: what the
// months with a snapshot hold, and which do not have one.
type KeptTotals struct {
	// Last is the latest month with a snapshot, if any.
	Last sql.NullTime
	// Gaps are the months from the ledger's first to Last without one
	// (closed before snapshots existed), as dates (YYYY-MM-DD).
	Gaps []string
	// Accounts are each account's debits and credits in every snapshot,
	// summed exactly; an account without lines is absent.
	Accounts map[int64]AccountSums
}

// AccountSums are an account's debits and credits.
type AccountSums struct {
	Debits, Credits exact.Sum
}

// SnapshotTotals reads every snapshot's figures, summed per account.
func SnapshotTotals(ctx context.Context, q sqlx.QueryerContext) (KeptTotals, error) {
	var st struct {
		Last sql.NullTime   `db:"last"`
		Gaps pq.StringArray `db:"gaps"`
	}
	err := sqlx.GetContext(ctx, q, &st, `SELECT
		(SELECT max(month) FROM month_snapshots) AS last,
		ARRAY(SELECT d::date::text FROM generate_series(
				(SELECT min(competence_month) FROM posting_sets), (SELECT max(month) FROM month_snapshots), interval '1 month') d
			WHERE NOT EXISTS (SELECT 1 FROM month_snapshots s WHERE s.month = d::date)) AS gaps`)
	if err != nil {
		return KeptTotals{}, err
	}
	var rows []struct {
		AccountID int64     `db:"account_id"`
		Debits    exact.Sum `db:"debits"`
		Credits   exact.Sum `db:"credits"`
	}
	err = sqlx.SelectContext(ctx, q, &rows, `SELECT account_id, sum(debits) AS debits, sum(credits) AS credits
		FROM trial_balance_snapshots GROUP BY account_id`)
	if err != nil {
		return KeptTotals{}, err
	}
	out := KeptTotals{Last: st.Last, Gaps: st.Gaps, Accounts: make(map[int64]AccountSums, len(rows))}
	for _, r := range rows {
		out.Accounts[r.AccountID] = AccountSums{Debits: r.Debits, Credits: r.Credits}
	}
	return out, nil
}

// Sealed is a snapshot as it was stored: what verify holds to the
// postings.
type Sealed struct {
	Month Month
	// Lines is the number of trial balance lines the snapshot says it
	// has.
	Lines  int64
	Income Income
}

// SealedSnapshots returns every snapshot's income figures, by month.
func SealedSnapshots(ctx context.Context, q sqlx.QueryerContext) ([]Sealed, error) {
	rows, err := q.QueryContext(ctx, `SELECT month, lines, `+incomeColumns()+` FROM month_snapshots ORDER BY month`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Sealed
	for rows.Next() {
		var s Sealed
		var month time.Time
		dest, file := incomeScan(&s.Income)
		if err := rows.Scan(append([]any{&month, &s.Lines}, dest...)...); err != nil {
			return nil, err
		}
		file()
		s.Month = snapshotMonth(month)
		out = append(out, s)
	}
	return out, rows.Err()
}

// SealedLine is a trial balance line of a snapshot.
type SealedLine struct {
	Month Month
	Line
}

// SealedLines returns every snapshot's trial balance lines, by month then
// account id.
func SealedLines(ctx context.Context, q sqlx.QueryerContext) ([]SealedLine, error) {
	var rows []struct {
		Month time.Time `db:"month"`
		Line
	}
	err := sqlx.SelectContext(ctx, q, &rows, `SELECT s.month, s.account_id, a.code, a.type, a.normal_side, a.currency,
			s.opening, s.debits, s.credits
		FROM trial_balance_snapshots s JOIN accounts a ON a.id = s.account_id ORDER BY s.month, s.account_id`)
	if err != nil {
		return nil, err
	}
	out := make([]SealedLine, len(rows))
	for i, r := range rows {
		out[i] = SealedLine{Month: snapshotMonth(r.Month), Line: r.Line}
	}
	return out, nil
}

// snapshotMonth converts a date column to a Month.
func snapshotMonth(t time.Time) Month { return MonthOf(t.UTC()) }
