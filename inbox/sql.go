package inbox

import (
	"fmt"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
)

// Every statement the inbox runs over its tables, inbox and
// inbox_bodies, in the order a delivery meets them: stored (a group
// commit's insert, a conflicting redelivery kept, a redelivery's
// follow-up, a malformed delivery kept), claimed, finished, or failed and
// backed off; then the reads other packages call (reads.go). The
// workers' doorbell (pg_notify) touches no table. A divergence's requeue
// is one statement of package divergences', which takes its part over
// the inbox from here (Requeues). Two packages still read the inbox
// inside statements of their own, each one statement over several
// owners' tables: reconcile decides a run's lines against the stored
// deliveries, set-based, and charges' readGrantsRefundsSQL reads which
// delivery booked each refund.

// insertSQL stores deliveries of one event each, each unless one with
// its key is stored, with its body and audit headers in its row.
const insertSQL = `
	INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref,
		event, body, headers, status, next_attempt_at)
	SELECT k, ep, sc, me, t, i, kd, NULLIF(r, ''), e::jsonb, b, h::jsonb, s, now()
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::bytea[], $11::text[], $12::text[]) AS u (k, ep, sc, me, t, i, kd, r, e, b, h, s)
	ON CONFLICT (endpoint, event_type, event_id) DO NOTHING
	RETURNING id, endpoint, event_type, event_id`

// insertSharedSQL is insertSQL for a batch where some deliveries carry
// several events: a bcb-pix callback makes an inbox row per Pix and per
// devolução, and a copy of the whole callback in each row would grow with
// the square of its size (docs/performance.md, "bcb-pix callbacks: one
// body per delivery"). Such a delivery stores
// its body and audit headers once, in inbox_bodies, and its rows refer to
// that row ($13 gives each entry's body, 0 for one inline). A shared body
// none of whose events is new (a redelivery) is not kept. Its id is drawn
// before the rows are written so that they can refer to it in the same
// statement; the foreign key is checked at the statement's end, once both
// are written. The body id is a scalar subquery, not a join, so that rows
// are inserted in the order given: of several entries with one key, the
// first is stored. Batches of single events, the common case, keep to
// insertSQL, which is cheaper.
const insertSharedSQL = `
	WITH bodies AS (
		SELECT nextval(pg_get_serial_sequence('inbox_bodies', 'id')) AS id, b, h, n
		FROM unnest($14::bytea[], $15::text[]) WITH ORDINALITY AS u (b, h, n)
	), stored AS (
		INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref,
			event, body, headers, body_id, status, next_attempt_at)
		SELECT k, ep, sc, me, t, i, kd, NULLIF(r, ''), e::jsonb, CASE WHEN bn = 0 THEN b END, h::jsonb,
			(SELECT id FROM bodies WHERE n = u.bn), s, now()
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::bytea[], $11::text[], $12::text[], $13::bigint[])
			AS u (k, ep, sc, me, t, i, kd, r, e, b, h, s, bn)
		ON CONFLICT (endpoint, event_type, event_id) DO NOTHING
		RETURNING id, endpoint, event_type, event_id, body_id
	), kept AS (
		INSERT INTO inbox_bodies (id, body, headers)
		SELECT id, b, h::jsonb FROM bodies WHERE id IN (SELECT body_id FROM stored)
	)
	SELECT id, endpoint, event_type, event_id FROM stored`

// storedFiguresSQL reads, by key, the figures of stored deliveries.
const storedFiguresSQL = `
	SELECT i.endpoint, i.event_type, i.event_id, i.id,
		coalesce((i.event->>'Amount')::bigint, 0) AS amount, coalesce((i.event->>'HasAmount')::boolean, false) AS has_amount,
		coalesce((i.event->>'Fee')::bigint, 0) AS fee, coalesce((i.event->>'HasFee')::boolean, false) AS has_fee
	FROM inbox i JOIN unnest($1::text[], $2::text[], $3::text[]) AS k (ep, t, e)
		ON i.endpoint = k.ep AND i.event_type = k.t AND i.event_id = k.e`

