package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
)

// The statements that decide lines (dedupeSQL, matchPaidSQL,
// matchRefundsSQL) run on the run's lines where they are: {lines} is
// reconciliation_lines, or the staging table a statement file is loaded
// into and decided in before its lines are written (see loadFile).
const linesTable = "reconciliation_lines"

// Matching reads other packages' tables inside its own statements:
// charges, refund_aliases, posting_sets, the inbox and divergences (so do
// pointAtDeliverySQL and noteInbox's statement). Each stays one statement
// here, with the table it writes, reconciliation_lines: it decides a
// run's lines where they are, set-based, where the owners' typed reads
// would carry every line's charge, delivery and sets through Go and back.

// onLines is q on the lines in table, a name of ours, never input.
func onLines(q, table string) string { return strings.ReplaceAll(q, "{lines}", table) }

// step is one statement of matching.
type step struct {
	name string
	sql  string
	args []any
}

// decideSteps decide every line of run in table not yet decided.
func decideSteps(table string, run Run, ep endpointInfo) []step {
	return []step{
		{"dedupe", onLines(dedupeSQL, table), []any{run.ID}},
		{"payments", onLines(matchPaidSQL, table), []any{run.ID, ep.name, charges.PaymentRefPrefix(ep.scheme), ep.merchant}},
		{"refunds", onLines(matchRefundsSQL, table), []any{run.ID, ep.name, charges.PaymentRefPrefix(ep.scheme), ep.merchant}},
	}
}

// dedupeSQL keeps one line per inbox key: a page fetched again after the
// statement moved (an item added between two fetches) lists items twice.
// The last copy wins: it is the freshest. The keys listed twice are found
// by hashing them, and only their copies are read again: ranking every
// line by its key would sort every line of the run to delete, most often,
// none (docs/performance.md, "Reconciliation load").
const dedupeSQL = `
	DELETE FROM {lines} l USING (
		SELECT event_type, event_id, max(line) AS last
		FROM {lines} WHERE run_id = $1 AND outcome IS NULL AND kind <> 'invalid'
		GROUP BY event_type, event_id HAVING count(*) > 1
	) d
	WHERE l.run_id = $1 AND l.outcome IS NULL AND l.kind <> 'invalid'
	  AND l.event_type = d.event_type AND l.event_id = d.event_id AND l.line <> d.last`

// matchPaidSQL decides every payment line not yet decided. A payment is
// found by its PSP id first (the charge's paid_ref, in the scheme's form:
// $3 is the prefix, charges.PaymentRefPrefix), else its charge by our
// id, else by the PSP reference the app registered. $2 is the endpoint,
// $4 its merchant. Only a line its PSP id finds no payment for looks
// further (the LATERAL lookups, by index; LIMIT 1 keeps the planner from
// turning them into joins): hashing every charge by our id, and the
// inbox, for the few lines that need them would be a large share of the
// join's time (docs/performance.md, "Reconciliation load"). A verdict
// names the outcome: matched, book (to store into the inbox), in_inbox
// (stored and pending: the delivery path books it), or a divergence's
// reason.
const matchPaidSQL = `
	UPDATE {lines} l SET outcome = v.outcome, reason = v.reason, charge_id = v.charge_id,
		ledger_amount = v.ledger_amount, ledger_fee = v.ledger_fee, inbox_id = v.inbox_id
	FROM (` + paidVerdictsSQL + `) v
	WHERE l.run_id = $1 AND l.line = v.line`

