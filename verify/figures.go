package verify

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
)

// Mismatch is a stored figure (a snapshot's, a month sum) that differs
// from the ledger's.
type Mismatch struct {
	Month string `json:"month"`
	// What names the figure: "<account> opening|debits|credits",
	// "income <figure>", "lines" or "month sums of <account> by <kind>
	// sets: debits|credits|sets".
	What string `json:"what"`
	// Snapshot is the stored figure.
	Snapshot int64 `json:"snapshot"`
	Ledger   int64 `json:"ledger"`
}

// CheckSnapshots recomputes every snapshot from the postings alone (one
// pass over the postings of snapshotted months, never trusting another
// snapshot) and returns the figures that differ; none is the expected
// outcome. It reads the whole ledger up to the last snapshot.
func CheckSnapshots(ctx context.Context, q sqlx.QueryerContext) ([]Mismatch, error) {
	var out []Mismatch
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		out, err = checkSnapshots(ctx, q, window{full: true})
		return err
	})
	return out, err
}

// checkSnapshots is CheckSnapshots comparing the snapshots of the months
// in w: the balances are carried from the first month, but an
// incremental run compares only the months from w.from on (the months
// closed since the run it continues). The snapshots before are held to
// their seals with their months' sets (seals.go), and comparing each
// month's income statement costs a query over its postings.
func checkSnapshots(ctx context.Context, q sqlx.QueryerContext, w window) ([]Mismatch, error) {
	heads, err := periods.SealedSnapshots(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}
	if len(heads) == 0 {
		return nil, nil
	}
	var ledger []struct {
		AccountID int64     `db:"account_id"`
		Month     time.Time `db:"month"`
		Debits    int64     `db:"debits"`
		Credits   int64     `db:"credits"`
	}
	err = sqlx.SelectContext(ctx, q, &ledger, `
		SELECT account_id, competence_month AS month,
			coalesce(sum(amount) FILTER (WHERE amount > 0), 0)::bigint AS debits,
			coalesce(-sum(amount) FILTER (WHERE amount < 0), 0)::bigint AS credits
		FROM postings WHERE competence_month <= $1
		GROUP BY 1, 2 ORDER BY 2, 1`, heads[len(heads)-1].Month.First())
	if err != nil {
		return nil, fmt.Errorf("check snapshots: ledger: %w", err)
	}
	snap, err := periods.SealedLines(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: lines: %w", err)
	}
	codes, err := accounts.Codes(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check snapshots: %w", err)
	}

	var out []Mismatch
	type figures struct{ opening, debits, credits int64 }
	balance := map[int64]int64{} // each account's closing so far, from the ledger
	var sum exact.Sums
	move := func(id, debits, credits int64) {
		balance[id] = sum.Add(balance[id], sum.Sub(debits, credits, "balance of", codes[id]), "balance of", codes[id])
	}
	li, si := 0, 0
	for _, h := range heads {
		m := h.Month
		want := map[int64]figures{}
		// Carry every earlier month (snapshotted or not) into the balances.
		for ; li < len(ledger) && periods.MonthOf(ledger[li].Month.UTC()).Before(m); li++ {
			move(ledger[li].AccountID, ledger[li].Debits, ledger[li].Credits)
		}
		for id, b := range balance {
			if b != 0 {
				want[id] = figures{opening: b}
			}
		}
		for ; li < len(ledger) && periods.MonthOf(ledger[li].Month.UTC()) == m; li++ {
			s := ledger[li]
			f := want[s.AccountID]
			f.debits, f.credits = s.Debits, s.Credits
			want[s.AccountID] = f
			move(s.AccountID, s.Debits, s.Credits)
		}
		got := map[int64]figures{}
		var n int64
		for ; si < len(snap) && snap[si].Month == m; si++ {
			got[snap[si].AccountID] = figures{snap[si].Opening, snap[si].Debits, snap[si].Credits}
			n++
		}
		if !w.full && m.Before(w.from) {
			continue
		}
		if n != h.Lines {
			out = append(out, Mismatch{Month: m.String(), What: "lines", Snapshot: h.Lines, Ledger: n})
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
					out = append(out, Mismatch{Month: m.String(), What: codes[id] + " " + c.what, Snapshot: c.s, Ledger: c.l})
				}
			}
		}
		f, err := monthsums.Postings.Income(ctx, q, m) // from the postings alone, as said
		if err != nil {
			return nil, fmt.Errorf("check snapshots: %w", err)
		}
		for _, l := range periods.IncomeLines {
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
		kept := h.Income
		figures := []figure{{"sales", kept.Sales, f.Sales}, {"sales_count", kept.SalesCount, f.SalesCount},
			{"refunds", kept.Refunds, f.Refunds}, {"refunds_count", kept.RefundsCount, f.RefundsCount}}
		for _, l := range periods.IncomeLines {
			figures = append(figures, figure{l.Name, kept.Lines[l.Name], f.Lines[l.Name]})
		}
		for _, c := range append(figures, figure{"other", kept.Other, f.Other}) {
			if c.s != c.l {
				out = append(out, Mismatch{Month: m.String(), What: "income " + c.what, Snapshot: c.s, Ledger: c.l})
			}
		}
	}
	if sum.Err() != nil {
		return nil, fmt.Errorf("check snapshots: %w", sum.Err())
	}
	return out, nil
}

