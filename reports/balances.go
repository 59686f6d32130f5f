// Package reports reads the ledger for finance: balances by account, with
// parents rolled up from their children, in integer centavos.
package reports

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// AccountBalance is one account's balance, its own postings and its
// descendants' together. Balance is signed: debits positive.
type AccountBalance struct {
	Code     string `db:"code" json:"account"`
	Type     string `db:"type" json:"type"`
	Currency string `db:"currency" json:"currency"`
	Debits   int64  `db:"debits" json:"debits"`
	Credits  int64  `db:"credits" json:"credits"`
	Balance  int64  `db:"balance" json:"balance"`
}

// Balances returns every account's balance over the whole ledger, parents
// rolled up, ordered by code.
func Balances(ctx context.Context, q sqlx.QueryerContext) ([]AccountBalance, error) {
	var out []AccountBalance
	err := sqlx.SelectContext(ctx, q, &out, `
		WITH own AS (
			SELECT account_id,
				sum(amount) FILTER (WHERE amount > 0) AS debits,
				-sum(amount) FILTER (WHERE amount < 0) AS credits
			FROM postings GROUP BY account_id
		)
		SELECT parent.code, parent.type, parent.currency,
			coalesce(sum(own.debits), 0)::bigint AS debits,
			coalesce(sum(own.credits), 0)::bigint AS credits,
			coalesce(sum(own.debits), 0)::bigint - coalesce(sum(own.credits), 0)::bigint AS balance
		FROM accounts parent
		JOIN accounts child ON child.code = parent.code OR starts_with(child.code, parent.code || ':')
		LEFT JOIN own ON own.account_id = child.id
		GROUP BY parent.code, parent.type, parent.currency
		ORDER BY parent.code`)
	if err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	return out, nil
}
