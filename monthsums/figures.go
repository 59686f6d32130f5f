package monthsums

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Lines computes month m's trial balance lines (reports.Sums' Lines) from
// the snapshot of month base (the latest before m, NULL if none) and the
// month sums of the months since, m included: the cost grows with the
// sets since the month sums were refreshed, not with the ledger.
func (r Reader) Lines(ctx context.Context, q sqlx.QueryerContext, m periods.Month, base sql.NullTime) ([]periods.Line, error) {
	accts, err := periods.SnapshotOpenings(ctx, q, base)
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: accounts: %w", m, err)
	}
	months, err := MonthsBetween(ctx, q, base, m)
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, err)
	}
	flows, err := r.Flows(ctx, q, Query{Months: append(months, m)})
	if err != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, err)
	}
	type figures struct{ opening, debits, credits exact.Wide }
	byID := make(map[int64]*figures, len(accts))
	for i := range accts {
		f := &figures{}
		f.opening.Add(accts[i].Opening)
		byID[accts[i].AccountID] = f
	}
	for k, fl := range flows {
		f := byID[k.Account]
		if f == nil {
			return nil, fmt.Errorf("trial balance %s: postings on account %d, which does not exist", m, k.Account)
		}
		if k.Month == m {
			f.debits.AddWide(fl.Debits)
			f.credits.AddWide(fl.Credits)
		} else {
			f.opening.AddWide(fl.Net())
		}
	}
	var sum exact.Sums
	for i := range accts {
		f := byID[accts[i].AccountID]
		accts[i].Opening = sum.Fit(f.opening, "opening of", accts[i].Code)
		accts[i].Debits = sum.Fit(f.debits, "debits of", accts[i].Code)
		accts[i].Credits = sum.Fit(f.credits, "credits of", accts[i].Code)
	}
	if sum.Err() != nil {
		return nil, fmt.Errorf("trial balance %s: %w", m, sum.Err())
	}
	return keepShown(accts), nil
}

