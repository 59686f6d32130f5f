package divergences

// Every statement this package runs over its table, divergences, is in
// this file; the functions that run them are in list.go, open.go,
// reconciled.go and resolve.go, and the columns a divergence is read
// with are beside the row they fill (columns). A requeue's statement
// takes its part over the inbox from the inbox (Deliveries); OpenFound's
// appends the divergence.opened events to the outbox in the same
// statement as the divergences it opens.

// listSQL is a page of divergences with status $1 (empty for all) after the
// id $2, at most $3 (List).
const listSQL = `SELECT ` + columns + ` FROM divergences
		WHERE ($1 = '' OR status = $1) AND id > $2 ORDER BY id LIMIT $3`

// getSQL is the divergence with id $1 (Get).
const getSQL = `SELECT ` + columns + ` FROM divergences WHERE id = $1`

// countOpenSQL counts the open divergences (CountOpen).
const countOpenSQL = `SELECT count(*) FROM divergences WHERE status = 'open'`

// byDeliverySQL is the divergence of the delivery $1, whatever its
// status (Requeue, to say why it was not requeued).
const byDeliverySQL = `SELECT ` + columns + ` FROM divergences WHERE inbox_id = $1`

// openForDeliveriesSQL opens the divergences of deliveries, one per
// delivery, in the order given, returning the ones it opened
// (OpenForDeliveries).
const openForDeliveriesSQL = `INSERT INTO divergences (inbox_id, charge_id, reason, detail,
			statement_psp_id, statement_charge_ref, statement_refund_id, statement_amount, statement_at, ledger_refund_id, ledger_amount,
			detail_code, detail_args)
		SELECT i, NULLIF(c, ''), r, d, pi, pc, pr, pa, pt, NULLIF(lr, ''), la, dc, da::jsonb
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],
			$9::timestamptz[], $10::text[], $11::bigint[], $12::text[], $13::text[])
			WITH ORDINALITY AS u (i, c, r, d, pi, pc, pr, pa, pt, lr, la, dc, da, n)
		ORDER BY n
		ON CONFLICT (inbox_id) DO NOTHING RETURNING inbox_id, id`

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

// settleSQL is the one UPDATE that resolves divergences, as the common
// table expression "resolved": the open ones where selects (alias d),
// with note and at (SQL expressions: parameters, or a literal), returning
// them. Given the inbox's side of a requeue (in, nil for none) it also
// makes their deliveries due again, attempts reset, as "requeued" (their
// inbox ids): where must then select only requeueable divergences.
func settleSQL(where, note, at string, in Deliveries) string {
	q := `resolved AS (
		UPDATE divergences d SET status = 'resolved', resolution_note = ` + note + `, resolved_at = ` + at + `
		WHERE d.status = 'open' AND ` + where + `
		RETURNING ` + columns + `
	)`
	if in != nil {
		q += `, ` + in.RequeueSQL(`SELECT inbox_id FROM resolved`)
	}
	return q
}

// requeueable selects (alias d) the divergences whose delivery may be
// applied again: it gave up after its attempts (an outage, a bad deploy),
// and is still set aside in the inbox (in). Any other divergence would be
// decided the same way again.
func requeueable(in Deliveries) string {
	return `d.reason = 'processing_failed' AND d.inbox_id IS NOT NULL
		AND ` + in.SetAsideSQL(`d.inbox_id`)
}

// resolveSQL resolves the open divergence $1 with the note $2 at $3,
// returning it (Resolve).
var resolveSQL = `WITH ` + settleSQL(`d.id = $1`, `$2`, `$3`, nil) + ` SELECT ` + columns + ` FROM resolved`

// requeueSQL resolves the requeueable divergence of the delivery $1 with
// the note $2 at $3 and makes the delivery due again (in is the inbox's
// side of it), returning the divergence (Requeue).
func requeueSQL(in Deliveries) string {
	return `WITH ` + settleSQL(`d.inbox_id = $1 AND `+requeueable(in), `$2`, `$3`, in) + ` SELECT ` + columns + ` FROM resolved`
}

// figuresSQL reads what a divergence's offers are computed from (alias
// d; the caller adds its WHERE, and FOR UPDATE OF d to lock it): both
// sides as the divergence holds them, and, for a divergence of a
// delivery that stated no side (the delivery path's second_payment,
// amount_mismatch, unknown_charge...), the figures of that delivery as
// the inbox stored its event, with the charge's sale if one is booked
// and whether the charge is registered at all.
const figuresSQL = `SELECT d.id, d.reason, d.status, coalesce(d.charge_id, '') AS charge_id,
		EXISTS (SELECT 1 FROM charges c WHERE c.id = d.charge_id) AS charge_registered,
		coalesce(d.line_kind, i.kind, '') AS kind,
		coalesce(d.statement_amount, CASE WHEN (i.event->>'HasAmount')::boolean THEN (i.event->>'Amount')::bigint END) AS stated_amount,
		coalesce(d.statement_fee, CASE WHEN (i.event->>'HasFee')::boolean THEN (i.event->>'Fee')::bigint END) AS stated_fee,
		d.ledger_amount, d.ledger_fee,
		(SELECT s.amount FROM posting_sets s WHERE s.kind = 'sale' AND s.charge_id = d.charge_id) AS sale_amount,
		coalesce(d.statement_at, NULLIF((i.event->>'OccurredAt')::timestamptz, '0001-01-01 00:00:00+00'),
			i.received_at, d.created_at) AS at
	FROM divergences d LEFT JOIN inbox i ON i.id = d.inbox_id`

// bookSQL resolves the open divergence $1 with the note $2 at $3 by the
// booking $4, the set $5, drawn from the credit of the divergence $6
// (NULL: none), returning it (Book).
const bookSQL = `UPDATE divergences SET status = 'resolved', resolution_note = $2, resolved_at = $3,
		resolution = $4, resolution_set_id = $5, resolution_credit_id = $6
	WHERE id = $1 AND status = 'open' RETURNING ` + columns

// lockCreditSQL locks the divergence $1 whose credit a refund draws
// from; creditSQL then reads, in a statement of its own (in READ
// COMMITTED a fresh snapshot, which sees the draws committed while it
// waited for the lock), how it was resolved, the credit its set booked
// and what refunds have drawn from it (drawCredit).
const (
	lockCreditSQL = `SELECT id FROM divergences WHERE id = $1 FOR UPDATE`
	creditSQL     = `SELECT d.resolution, s.amount AS credit,
		coalesce((SELECT sum(r.amount) FROM divergences x JOIN posting_sets r ON r.id = x.resolution_set_id
			WHERE x.resolution_credit_id = d.id), 0) AS drawn
	FROM divergences d LEFT JOIN posting_sets s ON s.id = d.resolution_set_id
	WHERE d.id = $1`
)
