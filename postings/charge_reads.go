package postings

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// chargeSetsBookedSQL: see ChargeSetsBooked.
const chargeSetsBookedSQL = `SELECT id, kind, amount, competence::text AS competence, event_at, created_at
		FROM posting_sets WHERE charge_id = $1 ORDER BY id LIMIT $2`

// BookedSet is a posting set of a charge with when it was booked.
type BookedSet struct {
	ChargeSet
	CreatedAt time.Time `db:"created_at"`
}

// ChargeSetsBooked returns the posting sets of the charge chargeID in the
// order they were booked, with when, at most limit: ChargeSets bounded,
// for a charge's timeline (a charge refunded a centavo at a time has as
// many sets as centavos).
func ChargeSetsBooked(ctx context.Context, q sqlx.QueryerContext, chargeID string, limit int) ([]BookedSet, error) {
	var rows []BookedSet
	if err := sqlx.SelectContext(ctx, q, &rows, chargeSetsBookedSQL, chargeID, limit); err != nil {
		return nil, err
	}
	return rows, nil
}