// paidVerdictsSQL is every payment line not yet decided, decided: the
// line's columns, in reconciliation_lines' order, with its outcome,
// reason, charge and ledger figures (see matchPaidSQL). matchPaidSQL
// writes it over the lines; a file's load inserts it (stagedPaidSQL).
const paidVerdictsSQL = `
	SELECT z.run_id, z.line, z.side, z.kind, z.event_type, z.event_id, z.psp_id, z.charge_ref, z.refund_id,
		z.amount, z.fee, z.at, z.detail,
		CASE WHEN z.verdict = 'matched' THEN 'matched' WHEN z.verdict IN ('book', 'in_inbox') THEN 'booked' ELSE 'divergence' END AS outcome,
		CASE WHEN z.verdict IN ('matched', 'book') THEN NULL WHEN z.verdict = 'inbox_amount_mismatch' THEN 'amount_mismatch' ELSE z.verdict END AS reason,
		z.c_id AS charge_id, CASE WHEN z.verdict = 'inbox_amount_mismatch' THEN z.ib_amount ELSE z.ledger_amount END AS ledger_amount, z.ledger_fee,
		CASE WHEN z.verdict = 'in_inbox' THEN z.ib_id END AS inbox_id
	FROM (
		SELECT y.*, CASE
			WHEN y.cr_id IS NOT NULL AND y.paid_for <> y.cr_paid THEN 'amount_mismatch'
			WHEN y.cr_id IS NOT NULL AND y.fee IS NOT NULL AND y.fee <> coalesce(y.cr_fee, 0) THEN 'fee_mismatch'
			WHEN y.cr_id IS NOT NULL THEN 'matched'
			WHEN y.ib_amount IS NOT NULL AND y.amount <> y.ib_amount THEN 'inbox_amount_mismatch'
			WHEN y.ib_status = 'divergent' THEN coalesce(y.dv_reason, 'divergent_in_inbox')
			WHEN y.ib_status IN ('pending', 'parked') THEN 'in_inbox'
			WHEN y.c_id IS NULL THEN 'unknown_charge'
			WHEN y.c_merchant IS NOT NULL AND y.c_merchant <> $4 THEN 'merchant_mismatch'
			WHEN y.c_state IN ('paid', 'partially_refunded', 'refunded') THEN 'second_payment'
			WHEN y.sale <> y.c_amount THEN 'amount_mismatch'
			ELSE 'book' END AS verdict
		FROM (
			SELECT x.run_id, x.line, x.side, x.kind, x.event_type, x.event_id, x.psp_id, x.charge_ref, x.refund_id,
				x.amount, x.fee, x.at, x.detail,
				-- With a Pix's parts (reconciliation_lines.parts, in
				-- money.Parts' order) the charge is paid by the original,
				-- and what paid it (its paid_amount) is the amount less
				-- the cash handed over the counter (charges' paidFor).
				coalesce(x.parts[1], x.amount) AS sale,
				x.amount - coalesce(x.parts[2] + x.parts[3], 0) AS paid_for,
				cr.id AS cr_id, cr.paid_amount AS cr_paid, cr.fee AS cr_fee,
				coalesce(cr.id, ci.id, cp.id) AS c_id,
				coalesce(ci.merchant, cp.merchant) AS c_merchant,
				coalesce(ci.state, cp.state) AS c_state,
				coalesce(ci.amount, cp.amount) AS c_amount,
				coalesce(cr.paid_amount, ci.paid_amount, cp.paid_amount, ci.amount, cp.amount) AS ledger_amount,
				coalesce(cr.fee, ci.fee, cp.fee) AS ledger_fee,
				ib.id AS ib_id, ib.status AS ib_status, ib.reason AS dv_reason, ib.amount AS ib_amount
			FROM {lines} x
			LEFT JOIN charges cr ON cr.paid_ref = $3 || x.psp_id AND x.psp_id <> ''
			LEFT JOIN LATERAL (SELECT c.id, c.merchant, c.state, c.amount, c.paid_amount, c.fee FROM charges c
				WHERE cr.id IS NULL AND c.id = x.charge_ref LIMIT 1) ci ON true
			LEFT JOIN LATERAL (SELECT c.id, c.merchant, c.state, c.amount, c.paid_amount, c.fee FROM charges c
				WHERE cr.id IS NULL AND x.charge_ref = '' AND x.psp_id <> '' AND c.psp_ref = x.psp_id LIMIT 1) cp ON true
			LEFT JOIN LATERAL (SELECT i.id, i.status, d.reason, ` + inboxAmountSQL + ` AS amount FROM inbox i LEFT JOIN divergences d ON d.inbox_id = i.id
				WHERE cr.id IS NULL AND i.endpoint = $2 AND i.event_type = x.event_type AND i.event_id = x.event_id LIMIT 1) ib ON true
			WHERE x.run_id = $1 AND x.outcome IS NULL AND x.kind = 'paid'
		) y
	) z`

