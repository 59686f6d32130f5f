// Package events is the outbox of events for the selling app: rows appended
// in the transaction that caused them, read back in a commit-safe order, and
// streamed to subscribers as Server-Sent Events.
//
// Ids are assigned at insert but transactions commit in any order, so a
// reader paging by "id > last" can pass over an event whose transaction was
// still open and commits later. Readers here page by (xid, id) and stop below
// the oldest transaction still running that could write an outbox row (see
// horizon): every such transaction under that horizon has finished, so no
// row can ever appear behind a cursor.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/pgarray"
)

// Topic names an event for the selling app.
type Topic string

// The topics the outbox accepts (the same list as ck_outbox_topic).
const (
	TopicChargePaid       Topic = "charge.paid"
	TopicAccessGranted    Topic = "access.granted"
	TopicChargeRefunded   Topic = "charge.refunded"
	TopicChargeFailed     Topic = "charge.failed"
	TopicDivergenceOpened Topic = "divergence.opened"
	// A correction's states (package adjustments): proposed, booked (at
	// once, or on a second person's approval), rejected, expired.
	TopicAdjustmentProposed Topic = "adjustment.proposed"
	TopicAdjustmentBooked   Topic = "adjustment.booked"
	TopicAdjustmentRejected Topic = "adjustment.rejected"
	TopicAdjustmentExpired  Topic = "adjustment.expired"
	// An outgoing webhook endpoint failed every attempt of its retry
	// schedule and was disabled (package outgoing).
	TopicWebhookEndpointDisabled Topic = "webhook_endpoint.disabled"
)

// MaxLimit caps the events one call to Since returns, so that neither a
// query nor a write to a subscriber grows with the backlog.
const MaxLimit = 500

// Errors returned by this package; callers test them with errors.Is.
var (
	ErrUnknownTopic = errors.New("unknown event topic")
	ErrBadCursor    = errors.New("invalid event cursor")
	// ErrCursorExpired: events after the cursor may have been archived and
	// purged by retention (see ExpiredError).
	ErrCursorExpired = errors.New("event cursor expired")
)

// ExpiredError says a cursor is behind the outbox's purge watermark
// (outbox_purged_through, sql/0058): an event after it may have been
// archived and purged, so a reader resuming there could silently miss
// it. Oldest is the oldest cursor from which the outbox is still
// complete: every event after it is there. It wraps ErrCursorExpired.
type ExpiredError struct {
	Cursor, Oldest string
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%s: events after %q may have been archived and purged; the outbox is complete after %q", ErrCursorExpired, e.Cursor, e.Oldest)
}

func (e *ExpiredError) Unwrap() error { return ErrCursorExpired }

// Topics lists every topic (a test compares it with ck_outbox_topic).
var Topics = []Topic{TopicChargePaid, TopicAccessGranted, TopicChargeRefunded, TopicChargeFailed, TopicDivergenceOpened,
	TopicAdjustmentProposed, TopicAdjustmentBooked, TopicAdjustmentRejected, TopicAdjustmentExpired,
	TopicWebhookEndpointDisabled}

// Valid reports whether the outbox accepts t.
func (t Topic) Valid() bool { return slices.Contains(Topics, t) }

// Event is one outbox row as the selling app sees it.
type Event struct {
	// Cursor is where a reader resumes after this event ("<xid>-<id>").
	Cursor    string
	ID        int64
	Topic     Topic
	ChargeID  string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// MarshalJSON renders the event as the selling app receives it; charge_id
// is null rather than "" for events about no charge.
func (e Event) MarshalJSON() ([]byte, error) {
	var charge *string
	if e.ChargeID != "" {
		charge = &e.ChargeID
	}
	return json.Marshal(struct {
		ID        int64           `json:"id"`
		Topic     Topic           `json:"topic"`
		ChargeID  *string         `json:"charge_id"`
		Payload   json.RawMessage `json:"payload"`
		CreatedAt time.Time       `json:"created_at"`
	}{e.ID, e.Topic, charge, e.Payload, e.CreatedAt})
}

// Draft is an event to append.
type Draft struct {
	Topic    Topic
	ChargeID string
	Payload  any
}

// AppendAll records events inside the caller's transaction, in order, in
// one statement, so that they are published if and only if that
// transaction commits. It never commits: the caller owns tx. A nil payload
// is stored as {}. The topics and payloads are checked before any SQL
// runs, because a failed statement would abort the caller's whole
// transaction.
func AppendAll(ctx context.Context, tx sqlx.ExecerContext, drafts ...Draft) error {
	if len(drafts) == 0 {
		return nil
	}
	args, err := AppendArgs(drafts...)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, AppendSQL(1), args...); err != nil {
		return fmt.Errorf("append %d event(s), first %s: %w", len(drafts), drafts[0].Topic, err)
	}
	return nil
}

