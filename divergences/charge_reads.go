package divergences

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// OfChargeSQL is the divergences of the charge $1, oldest first, at most
// $2 (ix_divergences_charge, sql/0044). Exported for the plan test of a
// charge's timeline.
const OfChargeSQL = `SELECT ` + columns + ` FROM divergences WHERE charge_id = $1 ORDER BY id LIMIT $2`

// OfCharge returns the divergences about the charge chargeID, whatever
// their source or status, in the order they were opened, at most limit:
// a charge's timeline.
func OfCharge(ctx context.Context, q sqlx.QueryerContext, chargeID string, limit int) ([]Divergence, error) {
	var rows []row
	if err := sqlx.SelectContext(ctx, q, &rows, OfChargeSQL, chargeID, limit); err != nil {
		return nil, fmt.Errorf("divergences of charge %s: %w", chargeID, err)
	}
	out := make([]Divergence, len(rows))
	for i, r := range rows {
		out[i] = r.divergence()
	}
	return out, nil
}
