package reports

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/postings"
)

// CloseMonth closes month m and stores its snapshot in one transaction of
// its own. See CloseMonthTx.
func CloseMonth(ctx context.Context, db *sqlx.DB, l *postings.Ledger, m postings.Month, now time.Time) error {
	return CloseMonthBy(ctx, db, l, m, now, "")
}

// CloseMonthBy is CloseMonth recording by as the month's closed_by (see
// postings.Ledger.CloseMonthByTx).
func CloseMonthBy(ctx context.Context, db *sqlx.DB, l *postings.Ledger, m postings.Month, now time.Time, by string) error {
	if err := checkMonth(m); err != nil {
		return err
	}
	tx, err := db.BeginTxx(ctx, postings.WriteTx())
	if err != nil {
		return fmt.Errorf("close %s: begin: %w", m, err)
	}
	defer tx.Rollback()
	if err := CloseMonthByTx(ctx, tx, l, m, now, by); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("close %s: commit: %w", m, err)
	}
	return nil
}

// CloseMonthTx closes month m inside tx (postings.Ledger.CloseMonthTx: in
// order, once the month has ended at now in the ledger's time zone, waiting
// for in-flight postings) and writes the month's trial balance and income
// statement snapshot in the same transaction, so a closed month always has
// its snapshot. The refusals are ErrMonthNotOver, ErrEarlierMonthOpen and
// ErrAlreadyClosed. tx must be READ COMMITTED, as the snapshot must see
// every set committed before the close's lock was granted.
func CloseMonthTx(ctx context.Context, tx *sqlx.Tx, l *postings.Ledger, m postings.Month, now time.Time) error {
	return CloseMonthByTx(ctx, tx, l, m, now, "")
}

// CloseMonthByTx is CloseMonthTx recording by as the month's closed_by.
func CloseMonthByTx(ctx context.Context, tx *sqlx.Tx, l *postings.Ledger, m postings.Month, now time.Time, by string) error {
	if err := checkMonth(m); err != nil {
		return err
	}
	var iso string
	if err := tx.GetContext(ctx, &iso, `SELECT current_setting('transaction_isolation')`); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	if iso != "read committed" {
		return fmt.Errorf("close %s: transaction is %s; the snapshot needs read committed", m, iso)
	}
	if err := l.CloseMonthByTx(ctx, tx, m, now, by); err != nil {
		return err
	}
	// As for every report (see read); for the rest of tx.
	if _, err := tx.ExecContext(ctx, `SET LOCAL jit = off`); err != nil {
		return fmt.Errorf("close %s: %w", m, err)
	}
	if _, err := writeSnapshot(ctx, tx, m); err != nil {
		// A month whose figures do not fit int64 cannot be snapshotted,
		// so it is not closed: said so, not a bare 500.
		return postings.SumError(err, "the month's snapshot")
	}
	return nil
}

// writeSnapshot computes month m's figures (from the latest snapshot before
// it and the postings since) and stores them. It reports false when the
// month had a snapshot already. m must be closed: the database refuses a
// snapshot of an open month.
func writeSnapshot(ctx context.Context, q sqlx.ExtContext, m postings.Month) (bool, error) {
	var base sql.NullTime
	if err := sqlx.GetContext(ctx, q, &base, `SELECT max(month) FROM month_snapshots WHERE month < $1`, m.First()); err != nil {
		return false, fmt.Errorf("snapshot %s: %w", m, err)
	}
	own, err := liveOwnLines(ctx, q, m, base)
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", m, err)
	}
	own = keepShown(own)
	f, err := liveIncome(ctx, q, m)
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", m, err)
	}
	res, err := q.ExecContext(ctx, `INSERT INTO month_snapshots (month, currency, sales, sales_count, refunds,
		refunds_count, commission, psp_fees, other, lines) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (month) DO NOTHING`,
		m.First(), f.Currency, f.Sales, f.SalesCount, f.Refunds, f.RefundsCount, f.Commission, f.PSPFees, f.Other, len(own))
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", m, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	ids := make([]int64, len(own))
	opening := make([]int64, len(own))
	debits := make([]int64, len(own))
	credits := make([]int64, len(own))
	for i, l := range own {
		ids[i], opening[i], debits[i], credits[i] = l.AccountID, l.Opening, l.Debits, l.Credits
	}
	_, err = q.ExecContext(ctx, `INSERT INTO trial_balance_snapshots (month, account_id, opening, debits, credits, closing)
		SELECT $1, u.account_id, u.opening, u.debits, u.credits, u.opening + u.debits - u.credits
		FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS u (account_id, opening, debits, credits)`,
		m.First(), pq.Array(ids), pq.Array(opening), pq.Array(debits), pq.Array(credits))
	if err != nil {
		return false, fmt.Errorf("snapshot %s: lines: %w", m, err)
	}
	return true, nil
}