// keepShown returns, ordered by code, the lines a trial balance shows: an
// account with an opening balance or activity, and every existing ancestor
// of one in the same currency.
func keepShown(all []periods.Line) []periods.Line {
	slices.SortFunc(all, func(a, b periods.Line) int { return cmp.Compare(a.Code, b.Code) })
	index := make(map[string]int, len(all))
	for i, l := range all {
		index[l.Code] = i
	}
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.Opening == 0 && l.Debits == 0 && l.Credits == 0 {
			continue
		}
		keep[i] = true
		for p := accounts.Parent(l.Code); p != ""; p = accounts.Parent(p) {
			if j, ok := index[p]; ok && all[j].Currency == l.Currency {
				keep[j] = true
			}
		}
	}
	var out []periods.Line
	for i, l := range all {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

// Where lineOf files an account that no income line sums.
const (
	lineOther   = -1 // other
	lineRevenue = -2 // sales, refunds, and other by other kinds of set
)

// lineOf returns the index in periods.IncomeLines of the line that sums
// the account with code, else lineRevenue or lineOther.
func lineOf(code string) int {
	under := func(root string) bool { return code == root || strings.HasPrefix(code, root+":") }
	if under(accounts.Revenue) {
		return lineRevenue
	}
	for i, l := range periods.IncomeLines {
		if under(l.Account) {
			return i
		}
	}
	return lineOther
}

// Income computes month m's income statement figures (reports.Sums'
// Income) from its month sums: the revenue accounts' by kind of set, with
// the sets counted, and the other income and expense accounts' by account,
// each filed in its line of periods.IncomeLines or in other.
func (r Reader) Income(ctx context.Context, q sqlx.QueryerContext, m periods.Month) (periods.Income, error) {
	var accts []accounts.Account
	err := sqlx.SelectContext(ctx, q, &accts, `SELECT a.id, a.code, a.type, a.normal_side, a.currency, a.parent_id
		FROM accounts a JOIN accounts r ON r.code = $1 AND r.currency = a.currency
		WHERE a.type IN ('income', 'expense')`, accounts.Revenue)
	if err != nil {
		return periods.Income{}, fmt.Errorf("income statement %s: accounts: %w", m, err)
	}
	// Every line stated, 0 included: a snapshot written from these says
	// the month had none.
	f := periods.Income{Currency: accounts.DefaultCurrency, Lines: make(map[string]int64, len(periods.IncomeLines))}
	for _, l := range periods.IncomeLines {
		f.Lines[l.Name] = 0
	}
	revenue, ids := []int64{}, []int64{}
	line := map[int64]int{}
	codes := map[int64]string{}
	for _, a := range accts {
		codes[a.ID] = a.Code
		ids = append(ids, a.ID)
		i := lineOf(a.Code)
		line[a.ID] = i
		if i == lineRevenue {
			revenue = append(revenue, a.ID)
			if a.Code == accounts.Revenue {
				f.Currency = a.Currency
			}
		}
	}
	flows, err := r.Flows(ctx, q, Query{Months: []periods.Month{m}, Accounts: ids, Revenue: revenue})
	if err != nil {
		return periods.Income{}, fmt.Errorf("income statement %s: %w", m, err)
	}
	// Each figure in 128 bits, checked once whole.
	byKind := map[string]exact.Wide{}
	byAccount := map[int64]exact.Wide{}
	for k, fl := range flows {
		switch {
		case k.Account == RevenueAccount:
			n := byKind[k.Kind]
			n.AddWide(fl.Net())
			byKind[k.Kind] = n
			switch postings.Kind(k.Kind) {
			case postings.KindSale:
				f.SalesCount = fl.Sets
			case postings.KindRefund:
				f.RefundsCount = fl.Sets
			}
		case line[k.Account] == lineRevenue: // counted together, above
		default:
			n := byAccount[k.Account]
			n.AddWide(fl.Net())
			byAccount[k.Account] = n
		}
	}
	var sum exact.Sums
	for kind, n := range byKind {
		net := sum.Fit(n, "net of the "+kind+" sets on", accounts.Revenue)
		switch postings.Kind(kind) {
		case postings.KindSale:
			f.Sales = sum.Sub(0, net, "sales", "")
		case postings.KindRefund:
			f.Refunds = net
		default: // revenue moved by another kind of set
			f.Other = sum.Sub(f.Other, net, "other", "")
		}
	}
	for id, n := range byAccount {
		net := sum.Fit(n, "net of", codes[id])
		if i := line[id]; i >= 0 {
			l := periods.IncomeLines[i]
			if l.Credit {
				f.Lines[l.Name] = sum.Sub(f.Lines[l.Name], net, l.Label(), "")
			} else {
				f.Lines[l.Name] = sum.Add(f.Lines[l.Name], net, l.Label(), "")
			}
			continue
		}
		f.Other = sum.Sub(f.Other, net, "other", "")
	}
	if sum.Err() != nil {
		return periods.Income{}, fmt.Errorf("income statement %s: %w", m, sum.Err())
	}
	return f, nil
}

// postingsTotalsSQL sums every account's own postings in the months after
// $1 (after the last snapshot) and in the months $2 (earlier months
// without one), as exact numerics.
const postingsTotalsSQL = `
SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency,
	coalesce(r.debits, 0) + coalesce(g.debits, 0) AS debits,
	coalesce(r.credits, 0) + coalesce(g.credits, 0) AS credits
FROM accounts a
CROSS JOIN LATERAL (
	SELECT sum(p.amount) FILTER (WHERE p.amount > 0) AS debits, -sum(p.amount) FILTER (WHERE p.amount < 0) AS credits
	FROM postings p WHERE p.account_id = a.id AND p.competence_month > coalesce($1::date, '-infinity')
) r
CROSS JOIN LATERAL (
	SELECT sum(p.amount) FILTER (WHERE p.amount > 0) AS debits, -sum(p.amount) FILTER (WHERE p.amount < 0) AS credits
	FROM postings p WHERE p.account_id = a.id AND p.competence_month = ANY($2::date[])
) g`
