package postings

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// The ledger's reads for other packages: every statement over
// posting_sets and postings outside the posting transaction (ledger.go),
// each behind a typed function, so that their callers name no column.
// The ledger's reports, month sums, partners' figures and verify's
// cross-checks still read the tables themselves, and so does periods,
// which this package imports.

// recentPayoutsSQL: see RecentPayouts.
const recentPayoutsSQL = `SELECT id, idempotency_key, amount, currency, competence, event_at, description
		FROM posting_sets WHERE partner = $1 AND kind = 'payout' ORDER BY id DESC LIMIT $2`

// PayoutSet is one payout set of a partner.
type PayoutSet struct {
	ID          int64     `db:"id"`
	Key         string    `db:"idempotency_key"`
	Amount      int64     `db:"amount"`
	Currency    string    `db:"currency"`
	Competence  time.Time `db:"competence"`
	EventAt     time.Time `db:"event_at"`
	Description string    `db:"description"`
}

// RecentPayouts returns the partner's latest payout sets, newest (highest
// id) first, at most limit.
func RecentPayouts(ctx context.Context, q sqlx.QueryerContext, partner string, limit int) ([]PayoutSet, error) {
	var rows []PayoutSet
	if err := sqlx.SelectContext(ctx, q, &rows, recentPayoutsSQL, partner, limit); err != nil {
		return nil, err
	}
	return rows, nil
}
