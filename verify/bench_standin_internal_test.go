package verify

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
)

// StandInCleanRun records, on a bench ledger that has no clean run, what
// a clean full run records (a run row with its snapshot and last closed
// month, and a seal of every closed month, from the same sealsQuery)
// WITHOUT running a single check: so that an incremental run can be
// measured on a ledger too large for a full run in the time at hand
// (100 million postings). For benchmarks only; the ledger must have been
// built clean (benchledger). Returns false when a clean run exists.
func StandInCleanRun(tb testing.TB, db *sqlx.DB) bool {
	tb.Helper()
	ctx := context.Background()
	var clean bool
	if err := db.Get(&clean, `SELECT EXISTS (SELECT 1 FROM verify_runs WHERE breaches = 0)`); err != nil || clean {
		if err != nil {
			tb.Fatal(err)
		}
		return false
	}
	start := time.Now()
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	tx.MustExec(`SET LOCAL work_mem = '64MB'`)
	var snap string
	var last time.Time
	if err := tx.QueryRowx(`SELECT pg_current_snapshot()::text, (SELECT max(month) FROM closed_periods)`).Scan(&snap, &last); err != nil {
		tb.Fatal(err)
	}
	var seals []seal
	if err := tx.Select(&seals, sealsQuery, periods.MonthOf(last.UTC()).First().Format("2006-01-02")); err != nil {
		tb.Fatal(err)
	}
	var id int64
	if err := tx.Get(&id, `INSERT INTO verify_runs (mode, started_at, snapshot, last_closed, from_month, sets_checked, new_sets, months_sealed, breaches)
		VALUES ('full', now(), $1::pg_snapshot, $2, NULL, 0, 0, 0, 0) RETURNING id`, snap, last); err != nil {
		tb.Fatal(err)
	}
	for _, s := range seals {
		tx.MustExec(`INSERT INTO verify_month_seals (month, sets, postings, digest, run_id) VALUES ($1, $2, $3, $4, $5)`,
			s.Month, s.Sets, s.Postings, s.Digest, id)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("verify bench: a stand-in clean run %d (NOT a verification: %d months sealed by sealsQuery) recorded in %v",
		id, len(seals), time.Since(start).Round(time.Millisecond))
	return true
}