// BackfillSnapshots writes the snapshot of every closed month that lacks
// one (a month closed by postings.Ledger.CloseMonth directly, or before
// snapshots existed), oldest first, each in its own transaction. It is safe
// to run from several replicas at once. It returns the months it wrote.
func BackfillSnapshots(ctx context.Context, db *sqlx.DB) ([]postings.Month, error) {
	var missing []time.Time
	if err := db.SelectContext(ctx, &missing, `SELECT c.month FROM closed_periods c
		WHERE NOT EXISTS (SELECT 1 FROM month_snapshots s WHERE s.month = c.month) ORDER BY c.month`); err != nil {
		return nil, fmt.Errorf("backfill snapshots: %w", err)
	}
	var done []postings.Month
	for _, t := range missing {
		m := monthOf(t)
		tx, err := db.BeginTxx(ctx, postings.WriteTx())
		if err != nil {
			return done, fmt.Errorf("backfill %s: begin: %w", m, err)
		}
		wrote, err := writeSnapshot(ctx, tx, m)
		if err == nil {
			err = tx.Commit()
		}
		tx.Rollback()
		if err != nil {
			return done, fmt.Errorf("backfill %s: %w", m, err)
		}
		if wrote {
			done = append(done, m)
		}
	}
	return done, nil
}

// SnapshotMismatch is a snapshot figure that differs from the ledger.
type SnapshotMismatch struct {
	Month string `json:"month"`
	// What names the figure: "<account> opening|debits|credits",
	// "income <figure>" or "lines".
	What     string `json:"what"`
	Snapshot int64  `json:"snapshot"`
	Ledger   int64  `json:"ledger"`
}

// CheckSnapshots recomputes every snapshot from the postings alone (one
// pass over the postings of snapshotted months, never trusting another
// snapshot) and returns the figures that differ; none is the expected
// outcome. It reads the whole ledger up to the last snapshot: it belongs
// with verify, not with serving requests.
func CheckSnapshots(ctx context.Context, q sqlx.QueryerContext) ([]SnapshotMismatch, error) {
	var out []SnapshotMismatch
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		out, err = checkSnapshots(ctx, q)
		return err
	})
	return out, err
}

func checkSnapshots(ctx context.Context, q sqlx.QueryerContext) ([]SnapshotMismatch, error) {
	type monthSums struct {
		AccountID int64     `db:"account_id"`
		Month     time.Time `db:"month"`
		Debits    int64     `db:"debits"`
		Credits   int64     `db:"credits"`
	}
	var ledger []monthSums
	err := sqlx.SelectContext(ctx, q, &ledger, `
		SELECT account_id, competence_month AS month,
			coalesce(sum(amount) FILTER (WHERE amount > 0), 0)::bigint AS debits,
			coalesce(-sum(amount) FILTER (WHERE amount < 0), 0)::bigint AS credits
		FROM postings WHERE competence_month <= (SELECT max(month) FROM month_snapshots)
		GROUP BY 1, 2 ORDER BY 2, 1`)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: ledger: %w", err)
	}
	type line struct {
		Month     time.Time `db:"month"`
		AccountID int64     `db:"account_id"`
		Code      string    `db:"code"`
		Opening   int64     `db:"opening"`
		Debits    int64     `db:"debits"`
		Credits   int64     `db:"credits"`
	}
	var snap []line
	err = sqlx.SelectContext(ctx, q, &snap, `SELECT s.month, s.account_id, a.code, s.opening, s.debits, s.credits
		FROM trial_balance_snapshots s JOIN accounts a ON a.id = s.account_id ORDER BY s.month, s.account_id`)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: lines: %w", err)
	}
	var heads []struct {
		Month time.Time `db:"month"`
		Lines int64     `db:"lines"`
		incomeFigures
	}
	err = sqlx.SelectContext(ctx, q, &heads, `SELECT month, lines, currency, sales, sales_count, refunds, refunds_count,
		commission, psp_fees, other FROM month_snapshots ORDER BY month`)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}
	codes, err := accountCodes(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}

	var out []SnapshotMismatch
	type figures struct{ opening, debits, credits int64 }
	balance := map[int64]int64{} // each account's closing so far, from the ledger
	var sum sums
	move := func(id, debits, credits int64) {
		balance[id] = sum.add(balance[id], sum.sub(debits, credits, "balance of", codes[id]), "balance of", codes[id])
	}
	li, si := 0, 0
	for _, h := range heads {
		m := monthOf(h.Month)
		want := map[int64]figures{}
		// Carry every earlier month (snapshotted or not) into the balances.
		for ; li < len(ledger) && monthOf(ledger[li].Month).Before(m); li++ {
			move(ledger[li].AccountID, ledger[li].Debits, ledger[li].Credits)
		}
		for id, b := range balance {
			if b != 0 {
				want[id] = figures{opening: b}
			}
		}
		for ; li < len(ledger) && monthOf(ledger[li].Month) == m; li++ {
			s := ledger[li]
			f := want[s.AccountID]
			f.debits, f.credits = s.Debits, s.Credits
			want[s.AccountID] = f
			move(s.AccountID, s.Debits, s.Credits)
		}
		got := map[int64]figures{}
		var n int64
		for ; si < len(snap) && monthOf(snap[si].Month) == m; si++ {
			got[snap[si].AccountID] = figures{snap[si].Opening, snap[si].Debits, snap[si].Credits}
			n++
		}
		if n != h.Lines {
			out = append(out, SnapshotMismatch{Month: m.String(), What: "lines", Snapshot: h.Lines, Ledger: n})
		}
		ids := make([]int64, 0, len(want)+len(got))
		for id := range want {
			ids = append(ids, id)
		}
		for id := range got {
			if _, ok := want[id]; !ok {
				ids = append(ids, id)
			}
		}
		slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(codes[a], codes[b]) })
		for _, id := range ids {
			w, g := want[id], got[id]
			for _, c := range []struct {
				what string
				s, l int64
			}{{"opening", g.opening, w.opening}, {"debits", g.debits, w.debits}, {"credits", g.credits, w.credits}} {
				if c.s != c.l {
					out = append(out, SnapshotMismatch{Month: m.String(), What: codes[id] + " " + c.what, Snapshot: c.s, Ledger: c.l})
				}
			}
		}
		f, err := liveIncome(ctx, q, m)
		if err != nil {
			return nil, fmt.Errorf("check snapshots: %w", err)
		}
		for _, c := range []struct {
			what string
			s, l int64
		}{
			{"sales", h.Sales, f.Sales}, {"sales_count", h.SalesCount, f.SalesCount},
			{"refunds", h.Refunds, f.Refunds}, {"refunds_count", h.RefundsCount, f.RefundsCount},
			{"commission", h.Commission, f.Commission}, {"psp_fees", h.PSPFees, f.PSPFees}, {"other", h.Other, f.Other},
		} {
			if c.s != c.l {
				out = append(out, SnapshotMismatch{Month: m.String(), What: "income " + c.what, Snapshot: c.s, Ledger: c.l})
			}
		}
	}
	if sum.err != nil {
		return nil, fmt.Errorf("check snapshots: %w", sum.err)
	}
	return out, nil
}

