// Package events is the outbox of events for the selling app: rows appended
// in the transaction that caused them, read back in a commit-safe order, and
// streamed to subscribers as Server-Sent Events.
//
// Ids are assigned at insert but transactions commit in any order, so a
// reader paging by "id > last" can pass over an event whose transaction was
// still open and commits later. Readers here page by (xid, id) and stop below
// the oldest transaction of this database still running: every transaction
// under that horizon has finished, so no row can ever appear behind a cursor.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
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
)

// MaxLimit caps the events one call to Since returns, so that neither a
// query nor a write to a subscriber grows with the backlog.
const MaxLimit = 500

// Errors returned by this package; callers test them with errors.Is.
var (
	ErrUnknownTopic = errors.New("unknown event topic")
	ErrBadCursor    = errors.New("invalid event cursor")
)

// Valid reports whether the outbox accepts t.
func (t Topic) Valid() bool {
	switch t {
	case TopicChargePaid, TopicAccessGranted, TopicChargeRefunded, TopicChargeFailed, TopicDivergenceOpened:
		return true
	}
	return false
}

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

// Append records an event inside the caller's transaction, so that it is
// published if and only if that transaction commits. It never commits: the
// caller owns tx. A nil payload is stored as {}. The topic and payload are
// checked before any SQL runs, because a failed statement would abort the
// caller's whole transaction.
func Append(ctx context.Context, tx sqlx.ExecerContext, topic Topic, chargeID string, payload any) error {
	return AppendAll(ctx, tx, Draft{Topic: topic, ChargeID: chargeID, Payload: payload})
}

// AppendAll is Append for several events, in order, in one statement.
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
	return []any{pq.Array(topics), pq.Array(charges), pq.Array(bodies)}, nil
}

// horizon is the xid below which no transaction of this database can still
// commit an outbox row: the oldest transaction in progress in the
// statement's own snapshot (the one that decides which rows it sees),
// except those seen running right now in another database, which never
// write here. A long transaction elsewhere on the server (a bulk load, a
// report) must not hold every event stream back. The classification errs
// safe: a transaction that has finished by the time pg_locks is read counts
// as ours, which only delays its successors until the next read.
const horizon = `(
  SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
  FROM pg_snapshot_xip(pg_current_snapshot()) AS x
  WHERE NOT EXISTS (
    SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'transactionid' AND l.granted AND l.transactionid = xid(x)
      AND a.datname <> current_database()))`

// The horizon is read from the statement's own snapshot, the same one that
// decides which rows it sees, so the two cannot disagree.
const sinceSQL = `
SELECT xid::text AS xid, id, topic, coalesce(charge_id, '') AS charge_id, payload, created_at
FROM outbox
WHERE (xid, id) > ($1::xid8, $2::bigint)
  AND xid < ` + horizon + `
ORDER BY xid, id
LIMIT $3`

// row is an outbox row as scanned; payload is []byte so the driver's buffer
// is copied.
type row struct {
	XID       string    `db:"xid"`
	ID        int64     `db:"id"`
	Topic     string    `db:"topic"`
	ChargeID  string    `db:"charge_id"`
	Payload   []byte    `db:"payload"`
	CreatedAt time.Time `db:"created_at"`
}

// Since returns up to limit events after cursor ("" = from the beginning)
// that are safe to publish, in order. A limit outside 1..MaxLimit means
// MaxLimit. An event is safe once every transaction that could still insert
// a row before it has finished; until then it is held back, never skipped.
// A malformed cursor returns an error wrapping ErrBadCursor.
func Since(ctx context.Context, q sqlx.QueryerContext, cursor string, limit int) ([]Event, error) {
	xid, id, err := parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxLimit {
		limit = MaxLimit
	}
	var rows []row
	if err := sqlx.SelectContext(ctx, q, &rows, sinceSQL, xid, id, limit); err != nil {
		return nil, fmt.Errorf("read events since %q: %w", cursor, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{
			Cursor:    r.XID + "-" + strconv.FormatInt(r.ID, 10),
			ID:        r.ID,
			Topic:     Topic(r.Topic),
			ChargeID:  r.ChargeID,
			Payload:   r.Payload,
			CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}

// A committed row at or above the horizon is visible but not yet safe: an
// older transaction may still insert before it.
const heldSQL = `
SELECT EXISTS (
  SELECT 1 FROM outbox
  WHERE (xid, id) > ($1::xid8, $2::bigint)
    AND xid >= ` + horizon + `)`

// held reports whether committed events after cursor are waiting for an
// older transaction to finish, which may end without any notification.
func held(ctx context.Context, q sqlx.QueryerContext, cursor string) (bool, error) {
	xid, id, err := parseCursor(cursor)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := sqlx.GetContext(ctx, q, &ok, heldSQL, xid, id); err != nil {
		return false, fmt.Errorf("check held events since %q: %w", cursor, err)
	}
	return ok, nil
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
