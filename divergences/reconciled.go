package divergences

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// FoundColumns are the columns, by name, of the query a reconciliation
// run gives OpenFound: one row per divergence it found.
//
//	reconciliation_key  text: the fact and what is wrong with it; one
//	                    divergence per key, ever
//	endpoint            text
//	run_id, run_line    bigint: where it was found
//	line_kind           text: paid, refunded, refund_open, invalid
//	charge_id, reason, detail
//	statement_psp_id, statement_charge_ref, statement_refund_id text,
//	statement_amount, statement_fee bigint, statement_at timestamptz:
//	                    the statement's side (all NULL for a phantom)
//	ledger_refund_id text, ledger_amount, ledger_fee, ledger_inbox_id
//	                    bigint: the ledger's side (NULL where it has none)
const FoundColumns = `reconciliation_key, endpoint, run_id, run_line, line_kind, charge_id, reason, detail,
	statement_psp_id, statement_charge_ref, statement_refund_id, statement_amount, statement_fee, statement_at,
	ledger_refund_id, ledger_amount, ledger_fee, ledger_inbox_id`

// openFoundSQL opens the divergences of found (a query yielding
// FoundColumns) whose key has none yet, in the run's line order, and
// appends the divergence.opened event of each in the same statement: a
// run's thousands of divergences never travel through Go. The event has
// the delivery path's keys (Delivery.Event), with where the run found it.
func openFoundSQL(found string) string {
	return `WITH found AS (` + found + `
	), opened AS (
		INSERT INTO divergences (source, ` + FoundColumns + `)
		SELECT 'reconciliation', ` + FoundColumns + ` FROM found ORDER BY run_id, run_line
		ON CONFLICT (reconciliation_key) DO NOTHING
		RETURNING id, charge_id, reason, detail, endpoint, run_id, run_line
	), announced AS (
		INSERT INTO outbox (topic, charge_id, payload)
		SELECT 'divergence.opened', charge_id, jsonb_build_object('divergence_id', id, 'source', 'reconciliation',
			'charge_id', coalesce(charge_id, ''), 'reason', reason, 'detail', detail,
			'reconciliation', jsonb_build_object('endpoint', endpoint, 'run_id', run_id, 'line', run_line))
		FROM opened ORDER BY id
	)
	SELECT (SELECT count(*) FROM found) AS found, (SELECT count(*) FROM opened) AS opened`
}

// OpenFound opens, inside the caller's transaction, a divergence for
// each row of found (a query yielding FoundColumns, with args) whose
// reconciliation_key has none yet, each with its divergence.opened
// event, and returns how many rows found had and how many it opened. A
// key seen before (the same
// window run again, an overlapping window) opens nothing, whatever the
// status of the divergence it has: a resolved one stays resolved.
func OpenFound(ctx context.Context, tx sqlx.QueryerContext, found string, args ...any) (rows, opened int64, err error) {
	var n struct {
		Found  int64 `db:"found"`
		Opened int64 `db:"opened"`
	}
	if err := sqlx.GetContext(ctx, tx, &n, openFoundSQL(found), args...); err != nil {
		return 0, 0, fmt.Errorf("open reconciliation divergences: %w", err)
	}
	return n.Found, n.Opened, nil
}
