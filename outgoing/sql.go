package outgoing

// Every statement over webhook_endpoints, webhook_replays and
// webhook_attempts (sql/0051), and the two reads of the outbox this
// package makes outside events.Since: a replay's events, which lie at or
// behind an endpoint's cursor and so were committed and read through
// events.Since once already (no horizon is needed behind a cursor).

// endpointColumns are the columns an Endpoint is read from.
const endpointColumns = `id, url, description, topics, enabled, disabled_reason, disabled_at, previous_until,
	after_xid::text AS after_xid, after_id, attempt, head_event_id, next_at, failing_since, created_at, updated_at`

// insertEndpointSQL starts the endpoint at events.Now ($7, $8): every
// event committed after it was created is delivered, and at most a few
// committed just before (at least once, never a gap).
const insertEndpointSQL = `
INSERT INTO webhook_endpoints (url, description, topics, enabled, disabled_reason, disabled_at, secret, after_xid, after_id, next_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, CASE WHEN $4 THEN NULL ELSE 'operator' END, CASE WHEN $4 THEN NULL ELSE $6::timestamptz END, $5,
	$7::xid8, $8, $6, $6, $6)
RETURNING ` + endpointColumns

const listEndpointsSQL = `SELECT ` + endpointColumns + ` FROM webhook_endpoints ORDER BY id`

const getEndpointSQL = `SELECT ` + endpointColumns + ` FROM webhook_endpoints WHERE id = $1`

// updateEndpointSQL changes what an operator may change. Enabling a
// disabled endpoint makes its head due now, its failures forgotten:
// delivery resumes at the event it stopped on.
const updateEndpointSQL = `
UPDATE webhook_endpoints SET
	url = coalesce($2, url),
	description = coalesce($3, description),
	topics = coalesce($4, topics),
	enabled = coalesce($5, enabled),
	disabled_reason = CASE WHEN coalesce($5, enabled) THEN NULL WHEN enabled THEN 'operator' ELSE disabled_reason END,
	disabled_at = CASE WHEN coalesce($5, enabled) THEN NULL WHEN enabled THEN $6::timestamptz ELSE disabled_at END,
	attempt = CASE WHEN $5 AND NOT enabled THEN 0 ELSE attempt END,
	failing_since = CASE WHEN $5 AND NOT enabled THEN NULL ELSE failing_since END,
	next_at = CASE WHEN $5 AND NOT enabled THEN $6::timestamptz ELSE next_at END,
	updated_at = $6::timestamptz
WHERE id = $1
RETURNING ` + endpointColumns

const deleteEndpointSQL = `DELETE FROM webhook_endpoints WHERE id = $1`

// anySealedSQL tells whether any stored secret is sealed (its first
// byte storedSealed); substring, not get_byte, so no value errs.
const anySealedSQL = `SELECT EXISTS (SELECT 1 FROM webhook_endpoints
WHERE substring(secret FROM 1 FOR 1) = '\x01'::bytea OR substring(previous_secret FROM 1 FOR 1) = '\x01'::bytea)`

// rotateSQL keeps the current secret as the previous one until $3: an
// earlier previous secret, if its overlap was still running, ends now.
const rotateSQL = `
UPDATE webhook_endpoints SET previous_secret = secret, previous_until = $3, secret = $2, updated_at = $4
WHERE id = $1
RETURNING ` + endpointColumns

// replaySQL queues the endpoint's wanted events at or behind its cursor,
// by id or by creation time, oldest first, at most $5. Events after the
// cursor are on their way anyway. A time range starting at or before the
// latest creation time of any event purged (outbox_purged_through,
// sql/0058) queues nothing and returns that time as archived: part of it
// may be in the archive only. Read in the same snapshot as the events,
// so a purge either is seen or has not taken them yet.
const replaySQL = `
WITH e AS (SELECT id, after_xid, after_id, topics FROM webhook_endpoints WHERE id = $1),
a AS MATERIALIZED (SELECT p.created_through FROM outbox_purged_through p WHERE $3::timestamptz <= p.created_through),
ins AS (
	INSERT INTO webhook_replays (endpoint_id, event_id, event_xid, asked_at)
	SELECT e.id, o.id, o.xid, $6 FROM e JOIN outbox o ON (o.xid, o.id) <= (e.after_xid, e.after_id)
	WHERE ($2::bigint IS NULL OR o.id = $2)
	  AND ($3::timestamptz IS NULL OR o.created_at >= $3) AND ($4::timestamptz IS NULL OR o.created_at < $4)
	  AND (cardinality(e.topics) = 0 OR o.topic = ANY (e.topics))
	  AND NOT EXISTS (SELECT 1 FROM a)
	ORDER BY o.xid, o.id LIMIT $5
	ON CONFLICT DO NOTHING
	RETURNING 1)
SELECT (SELECT count(*) FROM e) AS found, (SELECT count(*) FROM ins) AS queued, (SELECT created_through FROM a) AS archived`

// eventExistsSQL tells a replay of one event that does not exist (404)
// from one that is not behind the cursor yet (nothing to queue).
const eventExistsSQL = `SELECT EXISTS (SELECT 1 FROM outbox WHERE id = $1)`

