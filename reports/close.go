package reports

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/postings"
)

// WriteSnapshot computes closing month m's figures (from the latest
// snapshot before it and the postings since) and stores them, inside the
// closing transaction tx of periods.CloseTx: the same code as the live
// reports, so a snapshot says what the month's reports said. The database
// refuses a snapshot of an open month, so this cannot close anything.
func WriteSnapshot(ctx context.Context, tx *sqlx.Tx, m postings.Month) error {
	if err := m.Check(); err != nil {
		return err
	}
	// As for every report (see read); for the rest of tx.
	if _, err := tx.ExecContext(ctx, `SET LOCAL jit = off`); err != nil {
		return fmt.Errorf("snapshot %s: %w", m, err)
	}
	return writeSnapshot(ctx, tx, m)
}

func writeSnapshot(ctx context.Context, q sqlx.ExtContext, m postings.Month) error {
	st, err := readMonthState(ctx, q, m)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", m, err)
	}
	// From the postings alone, not the month sums: a snapshot is sealed
	// for good, and the month sums are a cache the service role writes.
	own, err := liveOwnLines(ctx, q, m, st.Base, true)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", m, err)
	}
	own = keepShown(own)
	f, err := liveIncome(ctx, q, m, true)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", m, err)
	}
	// The values in incomeSnapshotColumns' order, the lines' count last.
	args := []any{m.First(), f.Currency, f.Sales, f.SalesCount, f.Refunds, f.RefundsCount, f.Other}
	for _, l := range incomeLines {
		args = append(args, f.Lines[l.Name])
	}
	args = append(args, len(own))
	params := make([]string, len(args))
	for i := range args {
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	res, err := q.ExecContext(ctx, `INSERT INTO month_snapshots (month, `+incomeSnapshotColumns()+`, lines)
		VALUES (`+strings.Join(params, ", ")+`) ON CONFLICT (month) DO NOTHING`, args...)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", m, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // n == 0: the month had its snapshot already
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
		return fmt.Errorf("snapshot %s: lines: %w", m, err)
	}
	return nil
}

// incomeSnapshotColumns lists month_snapshots' income columns: the
// figures of every month, then a column per income line, in incomeLines'
// order.
func incomeSnapshotColumns() string {
	cols := []string{"currency", "sales", "sales_count", "refunds", "refunds_count", "other"}
	for _, l := range incomeLines {
		cols = append(cols, pq.QuoteIdentifier(l.Name))
	}
	return strings.Join(cols, ", ")
}

// incomeScan returns where to scan the values of incomeSnapshotColumns
// into f, and the function that files the lines' in f.Lines once they are
// scanned. A line that is NULL (a month closed before the line had its
// column, its amounts in other as it showed them) is left out.
func incomeScan(f *incomeFigures) (dest []any, file func()) {
	lines := make([]sql.NullInt64, len(incomeLines))
	dest = []any{&f.Currency, &f.Sales, &f.SalesCount, &f.Refunds, &f.RefundsCount, &f.Other}
	for i := range lines {
		dest = append(dest, &lines[i])
	}
	return dest, func() {
		f.Lines = make(map[string]int64, len(incomeLines))
		for i, l := range incomeLines {
			if lines[i].Valid {
				f.Lines[l.Name] = lines[i].Int64
			}
		}
	}
}

// readIncomeSnapshot reads month m's income figures from its snapshot.
func readIncomeSnapshot(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (incomeFigures, error) {
	var f incomeFigures
	dest, file := incomeScan(&f)
	if err := q.QueryRowxContext(ctx, `SELECT `+incomeSnapshotColumns()+` FROM month_snapshots WHERE month = $1`, m.First()).Scan(dest...); err != nil {
		return incomeFigures{}, err
	}
	file()
	return f, nil
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
	type head struct {
		Month  time.Time
		Lines  int64
		Income incomeFigures
	}
	var heads []head
	rows, err := q.QueryContext(ctx, `SELECT month, lines, `+incomeSnapshotColumns()+` FROM month_snapshots ORDER BY month`)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h head
		dest, file := incomeScan(&h.Income)
		if err := rows.Scan(append([]any{&h.Month, &h.Lines}, dest...)...); err != nil {
			return nil, fmt.Errorf("check snapshots: %w", err)
		}
		file()
		heads = append(heads, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}
	codes, err := accountCodes(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}

	var out []SnapshotMismatch
	type figures struct{ opening, debits, credits int64 }
	balance := map[int64]int64{} // each account's closing so far, from the ledger
	var sum exact.Sums
	move := func(id, debits, credits int64) {
		balance[id] = sum.Add(balance[id], sum.Sub(debits, credits, "balance of", codes[id]), "balance of", codes[id])
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
		f, err := liveIncome(ctx, q, m, true) // from the postings alone, as said
		if err != nil {
			return nil, fmt.Errorf("check snapshots: %w", err)
		}
		for _, l := range incomeLines {
			if _, kept := h.Income.Lines[l.Name]; kept {
				continue
			}
			// Closed before the line had its column: its amounts are in
			// other, as sealed.
			if l.Credit {
				f.Other = sum.Add(f.Other, f.Lines[l.Name], "other", "")
			} else {
				f.Other = sum.Sub(f.Other, f.Lines[l.Name], "other", "")
			}
			f.Lines[l.Name] = 0
		}
		type figure struct {
			what string
			s, l int64
		}
		figures := []figure{{"sales", h.Income.Sales, f.Sales}, {"sales_count", h.Income.SalesCount, f.SalesCount},
			{"refunds", h.Income.Refunds, f.Refunds}, {"refunds_count", h.Income.RefundsCount, f.RefundsCount}}
		for _, l := range incomeLines {
			figures = append(figures, figure{l.Name, h.Income.Lines[l.Name], f.Lines[l.Name]})
		}
		for _, c := range append(figures, figure{"other", h.Income.Other, f.Other}) {
			if c.s != c.l {
				out = append(out, SnapshotMismatch{Month: m.String(), What: "income " + c.what, Snapshot: c.s, Ledger: c.l})
			}
		}
	}
	if sum.Err() != nil {
		return nil, fmt.Errorf("check snapshots: %w", sum.Err())
	}
	return out, nil
}
