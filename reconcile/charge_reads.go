package reconcile

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
)

// ChargeLinesSQL is the statement lines matched to the charge $1, by run
// then line, at most $2 (ix_reconciliation_lines_charge, sql/0044), with
// their run's endpoint and start. Exported for the plan test of a
// charge's timeline.
const ChargeLinesSQL = `SELECT l.run_id, r.endpoint, r.started_at, l.line, l.side, l.kind, l.amount,
		coalesce(l.outcome, '') AS outcome, coalesce(l.reason, '') AS reason, l.at
	FROM reconciliation_lines l JOIN reconciliation_runs r ON r.id = l.run_id
	WHERE l.charge_id = $1 ORDER BY l.run_id, l.line LIMIT $2`

// ChargeLines returns the lines of reconciliation runs matched to the
// charge chargeID (the statement's and the ledger's sides), oldest run
// first, at most limit: a charge's timeline (charges.TimelineSources).
func ChargeLines(ctx context.Context, q sqlx.QueryerContext, chargeID string, limit int) ([]charges.StatementLine, error) {
	var out []charges.StatementLine
	if err := sqlx.SelectContext(ctx, q, &out, ChargeLinesSQL, chargeID, limit); err != nil {
		return nil, fmt.Errorf("statement lines of charge %s: %w", chargeID, err)
	}
	return out, nil
}
