package adjustments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/events"
)

// Every statement over the adjustments table (sql/0046).

// columns are the columns a row is read from.
const columns = `id, kind, status, idempotency_key, request_hash, reason, legs, amount, currency, competence, charge_id,
	partner, divergence_id, reverses, four_eyes, proposed_by, proposed_at, expires_at, decided_by, decided_at,
	decision_note, posting_set_id`

// row is a proposal as stored.
type row struct {
	ID             int64           `db:"id"`
	Kind           Kind            `db:"kind"`
	Status         Status          `db:"status"`
	IdempotencyKey sql.NullString  `db:"idempotency_key"`
	RequestHash    string          `db:"request_hash"`
	Reason         string          `db:"reason"`
	Legs           json.RawMessage `db:"legs"`
	Amount         int64           `db:"amount"`
	Currency       string          `db:"currency"`
	Competence     sql.NullTime    `db:"competence"`
	ChargeID       sql.NullString  `db:"charge_id"`
	Partner        sql.NullString  `db:"partner"`
	DivergenceID   sql.NullInt64   `db:"divergence_id"`
	Reverses       sql.NullInt64   `db:"reverses"`
	FourEyes       bool            `db:"four_eyes"`
	ProposedBy     string          `db:"proposed_by"`
	ProposedAt     time.Time       `db:"proposed_at"`
	ExpiresAt      time.Time       `db:"expires_at"`
	DecidedBy      sql.NullString  `db:"decided_by"`
	DecidedAt      sql.NullTime    `db:"decided_at"`
	DecisionNote   sql.NullString  `db:"decision_note"`
	PostingSetID   sql.NullInt64   `db:"posting_set_id"`
}

func (r row) adjustment() Adjustment {
	a := Adjustment{ID: r.ID, Kind: r.Kind, Status: r.Status, Reason: r.Reason, Amount: r.Amount, Currency: r.Currency,
		IdempotencyKey: r.IdempotencyKey.String, ChargeID: r.ChargeID.String, Partner: r.Partner.String,
		DivergenceID: r.DivergenceID.Int64, Reverses: r.Reverses.Int64, FourEyes: r.FourEyes, ProposedBy: r.ProposedBy,
		ProposedAt: r.ProposedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), DecidedBy: r.DecidedBy.String,
		DecisionNote: r.DecisionNote.String, PostingSetID: r.PostingSetID.Int64}
	if r.Competence.Valid {
		a.Competence = r.Competence.Time.UTC().Format(time.DateOnly)
	}
	if r.DecidedAt.Valid {
		t := r.DecidedAt.Time.UTC()
		a.DecidedAt = &t
	}
	json.Unmarshal(r.Legs, &a.Legs)
	if a.Legs == nil {
		a.Legs = []Leg{}
	}
	return a
}

// proposal is a row to insert.
type proposal struct {
	kind         Kind
	key          string
	hash         string
	reason       string
	legs         []Leg
	amount       int64
	currency     string
	competence   time.Time // zero for a reversal
	chargeID     string
	partner      string
	divergenceID int64
	reverses     int64
	fourEyes     bool
	by           Actor
	at, expires  time.Time
}

// insert writes p unless its key (an adjustment) or its set (a reversal
// proposed or booked) is taken: then it returns false, and the caller
// reads the proposal that holds it.
func insert(ctx context.Context, tx *sqlx.Tx, p proposal) (row, bool, error) {
	legs, err := json.Marshal(p.legs)
	if err != nil {
		return row{}, false, fmt.Errorf("encode legs: %w", err)
	}
	var competence any
	if !p.competence.IsZero() {
		competence = p.competence.Format(time.DateOnly)
	}
	var r row
	err = tx.GetContext(ctx, &r, `INSERT INTO adjustments (kind, idempotency_key, request_hash, reason, legs, amount, currency,
			competence, charge_id, partner, divergence_id, reverses, four_eyes, proposed_by, proposed_by_token, proposed_at, expires_at)
		VALUES ($1, NULLIF($2, ''), $3, $4, $5::jsonb, $6, $7, $8::date, NULLIF($9, ''), NULLIF($10, ''), NULLIF($11, 0),
			NULLIF($12, 0), $13, $14, NULLIF($15, 0), $16, $17)
		ON CONFLICT DO NOTHING
		RETURNING `+columns,
		p.kind, p.key, p.hash, p.reason, string(legs), p.amount, p.currency, competence, p.chargeID, p.partner,
		p.divergenceID, p.reverses, p.fourEyes, p.by.Name, p.by.TokenID, p.at, p.expires)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, fmt.Errorf("insert %s proposal: %w", p.kind, err)
	}
	return r, true, nil
}

// byKey reads the adjustment proposed under key.
func byKey(ctx context.Context, q sqlx.QueryerContext, key string) (row, error) {
	var r row
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+columns+` FROM adjustments WHERE kind = 'adjustment' AND idempotency_key = $1`, key)
	if err != nil {
		return row{}, fmt.Errorf("read adjustment of key %q: %w", key, err)
	}
	return r, nil
}

// reversalOf reads the reversal of set id that is proposed or booked.
func reversalOf(ctx context.Context, q sqlx.QueryerContext, id int64) (row, bool, error) {
	var r row
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+columns+` FROM adjustments
		WHERE kind = 'reversal' AND reverses = $1 AND status IN ('proposed', 'booked')`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, fmt.Errorf("read reversal of set %d: %w", id, err)
	}
	return r, true, nil
}

