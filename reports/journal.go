package reports

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// JournalPosting is one posting of a set, as the journal shows it.
type JournalPosting = postings.FoundLeg

// JournalSet is one posting set (journal entry) with its postings.
type JournalSet = postings.FoundSet

// JournalPage is one page of a month's journal.
type JournalPage struct {
	Month string       `json:"month"`
	Sets  []JournalSet `json:"sets"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Journal returns the posting sets of month m in id order, with their
// postings, limit sets per page (DefaultLimit when ≤ 0, at most MaxLimit).
// pageCursor is "" for the first page, then the NextCursor of the previous
// page; a cursor from another month is ErrInvalidCursor. A closed month's
// pages never change. In an open month a set committed while a client
// pages arrives after the ones already seen, unless a concurrent writer
// took a lower id and committed after the page was read: a client that
// needs every set of a month reads it once closed.
func Journal(ctx context.Context, q sqlx.QueryerContext, m periods.Month, pageCursor string, limit int) (JournalPage, error) {
	if err := m.Check(); err != nil {
		return JournalPage{}, err
	}
	scope := "journal:" + m.String()
	after, err := cursor.Decode(pageCursor, scope)
	if err != nil {
		return JournalPage{}, err
	}
	limit = cursor.Limit(limit)
	var page JournalPage
	err = read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		page, err = journal(ctx, q, m, scope, after, limit)
		return err
	})
	return page, err
}

func journal(ctx context.Context, q sqlx.QueryerContext, m periods.Month, scope string, after int64, limit int) (JournalPage, error) {
	sets, err := postings.MonthSets(ctx, q, m, after, limit+1)
	if err != nil {
		return JournalPage{}, fmt.Errorf("journal %s: %w", m, err)
	}
	page := JournalPage{Month: m.String()}
	if len(sets) > limit {
		sets = sets[:limit]
		page.NextCursor = cursor.Encode(scope, sets[limit-1].ID)
	}
	if page.Sets, err = postings.WithLegs(ctx, q, sets); err != nil {
		return JournalPage{}, fmt.Errorf("journal %s: %w", m, err)
	}
	return page, nil
}
