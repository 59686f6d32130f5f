package inbox

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The inbox's reads for packages outside the delivery path, which know
// the inbox only through them (their statements are in sql.go).

// Summary is what a reader outside the delivery path may know of a
// stored delivery: no body, no headers, no event.
type Summary struct {
	ID         int64     `db:"id"`
	Endpoint   string    `db:"endpoint"`
	Scheme     string    `db:"scheme"`
	EventType  string    `db:"event_type"`
	EventID    string    `db:"event_id"`
	Kind       string    `db:"kind"` // a scheme.Kind's word, or "malformed"
	Status     Status    `db:"status"`
	Attempts   int       `db:"attempts"`
	ReceivedAt time.Time `db:"received_at"`
	// ProcessedAt is nil until the delivery is processed (or set aside).
	ProcessedAt *time.Time `db:"processed_at"`
}

// Summaries returns the stored deliveries with the given ids, in no
// particular order; an id with no delivery has no Summary.
func Summaries(ctx context.Context, q sqlx.QueryerContext, ids []int64) ([]Summary, error) {
	var rows []Summary
	if err := sqlx.SelectContext(ctx, q, &rows, summariesSQL, pq.Array(ids)); err != nil {
		return nil, err
	}
	return rows, nil
}

// Backlog is what the inbox holds back, as the service's gauges show it.
type Backlog struct {
	// Pending counts the deliveries stored and not yet applied.
	Pending int64 `db:"pending"`
	// Oldest is the age in seconds of the oldest of them, 0 with none.
	Oldest float64 `db:"oldest"`
	// Parked counts the refunds parked until their payment lands.
	Parked int64 `db:"parked"`
}

// ReadBacklog reads the inbox's Backlog in one statement.
func ReadBacklog(ctx context.Context, q sqlx.QueryerContext) (Backlog, error) {
	var b Backlog
	err := sqlx.GetContext(ctx, q, &b, backlogSQL)
	return b, err
}
