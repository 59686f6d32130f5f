package reports

import (
	"context"
	"fmt"
	"math/big"
	"reflect"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/monthsums"
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

// incomeLine is a line of the income statement that sums accounts: the
// month's net of one account and its sub-accounts (those in the revenue
// account's currency). It is kept in the column of month_snapshots named
// as the line, is the field of Income whose JSON name it is and the CSV
// line of that name, and counts in the net income with its sign.
type incomeLine struct {
	Name    string
	Account string
	// Credit: the line is the account's credits less its debits (an
	// income, adding to the result); else its debits less its credits (an
	// expense, taking from it).
	Credit bool
}

// incomeLines are the income statement's lines of accounts, in the order
// it shows them: the one list that the month's figures (liveIncome), the
// snapshot (its columns, written and read) and CheckSnapshots derive
// from. A new line is an entry here, its account, its field in Income
// (its JSON name the line's), and a migration adding its column to
// month_snapshots, NULL in the months closed before: their amounts stay
// in Other, as sealed.
var incomeLines = []incomeLine{
	{Name: "commission", Account: accounts.CommissionExpense},
	{Name: "psp_fees", Account: accounts.PSPFees},
	{Name: "interest", Account: accounts.Interest, Credit: true},
	{Name: "fines", Account: accounts.Fines, Credit: true},
	{Name: "rebates", Account: accounts.Rebates},
	{Name: "discounts", Account: accounts.Discounts},
	{Name: "med_returns", Account: accounts.MEDReturns},
}

// label names the line in an overflow ("psp fees").
func (l incomeLine) label() string { return strings.ReplaceAll(l.Name, "_", " ") }

// incomeFigures is what a snapshot stores; the rest is derived.
type incomeFigures struct {
	Currency     string
	Sales        int64
	SalesCount   int64
	Refunds      int64
	RefundsCount int64
	// Lines holds each of incomeLines by name; a snapshot taken before a
	// line had its column has none for it (its amounts are in Other), and
	// the line reads 0.
	Lines map[string]int64
	Other int64
}

// incomeField is the index in Income of each income line's field, the one
// whose JSON name is the line's: filled from the list, so that a new line
// is a field and an entry, no code.
var incomeField = func() map[string]int {
	t := reflect.TypeFor[Income]()
	byJSON := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		byJSON[name] = i
	}
	out := map[string]int{}
	for _, l := range incomeLines {
		i, ok := byJSON[l.Name]
		if !ok || t.Field(i).Type.Kind() != reflect.Int64 {
			panic("reports: income line " + l.Name + " has no int64 field in Income")
		}
		out[l.Name] = i
	}
	return out
}()

func (f incomeFigures) income(m postings.Month, closed, snapshot bool) (Income, error) {
	var sum exact.Sums
	net := sum.Sub(f.Sales, f.Refunds, "net revenue", "")
	// In 128 bits: a step may overflow where the result does not (large
	// fees and large other income), and only the result must fit.
	var r big.Int
	r.SetInt64(net)
	for _, l := range incomeLines {
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
		Month: m.String(), Closed: closed, Snapshot: snapshot, Currency: f.Currency,
		Sales: f.Sales, SalesCount: f.SalesCount, Refunds: f.Refunds, RefundsCount: f.RefundsCount,
		NetRevenue: net, Other: f.Other, NetIncome: r.Int64(),
	}
	fields := reflect.ValueOf(&inc).Elem()
	for _, l := range incomeLines {
		fields.Field(incomeField[l.Name]).SetInt(f.Lines[l.Name])
	}
	return inc, nil
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
		if f, err = readIncomeSnapshot(ctx, q, m); err != nil {
			return Income{}, fmt.Errorf("income statement %s: read snapshot: %w", m, err)
		}
	} else if f, err = liveIncome(ctx, q, m, false); err != nil {
		return Income{}, err
	}
	return f.income(m, st.Closed, st.Snapshot)
}

// Where lineOf files an account that no income line sums.
const (
	lineOther   = -1 // other
	lineRevenue = -2 // sales, refunds, and other by other kinds of set
)

// lineOf returns the index in incomeLines of the line that sums the
// account with code, else lineRevenue or lineOther.
func lineOf(code string) int {
	under := func(root string) bool { return code == root || strings.HasPrefix(code, root+":") }
	if under(accounts.Revenue) {
		return lineRevenue
	}
	for i, l := range incomeLines {
		if under(l.Account) {
			return i
		}
	}
	return lineOther
}

// liveIncome computes month m's income statement from its month sums
// (monthsums): the revenue accounts' by kind of set, with the sets
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
	// Every line stated, 0 included: a snapshot written from these says
	// the month had none.
	f := incomeFigures{Currency: accounts.DefaultCurrency, Lines: make(map[string]int64, len(incomeLines))}
	for _, l := range incomeLines {
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
	flows, err := reader(fromPostings).Flows(ctx, q, monthsums.Query{Months: []postings.Month{m}, Accounts: ids, Revenue: revenue})
	if err != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, err)
	}
	// Each figure in 128 bits, checked once whole.
	byKind := map[string]exact.Wide{}
	byAccount := map[int64]exact.Wide{}
	for k, fl := range flows {
		switch {
		case k.Account == monthsums.RevenueAccount:
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
			l := incomeLines[i]
			if l.Credit {
				f.Lines[l.Name] = sum.Sub(f.Lines[l.Name], net, l.label(), "")
			} else {
				f.Lines[l.Name] = sum.Add(f.Lines[l.Name], net, l.label(), "")
			}
			continue
		}
		f.Other = sum.Sub(f.Other, net, "other", "")
	}
	if sum.Err() != nil {
		return incomeFigures{}, fmt.Errorf("income statement %s: %w", m, sum.Err())
	}
	return f, nil
}
