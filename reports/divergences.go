package reports

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
)

// Divergence statuses.
const (
	DivergenceOpen     = "open"
	DivergenceResolved = "resolved"
)

// MaxNoteLength bounds a resolution note, in characters.
const MaxNoteLength = 2000

// Divergence is a delivery the webhook front could not book (unknown
// charge, amount mismatch, refund above what was paid...), set aside for
// finance.
type Divergence struct {
	ID             int64      `json:"id"`
	InboxID        int64      `json:"inbox_id,omitempty"`
	ChargeID       string     `json:"charge_id,omitempty"`
	Reason         string     `json:"reason"`
	Detail         string     `json:"detail"`
	Status         string     `json:"status"`
	ResolutionNote string     `json:"resolution_note,omitempty"`
	ResolvedAt     *time.Time `json:"resolved_at,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

// DivergencePage is one page of divergences.
type DivergencePage struct {
	Divergences []Divergence `json:"divergences"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

type divergenceRow struct {
	ID             int64          `db:"id"`
	InboxID        sql.NullInt64  `db:"inbox_id"`
	ChargeID       sql.NullString `db:"charge_id"`
	Reason         string         `db:"reason"`
	Detail         string         `db:"detail"`
	Status         string         `db:"status"`
	ResolutionNote sql.NullString `db:"resolution_note"`
	ResolvedAt     sql.NullTime   `db:"resolved_at"`
	CreatedAt      time.Time      `db:"created_at"`
}

func (r divergenceRow) divergence() Divergence {
	d := Divergence{
		ID: r.ID, InboxID: r.InboxID.Int64, ChargeID: r.ChargeID.String, Reason: r.Reason, Detail: r.Detail,
		Status: r.Status, ResolutionNote: r.ResolutionNote.String, CreatedAt: r.CreatedAt.UTC(),
	}
	if r.ResolvedAt.Valid {
		t := r.ResolvedAt.Time.UTC()
		d.ResolvedAt = &t
	}
	return d
}

const divergenceColumns = `id, inbox_id, charge_id, reason, detail, status, resolution_note, resolved_at, created_at`

// ListDivergences returns divergences oldest first, those with status
// (DivergenceOpen, DivergenceResolved, or "" for all), limit per page
// (DefaultLimit when ≤ 0, at most MaxLimit). cursor is "" for the first
// page, then the previous page's NextCursor, with the same status.
func ListDivergences(ctx context.Context, q sqlx.QueryerContext, status, cursor string, limit int) (DivergencePage, error) {
	switch status {
	case "", DivergenceOpen, DivergenceResolved:
	default:
		return DivergencePage{}, fmt.Errorf("%w: %q (want open, resolved or empty)", ErrInvalidStatus, status)
	}
	scope := "divergences:" + status
	after, err := decodeCursor(cursor, scope)
	if err != nil {
		return DivergencePage{}, err
	}
	limit = clampLimit(limit)
	var rows []divergenceRow
	err = sqlx.SelectContext(ctx, q, &rows, `SELECT `+divergenceColumns+` FROM divergences
		WHERE ($1 = '' OR status = $1) AND id > $2 ORDER BY id LIMIT $3`, status, after, limit+1)
	if err != nil {
		return DivergencePage{}, fmt.Errorf("list divergences: %w", err)
	}
	page := DivergencePage{Divergences: make([]Divergence, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		page.NextCursor = encodeCursor(scope, rows[limit-1].ID)
	}
	for _, r := range rows {
		page.Divergences = append(page.Divergences, r.divergence())
	}
	return page, nil
}

// GetDivergence returns the divergence with id, or ErrNotFound.
func GetDivergence(ctx context.Context, q sqlx.QueryerContext, id int64) (Divergence, error) {
	var r divergenceRow
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+divergenceColumns+` FROM divergences WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Divergence{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Divergence{}, fmt.Errorf("divergence %d: %w", id, err)
	}
	return r.divergence(), nil
}

// ResolveDivergence marks an open divergence resolved at now with note (1
// to MaxNoteLength characters of valid UTF-8, surrounding space trimmed)
// and returns it. It fails with ErrNotFound, ErrAlreadyResolved or
// ErrInvalidNote. Of two concurrent resolutions one wins; the other gets
// ErrAlreadyResolved. Nothing in the ledger changes: booking what the
// divergence was about, if anything, is a separate posting.
func ResolveDivergence(ctx context.Context, db sqlx.ExtContext, id int64, note string, now time.Time) (Divergence, error) {
	note = strings.TrimSpace(note)
	if note == "" || !utf8.ValidString(note) || utf8.RuneCountInString(note) > MaxNoteLength || strings.ContainsRune(note, 0) {
		return Divergence{}, fmt.Errorf("%w: want 1 to %d characters of text", ErrInvalidNote, MaxNoteLength)
	}
	var r divergenceRow
	err := sqlx.GetContext(ctx, db, &r, `UPDATE divergences SET status = 'resolved', resolution_note = $2, resolved_at = $3
		WHERE id = $1 AND status = 'open' RETURNING `+divergenceColumns, id, note, now)
	if err == nil {
		return r.divergence(), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Divergence{}, fmt.Errorf("resolve divergence %d: %w", id, err)
	}
	if _, err := GetDivergence(ctx, db, id); err != nil {
		return Divergence{}, err
	}
	return Divergence{}, fmt.Errorf("%w: %d", ErrAlreadyResolved, id)
}
