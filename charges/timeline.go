package charges

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/snapshot"
	"github.com/razao/razao/postings"
)

// MaxTimelinePerKind bounds each kind of a timeline's entries: a charge
// refunded a centavo at a time, or redelivered for days, shows its
// first ones and says the rest exist (Timeline.Truncated).
const MaxTimelinePerKind = 200

// The kinds of a timeline's entries.
const (
	EntryDelivery      = "delivery"
	EntryPostingSet    = "posting_set"
	EntryDivergence    = "divergence"
	EntryStatementLine = "statement_line"
	EntryEvent         = "event"
)

// entryOrder orders entries of one instant: a delivery before the sets
// it booked, the sets before the divergence or the event of the same
// transaction, the statement that found it last.
var entryOrder = map[string]int{EntryDelivery: 0, EntryPostingSet: 1, EntryDivergence: 2, EntryEvent: 3, EntryStatementLine: 4}

// Timeline is everything razao recorded about a charge, in time order.
type Timeline struct {
	ChargeID string          `json:"charge_id"`
	Entries  []TimelineEntry `json:"entries"`
	// PerKindLimit is how many entries of each kind are shown at most:
	// the oldest ones.
	PerKindLimit int `json:"per_kind_limit"`
	// Truncated names the kinds of which the charge has more entries
	// than PerKindLimit; empty when the timeline is whole.
	Truncated []string `json:"truncated"`
}

// TimelineEntry is one thing that happened to a charge, at At, as its
// Type says; the field of that type holds it.
type TimelineEntry struct {
	Type          string            `json:"type"`
	At            time.Time         `json:"at"`
	Delivery      *Delivery         `json:"delivery,omitempty"`
	PostingSet    *BookedSet        `json:"posting_set,omitempty"`
	Divergence    *ChargeDivergence `json:"divergence,omitempty"`
	StatementLine *StatementLine    `json:"statement_line,omitempty"`
	Event         *ChargeEvent      `json:"event,omitempty"`
}

// Delivery is a PSP's delivery about the charge, as the inbox stored it
// and how far it went; At is when it was received.
type Delivery struct {
	ID          int64      `json:"id"`
	Endpoint    string     `json:"endpoint"`
	Scheme      string     `json:"scheme"`
	EventType   string     `json:"event_type"`
	EventID     string     `json:"event_id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	ReceivedAt  time.Time  `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at,omitempty"`
}

// BookedSet is a posting set of the charge; At is when it was booked.
type BookedSet struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	Amount     int64     `json:"amount"`
	Competence string    `json:"competence"` // YYYY-MM-DD
	EventAt    time.Time `json:"event_at"`
	BookedAt   time.Time `json:"booked_at"`
}