// insertConflictSQL keeps a redelivery that states other figures than
// the stored delivery as a delivery of its own, set aside at once
// (keepConflicts), unless it was kept before.
const insertConflictSQL = `
			INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, headers,
				status, processed_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'unbookable', NULLIF($7, ''), $8::jsonb, $9, $10::jsonb, 'divergent', now())
			ON CONFLICT (endpoint, event_type, event_id) DO NOTHING RETURNING id`

// Requeues is the inbox's side of divergences' requeues
// (divergences.Deliveries): which deliveries are set aside, and making
// them due again, in the statement that resolves their divergences
// (divergences.Requeue, and redeliverSQL's divergences.RequeueCTE).
type Requeues struct{}

// SetAsideSQL is a condition: the delivery whose id is the SQL
// expression id is set aside (divergent).
func (Requeues) SetAsideSQL(id string) string {
	return `EXISTS (SELECT 1 FROM inbox i WHERE i.id = ` + id + ` AND i.status = 'divergent')`
}

// RequeueSQL is the common table expression "requeued": the set-aside
// deliveries among ids (a subquery) made pending and due now, their
// attempts reset, returning their ids.
func (Requeues) RequeueSQL(ids string) string {
	return `requeued AS (
		UPDATE inbox SET status = 'pending', attempts = 0, next_attempt_at = now(), processed_at = NULL
		WHERE id IN (` + ids + `) AND status = 'divergent'
		RETURNING id
	)`
}

// redeliverSQL does, in one statement, what PSPs' redeliveries of stored
// deliveries ask: one still pending is made due now (unless a worker holds
// it: then it is being applied); one that gave up after its attempts (a
// processing_failed divergence) is requeued, due now with its attempts
// reset, and its divergence resolved (divergences.RequeueCTE); and it returns the stored events of
// the applied payments among them, by key, whose grants are to be
// re-ensured. It returns a row per delivery made due, with NULLs.
var redeliverSQL = `
	WITH found AS (
		SELECT i.id, i.status, i.kind, i.event, i.endpoint, i.event_type, i.event_id FROM inbox i
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS k (ep, t, e)
			ON i.endpoint = k.ep AND i.event_type = k.t AND i.event_id = k.e
	), due AS (
		UPDATE inbox SET next_attempt_at = now()
		WHERE id IN (SELECT id FROM inbox WHERE id IN (SELECT id FROM found WHERE status = 'pending')
			AND next_attempt_at > now() FOR UPDATE SKIP LOCKED)
		RETURNING id
	), ` + divergences.RequeueCTE(Requeues{}, `SELECT id FROM found WHERE status = 'divergent'`) + `
	SELECT endpoint, event_type, event_id, event FROM found WHERE status = 'processed' AND kind = 'paid'
	UNION ALL SELECT NULL, NULL, NULL, NULL FROM due
	UNION ALL SELECT NULL, NULL, NULL, NULL FROM requeued`

// insertMalformedSQL keeps an authentic delivery whose payload could not
// be read, set aside at once (putMalformed), unless one with its key is
// stored.
const insertMalformedSQL = `
		INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, headers, status, last_error, processed_at)
		VALUES ($1, $2, $3, $4, 'malformed', $5, 'malformed', '{}', $6, $7, 'divergent', $8, now())
		ON CONFLICT (endpoint, event_type, event_id) DO NOTHING RETURNING id`

// lastClosedColumn is read with every claim: the close lock, taken as
// every posting transaction takes it, and the last closed month read under
// it (sql/functions/ledger_last_closed_month.sql, periods.LockForPosting's
// function). No close commits before the locked transaction ends, so every
// month it books follows from this one value (periods.Competence). In the
// claim it costs no round trip of its own, and as an uncorrelated
// subquery it runs once, when the first row is claimed: an empty claim
// takes no lock.
const lastClosedColumn = `(SELECT ledger_last_closed_month()) AS last_closed`

