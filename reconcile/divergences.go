package reconcile

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/razao/razao/divergences"
)

// A run's divergent lines become divergences for finance (package
// divergences: the same table, list, console page and divergence.opened
// event as the delivery path's), once per fact, after matching and
// booking have decided every line. Each line then points at its
// divergence.

// lineKeySQL is the key of the divergence of a line l of a run of
// endpoint $2 over the window [$3, $4): the endpoint, the reason, and the
// fact: a statement item by its inbox key, a phantom by the ledger's sale
// or refund, a line with no key (one that could not be read) by its
// window and place in it. As JSON, so no id can run into the next.
const lineKeySQL = `jsonb_build_array($2::text, l.reason, CASE
		WHEN l.side = 'ledger' THEN jsonb_build_array('ledger', l.kind, l.charge_id, l.refund_id)
		WHEN l.event_id <> '' THEN jsonb_build_array('statement', l.event_type, l.event_id)
		ELSE jsonb_build_array('line', extract(epoch FROM $3::timestamptz)::text, extract(epoch FROM $4::timestamptz)::text, l.line)
	END)::text`

// The statements below take $1 the run, $2 its endpoint, the divergent
// lines not yet pointing at a divergence as the last argument.

// pointAtDeliverySQL points the run's divergent lines whose delivery the
// delivery path set aside already, with a divergence of the same reason,
// at that divergence: the same fact, found twice, is one divergence.
const pointAtDeliverySQL = `
	UPDATE reconciliation_lines l SET divergence_id = d.id
	FROM inbox i JOIN divergences d ON d.inbox_id = i.id
	WHERE l.run_id = $1 AND l.line = ANY($3::bigint[]) AND l.event_id <> ''
	  AND i.endpoint = $2 AND i.event_type = l.event_type AND i.event_id = l.event_id
	  AND i.status = 'divergent' AND d.reason = l.reason`

// foundSQL is the run's divergent lines not yet pointing at a divergence,
// as divergences.FoundColumns, both sides.
const foundSQL = `
	SELECT ` + lineKeySQL + ` AS reconciliation_key, $2::text AS endpoint, l.run_id, l.line AS run_line,
		l.kind AS line_kind, l.charge_id, l.reason,
		CASE
			WHEN l.detail <> '' THEN l.detail
			WHEN l.reason IN ('amount_mismatch', 'refund_amount_mismatch') AND l.ledger_amount IS NOT NULL
				THEN format('the statement says %s, the ledger has %s', l.amount, l.ledger_amount)
			WHEN l.reason = 'fee_mismatch' THEN format('the statement''s fee is %s, the fee booked %s', l.fee, coalesce(l.ledger_fee, 0))
			ELSE format('a %s line of the statement: %s', l.kind, l.reason)
		END AS detail,
		` + detailSaidSQL + `,
		CASE WHEN l.side = 'statement' THEN l.psp_id END AS statement_psp_id,
		CASE WHEN l.side = 'statement' THEN l.charge_ref END AS statement_charge_ref,
		CASE WHEN l.side = 'statement' THEN l.refund_id END AS statement_refund_id,
		CASE WHEN l.side = 'statement' THEN l.amount END AS statement_amount,
		CASE WHEN l.side = 'statement' THEN l.fee END AS statement_fee,
		CASE WHEN l.side = 'statement' THEN l.at END AS statement_at,
		CASE WHEN l.side = 'ledger' THEN l.refund_id END AS ledger_refund_id,
		l.ledger_amount, l.ledger_fee,
		CASE WHEN l.side = 'ledger' THEN l.inbox_id END AS ledger_inbox_id
	FROM reconciliation_lines l
	WHERE l.run_id = $1 AND l.line = ANY($5::bigint[]) AND l.divergence_id IS NULL`

