package reports

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
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
	// Interest and Fines: net credits to income:interest and income:fines,
	// the juros and multa of Pix paid late on a charge with a due date.
	Interest int64 `json:"interest"`
	Fines    int64 `json:"fines"`
	// Rebates and Discounts: net debits to expenses:rebates and
	// expenses:discounts, the abatimento and desconto such a Pix took.
	Rebates   int64 `json:"rebates"`
	Discounts int64 `json:"discounts"`
	// MEDReturns: net debits to expenses:med-returns, what returns made
	// under the MED (a Pix devolução of natureza MED_*) took back. They are
	// not the merchant's own refunds, so not in Refunds.
	MEDReturns int64 `json:"med_returns"`
	// Other: every other posting on an income or expense account
	// (adjustments, other accounts) as its effect on the result: credits
	// positive.
	Other int64 `json:"other"`
	// NetIncome = NetRevenue − Commission − PSPFees + Interest + Fines −
	// Rebates − Discounts − MEDReturns + Other: the credits
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
	Interest     int64  `db:"interest"`
	Fines        int64  `db:"fines"`
	Rebates      int64  `db:"rebates"`
	Discounts    int64  `db:"discounts"`
	MEDReturns   int64  `db:"med_returns"`
	Other        int64  `db:"other"`
}

// incomeSnapshotColumns are month_snapshots' income figures, in incomeFigures'
// order (after currency), as a snapshot is written.
const incomeSnapshotColumns = `currency, sales, sales_count, refunds, refunds_count, commission, psp_fees,
	interest, fines, rebates, discounts, med_returns, other`

// incomeSnapshotRead reads them back. A month closed before sql/0042 has
// no med_returns (NULL): its MED returns are in other, as it showed them,
// and its line reads 0.
const incomeSnapshotRead = `currency, sales, sales_count, refunds, refunds_count, commission, psp_fees,
	interest, fines, rebates, discounts, coalesce(med_returns, 0) AS med_returns, other`

func (f incomeFigures) income(m postings.Month, closed, snapshot bool) (Income, error) {
	var sum exact.Sums
	net := sum.Sub(f.Sales, f.Refunds, "net revenue", "")
	// In 128 bits: a step may overflow where the result does not (large
	// fees and large other income), and only the result must fit.
	var r big.Int
	r.SetInt64(net)
	r.Sub(&r, big.NewInt(f.Commission))
	r.Sub(&r, big.NewInt(f.PSPFees))
	r.Add(&r, big.NewInt(f.Interest))
	r.Add(&r, big.NewInt(f.Fines))
	r.Sub(&r, big.NewInt(f.Rebates))
	r.Sub(&r, big.NewInt(f.Discounts))
	r.Sub(&r, big.NewInt(f.MEDReturns))
	r.Add(&r, big.NewInt(f.Other))
	if !r.IsInt64() {
		sum.Overflow("net income", "")
	}
	if sum.Err() != nil {
		return Income{}, fmt.Errorf("income statement %s: %w", m, sum.Err())
	}
	income := r.Int64()
	return Income{
		Month: m.String(), Closed: closed, Snapshot: snapshot, Currency: f.Currency,
		Sales: f.Sales, SalesCount: f.SalesCount, Refunds: f.Refunds, RefundsCount: f.RefundsCount,
		NetRevenue: net, Commission: f.Commission, PSPFees: f.PSPFees,
		Interest: f.Interest, Fines: f.Fines, Rebates: f.Rebates, Discounts: f.Discounts,
		MEDReturns: f.MEDReturns, Other: f.Other,
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
		err = sqlx.GetContext(ctx, q, &f, `SELECT `+incomeSnapshotRead+` FROM month_snapshots WHERE month = $1`, m.First())
		if err != nil {
			return Income{}, fmt.Errorf("income statement %s: read snapshot: %w", m, err)
		}
	} else if f, err = liveIncome(ctx, q, m, false); err != nil {
		return Income{}, err
	}
	return f.income(m, st.Closed, st.Snapshot)
}