// AppendSQL is the outbox insert AppendAll runs, taking AppendArgs's three
// arguments as $first, $first+1 and $first+2, for a caller that writes
// the events in the same statement as other rows (a common table
// expression), saving a round trip. No drafts (empty arrays) insert
// nothing.
func AppendSQL(first int) string {
	return fmt.Sprintf(`INSERT INTO outbox (topic, charge_id, payload)
		SELECT t, NULLIF(c, ''), p::jsonb FROM unnest($%d::text[], $%d::text[], $%d::text[]) WITH ORDINALITY AS u (t, c, p, n)
		ORDER BY n`, first, first+1, first+2)
}

// AppendArgs checks drafts and encodes them as AppendSQL's arguments.
// Topics and payloads are checked here, before any SQL runs, because a
// failed statement would abort the caller's whole transaction.
func AppendArgs(drafts ...Draft) ([]any, error) {
	topics, charges, bodies := make([]string, len(drafts)), make([]string, len(drafts)), make([]string, len(drafts))
	for i, d := range drafts {
		if !d.Topic.Valid() {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, d.Topic)
		}
		body := []byte("{}")
		if d.Payload != nil {
			var err error
			if body, err = json.Marshal(d.Payload); err != nil {
				return nil, fmt.Errorf("append %s event: encode payload: %w", d.Topic, err)
			}
		}
		// As text: with binary parameters lib/pq sends []byte as bytea.
		topics[i], charges[i], bodies[i] = string(d.Topic), d.ChargeID, string(body)
	}
	return []any{pgarray.Text(topics), pgarray.Text(charges), pgarray.Text(bodies)}, nil
}

// horizon is the xid below which no transaction of this database can still
// commit an outbox row: the oldest transaction in progress in the
// statement's own snapshot (the one that decides which rows it sees),
// except those seen running right now that can never write one:
//
//   - a transaction of another database: the outbox is in this one. A long
//     transaction elsewhere on the server (a bulk load, a report) must not
//     hold every event stream back.
//   - a transaction whose session's user is not a superuser and holds no
//     INSERT right on outbox, neither itself nor through any role it is a
//     member of (inherited or reachable with SET ROLE). Any role that may
//     connect can take an xid and sit idle (BEGIN; SELECT
//     pg_current_xact_id()); without this, that froze every stream.
//
// Why the second exclusion is exactly safe: a row appears in outbox only
// through an INSERT (COPY and MERGE need the same right), checked against
// the current user; has_any_column_privilege counts the right on the table
// and on any one of its columns (INSERT of one column is enough to add a
// row). A session's current user is its session user, a role
// that user is a member of (SET ROLE), or an owner whose rights an object
// lends: a SECURITY DEFINER function, a view, a rule. pg_stat_activity's
// usesysid is the session user, and changing it (SET SESSION
// AUTHORIZATION) needs a superuser, who is never excluded. So a session
// whose every reachable role lacks INSERT cannot write an outbox row, and
// nothing can appear behind a cursor from it. Two conditions keep that
// true, and the schema meets both: no SECURITY DEFINER function, view or
// rule writes outbox (none exists: one would lend its owner's right to
// whoever may use it), and the right is not granted to a role while it has
// a transaction open (rights are checked as they are at each read;
// docs/razao-role.sql grants it to the service role once, at set-up).
//
// The classification errs safe: a transaction that has finished by the time
// pg_locks is read counts as ours, which only delays its successors until
// the next read; one whose session is not in pg_stat_activity (a prepared
// transaction) or has no user (a background worker) is never excluded.
// pg_locks and those columns of pg_stat_activity (datname, usesysid) are
// visible to any role, the service role included; pg_roles too. The role
// check runs only for the few xids of this database still running, over the
// few roles of the server, so the horizon stays cheap.
const horizon = `(
  SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
  FROM pg_snapshot_xip(pg_current_snapshot()) AS x
  WHERE NOT EXISTS (
    SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'transactionid' AND l.granted AND l.transactionid = xid(x)
      AND (a.datname <> current_database()
        OR (a.usesysid IS NOT NULL AND NOT EXISTS (
          SELECT 1 FROM pg_roles r
          WHERE pg_has_role(a.usesysid, r.oid, 'MEMBER')
            AND (r.rolsuper OR has_any_column_privilege(r.oid, 'outbox', 'INSERT')))))))`

