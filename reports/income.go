package reports

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/postings"
)

// Income is a month's income statement: "how much did I sell in August".
// Amounts are centavos in the currency of income:revenue (postings on
// income and expense accounts of another currency are not in it), positive
// where the name says what they are. A refund counts in the month it was
// booked, never in its sale's month, so a past month's figures never move.
type Income struct {
	Month    string `json:"month"`
	Closed   bool   `json:"closed"`
	Snapshot bool   `json:"snapshot"`
	Currency string `json:"currency"`
	// Sales: credits to income:revenue (and its sub-accounts) by sale sets.
	Sales      int64 `json:"sales"`
	SalesCount int64 `json:"sales_count"`
	// Refunds: debits to income:revenue by refund sets.
	Refunds      int64 `json:"refunds"`
	RefundsCount int64 `json:"refunds_count"`
	// NetRevenue = Sales − Refunds.
	NetRevenue int64 `json:"net_revenue"`
	// Commission: net debits to expenses:commission, commissions booked
	// less the reversals of refunded ones.
	Commission int64 `json:"commission"`
	// PSPFees: net debits to expenses:psp-fees.
	PSPFees int64 `json:"psp_fees"`
	// Other: every other posting on an income or expense account
	// (adjustments, other accounts) as its effect on the result: credits
	// positive.
	Other int64 `json:"other"`
	// NetIncome = NetRevenue − Commission − PSPFees + Other: the credits
	// less the debits of every income and expense account in the month.
	NetIncome int64 `json:"net_income"`
}

// incomeFigures is what a snapshot stores; the rest is derived.
type incomeFigures struct {
	Currency     string `db:"currency"`
	Sales        int64  `db:"sales"`
	SalesCount   int64  `db:"sales_count"`
	Refunds      int64  `db:"refunds"`
	RefundsCount int64  `db:"refunds_count"`
	Commission   int64  `db:"commission"`
	PSPFees      int64  `db:"psp_fees"`
	Other        int64  `db:"other"`
}

func (f incomeFigures) income(m postings.Month, closed, snapshot bool) (Income, error) {
	var sum sums
	net := sum.sub(f.Sales, f.Refunds, "net revenue", "")
	// In 128 bits: a step may overflow where the result does not (large
	// fees and large other income), and only the result must fit.
	var r big.Int
	r.SetInt64(net)
	r.Sub(&r, big.NewInt(f.Commission))
	r.Sub(&r, big.NewInt(f.PSPFees))
	r.Add(&r, big.NewInt(f.Other))
	if !r.IsInt64() {
		sum.overflow("net income", "")
	}
	if sum.err != nil {
		return Income{}, fmt.Errorf("income statement %s: %w", m, sum.err)
	}
	income := r.Int64()
	return Income{
		Month: m.String(), Closed: closed, Snapshot: snapshot, Currency: f.Currency,
		Sales: f.Sales, SalesCount: f.SalesCount, Refunds: f.Refunds, RefundsCount: f.RefundsCount,
		NetRevenue: net, Commission: f.Commission, PSPFees: f.PSPFees, Other: f.Other,
		NetIncome: income,
	}, nil
}

// IncomeStatement returns month m's income statement, read from the
// month's snapshot when it has one.
func IncomeStatement(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (Income, error) {
	if err := m.Check(); err != nil {
		return Income{}, err
	}
	var inc Income
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		inc, err = incomeStatement(ctx, q, m)
		return err
	})
	return inc, err
}