// CheckMonthSums recomputes every stored month sum from the postings
// alone and returns the figures that differ from what the reports read
// (the stored sums plus their deltas); none is the expected outcome. It
// reads the whole ledger.
func CheckMonthSums(ctx context.Context, q sqlx.QueryerContext) ([]Mismatch, error) {
	return checkMonthSums(ctx, q, window{full: true})
}

// checkMonthSums is CheckMonthSums for the stored months in w: an
// incremental run's are the months its window holds (a closed month's
// reports read its snapshot, not its sums).
func checkMonthSums(ctx context.Context, q sqlx.QueryerContext, w window) ([]Mismatch, error) {
	var out []Mismatch
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		revenue, err := monthsums.RevenueAccounts(ctx, q)
		if err != nil {
			return err
		}
		months, err := monthsums.Stored(ctx, q)
		if err != nil {
			return err
		}
		if !w.full {
			months = slices.DeleteFunc(months, func(m periods.Month) bool { return m.Before(w.from) })
		}
		if len(months) == 0 {
			return nil
		}
		sq := monthsums.Query{Months: months, Revenue: revenue}
		read, err := monthsums.Cached.Flows(ctx, q, sq)
		if err != nil {
			return err
		}
		ledger, err := monthsums.Postings.Flows(ctx, q, sq)
		if err != nil {
			return err
		}
		codes, err := accounts.Codes(ctx, q)
		if err != nil {
			return err
		}
		keys := make([]monthsums.Key, 0, len(ledger))
		for k := range ledger {
			keys = append(keys, k)
		}
		for k := range read {
			if _, ok := ledger[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b monthsums.Key) int {
			return cmp.Or(cmp.Compare(a.Month.String(), b.Month.String()), cmp.Compare(a.Account, b.Account), cmp.Compare(a.Kind, b.Kind))
		})
		var sum exact.Sums
		for _, k := range keys {
			r, l := read[k], ledger[k]
			if r == nil {
				r = &monthsums.Flow{}
			}
			if l == nil {
				l = &monthsums.Flow{}
			}
			name := codes[k.Account]
			if k.Account == monthsums.RevenueAccount {
				name = "the revenue accounts"
			}
			for _, c := range []struct {
				what string
				r, l int64
			}{
				{"debits", sum.Fit(r.Debits, "debits of", name), sum.Fit(l.Debits, "debits of", name)},
				{"credits", sum.Fit(r.Credits, "credits of", name), sum.Fit(l.Credits, "credits of", name)},
				{"sets", r.Sets, l.Sets},
			} {
				if c.r != c.l {
					out = append(out, Mismatch{Month: k.Month.String(), What: fmt.Sprintf("month sums of %s by %s sets: %s", name, k.Kind, c.what),
						Snapshot: c.r, Ledger: c.l})
				}
			}
		}
		return sum.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("check month sums: %w", err)
	}
	return out, nil
}

// read runs fn in one read-only snapshot of its own when q can begin
// transactions (a check called on its own), else directly on q (Run's
// transaction), with JIT off as the reports read; a sum refused by the
// database (22003) is named an overflow.
func read(ctx context.Context, q sqlx.QueryerContext, fn func(q sqlx.QueryerContext) error) error {
	return exact.SumError(snapshot.Read(ctx, q, fn, `SET LOCAL jit = off`), "")
}
