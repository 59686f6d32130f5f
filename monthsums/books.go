package monthsums

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// Books is the source of the reports' figures (reports.Sums) as razao
// serves them: a month that has its snapshot (kept by periods when it
// closed) is read from it; any other month, a closed one without a
// snapshot included, from the latest snapshot before it on and the month
// sums since (Cached).
type Books struct{}

var (
	_ reports.Sums    = Books{}
	_ periods.Figures = Closing
)

// Lines returns month m's trial balance lines.
func (Books) Lines(ctx context.Context, q sqlx.QueryerContext, m periods.Month) (reports.MonthLines, error) {
	st, err := periods.SnapshotState(ctx, q, m)
	if err != nil {
		return reports.MonthLines{}, err
	}
	out := reports.MonthLines{State: reports.State{Closed: st.Closed, Snapshot: st.Snapshot}}
	if st.Snapshot {
		if out.Lines, err = periods.SnapshotLines(ctx, q, m); err != nil {
			return reports.MonthLines{}, fmt.Errorf("trial balance %s: read snapshot: %w", m, err)
		}
		return out, nil
	}
	if out.Lines, err = Cached.Lines(ctx, q, m, st.Base); err != nil {
		return reports.MonthLines{}, err
	}
	return out, nil
}

// Income returns month m's income statement figures.
func (Books) Income(ctx context.Context, q sqlx.QueryerContext, m periods.Month) (reports.MonthIncome, error) {
	st, err := periods.SnapshotState(ctx, q, m)
	if err != nil {
		return reports.MonthIncome{}, err
	}
	out := reports.MonthIncome{State: reports.State{Closed: st.Closed, Snapshot: st.Snapshot}}
	if st.Snapshot {
		if out.Figures, err = periods.SnapshotIncome(ctx, q, m); err != nil {
			return reports.MonthIncome{}, fmt.Errorf("income statement %s: read snapshot: %w", m, err)
		}
		return out, nil
	}
	if out.Figures, err = Cached.Income(ctx, q, m); err != nil {
		return reports.MonthIncome{}, err
	}
	return out, nil
}

// Moves returns the accounts ids' moves from from to to: the months with
// a snapshot from it, the others and the months between the latest
// snapshot before from and from (which make the opening) from their
// month sums, so a long series costs the open months only.
func (Books) Moves(ctx context.Context, q sqlx.QueryerContext, name string, ids []int64, from, to periods.Month) (reports.Moves, error) {
	rs, err := periods.SnapshotRange(ctx, q, from, to)
	if err != nil {
		return reports.Moves{}, fmt.Errorf("series %s: read periods: %w", name, err)
	}
	var snapped, live []periods.Month
	for m := from; !to.Before(m); m = m.Next() {
		if rs.Snapshot[m.String()] {
			snapped = append(snapped, m)
		} else {
			live = append(live, m)
		}
	}
	kept, err := periods.SnapshotSums(ctx, q, ids, rs.Base, snapped)
	if err != nil {
		return reports.Moves{}, fmt.Errorf("series %s: %w", name, err)
	}
	before, err := MonthsBetween(ctx, q, rs.Base, from)
	if err != nil {
		return reports.Moves{}, fmt.Errorf("series %s: %w", name, err)
	}
	flows, err := Cached.Flows(ctx, q, Query{Months: append(before, live...), Accounts: ids})
	if err != nil {
		return reports.Moves{}, fmt.Errorf("series %s: %w", name, err)
	}
	var openingSum exact.Wide
	type dc struct{ debits, credits exact.Wide }
	liveMoves := map[periods.Month]*dc{}
	for k, f := range flows {
		if k.Month.Before(from) {
			openingSum.AddWide(f.Net())
			continue
		}
		mv := liveMoves[k.Month]
		if mv == nil {
			mv = &dc{}
			liveMoves[k.Month] = mv
		}
		mv.debits.AddWide(f.Debits)
		mv.credits.AddWide(f.Credits)
	}
	moves := map[periods.Month][2]int64{}
	var fits exact.Sums
	for m, mv := range liveMoves {
		moves[m] = [2]int64{fits.Fit(mv.debits, "debits of", name), fits.Fit(mv.credits, "credits of", name)}
	}
	if fits.Err() != nil {
		return reports.Moves{}, fmt.Errorf("series %s: %w", name, fits.Err())
	}
	base, err := kept.Closing.Int64("opening balance of", name)
	if err != nil {
		return reports.Moves{}, fmt.Errorf("series %s from %s: %w", name, from, err)
	}
	openingSum.Add(base)
	opening := fits.Fit(openingSum, "opening balance of", name)
	if fits.Err() != nil {
		return reports.Moves{}, fmt.Errorf("series %s from %s: %w", name, from, fits.Err())
	}
	for _, sm := range kept.Months {
		debits, err := sm.Debits.Int64("debits of", name)
		if err != nil {
			return reports.Moves{}, fmt.Errorf("series %s in %s: %w", name, sm.Month, err)
		}
		credits, err := sm.Credits.Int64("credits of", name)
		if err != nil {
			return reports.Moves{}, fmt.Errorf("series %s in %s: %w", name, sm.Month, err)
		}
		moves[sm.Month] = [2]int64{debits, credits}
	}
	out := reports.Moves{Opening: opening}
	for m := from; !to.Before(m); m = m.Next() {
		mv := moves[m]
		out.Months = append(out.Months, reports.Move{Closed: rs.Closed[m.String()], Debits: mv[0], Credits: mv[1]})
	}
	return out, nil
}

