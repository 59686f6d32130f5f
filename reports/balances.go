package reports

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
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

// balancesSQL sums every account's own postings over the whole ledger:
// snapshotted months from their snapshots, the others ($1: after the last
// snapshot; $2: earlier months without one) from postings, as exact
// numerics (see fitOwn).
const balancesSQL = `
SELECT a.id AS account_id, a.code, a.type, a.normal_side, a.currency, 0 AS opening,
	coalesce(s.debits, 0) + coalesce(r.debits, 0) + coalesce(g.debits, 0) AS debits,
	coalesce(s.credits, 0) + coalesce(r.credits, 0) + coalesce(g.credits, 0) AS credits
FROM accounts a
LEFT JOIN (
	SELECT account_id, sum(debits) AS debits, sum(credits) AS credits FROM trial_balance_snapshots GROUP BY account_id
) s ON s.account_id = a.id
CROSS JOIN LATERAL (
	SELECT sum(p.amount) FILTER (WHERE p.amount > 0) AS debits, -sum(p.amount) FILTER (WHERE p.amount < 0) AS credits
	FROM postings p WHERE p.account_id = a.id AND p.competence_month > coalesce($1::date, '-infinity')
) r
CROSS JOIN LATERAL (
	SELECT sum(p.amount) FILTER (WHERE p.amount > 0) AS debits, -sum(p.amount) FILTER (WHERE p.amount < 0) AS credits
	FROM postings p WHERE p.account_id = a.id AND p.competence_month = ANY($2::date[])
) g`

// Balances returns every account's balance over the whole ledger, parents
// rolled up (descendants of the same currency), ordered by code. Closed
// months are read from their snapshots, so the cost grows with the
// postings of the open months, not with the ledger.
func Balances(ctx context.Context, q sqlx.QueryerContext) ([]AccountBalance, error) {
	var out []AccountBalance
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		out, err = balances(ctx, q)
		return err
	})
	return out, err
}

func balances(ctx context.Context, q sqlx.QueryerContext) ([]AccountBalance, error) {
	var st struct {
		Last sql.NullTime   `db:"last"`
		Gaps pq.StringArray `db:"gaps"`
	}
	err := sqlx.GetContext(ctx, q, &st, `SELECT
		(SELECT max(month) FROM month_snapshots) AS last,
		ARRAY(SELECT d::date::text FROM generate_series(
				(SELECT min(competence_month) FROM posting_sets), (SELECT max(month) FROM month_snapshots), interval '1 month') d
			WHERE NOT EXISTS (SELECT 1 FROM month_snapshots s WHERE s.month = d::date)) AS gaps`)
	if err != nil {
		return nil, fmt.Errorf("balances: read snapshots: %w", err)
	}
	var rows []ownSums
	if err := sqlx.SelectContext(ctx, q, &rows, balancesSQL, st.Last, st.Gaps); err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	own, err := fitOwn(rows)
	if err != nil {
		return nil, fmt.Errorf("balances: %w", err)
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
