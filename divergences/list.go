package divergences

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/cursor"
)

// Page is one page of divergences.
type Page struct {
	Divergences []Divergence `json:"divergences"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// List returns divergences oldest first, those with status (StatusOpen,
// StatusResolved, or "" for all), limit per page (cursor.DefaultLimit
// when ≤ 0, at most cursor.MaxLimit). pageCursor is "" for the first
// page, then the previous page's NextCursor, with the same status.
func List(ctx context.Context, q sqlx.QueryerContext, status Status, pageCursor string, limit int) (Page, error) {
	switch status {
	case "", StatusOpen, StatusResolved:
	default:
		return Page{}, fmt.Errorf("%w: %q (want open, resolved or empty)", ErrInvalidStatus, status)
	}
	scope := "divergences:" + string(status)
	after, err := cursor.Decode(pageCursor, scope)
	if err != nil {
		return Page{}, err
	}
	limit = cursor.Limit(limit)
	var rows []row
	err = sqlx.SelectContext(ctx, q, &rows, listSQL, string(status), after, limit+1)
	if err != nil {
		return Page{}, fmt.Errorf("list divergences: %w", err)
	}
	page := Page{Divergences: make([]Divergence, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		page.NextCursor = cursor.Encode(scope, rows[limit-1].ID)
	}
	for _, r := range rows {
		page.Divergences = append(page.Divergences, r.divergence())
	}
	return page, nil
}

// Get returns the divergence with id, or ErrNotFound.
func Get(ctx context.Context, q sqlx.QueryerContext, id int64) (Divergence, error) {
	var r row
	err := sqlx.GetContext(ctx, q, &r, getSQL, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Divergence{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Divergence{}, fmt.Errorf("divergence %d: %w", id, err)
	}
	return r.divergence(), nil
}

// CountOpen counts the divergences waiting for finance.
func CountOpen(ctx context.Context, q sqlx.QueryerContext) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, q, &n, countOpenSQL)
	return n, err
}