// claimDueSQL claims the deliveries due now, in the order of the partial
// index ix_inbox_due exactly (status = 'pending', by next_attempt_at), so
// that the claim reads a batch's worth of index entries however long the
// backlog, and skips the rows other workers hold.
const claimDueSQL = `SELECT id, event, received_at, endpoint, merchant, scheme, ` + lastClosedColumn + ` FROM inbox
	WHERE status = 'pending' AND next_attempt_at <= now()
	ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED`

// claimIDsSQL claims the pending deliveries among ids, due or not: a
// batch that failed is tried again a delivery at a time. "status || ”"
// keeps the planner on the primary key: with "status = 'pending'" it may
// pick the partial index and read the whole backlog to find a few ids.
const claimIDsSQL = `SELECT id, event, received_at, endpoint, merchant, scheme, ` + lastClosedColumn + ` FROM inbox
	WHERE id = ANY($1) AND status || '' = 'pending' ORDER BY id FOR UPDATE SKIP LOCKED`

// finishSQL appends the deliveries' events, marks the deliveries with
// their final status, snoozes the ones whose charge was held elsewhere and
// makes the refunds parked before the given payments due again. The rows
// it marks are not the rows it releases: a delivery being marked was
// pending in the statement's snapshot, and one it parks waits for a
// payment not given. It reads the payments' charges itself (a parked
// refund names its charge by id or PSP reference): as a charges read of
// its own it would be one more round trip of the locked transaction.
var finishSQL = `
	WITH appended AS (` + events.AppendSQL(5) + `
	), done AS (
		UPDATE inbox i SET status = u.status, processed_at = now(), attempts = i.attempts + 1
		FROM unnest($1::bigint[], $2::text[]) AS u (id, status) WHERE i.id = u.id
	), snoozed AS (
		UPDATE inbox SET next_attempt_at = now() + ` + fmt.Sprintf("interval '%d milliseconds'", snoozeFor.Milliseconds()) + `,
			last_error = '` + SnoozedError + `'
		WHERE id = ANY($4)
	), released AS (
		UPDATE inbox SET status = 'pending', next_attempt_at = now()
		WHERE status = 'parked' AND charge_ref IN (
			SELECT unnest(ARRAY[c.id, c.psp_ref]) FROM charges c WHERE c.id = ANY($3))
		RETURNING 1
	)
	SELECT count(*) FROM released`

// expireParkedSQL sets aside up to 100 refunds parked for longer than $1
// seconds (expireParked), skipping the ones a worker holds.
const expireParkedSQL = `UPDATE inbox SET status = 'divergent', processed_at = now()
		WHERE id IN (SELECT id FROM inbox WHERE status = 'parked' AND received_at < now() - $1 * interval '1 second'
			ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
		RETURNING id, coalesce(charge_ref, '') AS charge_ref`

// recordFailureSQL counts a failed attempt of a pending delivery and
// makes it due again after its back-off (recordFailureTx): 1 s doubling
// to 10 min, jittered by half.
const recordFailureSQL = `UPDATE inbox SET attempts = attempts + 1, last_error = left($2, 2000),
		next_attempt_at = now() + least(600, power(2, least(attempts, 10))) * (0.5 + random() / 2) * interval '1 second'
		WHERE id = $1 AND status = 'pending' RETURNING attempts`

// giveUpSQL sets aside a delivery past its attempts.
const giveUpSQL = `UPDATE inbox SET status = 'divergent', processed_at = now() WHERE id = $1`

// summariesSQL reads the stored deliveries with the ids $1, without
// their bodies, headers or events (Summaries).
const summariesSQL = `SELECT id, endpoint, scheme, event_type, event_id, kind, status,
			attempts, received_at, processed_at FROM inbox WHERE id = ANY($1)`

// backlogSQL reads the inbox's gauges (Backlog).
const backlogSQL = `SELECT
		(SELECT count(*) FROM inbox WHERE status = 'pending') AS pending,
		coalesce((SELECT extract(epoch FROM now() - min(received_at)) FROM inbox WHERE status = 'pending'), 0)::float8 AS oldest,
		(SELECT count(*) FROM inbox WHERE status = 'parked') AS parked`