// lock reads proposal id with its row locked until tx ends: every
// decision is taken under it, so two decisions of one proposal run one
// after the other, and the second sees the first's outcome.
func lock(ctx context.Context, tx *sqlx.Tx, id int64) (row, error) {
	var r row
	err := tx.GetContext(ctx, &r, `SELECT `+columns+` FROM adjustments WHERE id = $1 FOR UPDATE`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return row{}, fmt.Errorf("lock adjustment %d: %w", id, err)
	}
	return r, nil
}

// decide moves proposal id, still proposed, to status, with who decided,
// when, the note and the set booked (0 for none).
func decide(ctx context.Context, tx *sqlx.Tx, id int64, status Status, by Actor, at time.Time, note string, setID int64, competence time.Time) (row, error) {
	var comp any
	if !competence.IsZero() {
		comp = competence.Format(time.DateOnly)
	}
	var r row
	err := tx.GetContext(ctx, &r, `UPDATE adjustments SET status = $2, decided_by = NULLIF($3, ''), decided_by_token = NULLIF($4, 0),
			decided_at = $5, decision_note = NULLIF($6, ''), posting_set_id = NULLIF($7, 0), competence = coalesce($8::date, competence)
		WHERE id = $1 AND status = 'proposed'
		RETURNING `+columns, id, status, by.Name, by.TokenID, at, note, setID, comp)
	if err != nil {
		return row{}, fmt.Errorf("%s adjustment %d: %w", status, id, err)
	}
	return r, nil
}

// expireDue marks at most limit proposals whose time ran out at now
// expired, skipping any a decision holds locked, and returns them.
func expireDue(ctx context.Context, tx *sqlx.Tx, now time.Time, limit int) ([]row, error) {
	var rs []row
	err := tx.SelectContext(ctx, &rs, `UPDATE adjustments SET status = 'expired', decided_at = $1
		WHERE id IN (SELECT id FROM adjustments WHERE status = 'proposed' AND expires_at <= $1
			ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING `+columns, now, limit)
	if err != nil {
		return nil, fmt.Errorf("expire adjustments: %w", err)
	}
	return rs, nil
}

// Get returns proposal id.
func Get(ctx context.Context, q sqlx.QueryerContext, id int64) (Adjustment, error) {
	var r row
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+columns+` FROM adjustments WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Adjustment{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Adjustment{}, fmt.Errorf("read adjustment %d: %w", id, err)
	}
	return r.adjustment(), nil
}

// Filter narrows List; zero fields do not filter.
type Filter struct {
	Status Status
	Kind   Kind
}

// List returns up to limit proposals (cursor.Limit) of f with an id above
// after, oldest first, and whether more follow. A status filter reads
// ix_adjustments_status_id; none, the primary key.
func List(ctx context.Context, q sqlx.QueryerContext, f Filter, after int64, limit int) ([]Adjustment, bool, error) {
	// Conditions of constant text, so that a status filter is planned on
	// its index whatever the plan cache holds.
	where, args := `id > $1`, []any{after, limit + 1}
	if f.Status != "" {
		args = append(args, string(f.Status))
		where += fmt.Sprintf(` AND status = $%d`, len(args))
	}
	if f.Kind != "" {
		args = append(args, string(f.Kind))
		where += fmt.Sprintf(` AND kind = $%d`, len(args))
	}
	var rs []row
	err := sqlx.SelectContext(ctx, q, &rs, `SELECT `+columns+` FROM adjustments WHERE `+where+` ORDER BY id LIMIT $2`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list adjustments: %w", err)
	}
	more := len(rs) > limit
	if more {
		rs = rs[:limit]
	}
	out := make([]Adjustment, len(rs))
	for i, r := range rs {
		out[i] = r.adjustment()
	}
	return out, more, nil
}

// event is the outbox event of r's state now.
func event(r row) events.Draft {
	topic := map[Status]events.Topic{StatusProposed: events.TopicAdjustmentProposed, StatusBooked: events.TopicAdjustmentBooked,
		StatusRejected: events.TopicAdjustmentRejected, StatusExpired: events.TopicAdjustmentExpired}[r.Status]
	payload := map[string]any{"adjustment_id": r.ID, "kind": r.Kind, "status": r.Status, "amount": r.Amount,
		"currency": r.Currency, "proposed_by": r.ProposedBy, "four_eyes": r.FourEyes}
	if r.DecidedBy.Valid {
		payload["decided_by"] = r.DecidedBy.String
	}
	if r.PostingSetID.Valid {
		payload["posting_set_id"] = r.PostingSetID.Int64
	}
	if r.Reverses.Valid {
		payload["reverses"] = r.Reverses.Int64
	}
	if r.Partner.Valid {
		payload["partner"] = r.Partner.String
	}
	if r.DivergenceID.Valid {
		payload["divergence_id"] = r.DivergenceID.Int64
	}
	if r.Competence.Valid {
		payload["competence"] = r.Competence.Time.UTC().Format(time.DateOnly)
	}
	return events.Draft{Topic: topic, ChargeID: r.ChargeID.String, Payload: payload}
}
