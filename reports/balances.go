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
// rolled up (descendants of the same currency), ordered by code, from s's
// totals.
func Balances(ctx context.Context, q sqlx.QueryerContext, s Sums) ([]AccountBalance, error) {
	var out []AccountBalance
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		out, err = balances(ctx, q, s)
		return err
	})
	return out, err
}

func balances(ctx context.Context, q sqlx.QueryerContext, s Sums) ([]AccountBalance, error) {
	own, err := s.Totals(ctx, q)
	if err != nil {
		return nil, err
	}
	lines, _, err := rollUp(own)
	if err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	out := make([]AccountBalance, len(lines))
	for i, l := range lines {
		out[i] = AccountBalance{Code: l.Account, Type: l.Type, Currency: l.Currency,
			Debits: l.Debits, Credits: l.Credits, Balance: l.Closing}
	}
	return out, nil
}