// readSQL reads a batch of safe events after a cursor and, from the same
// snapshot and horizon, whether committed events after it are held back by
// an older transaction (whose end may never be announced, so the reader
// must look again soon). One statement, so the two cannot disagree. With no
// safe event it returns one row of NULLs carrying held. held is asked
// after the given cursor, not after the batch: below a batch that is not
// full, every row under the horizon is in it, so the answer is the same
// (the hub cuts a read at a stream's share of its byte budget: then held
// may name an event its next read returns anyway, one wake more).
// held is the first row in cursor order rather than an EXISTS: PostgreSQL
// drops ORDER BY and LIMIT from an EXISTS and may then plan it as a scan
// of the whole outbox (the horizon is unknown when planning), a cost that
// grows with every event ever written and is paid on every read of every
// wake. Its lower bound is one scalar on xid, the later of the cursor's and
// the horizon's, with the rest of the cursor as a filter: with the row
// comparison as its bound, the scan would start at the cursor, and a
// stream far behind would read every index entry between it and the
// horizon.
//
// The purge watermark (w) is read in the same snapshot as the events: a
// purge either committed before it, and then a cursor ($1, $2) behind it
// is gone, or its events are in the batch. A read with no cursor ($4)
// starts at the watermark (c is where the read starts), so that no batch
// has a hole in it: the hub shares a batch's rest with streams at any of
// its events, and a read from the beginning would otherwise pass from an
// event kept behind the watermark (one a replay asked for) over the
// events purged after it.
const readSQL = `
WITH h AS MATERIALIZED (SELECT ` + horizon + ` AS x),
w AS MATERIALIZED (SELECT p.xid AS wx, p.id AS wi FROM outbox_purged_through p),
c AS MATERIALIZED (SELECT CASE WHEN $4::boolean THEN coalesce((SELECT wx FROM w), $1::xid8) ELSE $1::xid8 END AS cx,
  CASE WHEN $4::boolean THEN coalesce((SELECT wi FROM w), $2::bigint) ELSE $2::bigint END AS ci),
ev AS (
  SELECT xid, id, topic, coalesce(charge_id, '') AS charge_id, payload, created_at
  FROM outbox
  WHERE (xid, id) > ((SELECT cx FROM c), (SELECT ci FROM c)) AND xid < (SELECT x FROM h)
  ORDER BY xid, id
  LIMIT $3)
SELECT ev.xid::text AS xid, ev.id, ev.topic, ev.charge_id, ev.payload, ev.created_at,
  (SELECT o.id FROM outbox o WHERE o.xid >= greatest((SELECT cx FROM c), (SELECT x FROM h))
     AND (o.xid > (SELECT cx FROM c) OR o.id > (SELECT ci FROM c))
   ORDER BY o.xid, o.id LIMIT 1) IS NOT NULL AS held,
  coalesce((SELECT NOT $4::boolean AND ($1::xid8, $2::bigint) < (wx, wi) FROM w), false) AS gone,
  coalesce((SELECT wx::text || '-' || wi FROM w), '0-0') AS through
FROM (SELECT) AS one LEFT JOIN ev ON true
ORDER BY ev.xid, ev.id`

// row is an outbox row as scanned; payload is []byte so the driver's buffer
// is copied.
type row struct {
	XID       *string    `db:"xid"`
	ID        *int64     `db:"id"`
	Topic     *string    `db:"topic"`
	ChargeID  *string    `db:"charge_id"`
	Payload   []byte     `db:"payload"`
	CreatedAt *time.Time `db:"created_at"`
	Held      bool       `db:"held"`
	Gone      bool       `db:"gone"`
	Through   string     `db:"through"`
}

// Since returns up to limit events after cursor ("" = from the beginning)
// that are safe to publish, in order. A limit outside 1..MaxLimit means
// MaxLimit. An event is safe once every transaction that could still insert
// a row before it has finished; until then it is held back, never skipped.
// A malformed cursor returns an error wrapping ErrBadCursor; a cursor
// behind the purge watermark (an event after it may have been archived
// and purged by retention) an *ExpiredError, never the events left after
// the gap. "" (no cursor) is never expired: it reads from the purge
// watermark, the oldest position the outbox is complete after (events
// kept behind it, for a replay, are not sent).
func Since(ctx context.Context, q sqlx.QueryerContext, cursor string, limit int) ([]Event, error) {
	evs, _, err := read(ctx, q, cursor, limit)
	return evs, err
}