// Totals returns every account's own debits and credits over the whole
// ledger: the months with a snapshot from it, the others (after the last
// snapshot, and earlier ones closed before snapshots existed) from their
// postings, so the cost grows with the postings of the open months, not
// with the ledger.
func (Books) Totals(ctx context.Context, q sqlx.QueryerContext) ([]periods.Line, error) {
	kept, err := periods.SnapshotTotals(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("balances: read snapshots: %w", err)
	}
	var rows []struct {
		AccountID  int64     `db:"account_id"`
		Code       string    `db:"code"`
		Type       string    `db:"type"`
		NormalSide string    `db:"normal_side"`
		Currency   string    `db:"currency"`
		Debits     exact.Sum `db:"debits"`
		Credits    exact.Sum `db:"credits"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, postingsTotalsSQL, kept.Last, pq.StringArray(kept.Gaps)); err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	out := make([]periods.Line, len(rows))
	for i, r := range rows {
		s := kept.Accounts[r.AccountID]
		l := periods.Line{AccountID: r.AccountID, Code: r.Code, Type: r.Type, NormalSide: r.NormalSide, Currency: r.Currency}
		if l.Debits, err = total(s.Debits, r.Debits, "debits of", r.Code); err != nil {
			return nil, fmt.Errorf("balances: %w", err)
		}
		if l.Credits, err = total(s.Credits, r.Credits, "credits of", r.Code); err != nil {
			return nil, fmt.Errorf("balances: %w", err)
		}
		out[i] = l
	}
	return out, nil
}

// total adds two exact sums of positive amounts (debits, or credits),
// ErrSumOverflow naming the figure when it does not fit int64: as one
// sum, since neither part fits when their total does not.
func total(a, b exact.Sum, what, of string) (int64, error) {
	x, err := a.Int64(what, of)
	if err != nil {
		return 0, err
	}
	y, err := b.Int64(what, of)
	if err != nil {
		return 0, err
	}
	var sum exact.Sums
	v := sum.Add(x, y, what, of)
	return v, sum.Err()
}

// Closing computes the snapshot of month m (periods.Figures) in tx, the
// transaction that closes it: the figures its reports show (Lines and
// Income, from the latest snapshot before it on), read from the postings
// alone, not the month sums: a snapshot is sealed for good, and the month
// sums are a cache the service role writes.
func Closing(ctx context.Context, tx *sqlx.Tx, m periods.Month) (periods.Snapshot, error) {
	if err := m.Check(); err != nil {
		return periods.Snapshot{}, err
	}
	// As for every report (see read); for the rest of tx.
	if _, err := tx.ExecContext(ctx, `SET LOCAL jit = off`); err != nil {
		return periods.Snapshot{}, fmt.Errorf("snapshot %s: %w", m, err)
	}
	st, err := periods.SnapshotState(ctx, tx, m)
	if err != nil {
		return periods.Snapshot{}, fmt.Errorf("snapshot %s: %w", m, err)
	}
	lines, err := Postings.Lines(ctx, tx, m, st.Base)
	if err != nil {
		return periods.Snapshot{}, fmt.Errorf("snapshot %s: %w", m, err)
	}
	income, err := Postings.Income(ctx, tx, m)
	if err != nil {
		return periods.Snapshot{}, fmt.Errorf("snapshot %s: %w", m, err)
	}
	return periods.Snapshot{Lines: lines, Income: income}, nil
}