// inboxAmountSQL is the amount a stored delivery i states, NULL when it
// states none: a statement line under the key of a delivery stored but
// not booked (pending, parked, set aside) is the same payment only with
// the same figure; with another it is amount_mismatch (a refund's,
// refund_amount_mismatch), both amounts kept, never a silent duplicate.
const (
	inboxAmountSQL   = `CASE WHEN (i.event->>'HasAmount')::boolean THEN (i.event->>'Amount')::bigint END`
	inboxAmountIBSQL = `CASE WHEN (ib.event->>'HasAmount')::boolean THEN (ib.event->>'Amount')::bigint END`
)

// allLineColumns are reconciliation_lines' columns, in its order.
const allLineColumns = `run_id, line, side, kind, event_type, event_id, psp_id, charge_ref, refund_id,
	amount, fee, at, detail, outcome, reason, charge_id, ledger_amount, ledger_fee, inbox_id`

// A statement file's lines are decided in the staging table they are
// copied into and written into reconciliation_lines once: the payments
// decided as they are inserted (no second write of each line), the rest
// (invalid lines, refunds) as they are, the refunds decided there by
// match after the payments, as for every run.
const (
	stagedPaidSQL = `INSERT INTO reconciliation_lines (` + allLineColumns + `) ` + paidVerdictsSQL
	stagedRestSQL = `INSERT INTO reconciliation_lines (` + allLineColumns + `)
		SELECT ` + allLineColumns + ` FROM {lines} WHERE run_id = $1 AND NOT (outcome IS NULL AND kind = 'paid')`
)

// stagedSteps write the lines of run staged in table into
// reconciliation_lines, one copy per inbox key, the payments decided.
func stagedSteps(table string, run Run, ep endpointInfo) []step {
	return []step{
		{"dedupe", onLines(dedupeSQL, table), []any{run.ID}},
		{"payments", onLines(stagedPaidSQL, table), []any{run.ID, ep.name, charges.PaymentRefPrefix(ep.scheme), ep.merchant}},
		{"other lines", onLines(stagedRestSQL, table), []any{run.ID}},
	}
}

// matchRefundsSQL decides every refund line not yet decided, after the
// payments: a refund's charge is the one its payment's PSP id paid, else
// our id, else the registered PSP reference, else the charge a payment
// line of this run found (a payment booked by this very run). Its refund
// is the one booked under its id, or under the other id it was paired
// with (refund_aliases: a file's id for a refund its webhook booked).
const matchRefundsSQL = `
	UPDATE {lines} l SET
		outcome = CASE WHEN v.verdict IN ('matched', 'not_settled') THEN 'matched' WHEN v.verdict IN ('book', 'in_inbox') THEN 'booked' ELSE 'divergence' END,
		reason = CASE WHEN v.verdict IN ('matched', 'book') THEN NULL WHEN v.verdict = 'inbox_amount_mismatch' THEN 'refund_amount_mismatch' ELSE v.verdict END,
		charge_id = v.c_id, ledger_amount = CASE WHEN v.verdict = 'inbox_amount_mismatch' THEN v.ib_amount ELSE v.rs_amount END,
		inbox_id = CASE WHEN v.verdict = 'in_inbox' THEN v.ib_id END
	FROM (
		SELECT y.line, y.c_id, rs.amount AS rs_amount, y.ib_id, y.ib_amount, CASE
			WHEN y.kind = 'refund_open' AND rs.id IS NOT NULL THEN 'refund_not_settled'
			WHEN y.kind = 'refund_open' THEN 'not_settled'
			WHEN rs.id IS NOT NULL AND rs.amount <> y.amount THEN 'refund_amount_mismatch'
			WHEN rs.id IS NOT NULL THEN 'matched'
			WHEN y.ib_amount IS NOT NULL AND y.amount <> y.ib_amount THEN 'inbox_amount_mismatch'
			WHEN y.ib_status = 'divergent' THEN coalesce(y.dv_reason, 'divergent_in_inbox')
			WHEN y.ib_status IN ('pending', 'parked') THEN 'in_inbox'
			WHEN y.c_id IS NULL THEN 'unknown_charge'
			WHEN y.c_merchant IS NOT NULL AND y.c_merchant <> $4 THEN 'merchant_mismatch'
			ELSE 'book' END AS verdict
		FROM (
			SELECT x.line, x.kind, x.amount, x.refund_id,
				coalesce(cr.id, ci.id, cp.id, pl.charge_id) AS c_id,
				coalesce(cr.merchant, ci.merchant, cp.merchant) AS c_merchant,
				ib.id AS ib_id, ib.status AS ib_status, dv.reason AS dv_reason, ` + inboxAmountIBSQL + ` AS ib_amount
			FROM {lines} x
			LEFT JOIN charges cr ON cr.paid_ref = $3 || x.psp_id AND x.psp_id <> ''
			LEFT JOIN charges ci ON ci.id = x.charge_ref
			LEFT JOIN charges cp ON x.charge_ref = '' AND x.psp_id <> '' AND cp.psp_ref = x.psp_id
			LEFT JOIN {lines} pl ON pl.run_id = $1 AND pl.kind = 'paid' AND x.psp_id <> '' AND pl.psp_id = x.psp_id
			LEFT JOIN inbox ib ON ib.endpoint = $2 AND ib.event_type = x.event_type AND ib.event_id = x.event_id
			LEFT JOIN divergences dv ON dv.inbox_id = ib.id
			WHERE x.run_id = $1 AND x.outcome IS NULL AND x.kind IN ('refunded', 'refund_open')
		) y
		LEFT JOIN refund_aliases ra ON ra.charge_id = y.c_id AND ra.alias_id = y.refund_id
		LEFT JOIN posting_sets rs ON rs.kind = 'refund' AND rs.charge_id = y.c_id AND rs.refund_id = coalesce(ra.refund_id, y.refund_id)
	) v
	WHERE l.run_id = $1 AND l.line = v.line`

