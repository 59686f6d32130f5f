package verify

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
)

// The runs' modes, as verify_runs.mode stores them.
const (
	ModeFull        = "full"
	ModeIncremental = "incremental"
)

// cleanRun is the last run recorded without a breach.
type cleanRun struct {
	id         int64
	snapshot   string
	lastClosed *periods.Month
}

// startingPoint returns the window a run checks set by set, and the last
// clean run (nil when there is none).
//
// Why a month and not a set id or an xid: ids are taken when a set is
// inserted and committed in any order, so a set with a lower id than one
// verified may commit after the run (a high-water mark of ids would skip
// it forever). The run's snapshot says exactly which sets it saw
// (pg_visible_in_snapshot of created_xid), but the sets it did not see are
// only known to be in months that were open in it: the database refuses
// a set in a closed month (trg_posting_sets_open_month, under the close
// lock, which waits for every set in flight) and months never reopen. So
// an incremental run checks every set of the months after the last one
// closed in the clean run's snapshot: every set that snapshot did not
// see, in whatever order ids committed, and again the sets it did see in
// those months (an open month is small beside the ledger, and an edit of
// an already verified set in it is found this way). The months before are
// held to their seals. The snapshot is kept to count the new sets.
func startingPoint(ctx context.Context, tx *sqlx.Tx, incremental bool) (window, *cleanRun, error) {
	var rows []struct {
		ID         int64        `db:"id"`
		Snapshot   string       `db:"snapshot"`
		LastClosed sql.NullTime `db:"last_closed"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT id, snapshot::text AS snapshot, last_closed FROM verify_runs
		WHERE breaches = 0 ORDER BY id DESC LIMIT 1`); err != nil {
		return window{}, nil, fmt.Errorf("read the last clean run: %w", err)
	}
	if len(rows) == 0 {
		return window{full: true}, nil, nil
	}
	prev := &cleanRun{id: rows[0].ID, snapshot: rows[0].Snapshot}
	if rows[0].LastClosed.Valid {
		m := periods.MonthOf(rows[0].LastClosed.Time.UTC())
		prev.lastClosed = &m
	}
	if !incremental || prev.lastClosed == nil {
		return window{full: true}, prev, nil
	}
	return window{from: prev.lastClosed.Next()}, prev, nil
}

// countScope counts what the run checks set by set (every set and
// posting when full), and of those sets the ones the last clean run did
// not see.
func countScope(ctx context.Context, tx *sqlx.Tx, w window, prev *cleanRun, r *Report) error {
	var snap *string
	if prev != nil {
		snap = &prev.snapshot
	}
	from := "-infinity"
	if !w.full {
		from = w.from.First().Format("2006-01-02")
	}
	if err := tx.QueryRowxContext(ctx, `SELECT
			(SELECT count(*) FROM posting_sets WHERE competence >= $1::date),
			(SELECT count(*) FROM posting_sets WHERE competence >= $1::date
				AND ($2::pg_snapshot IS NULL OR (created_xid >= pg_snapshot_xmin($2::pg_snapshot) AND NOT pg_visible_in_snapshot(created_xid, $2::pg_snapshot)))),
			(SELECT count(*) FROM postings WHERE competence_month >= $1::date)`, from, snap).Scan(&r.Sets, &r.NewSets, &r.Postings); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return nil
}

// record stores the run in verify_runs and, when it is clean, the seals
// of the months closed in its snapshot that had none. A run on a
// read-only database (a standby) is not recorded, and says so.
func record(ctx context.Context, db *sqlx.DB, r *Report, rec recording, started time.Time) error {
	if rec.snapshot == "" {
		return nil // stopped before reading the ledger (row-level security)
	}
	var readOnly bool
	if err := db.GetContext(ctx, &readOnly, `SELECT pg_is_in_recovery() OR current_setting('default_transaction_read_only')::boolean`); err != nil {
		return fmt.Errorf("verify: record the run: %w", err)
	}
	if readOnly {
		return nil
	}
	var breaches int64
	for _, c := range r.Checks {
		breaches += c.Breaches
	}
	var lastClosed *time.Time
	if rec.lastClosed != nil {
		t := rec.lastClosed.First()
		lastClosed = &t
	}
	var from *time.Time
	if r.Mode == ModeIncremental {
		m, err := periods.ParseMonth(r.From)
		if err != nil {
			return fmt.Errorf("verify: record the run: %w", err)
		}
		t := m.First()
		from = &t
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("verify: record the run: %w", err)
	}
	defer tx.Rollback()
	var id int64
	if err := tx.GetContext(ctx, &id, `INSERT INTO verify_runs (mode, started_at, snapshot, last_closed, from_month, sets_checked, new_sets, months_sealed, breaches)
		VALUES ($1, $2, $3::pg_snapshot, $4, $5, $6, $7, $8, $9) RETURNING id`,
		r.Mode, started, rec.snapshot, lastClosed, from, r.Sets, r.NewSets, r.MonthsSealed, breaches); err != nil {
		return fmt.Errorf("verify: record the run: %w", err)
	}
	sealed := 0
	if breaches == 0 {
		for _, s := range rec.fresh {
			res, err := tx.ExecContext(ctx, `INSERT INTO verify_month_seals (month, sets, postings, digest, run_id)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT (month) DO NOTHING`, s.Month, s.Sets, s.Postings, s.Digest, id)
			if err != nil {
				return fmt.Errorf("verify: seal %s: %w", periods.MonthOf(s.Month.UTC()), err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				sealed++
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("verify: record the run: %w", err)
	}
	r.Run, r.NewSeals = id, sealed
	return nil
}