// The buckets of the income statement, by account.
const (
	bucketRevenue    = "revenue"
	bucketCommission = "commission"
	bucketPSPFees    = "psp_fees"
	bucketInterest   = "interest"
	bucketFines      = "fines"
	bucketRebates    = "rebates"
	bucketDiscounts  = "discounts"
	bucketMEDReturns = "med_returns"
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
	case under(accounts.Interest):
		return bucketInterest
	case under(accounts.Fines):
		return bucketFines
	case under(accounts.Rebates):
		return bucketRebates
	case under(accounts.Discounts):
		return bucketDiscounts
	case under(accounts.MEDReturns):
		return bucketMEDReturns
	}
	return bucketOther
}

// liveIncome computes month m's income statement from its month sums
// (sumMonths): the revenue accounts' by kind of set, with the sets
// counted, and the other income and expense accounts' by account.
// fromPostings ignores stored sums, for verify.
func liveIncome(ctx context.Context, q sqlx.QueryerContext, m postings.Month, fromPostings bool) (incomeFigures, error) {
	var accts []accounts.Account
	err := sqlx.SelectContext(ctx, q, &accts, `SELECT a.id, a.code, a.type, a.normal_side, a.currency, a.parent_id
		FROM accounts a JOIN accounts r ON r.code = $1 AND r.currency = a.currency
		WHERE a.type IN ('income', 'expense')`, accounts.Revenue)
	if err != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: accounts: %w", m, err)
	}
	f := incomeFigures{Currency: accounts.DefaultCurrency}
	revenue, ids := []int64{}, []int64{}
	bucket := map[int64]string{}
	codes := map[int64]string{}
	for _, a := range accts {
		codes[a.ID] = a.Code
		ids = append(ids, a.ID)
		b := bucketOf(a.Code)
		bucket[a.ID] = b
		if b == bucketRevenue {
			revenue = append(revenue, a.ID)
			if a.Code == accounts.Revenue {
				f.Currency = a.Currency
			}
		}
	}
	flows, err := sumMonths(ctx, q, sumQuery{Months: []postings.Month{m}, Accounts: ids, Revenue: revenue, FromPostings: fromPostings})
	if err != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, err)
	}
	// Each figure in 128 bits, checked once whole.
	byKind := map[string]exact.Wide{}
	byAccount := map[int64]exact.Wide{}
	for k, fl := range flows {
		switch {
		case k.Account == revenueAccount:
			n := byKind[k.Kind]
			n.AddWide(fl.net())
			byKind[k.Kind] = n
			switch postings.Kind(k.Kind) {
			case postings.KindSale:
				f.SalesCount = fl.sets
			case postings.KindRefund:
				f.RefundsCount = fl.sets
			}
		case bucket[k.Account] == bucketRevenue: // counted together, above
		default:
			n := byAccount[k.Account]
			n.AddWide(fl.net())
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
		switch bucket[id] {
		case bucketCommission:
			f.Commission = sum.Add(f.Commission, net, "commission", "")
		case bucketPSPFees:
			f.PSPFees = sum.Add(f.PSPFees, net, "psp fees", "")
		case bucketInterest:
			f.Interest = sum.Sub(f.Interest, net, "interest", "")
		case bucketFines:
			f.Fines = sum.Sub(f.Fines, net, "fines", "")
		case bucketRebates:
			f.Rebates = sum.Add(f.Rebates, net, "rebates", "")
		case bucketDiscounts:
			f.Discounts = sum.Add(f.Discounts, net, "discounts", "")
		case bucketMEDReturns:
			f.MEDReturns = sum.Add(f.MEDReturns, net, "med returns", "")
		default:
			f.Other = sum.Sub(f.Other, net, "other", "")
		}
	}
	if sum.Err() != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, sum.Err())
	}
	return f, nil
}