// read is Since that also reports whether committed events after cursor
// are held back by an older transaction still running.
func read(ctx context.Context, q sqlx.QueryerContext, cursor string, limit int) (evs []Event, held bool, err error) {
	xid, id, err := parseCursor(cursor)
	if err != nil {
		return nil, false, err
	}
	if limit < 1 || limit > MaxLimit {
		limit = MaxLimit
	}
	var rows []row
	if err := sqlx.SelectContext(ctx, q, &rows, readSQL, xid, id, limit, cursor == ""); err != nil {
		return nil, false, fmt.Errorf("read events since %q: %w", cursor, err)
	}
	if len(rows) > 0 && rows[0].Gone {
		return nil, false, &ExpiredError{Cursor: cursor, Oldest: rows[0].Through}
	}
	out := make([]Event, 0, len(rows))
	for _, r := range rows {
		held = r.Held
		if r.ID == nil {
			continue // no safe event: the row only carries held
		}
		out = append(out, Event{
			Cursor:    *r.XID + "-" + strconv.FormatInt(*r.ID, 10),
			ID:        *r.ID,
			Topic:     Topic(*r.Topic),
			ChargeID:  *r.ChargeID,
			Payload:   r.Payload,
			CreatedAt: r.CreatedAt.UTC(),
		})
	}
	return out, held, nil
}

// Now returns the cursor of a reader that starts now: every event a
// transaction still running may commit lies after it, and so does every
// event committed since the oldest of them began (a few, delivered to such
// a reader although they committed just before it started). A new webhook
// endpoint starts there (package outgoing).
func Now(ctx context.Context, q sqlx.QueryerContext) (string, error) {
	var x string
	if err := sqlx.GetContext(ctx, q, &x, `SELECT `+horizon+`::text`); err != nil {
		return "", fmt.Errorf("read the outbox's horizon: %w", err)
	}
	return x + "-0", nil
}

// checkCursorSQL compares a cursor with the purge watermark.
const checkCursorSQL = `SELECT ($1::xid8, $2::bigint) < (p.xid, p.id) AS gone, p.xid::text || '-' || p.id AS through
FROM outbox_purged_through p`

// CheckCursor returns an *ExpiredError when cursor is behind the purge
// watermark (an event after it may have been archived and purged), nil
// when every event after it is still in the outbox, or "" (no cursor).
// Since checks the same in the snapshot it reads: this is for a caller
// that must answer before it reads (the event stream, before its
// headers).
func CheckCursor(ctx context.Context, q sqlx.QueryerContext, cursor string) error {
	if cursor == "" {
		return nil
	}
	xid, id, err := parseCursor(cursor)
	if err != nil {
		return err
	}
	var w struct {
		Gone    bool   `db:"gone"`
		Through string `db:"through"`
	}
	if err := sqlx.GetContext(ctx, q, &w, checkCursorSQL, xid, id); err != nil {
		return fmt.Errorf("read the outbox's purge watermark: %w", err)
	}
	if w.Gone {
		return &ExpiredError{Cursor: cursor, Oldest: w.Through}
	}
	return nil
}

// ValidCursor reports whether cursor is "" or a cursor Since could have
// produced, so a handler can answer 400 before streaming anything.
func ValidCursor(cursor string) error {
	_, _, err := parseCursor(cursor)
	return err
}

// parseCursor splits "<xid>-<id>" into its parts; "" is the beginning. Only
// the canonical decimal form is accepted (no signs, spaces or leading zeros)
// so that one position has exactly one spelling. The xid is returned as text
// because database/sql cannot send a uint64 with its high bit set.
func parseCursor(cursor string) (xid string, id int64, err error) {
	if cursor == "" {
		return "0", 0, nil
	}
	x, i, ok := strings.Cut(cursor, "-")
	if !ok {
		return "", 0, fmt.Errorf("%w: %q", ErrBadCursor, cursor)
	}
	xv, err1 := strconv.ParseUint(x, 10, 64)
	iv, err2 := strconv.ParseUint(i, 10, 63)
	if err1 != nil || err2 != nil || strconv.FormatUint(xv, 10) != x || strconv.FormatUint(iv, 10) != i {
		return "", 0, fmt.Errorf("%w: %q", ErrBadCursor, cursor)
	}
	return x, int64(iv), nil
}