// phantomDetail is a phantom line's detail, in SQL (divergences.Phantom's
// English).
const phantomDetail = `'booked in the ledger, absent from the statement'`

// phantomsSQL lists the endpoint's sales and refunds that the run's
// statement should list and no line of the run names: money the ledger
// has and the PSP does not (a refund is named by its id or the other id
// it was paired with). Recomputed whole each time. Which facts a
// statement should list depends on how it lists them ($5, see
// phantomsStep): 'time', a file, each payment and refund by its own time
// in [$3, $4); 'pix', the Pix API, each Pix by its horario with its
// devoluções as they stood when it was read, however late they settled:
// the sales of [$3, $4), and the refunds of those sales settled before $6
// (a refund settled in this window of a Pix of an earlier one is not in
// this statement, but in that one's); 'refunds', a sweep, only those
// refunds.
const phantomsSQL = `
	INSERT INTO reconciliation_lines (run_id, line, side, kind, refund_id, amount, at, outcome, reason,
		charge_id, ledger_amount, inbox_id, detail)
	SELECT $1, base.n + row_number() OVER (ORDER BY s.id), 'ledger',
		CASE s.kind WHEN 'sale' THEN 'paid' ELSE 'refunded' END, coalesce(s.refund_id, ''), 0, s.event_at,
		'divergence', 'phantom', s.charge_id, s.amount, s.inbox_id,
		` + phantomDetail + `
	FROM (
		SELECT f.id, f.kind, f.refund_id, f.event_at, f.charge_id, f.amount, f.inbox_id FROM posting_sets f
		WHERE f.kind IN ('sale', 'refund') AND f.event_at >= $3 AND f.event_at < $4
		  AND ((f.kind = 'sale' AND $5::text <> 'refunds') OR (f.kind = 'refund' AND $5::text = 'time'))
		UNION ALL
		SELECT f.id, f.kind, f.refund_id, f.event_at, f.charge_id, f.amount, f.inbox_id
		FROM posting_sets p JOIN posting_sets f ON f.kind = 'refund' AND f.charge_id = p.charge_id
		WHERE $5::text <> 'time' AND p.kind = 'sale' AND p.event_at >= $3 AND p.event_at < $4 AND f.event_at < $6
	) s
	JOIN inbox i ON i.id = s.inbox_id AND i.endpoint = $2
	LEFT JOIN refund_aliases a ON a.charge_id = s.charge_id AND a.refund_id = s.refund_id
	CROSS JOIN (SELECT coalesce(max(line), 0) AS n FROM reconciliation_lines WHERE run_id = $1) base
	WHERE NOT EXISTS (SELECT 1 FROM reconciliation_lines l
		WHERE l.run_id = $1 AND l.side = 'statement' AND l.charge_id = s.charge_id
		  AND ((s.kind = 'sale' AND l.kind = 'paid')
		    OR (s.kind = 'refund' AND l.kind IN ('refunded', 'refund_open') AND l.refund_id IN (s.refund_id, a.alias_id))))`

