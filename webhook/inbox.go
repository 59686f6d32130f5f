package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/events"
	"github.com/razao/razao/webhook/scheme"
)

// Inbox stores authentic deliveries, each exactly once per delivery key.
type Inbox struct {
	db *sqlx.DB
}

// NewInbox returns the inbox over db.
func NewInbox(db *sqlx.DB) *Inbox { return &Inbox{db: db} }

// entry is one inbox row to write.
type entry struct {
	key, eventType, eventID, kind, chargeRef string
	event                                    []byte
	status                                   string
}

// Stored says what the inbox did with one entry.
type Stored struct {
	ID        int64 // 0 for a duplicate
	Key       string
	Duplicate bool
}

// keptHeaders are the headers worth keeping for audit and reconciliation.
// Anything that may carry a secret (X-Webhook-Secret, Authorization,
// cookies, the query string) is left out on purpose.
var keptHeaders = []string{"Content-Type", "User-Agent", "X-Hodle-Timestamp", "X-Hodle-Signature",
	"X-Webhook-Signature", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "X-Request-Id"}

func auditHeaders(h http.Header) []byte {
	kept := map[string]string{}
	for _, name := range keptHeaders {
		if v := h.Get(name); v != "" {
			if len(v) > 512 {
				v = v[:512]
			}
			kept[name] = v
		}
	}
	b, _ := json.Marshal(kept)
	return b
}

// deliveryKey is (endpoint, event type, the PSP's stable event id): what
// makes two deliveries the same notification.
func deliveryKey(endpoint, eventType, eventID string) string {
	return endpoint + "|" + eventType + "|" + eventID
}

func entriesFor(ep *Endpoint, evs []scheme.Event, body []byte) []entry {
	out := make([]entry, 0, len(evs))
	for _, ev := range evs {
		id := ev.EventID
		if id == "" {
			// An ignored event may carry no id: key it by its bytes.
			id = "sha256:" + bodyHash(body)
		}
		ref := ev.ChargeID
		if ref == "" {
			ref = ev.PSPRef
		}
		status := "pending"
		if ev.Kind == scheme.KindIgnored || ev.Kind == scheme.KindTest {
			status = "ignored"
		}
		b, _ := json.Marshal(ev)
		out = append(out, entry{key: deliveryKey(ep.Name, ev.Type, id), eventType: ev.Type, eventID: id,
			kind: string(ev.Kind), chargeRef: ref, event: b, status: status})
	}
	return out
}

func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// Put writes the entries of one delivery in one transaction with
// INSERT … ON CONFLICT DO NOTHING RETURNING: a returned row is a first
// delivery, a missing one a duplicate. It returns only after COMMIT, so
// the caller may answer 2xx; any error means nothing was stored.
func (in *Inbox) put(ctx context.Context, ep *Endpoint, entries []entry, body []byte, headers []byte) ([]Stored, error) {
	n := len(entries)
	keys, types, ids, kinds, refs, evs, statuses := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range entries {
		keys[i], types[i], ids[i], kinds[i], refs[i], evs[i], statuses[i] = e.key, e.eventType, e.eventID, e.kind, e.chargeRef, string(e.event), e.status
	}
	// One statement in autocommit: a single round trip, and the rows are
	// read to the end (ReadyForQuery, after COMMIT) before anyone is told
	// the delivery is stored.
	rows, err := in.db.QueryxContext(ctx, `
		INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, headers, status, next_attempt_at)
		SELECT k, $2, $3, $4, t, i, kd, NULLIF(r, ''), e::jsonb, $9, $10, s, now() + interval '5 seconds'
		FROM unnest($1::text[], $5::text[], $6::text[], $7::text[], $8::text[], $11::text[], $12::text[]) AS u (k, t, i, kd, r, e, s)
		ON CONFLICT (delivery_key) DO NOTHING
		RETURNING id, delivery_key`,
		pq.Array(keys), ep.Name, ep.Scheme.Name(), ep.Merchant, pq.Array(types), pq.Array(ids), pq.Array(kinds),
		pq.Array(refs), body, string(headers), pq.Array(evs), pq.Array(statuses))
	if err != nil {
		return nil, fmt.Errorf("inbox: insert: %w", err)
	}
	inserted := map[string]int64{}
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return nil, fmt.Errorf("inbox: scan: %w", err)
		}
		inserted[key] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbox: insert: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("inbox: insert: %w", err)
	}
	out := make([]Stored, n)
	for i, e := range entries {
		id, ok := inserted[e.key]
		out[i] = Stored{ID: id, Key: e.key, Duplicate: !ok}
	}
	return out, nil
}

// putMalformed keeps an authentic delivery whose payload could not be
// read, with a divergence for finance, so the PSP can stop retrying.
func (in *Inbox) putMalformed(ctx context.Context, ep *Endpoint, deliveryID string, body, headers []byte, cause error) (Stored, error) {
	if deliveryID == "" {
		deliveryID = "sha256:" + bodyHash(body)
	}
	key := deliveryKey(ep.Name, "malformed", deliveryID)
	tx, err := in.db.BeginTxx(ctx, nil)
	if err != nil {
		return Stored{}, fmt.Errorf("inbox: begin: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.GetContext(ctx, &id, `
		INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body, headers, status, last_error, processed_at)
		VALUES ($1, $2, $3, $4, 'malformed', $5, 'malformed', '{}', $6, $7, 'divergent', $8, now())
		ON CONFLICT (delivery_key) DO NOTHING RETURNING id`,
		key, ep.Name, ep.Scheme.Name(), ep.Merchant, deliveryID, body, string(headers), cause.Error())
	if err != nil {
		if isNoRows(err) {
			return Stored{Key: key, Duplicate: true}, nil
		}
		return Stored{}, fmt.Errorf("inbox: insert malformed: %w", err)
	}
	if err := openDivergence(ctx, tx, id, "", "malformed", cause.Error()); err != nil {
		return Stored{}, err
	}
	if err := tx.Commit(); err != nil {
		return Stored{}, fmt.Errorf("inbox: commit: %w", err)
	}
	return Stored{ID: id, Key: key}, nil
}

// openDivergence records a permanent problem with a delivery for finance
// and tells the app.
func openDivergence(ctx context.Context, tx *sqlx.Tx, inboxID int64, chargeID, reason, detail string) error {
	var id int64
	err := tx.GetContext(ctx, &id, `INSERT INTO divergences (inbox_id, charge_id, reason, detail)
		VALUES ($1, NULLIF($2, ''), $3, $4) ON CONFLICT (inbox_id) DO NOTHING RETURNING id`, inboxID, chargeID, reason, detail)
	if isNoRows(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open divergence for delivery %d: %w", inboxID, err)
	}
	return events.Append(ctx, tx, events.TopicDivergenceOpened, chargeID, map[string]any{
		"divergence_id": id, "delivery_id": inboxID, "charge_id": chargeID, "reason": reason, "detail": detail,
	})
}
