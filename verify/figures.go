package verify

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reports"
)

// Mismatch is a stored figure (a month sum, a snapshot's) that differs
// from the ledger's.
type Mismatch = reports.SnapshotMismatch

// CheckMonthSums recomputes every stored month sum from the postings
// alone and returns the figures that differ from what the reports read
// (the stored sums plus their deltas); none is the expected outcome. It
// reads the whole ledger.
func CheckMonthSums(ctx context.Context, q sqlx.QueryerContext) ([]Mismatch, error) {
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
		codes, err := accountCodes(ctx, q)
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
	return postings.SumError(snapshot.Read(ctx, q, fn, `SET LOCAL jit = off`), "")
}

// accountCodes maps every account id to its code.
func accountCodes(ctx context.Context, q sqlx.QueryerContext) (map[int64]string, error) {
	var rows []struct {
		ID   int64  `db:"id"`
		Code string `db:"code"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT id, code FROM accounts`); err != nil {
		return nil, fmt.Errorf("account codes: %w", err)
	}
	codes := make(map[int64]string, len(rows))
	for _, r := range rows {
		codes[r.ID] = r.Code
	}
	return codes, nil
}