const attemptColumns = `id, endpoint_id, event_id, topic, attempt, replay, status, error, latency_ms, response, next_at, at`

// attemptsSQL pages an endpoint's attempts, newest first, before id $2.
const attemptsSQL = `SELECT ` + attemptColumns + ` FROM webhook_attempts
WHERE endpoint_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`

// claimSQL leases up to $3 due endpoints to this replica for $4. SKIP
// LOCKED: replicas claiming at once take different endpoints. The lease
// outlives this transaction (see sql/0051 on why no lock is held across
// the HTTP calls). A lease is timed by the database's clock, one for
// every replica: a replica whose clock runs ahead cannot take over a
// lease still running.
const claimSQL = `
UPDATE webhook_endpoints e SET lease_token = $1, lease_until = now() + $4::interval
FROM (SELECT id FROM webhook_endpoints
      WHERE enabled AND next_at <= $2 AND (lease_until IS NULL OR lease_until < now())
      ORDER BY next_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) c
WHERE e.id = c.id
RETURNING e.id`

// leaseSQL reads a leased endpoint as the deliverer sees it, only while
// the lease is still this one's.
const leaseSQL = `SELECT id, url, topics, enabled, secret, previous_secret, previous_until, after_xid::text AS after_xid,
	after_id, attempt, head_event_id, failing_since
FROM webhook_endpoints WHERE id = $1 AND lease_token = $2`

// progressSQL moves the cursor past what was delivered (or skipped) and
// renews the lease, while it is still this one's; the answer is the
// endpoint as it now is, for a change of URL, topics or secret, or a
// disablement, made meanwhile. The head's failures (their count, the
// first one's time) are forgotten only when the cursor moved, past the
// head: a save that moves nothing (a replay delivered, a failure about
// to be recorded) keeps them.
const progressSQL = `
UPDATE webhook_endpoints SET after_xid = $3::xid8, after_id = $4,
	attempt = CASE WHEN after_xid = $3::xid8 AND after_id = $4 THEN attempt ELSE 0 END,
	head_event_id = CASE WHEN after_xid = $3::xid8 AND after_id = $4 THEN head_event_id END,
	failing_since = CASE WHEN after_xid = $3::xid8 AND after_id = $4 THEN failing_since END,
	next_at = $5, lease_until = now() + $6::interval
WHERE id = $1 AND lease_token = $2
RETURNING id, url, topics, enabled, secret, previous_secret, previous_until, after_xid::text AS after_xid,
	after_id, attempt, head_event_id, failing_since`

// renewSQL renews the lease for $3, while it is still this one's, and
// reads what an operator may have changed meanwhile.
const renewSQL = `UPDATE webhook_endpoints SET lease_until = now() + $3::interval
WHERE id = $1 AND lease_token = $2
RETURNING url, topics, enabled, secret, previous_secret, previous_until`

// endpointExistsSQL tells a deleted endpoint from a lease taken over.
const endpointExistsSQL = `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)`

// doneReplaySQL removes a replay delivered.
const doneReplaySQL = `DELETE FROM webhook_replays WHERE endpoint_id = $1 AND event_id = $2
	AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1 AND lease_token = $3)`

// nextReplaySQL is the endpoint's oldest replay, with its event.
const nextReplaySQL = `
SELECT o.xid::text AS xid, o.id, o.topic, coalesce(o.charge_id, '') AS charge_id, o.payload, o.created_at
FROM webhook_replays r JOIN outbox o ON o.id = r.event_id
WHERE r.endpoint_id = $1 ORDER BY r.event_xid, r.event_id LIMIT 1`

// failSQL records a failed attempt on the head: the next try at $5, the
// lease given back. With $6 the endpoint is disabled instead. A failure
// never enables anything: an operator may have disabled the endpoint
// while the attempt was in flight (the lease does not hold off the
// operator), and that disablement, its reason and date stay.
const failSQL = `
UPDATE webhook_endpoints SET attempt = $3, head_event_id = $4, next_at = $5, failing_since = coalesce(failing_since, $7),
	enabled = enabled AND NOT $6,
	disabled_reason = CASE WHEN enabled AND $6 THEN 'failing' ELSE disabled_reason END,
	disabled_at = CASE WHEN enabled AND $6 THEN $7::timestamptz ELSE disabled_at END,
	lease_token = NULL, lease_until = NULL
WHERE id = $1 AND lease_token = $2`

// releaseSQL gives the lease back, due again at $3.
const releaseSQL = `UPDATE webhook_endpoints SET lease_token = NULL, lease_until = NULL, next_at = $3
WHERE id = $1 AND lease_token = $2`

// insertAttemptsSQL logs attempts in one statement.
const insertAttemptsSQL = `
INSERT INTO webhook_attempts (endpoint_id, event_id, topic, attempt, replay, status, error, latency_ms, response, next_at, at)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::int[], $5::boolean[], $6::int[], $7::text[], $8::int[],
	$9::text[], $10::timestamptz[], $11::timestamptz[])`

// pendingReplaysSQL: the endpoints with a replay waiting (one index probe
// per endpoint, however many replays wait).
const pendingReplaysSQL = `SELECT e.id FROM webhook_endpoints e
WHERE EXISTS (SELECT 1 FROM webhook_replays r WHERE r.endpoint_id = e.id)`
