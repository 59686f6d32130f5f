package monthsums

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/exact"
	"github.com/razao/razao/periods"
)

// Refresh brings the stored sums of every month of the ledger up to date:
// a month without sums is summed from its postings, one whose snapshot
// missed sets gets its sums plus those sets (the same reading every
// report makes, Cached), each month in a transaction of its own.
// It is safe to run on every replica at once: a refresh that finds
// another in progress leaves the month to it. It returns how many months
// it stored. Run it off the hot path (razao serve does, every Interval);
// without it reports are right, only slower.
func Refresh(ctx context.Context, db *sqlx.DB) (int, error) {
	var months []time.Time
	err := db.SelectContext(ctx, &months, `
		SELECT d::date FROM generate_series((SELECT min(competence_month) FROM posting_sets),
			(SELECT max(competence_month) FROM posting_sets), interval '1 month') d
		LEFT JOIN month_sums s ON s.month = d::date
		WHERE s.month IS NULL OR pg_snapshot_xmax(s.snapshot) > pg_snapshot_xmax(pg_current_snapshot())
			OR EXISTS (SELECT 1 FROM posting_sets p
			WHERE p.created_xid >= pg_snapshot_xmin(s.snapshot) AND NOT pg_visible_in_snapshot(p.created_xid, s.snapshot)
				AND p.competence_month = s.month)
		ORDER BY 1`)
	if err != nil {
		return 0, fmt.Errorf("month sums: months to refresh: %w", err)
	}
	n := 0
	var foreign error
	for _, t := range months {
		stored, err := refreshMonth(ctx, db, monthOf(t))
		if lostRace(err) {
			continue
		}
		if errors.Is(err, ErrForeignXids) {
			foreign = errors.Join(foreign, err) // the other months are still refreshed
			continue
		}
		if err != nil {
			return n, err
		}
		if stored {
			n++
		}
	}
	return n, foreign
}

// ErrForeignXids says a month holds posting sets stamped with transaction
// ids ahead of the cluster's: its reports sum its postings, slower but
// right, and it keeps no month sums.
var ErrForeignXids = errors.New("transaction ids behind the ledger's")

// Interval is how often razao serve refreshes the month sums: a report
// reads about this long's sets beyond them.
const Interval = 10 * time.Second

// Run refreshes the month sums at once and then every interval
// until ctx ends. A failed refresh is logged and tried again at the next
// tick: reports stay right without it, only slower.
func Run(ctx context.Context, db *sqlx.DB, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := Refresh(ctx, db); err != nil && ctx.Err() == nil {
			log.Warn("month sums: refresh failed", "error", err)
		} else if n > 0 {
			log.Debug("month sums: refreshed", "months", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshMonth stores month m's sums as of this transaction's snapshot,
// through month_sums_refresh (sql/0041): the month sums are written only
// by that function, as the owner, from the postings, never by a role
// that could hand it forged sums. REPEATABLE READ: the sums and
// pg_current_snapshot() are of one snapshot (the function refuses any
// other level).
func refreshMonth(ctx context.Context, db *sqlx.DB, m periods.Month) (bool, error) {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return false, fmt.Errorf("month sums %s: begin: %w", m, err)
	}
	defer tx.Rollback()
	var outcome string
	if err := tx.GetContext(ctx, &outcome, `SELECT month_sums_refresh($1)`, m.First()); err != nil {
		return false, fmt.Errorf("month sums %s: %w", m, err) // lostRace: see Refresh
	}
	switch outcome {
	case "stored":
	case "held":
		// Another replica refreshing the same month holds its row: left
		// to it.
		return false, nil
	case "foreign":
		// Sets stamped with transaction ids this cluster has not reached
		// come from another cluster (a logical restore): which of them a
		// snapshot of this one sees cannot be told from their ids, so the
		// month keeps no sums and its reports sum its postings.
		return false, fmt.Errorf("%w: month sums %s: posting sets carry transaction ids ahead of this cluster's (restored from another?)", ErrForeignXids, m)
	case "overflow":
		return false, fmt.Errorf("%w: month sums %s: an account's debits or credits by one kind of set", exact.ErrSumOverflow, m)
	default:
		return false, fmt.Errorf("month sums %s: month_sums_refresh answered %q", m, outcome)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("month sums %s: commit: %w", m, err)
	}
	return true, nil
}

// lostRace is a refresh that a concurrent refresh of the same month
// serialised out (its snapshot predates the other's commit): the other's
// sums are as good.
func lostRace(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "40001"
}

// Stored returns the months that have stored sums.
func Stored(ctx context.Context, q sqlx.QueryerContext) ([]periods.Month, error) {
	var months []time.Time
	if err := sqlx.SelectContext(ctx, q, &months, `SELECT month FROM month_sums ORDER BY month`); err != nil {
		return nil, fmt.Errorf("stored months: %w", err)
	}
	out := make([]periods.Month, len(months))
	for i, m := range months {
		out[i] = monthOf(m)
	}
	return out, nil
}
