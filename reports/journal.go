package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/cursor"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// JournalPosting is one posting of a set: signed centavos, debit positive.
type JournalPosting struct {
	ID       int64  `db:"id" json:"id"`
	Account  string `db:"account" json:"account"`
	Currency string `db:"currency" json:"currency"`
	Amount   int64  `db:"amount" json:"amount"`
}

// JournalSet is one posting set (journal entry) with its postings.
type JournalSet struct {
	ID             int64  `json:"id"`
	Kind           string `json:"kind"`
	IdempotencyKey string `json:"idempotency_key"`
	// Amount is the business amount of the event (the sale's total, the
	// refund's amount...).
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// Competence is the date the set is booked on, YYYY-MM-DD.
	Competence string `json:"competence"`
	// EventAt is when the event happened (UTC); it differs from
	// Competence's month for a late event booked after its month closed.
	EventAt     time.Time        `json:"event_at"`
	ChargeID    string           `json:"charge_id,omitempty"`
	RefundID    string           `json:"refund_id,omitempty"`
	Partner     string           `json:"partner,omitempty"`
	InboxID     int64            `json:"inbox_id,omitempty"`
	Description string           `json:"description"`
	CreatedAt   time.Time        `json:"created_at"`
	Postings    []JournalPosting `json:"postings"`
}

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
	page := JournalPage{Month: m.String(), Sets: make([]JournalSet, 0, min(len(sets), limit))}
	if len(sets) > limit {
		sets = sets[:limit]
		page.NextCursor = cursor.Encode(scope, sets[limit-1].ID)
	}
	if len(sets) == 0 {
		return page, nil
	}
	ids := make([]int64, len(sets))
	index := make(map[int64]int, len(sets))
	for i, s := range sets {
		ids[i] = s.ID
		index[s.ID] = i
		page.Sets = append(page.Sets, JournalSet{
			ID: s.ID, Kind: s.Kind, IdempotencyKey: s.IdempotencyKey, Amount: s.Amount, Currency: s.Currency,
			Competence: s.Competence.UTC().Format(time.DateOnly), EventAt: s.EventAt.UTC(),
			ChargeID: s.ChargeID.String, RefundID: s.RefundID.String, Partner: s.Partner.String,
			InboxID: s.InboxID.Int64, Description: s.Description, CreatedAt: s.CreatedAt.UTC(),
			Postings: []JournalPosting{},
		})
	}
	legs, err := postings.LegsOf(ctx, q, ids)
	if err != nil {
		return JournalPage{}, fmt.Errorf("journal %s: postings: %w", m, err)
	}
	for _, l := range legs {
		s := &page.Sets[index[l.SetID]]
		s.Postings = append(s.Postings, JournalPosting{ID: l.ID, Account: l.Account, Currency: l.Currency, Amount: l.Amount})
	}
	return page, nil
}
