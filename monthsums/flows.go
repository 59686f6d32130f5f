package monthsums

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/exact"
)

// KindFlow is an account's debits and credits by sets of one kind, in
// centavos, both positive.
type KindFlow struct {
	Debits, Credits int64
}

// AccountFlows returns, for each account of ids, its debits and credits
// over the whole ledger by kind of set (the month sums of every month).
// Accounts without postings are absent. A decision that moves money (a
// payout) reads them from Postings: it must not rest on a cache that the
// service role writes.
func (r Reader) AccountFlows(ctx context.Context, q sqlx.QueryerContext, ids []int64) (map[int64]map[string]KindFlow, error) {
	out := map[int64]map[string]KindFlow{}
	if len(ids) == 0 {
		return out, nil
	}
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		flows, err := r.Flows(ctx, q, Query{Accounts: ids})
		if err != nil {
			return err
		}
		total := map[int64]map[string]*Flow{}
		for k, f := range flows {
			byKind := total[k.Account]
			if byKind == nil {
				byKind = map[string]*Flow{}
				total[k.Account] = byKind
			}
			t := byKind[k.Kind]
			if t == nil {
				t = &Flow{}
				byKind[k.Kind] = t
			}
			t.Debits.AddWide(f.Debits)
			t.Credits.AddWide(f.Credits)
		}
		var sum exact.Sums
		for id, byKind := range total {
			out[id] = map[string]KindFlow{}
			for kind, f := range byKind {
				of := fmt.Sprintf("account %d by %s sets", id, kind)
				out[id][kind] = KindFlow{Debits: sum.Fit(f.Debits, "debits of", of), Credits: sum.Fit(f.Credits, "credits of", of)}
			}
		}
		return sum.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("account flows: %w", err)
	}
	return out, nil
}