// Period is one competence month and its status.
type Period struct {
	Month string `json:"month"`
	// Status is "open" or "closed".
	Status   string     `json:"status"`
	ClosedAt *time.Time `json:"closed_at,omitempty"`
	ClosedBy string     `json:"closed_by,omitempty"`
	// Snapshot is true when the month's figures are stored.
	Snapshot bool `json:"snapshot"`
	// Activity is true when the month has posting sets.
	Activity bool `json:"activity"`
}

// Periods lists every month from the first that has posting sets or is
// closed to the current month (in cal's zone at now), gaps included
// (months close in order, so a month without activity still has to be
// closed), oldest first. Nothing before cal's go-live month is listed, so
// the list stays short whatever a ledger holds (a set dated 0001-01,
// written before the ledger refused such dates, would otherwise make it
// 24,000 years long); a ledger with nothing in that range lists nothing.
// The months with activity are found by a skip scan of
// ix_posting_sets_competence_month: one index probe per month, whatever the
// ledger's size.
func Periods(ctx context.Context, q sqlx.QueryerContext, cal postings.Calendar, now time.Time) ([]Period, error) {
	var rows []struct {
		Month    time.Time      `db:"month"`
		Closed   bool           `db:"closed"`
		ClosedAt sql.NullTime   `db:"closed_at"`
		ClosedBy sql.NullString `db:"closed_by"`
		Snapshot bool           `db:"snapshot"`
		Activity bool           `db:"activity"`
	}
	from, to := cal.GoLiveMonth().First(), cal.Month(now).First()
	err := sqlx.SelectContext(ctx, q, &rows, `
		WITH RECURSIVE active AS (
			(SELECT competence_month AS month FROM posting_sets WHERE competence_month >= $1
				ORDER BY competence_month LIMIT 1)
			UNION ALL
			SELECT (SELECT s.competence_month FROM posting_sets s WHERE s.competence_month > a.month
				ORDER BY s.competence_month LIMIT 1)
			FROM active a WHERE a.month <= $2
		), known AS (
			SELECT month FROM active WHERE month BETWEEN $1 AND $2
			UNION SELECT month FROM closed_periods WHERE month BETWEEN $1 AND $2
		), span AS (
			SELECT min(month) AS lo FROM known
		)
		SELECT g.month, c.month IS NOT NULL AS closed, c.closed_at, c.closed_by,
			s.month IS NOT NULL AS snapshot,
			EXISTS (SELECT 1 FROM active a WHERE a.month = g.month) AS activity
		FROM span, LATERAL (SELECT d::date AS month FROM generate_series(span.lo, $2::date, interval '1 month') d) g
		LEFT JOIN closed_periods c ON c.month = g.month
		LEFT JOIN month_snapshots s ON s.month = g.month
		ORDER BY g.month`, from, to)
	if err != nil {
		return nil, fmt.Errorf("periods: %w", err)
	}
	out := make([]Period, len(rows))
	for i, r := range rows {
		p := Period{Month: monthOf(r.Month).String(), Status: "open", Snapshot: r.Snapshot, Activity: r.Activity}
		if r.Closed {
			p.Status = "closed"
			t := r.ClosedAt.Time
			p.ClosedAt = &t
			p.ClosedBy = r.ClosedBy.String
		}
		out[i] = p
	}
	return out, nil
}