func incomeStatement(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (Income, error) {
	st, err := readMonthState(ctx, q, m)
	if err != nil {
		return Income{}, err
	}
	var f incomeFigures
	if st.Snapshot {
		err = sqlx.GetContext(ctx, q, &f, `SELECT currency, sales, sales_count, refunds, refunds_count,
			commission, psp_fees, other FROM month_snapshots WHERE month = $1`, m.First())
		if err != nil {
			return Income{}, fmt.Errorf("income statement %s: read snapshot: %w", m, err)
		}
	} else if f, err = liveIncome(ctx, q, m); err != nil {
		return Income{}, err
	}
	return f.income(m, st.Closed, st.Snapshot)
}

// The buckets of the income statement, by account.
const (
	bucketRevenue    = "revenue"
	bucketCommission = "commission"
	bucketPSPFees    = "psp_fees"
	bucketOther      = "other"
)

func bucketOf(code string) string {
	under := func(root string) bool { return code == root || strings.HasPrefix(code, root+":") }
	switch {
	case under(accounts.Revenue):
		return bucketRevenue
	case under(accounts.CommissionExpense):
		return bucketCommission
	case under(accounts.PSPFees):
		return bucketPSPFees
	}
	return bucketOther
}

// liveIncomeSQL sums month $1's postings: on the revenue accounts ($2) by
// the kind of their set (and counts the sets), and on the other income and
// expense accounts ($3) by account. The account ids are literal arrays so
// the planner sees how many postings each one has, and the sets are
// restricted to the month (a posting is always in its set's month) so
// they are read from ix_posting_sets_competence_month, not scanned whole.
// The sums are exact numerics, checked against int64 in Go.
const liveIncomeSQL = `
SELECT s.kind, 0::bigint AS account_id, sum(p.amount) AS net, count(DISTINCT p.posting_set_id) AS sets
FROM postings p
JOIN posting_sets s ON s.id = p.posting_set_id AND s.competence_month = p.competence_month
WHERE p.account_id = ANY($2::bigint[]) AND p.competence_month = $1::date AND s.competence_month = $1::date
GROUP BY s.kind
UNION ALL
SELECT '', p.account_id, sum(p.amount), 0
FROM postings p
WHERE p.account_id = ANY($3::bigint[]) AND p.competence_month = $1::date
GROUP BY p.account_id`

// liveIncome computes month m's income statement from its postings.
func liveIncome(ctx context.Context, q sqlx.QueryerContext, m postings.Month) (incomeFigures, error) {
	var accts []accounts.Account
	err := sqlx.SelectContext(ctx, q, &accts, `SELECT a.id, a.code, a.type, a.normal_side, a.currency, a.parent_id
		FROM accounts a JOIN accounts r ON r.code = $1 AND r.currency = a.currency
		WHERE a.type IN ('income', 'expense')`, accounts.Revenue)
	if err != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: accounts: %w", m, err)
	}
	f := incomeFigures{Currency: accounts.DefaultCurrency}
	var revenue, others []int64
	bucket := map[int64]string{}
	codes := map[int64]string{}
	for _, a := range accts {
		codes[a.ID] = a.Code
		b := bucketOf(a.Code)
		if b == bucketRevenue {
			revenue = append(revenue, a.ID)
			if a.Code == accounts.Revenue {
				f.Currency = a.Currency
			}
			continue
		}
		bucket[a.ID] = b
		others = append(others, a.ID)
	}
	var rows []struct {
		Kind      string       `db:"kind"`
		AccountID int64        `db:"account_id"`
		Net       postings.Sum `db:"net"`
		Sets      int64        `db:"sets"`
	}
	err = sqlx.SelectContext(ctx, q, &rows, liveIncomeSQL, m.First(), pq.Array(revenue), pq.Array(others))
	if err != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, err)
	}
	var sum sums
	for _, row := range rows {
		// The sums are exact numerics: one that does not fit is named.
		if row.Net.Overflow {
			what := "net of the " + row.Kind + " sets on " + accounts.Revenue
			if row.Kind == "" {
				what = "net of " + codes[row.AccountID]
			}
			_, err := row.Net.Int64(what, "")
			return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, err)
		}
		net := row.Net.Value
		switch {
		case row.Kind == string(postings.KindSale):
			f.Sales, f.SalesCount = sum.sub(0, net, "sales", ""), row.Sets
		case row.Kind == string(postings.KindRefund):
			f.Refunds, f.RefundsCount = net, row.Sets
		case row.Kind != "": // revenue moved by another kind of set
			f.Other = sum.sub(f.Other, net, "other", "")
		case bucket[row.AccountID] == bucketCommission:
			f.Commission = sum.add(f.Commission, net, "commission", "")
		case bucket[row.AccountID] == bucketPSPFees:
			f.PSPFees = sum.add(f.PSPFees, net, "psp fees", "")
		default:
			f.Other = sum.sub(f.Other, net, "other", "")
		}
	}
	if sum.err != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, sum.err)
	}
	return f, nil
}
