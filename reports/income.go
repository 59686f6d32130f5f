package reports

import (
	"context"
	"fmt"
	"math/big"
	"reflect"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/periods"
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

// incomeField is the index in Income of each income line's field, the one
// whose JSON name is the line's: filled from periods.IncomeLines, so that
// a new line is a field and an entry, no code.
var incomeField = func() map[string]int {
	t := reflect.TypeFor[Income]()
	byJSON := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		byJSON[name] = i
	}
	out := map[string]int{}
	for _, l := range periods.IncomeLines {
		i, ok := byJSON[l.Name]
		if !ok || t.Field(i).Type.Kind() != reflect.Int64 {
			panic("reports: income line " + l.Name + " has no int64 field in Income")
		}
		out[l.Name] = i
	}
	return out
}()

// income derives month m's income statement from its figures.
func income(m periods.Month, st State, f periods.Income) (Income, error) {
	var sum exact.Sums
	net := sum.Sub(f.Sales, f.Refunds, "net revenue", "")
	// In 128 bits: a step may overflow where the result does not (large
	// fees and large other income), and only the result must fit.
	var r big.Int
	r.SetInt64(net)
	for _, l := range periods.IncomeLines {
		if l.Credit {
			r.Add(&r, big.NewInt(f.Lines[l.Name]))
		} else {
			r.Sub(&r, big.NewInt(f.Lines[l.Name]))
		}
	}
	r.Add(&r, big.NewInt(f.Other))
	if !r.IsInt64() {
		sum.Overflow("net income", "")
	}
	if sum.Err() != nil {
		return Income{}, fmt.Errorf("income statement %s: %w", m, sum.Err())
	}
	inc := Income{
		Month: m.String(), Closed: st.Closed, Snapshot: st.Snapshot, Currency: f.Currency,
		Sales: f.Sales, SalesCount: f.SalesCount, Refunds: f.Refunds, RefundsCount: f.RefundsCount,
		NetRevenue: net, Other: f.Other, NetIncome: r.Int64(),
	}
	fields := reflect.ValueOf(&inc).Elem()
	for _, l := range periods.IncomeLines {
		fields.Field(incomeField[l.Name]).SetInt(f.Lines[l.Name])
	}
	return inc, nil
}

// IncomeStatement returns month m's income statement, from s's figures.
func IncomeStatement(ctx context.Context, q sqlx.QueryerContext, s Sums, m periods.Month) (Income, error) {
	if err := m.Check(); err != nil {
		return Income{}, err
	}
	var inc Income
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		inc, err = incomeStatement(ctx, q, s, m)
		return err
	})
	return inc, err
}

func incomeStatement(ctx context.Context, q sqlx.QueryerContext, s Sums, m periods.Month) (Income, error) {
	f, err := s.Income(ctx, q, m)
	if err != nil {
		return Income{}, err
	}
	return income(m, f.State, f.Figures)
}