// ChargeDivergence is a divergence about the charge; At is when it was opened.
type ChargeDivergence struct {
	ID         int64      `json:"id"`
	Source     string     `json:"source"`
	Reason     string     `json:"reason"`
	Status     string     `json:"status"`
	OpenedAt   time.Time  `json:"opened_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// DetailPT is its detail in Portuguese, for the console's timeline
	// (divergences.Divergence.DetailPT); not in the API.
	DetailPT string `json:"-"`
}

// StatementLine is a line of a reconciliation run's statement matched to
// the charge; At is when the run started.
type StatementLine struct {
	RunID        int64     `db:"run_id" json:"run_id"`
	Endpoint     string    `db:"endpoint" json:"endpoint"`
	RunStartedAt time.Time `db:"started_at" json:"run_started_at"`
	Line         int64     `db:"line" json:"line"`
	Side         string    `db:"side" json:"side"`
	Kind         string    `db:"kind" json:"kind"`
	Amount       int64     `db:"amount" json:"amount"`
	// Outcome is matched, booked or divergence; empty while undecided.
	Outcome string `db:"outcome" json:"outcome"`
	Reason  string `db:"reason" json:"reason,omitempty"`
	// LineAt is the time the statement gives the line, when it gives one.
	LineAt *time.Time `db:"at" json:"line_at,omitempty"`
}

// ChargeEvent is an outbox event about the charge; At is when it was appended.
type ChargeEvent struct {
	ID    int64  `json:"id"`
	Topic string `json:"topic"`
}

// TimelineSources are the reads of a timeline this package cannot call:
// the inbox's and reconciliation's packages import this one. Each
// returns the charge's rows of its kind, oldest first, at most limit;
// refs are the charge's id and the PSP reference the app registered.
type TimelineSources struct {
	Deliveries func(ctx context.Context, q sqlx.QueryerContext, refs []string, limit int) ([]Delivery, error)
	Lines      func(ctx context.Context, q sqlx.QueryerContext, chargeID string, limit int) ([]StatementLine, error)
}

// GetTimeline returns the timeline of the charge id, every kind read by
// its table's owner and all in one snapshot (given a pool, a read-only
// transaction of its own); ErrNotFound when there is no such charge.
func GetTimeline(ctx context.Context, q sqlx.QueryerContext, id string, src TimelineSources) (Timeline, error) {
	var tl Timeline
	err := snapshot.Read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		tl, err = getTimeline(ctx, q, id, src)
		return err
	})
	return tl, err
}

func getTimeline(ctx context.Context, q sqlx.QueryerContext, id string, src TimelineSources) (Timeline, error) {
	c, err := Get(ctx, q, id)
	if err != nil {
		return Timeline{}, err
	}
	const limit = MaxTimelinePerKind
	tl := Timeline{ChargeID: c.ID, Entries: []TimelineEntry{}, PerKindLimit: limit, Truncated: []string{}}
	// keep adds the first limit of n entries of kind, noting when there
	// were more (each read asks for one more than it shows).
	keep := func(kind string, n int, entry func(i int) TimelineEntry) {
		if n > limit {
			tl.Truncated = append(tl.Truncated, kind)
			n = limit
		}
		for i := range n {
			tl.Entries = append(tl.Entries, entry(i))
		}
	}

	refs := []string{c.ID}
	if c.PSPRef != nil {
		refs = append(refs, *c.PSPRef)
	}
	deliveries, err := src.Deliveries(ctx, q, refs, limit+1)
	if err != nil {
		return Timeline{}, fmt.Errorf("deliveries of %s: %w", id, err)
	}
	keep(EntryDelivery, len(deliveries), func(i int) TimelineEntry {
		return TimelineEntry{Type: EntryDelivery, At: deliveries[i].ReceivedAt, Delivery: &deliveries[i]}
	})

	sets, err := postings.ChargeSetsBooked(ctx, q, c.ID, limit+1)
	if err != nil {
		return Timeline{}, fmt.Errorf("posting sets of %s: %w", id, err)
	}
	keep(EntryPostingSet, len(sets), func(i int) TimelineEntry {
		s := sets[i]
		return TimelineEntry{Type: EntryPostingSet, At: s.CreatedAt, PostingSet: &BookedSet{
			ID: s.ID, Kind: s.Kind, Amount: s.Amount, Competence: s.Competence, EventAt: s.EventAt, BookedAt: s.CreatedAt}}
	})

	divs, err := divergences.OfCharge(ctx, q, c.ID, limit+1)
	if err != nil {
		return Timeline{}, fmt.Errorf("divergences of %s: %w", id, err)
	}
	keep(EntryDivergence, len(divs), func(i int) TimelineEntry {
		d := divs[i]
		return TimelineEntry{Type: EntryDivergence, At: d.CreatedAt, Divergence: &ChargeDivergence{
			ID: d.ID, Source: string(d.Source), Reason: string(d.Reason), Status: string(d.Status), OpenedAt: d.CreatedAt, ResolvedAt: d.ResolvedAt,
			DetailPT: d.DetailPT()}}
	})

	lines, err := src.Lines(ctx, q, c.ID, limit+1)
	if err != nil {
		return Timeline{}, fmt.Errorf("statement lines of %s: %w", id, err)
	}
	keep(EntryStatementLine, len(lines), func(i int) TimelineEntry {
		return TimelineEntry{Type: EntryStatementLine, At: lines[i].RunStartedAt, StatementLine: &lines[i]}
	})

	evs, err := events.OfCharge(ctx, q, c.ID, limit+1)
	if err != nil {
		return Timeline{}, fmt.Errorf("events of %s: %w", id, err)
	}
	keep(EntryEvent, len(evs), func(i int) TimelineEntry {
		return TimelineEntry{Type: EntryEvent, At: evs[i].CreatedAt, Event: &ChargeEvent{ID: evs[i].ID, Topic: string(evs[i].Topic)}}
	})

	slices.SortStableFunc(tl.Entries, func(a, b TimelineEntry) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(entryOrder[a.Type], entryOrder[b.Type]))
	})
	return tl, nil
}
