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
//	detail_code text, detail_args jsonb: the detail's structured form
//	                    (Said), both NULL for the English alone
//	statement_psp_id, statement_charge_ref, statement_refund_id text,
//	statement_amount, statement_fee bigint, statement_at timestamptz:
//	                    the statement's side (all NULL for a phantom)
//	ledger_refund_id text, ledger_amount, ledger_fee, ledger_inbox_id
//	                    bigint: the ledger's side (NULL where it has none)
const FoundColumns = `reconciliation_key, endpoint, run_id, run_line, line_kind, charge_id, reason, detail,
	detail_code, detail_args,
	statement_psp_id, statement_charge_ref, statement_refund_id, statement_amount, statement_fee, statement_at,
	ledger_refund_id, ledger_amount, ledger_fee, ledger_inbox_id`

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
