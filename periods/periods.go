package periods

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Period is one competence month and its status.
type Period struct {
	Month string `json:"month"`
	// Status is "open" or "closed".
	Status   string     `json:"status"`
	ClosedAt *time.Time `json:"closed_at,omitempty"`
	ClosedBy string     `json:"closed_by,omitempty"`
	// Snapshot is true when the month's figures are stored.
	Snapshot bool `json:"snapshot"`
	// Activity is true when the month has posting sets.
	Activity bool `json:"activity"`
	// Closable is true for the one month Close would close now: the
	// first open month of the list, once it has ended.
	Closable bool `json:"closable"`
}

// List lists every month from the first that has posting sets or is
// closed to the current month (in cal's zone at now), gaps included
// (months close in order, so a month without activity still has to be
// closed), oldest first. Nothing before cal's go-live month is listed, so
// the list stays short whatever a ledger holds (a set dated 0001-01,
// written before the ledger refused such dates, would otherwise make it
// 24,000 years long); a ledger with nothing in that range lists nothing.
// The months with activity are found by a skip scan of
// ix_posting_sets_competence_month: one index probe per month, whatever the
// ledger's size.
func List(ctx context.Context, q sqlx.QueryerContext, cal Calendar, now time.Time) ([]Period, error) {
	var rows []struct {
		Month    time.Time      `db:"month"`
		Last     sql.NullTime   `db:"last_closed"`
		ClosedAt sql.NullTime   `db:"closed_at"`
		ClosedBy sql.NullString `db:"closed_by"`
		Snapshot bool           `db:"snapshot"`
		Activity bool           `db:"activity"`
	}
	from, to := cal.GoLiveMonth().First(), cal.Month(now).First()
	err := sqlx.SelectContext(ctx, q, &rows, `
		WITH RECURSIVE active AS (
			(SELECT competence_month AS month FROM posting_sets WHERE competence_month >= $1
				ORDER BY competence_month LIMIT 1)
			UNION ALL
			SELECT (SELECT s.competence_month FROM posting_sets s WHERE s.competence_month > a.month
				ORDER BY s.competence_month LIMIT 1)
			FROM active a WHERE a.month <= $2
		), known AS (
			SELECT month FROM active WHERE month BETWEEN $1 AND $2
			UNION SELECT month FROM closed_periods WHERE month BETWEEN $1 AND $2
		), span AS (
			SELECT min(month) AS lo FROM known
		)
		SELECT g.month, (SELECT max(month) FROM closed_periods) AS last_closed, c.closed_at, c.closed_by,
			s.month IS NOT NULL AS snapshot,
			EXISTS (SELECT 1 FROM active a WHERE a.month = g.month) AS activity
		FROM span, LATERAL (SELECT d::date AS month FROM generate_series(span.lo, $2::date, interval '1 month') d) g
		LEFT JOIN closed_periods c ON c.month = g.month
		LEFT JOIN month_snapshots s ON s.month = g.month
		ORDER BY g.month`, from, to)
	if err != nil {
		return nil, fmt.Errorf("periods: %w", err)
	}
	out := make([]Period, len(rows))
	next := true // the first open month is the next to close
	for i, r := range rows {
		m := MonthOf(r.Month.UTC())
		p := Period{Month: m.String(), Status: "open", Snapshot: r.Snapshot, Activity: r.Activity}
		// A month before the last closed one is closed with it (sql/0035),
		// its own close only if a close named it.
		closed := Closed(m, MonthOrZero(r.Last))
		if closed {
			p.Status = "closed"
		}
		if r.ClosedAt.Valid {
			t := r.ClosedAt.Time
			p.ClosedAt = &t
			p.ClosedBy = r.ClosedBy.String
		}
		// Months close in order, from the first listed (the ledger's first
		// from go-live on, or the one after the last closed), and only once
		// over: Close's own rules.
		if !closed && next {
			p.Closable, next = CheckCloseTime(cal, m, now) == nil, false
		}
		out[i] = p
	}
	return out, nil
}