// phantomsStep lists the run's phantoms (phantomsSQL), for a final
// window or a sweep; ok is false for a run that has none to list. A Pix
// statement is held to the refunds settled a final_after before the run
// began: one that settled later need not be listed yet.
func phantomsStep(run Run, ep endpointInfo) (step, bool) {
	by := "time"
	switch {
	case run.Sweep:
		by = "refunds"
	case !run.Final:
		return step{}, false
	case run.Source == "bcb-pix":
		by = "pix"
	}
	return step{"phantoms", phantomsSQL, []any{run.ID, ep.name, run.From, run.To, by, run.StartedAt.Add(-ep.finalAfter)}}, true
}

// match decides every line of the run not yet decided and, for a final
// window, lists the phantoms, in one transaction: a run that dies in it
// matches again from the same lines. A line once decided keeps its
// outcome: a line booked by this run stays booked when the run goes on
// after a crash, though the ledger has it by then.
func match(ctx context.Context, db *sqlx.DB, run Run, ep endpointInfo) error {
	// The run's lines were just copied in: without fresh statistics the
	// planner takes them for a handful and joins them by nested loops,
	// quadratic in the run's length (docs/performance.md, "Reconciliation
	// load"; the partial index of undecided lines does not help a plan
	// that expects none). ANALYZE runs alone, before the transaction: its
	// lock (SHARE UPDATE EXCLUSIVE, which conflicts with itself) is then held
	// for the analyze, not to the commit of this match, so another run's
	// match never queues behind this one.
	if err := analyzeLines(ctx, db); err != nil {
		return fmt.Errorf("match run %d: %w", run.ID, err)
	}
	tx, err := begin(ctx, db)
	if err != nil {
		return fmt.Errorf("match run %d: %w", run.ID, err)
	}
	defer tx.Rollback()
	steps := append(decideSteps(linesTable, run, ep),
		step{"clear phantoms", `DELETE FROM reconciliation_lines WHERE run_id = $1 AND side = 'ledger'`, []any{run.ID}})
	if ph, ok := phantomsStep(run, ep); ok {
		steps = append(steps, ph)
	}
	// The keep-one-copy sort and the hash joins fit in memory at a
	// million lines.
	if _, err := tx.ExecContext(ctx, `SET LOCAL work_mem = '64MB'`); err != nil {
		return fmt.Errorf("match run %d: %w", run.ID, err)
	}
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("match run %d: %s: %w", run.ID, s.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("match run %d: commit: %w", run.ID, err)
	}
	return nil
}

// analyzeLines refreshes reconciliation_lines' statistics in a
// transaction of its own, the search path pinned, committed at once, as
// the table's owner (sql/0033: the service role's own ANALYZE would be
// skipped with a warning).
func analyzeLines(ctx context.Context, db *sqlx.DB) error {
	tx, err := begin(ctx, db)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT reconciliation_analyze_lines()`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("analyze: commit: %w", err)
	}
	return nil
}

// endpointInfo is what matching needs of an endpoint.
type endpointInfo struct {
	name, scheme, merchant string
	finalAfter             time.Duration
}

// tally counts a run's lines by outcome into its row.
func tally(ctx context.Context, db sqlx.ExecerContext, run int64) error {
	_, err := db.ExecContext(ctx, `UPDATE reconciliation_runs r SET
			matched = t.matched, booked = t.booked, divergences = t.divergences
		FROM (SELECT count(*) FILTER (WHERE outcome = 'matched') AS matched,
			count(*) FILTER (WHERE outcome = 'booked') AS booked,
			count(*) FILTER (WHERE outcome = 'divergence') AS divergences
			FROM reconciliation_lines WHERE run_id = $1) t
		WHERE r.id = $1`, run)
	if err != nil {
		return fmt.Errorf("tally run %d: %w", run, err)
	}
	return nil
}
