// Package accounts holds the chart of accounts: hierarchical codes such as
// "liabilities:commission-payable:partner-42", each with a type, a normal
// side and a currency. A parent's balance is the sum of its own postings and
// its children's.
package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/kind"
)

// Type is an account's place in the accounting equation.
type Type string

// The five account types.
const (
	Asset     Type = "asset"
	Liability Type = "liability"
	Equity    Type = "equity"
	Income    Type = "income"
	Expense   Type = "expense"
)

// The standard chart, seeded by migration.
const (
	Cash              = "assets:cash"
	Revenue           = "income:revenue"
	CommissionExpense = "expenses:commission"
	PSPFees           = "expenses:psp-fees"
	// MEDReturns is what returns made under the MED (Pix's Mecanismo
	// Especial de Devolução) took back: not the merchant's own refunds.
	MEDReturns        = "expenses:med-returns"
	CommissionPayable = "liabilities:commission-payable"
	Adjustments       = "equity:adjustments"
	// What a Pix's componentesValor books beside the sale (sql/0040): cash
	// handed over the counter comes out of the till (Pix Saque, Pix
	// Troco: never revenue); interest and fines of a charge with a due
	// date are income of their own, its rebates and discounts expenses of
	// their own.
	Till           = "assets:till"
	TillWithdrawal = "assets:till:pix-withdrawals"
	TillChange     = "assets:till:pix-change"
	Interest       = "income:interest"
	Fines          = "income:fines"
	Rebates        = "expenses:rebates"
	Discounts      = "expenses:discounts"
	// What resolving a divergence by booking adds (sql/0047): money the
	// PSP received that belongs to no charge is owed to its customer
	// until refunded or applied; money that went back with nothing to
	// charge it to is a loss of its own.
	CustomerCredits      = "liabilities:customer-credits"
	ReconciliationLosses = "expenses:reconciliation-losses"
)

// DefaultCurrency is the currency of accounts created without one.
const DefaultCurrency = "BRL"

// Errors returned by this package; callers test them with errors.Is.
var (
	ErrInvalidCode    = errors.New("invalid account code")
	ErrUnknownAccount = kind.New(kind.NotFound, "not-found", "Not found", "unknown account")
)

// Account is one node of the chart.
type Account struct {
	ID         int64         `db:"id"`
	Code       string        `db:"code"`
	Type       Type          `db:"type"`
	NormalSide string        `db:"normal_side"`
	Currency   string        `db:"currency"`
	ParentID   sql.NullInt64 `db:"parent_id"`
}

// Same pattern as the database's ck_accounts_code.
var codeRE = regexp.MustCompile(`^[a-z][a-z0-9-]*(:[a-z0-9][a-z0-9_.-]*)*$`)

// ValidateCode reports whether code is a well-formed account code.
func ValidateCode(code string) error {
	if len(code) > 200 || !codeRE.MatchString(code) {
		return fmt.Errorf("%w: %q", ErrInvalidCode, code)
	}
	return nil
}

// PartnerPayable is the code of the commission-payable sub-account of a
// partner. The partner id must be a valid code segment.
func PartnerPayable(partner string) (string, error) {
	code := CommissionPayable + ":" + partner
	if partner == "" || strings.Contains(partner, ":") {
		return "", fmt.Errorf("%w: partner %q", ErrInvalidCode, partner)
	}
	if err := ValidateCode(code); err != nil {
		return "", err
	}
	return code, nil
}

// Parent returns the code of code's parent, or "" for a root.
func Parent(code string) string {
	i := strings.LastIndexByte(code, ':')
	if i < 0 {
		return ""
	}
	return code[:i]
}

const selectAccount = `SELECT id, code, type, normal_side, currency, parent_id FROM accounts`

// Get returns the account with code, or ErrUnknownAccount.
func Get(ctx context.Context, q sqlx.QueryerContext, code string) (Account, error) {
	var a Account
	err := sqlx.GetContext(ctx, q, &a, selectAccount+` WHERE code = $1`, code)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, fmt.Errorf("%w: %s", ErrUnknownAccount, code)
	}
	if err != nil {
		return Account{}, fmt.Errorf("load account %s: %w", code, err)
	}
	return a, nil
}

// Ensure returns the account with code, creating it and any missing
// ancestors below an existing root. A created account takes its type and
// normal side from its parent, and the parent's currency. Concurrent callers
// creating the same code all get the one row.
func Ensure(ctx context.Context, q sqlx.ExtContext, code string) (Account, error) {
	if err := ValidateCode(code); err != nil {
		return Account{}, err
	}
	a, err := Get(ctx, q, code)
	if err == nil || !errors.Is(err, ErrUnknownAccount) {
		return a, err
	}
	parentCode := Parent(code)
	if parentCode == "" {
		return Account{}, fmt.Errorf("%w: %s (a new root is a migration, not a side effect)", ErrUnknownAccount, code)
	}
	parent, err := Ensure(ctx, q, parentCode)
	if err != nil {
		return Account{}, err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO accounts (code, type, normal_side, currency, parent_id)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (code) DO NOTHING`,
		code, parent.Type, parent.NormalSide, parent.Currency, parent.ID)
	if err != nil {
		return Account{}, fmt.Errorf("create account %s: %w", code, err)
	}
	return Get(ctx, q, code)
}

// Codes maps every account id to its code. Accounts never change once
// written, and there are as many as partners, not as postings, so readers
// that name many postings' accounts read this once.
func Codes(ctx context.Context, q sqlx.QueryerContext) (map[int64]string, error) {
	rows, err := q.QueryxContext(ctx, `SELECT id, code FROM accounts`)
	if err != nil {
		return nil, fmt.Errorf("account codes: %w", err)
	}
	defer rows.Close()
	codes := map[int64]string{}
	for rows.Next() {
		var id int64
		var code string
		if err := rows.Scan(&id, &code); err != nil {
			return nil, fmt.Errorf("account codes: %w", err)
		}
		codes[id] = code
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("account codes: %w", err)
	}
	return codes, nil
}
