package periods

import (
	"strings"

	"github.com/razao/razao/accounts"
)

// IncomeLine is a line of the income statement that sums accounts: the
// month's net of one account and its sub-accounts (those in the revenue
// account's currency). A closed month keeps it in the column of
// month_snapshots named as the line; the income statement shows it as the
// field of that JSON name and the CSV line of that name, and counts it in
// the net income with its sign.
type IncomeLine struct {
	Name    string
	Account string
	// Credit: the line is the account's credits less its debits (an
	// income, adding to the result); else its debits less its credits (an
	// expense, taking from it).
	Credit bool
}

// IncomeLines are the income statement's lines of accounts, in the order
// it shows them: the one list that a month's income figures, its snapshot
// (the columns written and read) and verify's check of snapshots derive
// from. A new line is an entry here, its account, its field in
// reports.Income (of the line's JSON name), and a migration adding its
// column to month_snapshots, NULL in the months closed before: their
// amounts stay in Other, as they were sealed.
var IncomeLines = []IncomeLine{
	{Name: "commission", Account: accounts.CommissionExpense},
	{Name: "psp_fees", Account: accounts.PSPFees},
	{Name: "interest", Account: accounts.Interest, Credit: true},
	{Name: "fines", Account: accounts.Fines, Credit: true},
	{Name: "rebates", Account: accounts.Rebates},
	{Name: "discounts", Account: accounts.Discounts},
	{Name: "med_returns", Account: accounts.MEDReturns},
}

// Label names the line in an overflow ("psp fees").
func (l IncomeLine) Label() string { return strings.ReplaceAll(l.Name, "_", " ") }