// detailSaidSQL is a divergent line l's detail in its structured form
// (divergences.Said: detail_code, detail_args), case for case the
// English of foundSQL's detail; a line's own detail is the parser's or
// the ledger's words, kept whole. A fee_mismatch without the
// statement's fee has no code: its English alone.
const detailSaidSQL = `CASE
			WHEN l.reason = 'phantom' AND l.detail = ` + phantomDetail + ` THEN '` + divergences.CodePhantom + `'
			WHEN l.detail <> '' THEN '` + divergences.CodeLineText + `'
			WHEN l.reason IN ('amount_mismatch', 'refund_amount_mismatch') AND l.ledger_amount IS NOT NULL
				THEN '` + divergences.CodeStatementAmount + `'
			WHEN l.reason = 'fee_mismatch' AND l.fee IS NOT NULL THEN '` + divergences.CodeStatementFee + `'
			WHEN l.reason = 'fee_mismatch' THEN NULL
			ELSE '` + divergences.CodeStatementLine + `'
		END AS detail_code,
		CASE
			WHEN l.reason = 'phantom' AND l.detail = ` + phantomDetail + ` THEN '[]'::jsonb
			WHEN l.detail <> '' THEN jsonb_build_array(l.detail)
			WHEN l.reason IN ('amount_mismatch', 'refund_amount_mismatch') AND l.ledger_amount IS NOT NULL
				THEN jsonb_build_array(l.amount, l.ledger_amount)
			WHEN l.reason = 'fee_mismatch' AND l.fee IS NOT NULL THEN jsonb_build_array(l.fee, coalesce(l.ledger_fee, 0))
			WHEN l.reason = 'fee_mismatch' THEN NULL
			ELSE jsonb_build_array(l.kind, l.reason)
		END AS detail_args`

// pointAtKeySQL points the run's other divergent lines at the divergence
// of their key: the one just opened, or an earlier run's.
const pointAtKeySQL = `
	UPDATE reconciliation_lines l SET divergence_id = d.id
	FROM divergences d
	WHERE l.run_id = $1 AND l.line = ANY($5::bigint[]) AND l.divergence_id IS NULL
	  AND d.reconciliation_key = ` + lineKeySQL

// openDivergences opens the run's divergences, in one transaction: a run
// that dies in it opens them again from the same lines, and the keys make
// that, and every later run of the window, open none twice. It returns
// how many it opened.
func (r *Reconciler) openDivergences(ctx context.Context, run Run, ep *endpoint) (int64, error) {
	tx, err := begin(ctx, r.db)
	if err != nil {
		return 0, fmt.Errorf("open divergences of run %d: %w", run.ID, err)
	}
	defer tx.Rollback()
	// The run's lines are read once, for the divergent ones not yet
	// pointing anywhere (an index has none: matching updates lines in
	// place); each step below then reads those by key.
	var ids []int64
	if err := tx.SelectContext(ctx, &ids, `SELECT line FROM reconciliation_lines
		WHERE run_id = $1 AND outcome = 'divergence' AND divergence_id IS NULL`, run.ID); err != nil {
		return 0, fmt.Errorf("open divergences of run %d: %w", run.ID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	name, lines := ep.hook.Name, pq.Array(ids)
	if _, err := tx.ExecContext(ctx, pointAtDeliverySQL, run.ID, name, lines); err != nil {
		return 0, fmt.Errorf("open divergences of run %d: the delivery path's: %w", run.ID, err)
	}
	found, opened, err := divergences.OpenFound(ctx, tx, foundSQL, run.ID, name, run.From, run.To, lines)
	if err != nil {
		return 0, fmt.Errorf("run %d: %w", run.ID, err)
	}
	res, err := tx.ExecContext(ctx, pointAtKeySQL, run.ID, name, run.From, run.To, lines)
	if err != nil {
		return 0, fmt.Errorf("open divergences of run %d: point lines: %w", run.ID, err)
	}
	// Every divergent line now has its divergence: one left without
	// would be a difference finance never hears of.
	if pointed, err := res.RowsAffected(); err != nil || pointed != found {
		return 0, fmt.Errorf("open divergences of run %d: %d of %d divergent lines point at a divergence (%v)", run.ID, pointed, found, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("open divergences of run %d: commit: %w", run.ID, err)
	}
	if opened > 0 && r.OnCommit != nil {
		r.OnCommit()
	}
	return opened, nil
}
