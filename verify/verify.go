// Package verify re-checks the whole ledger and says what it found, as
// one Report: the ledger's invariants as plain SQL, independent of the Go
// that writes the ledger and of the triggers that guard it (ledger.go);
// closed months against the clock and each other; the database's own
// barriers, its functions against their files in sql/functions and its
// triggers against the schema the migrations build (schema.go); and each
// closed month's snapshot against its postings. `razao verify` prints the
// report, for a person or, with -json, for a machine.
package verify

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
)

// Run runs every check over the whole ledger in one repeatable-read
// snapshot, so the checks agree with each other (a full run), and records
// it (record). An error means a check could not run; a breach is in the
// Report.
func Run(ctx context.Context, db *sqlx.DB) (Report, error) {
	return runMode(ctx, db, false)
}

// RunIncremental checks what a full run does, but the sets one by one
// only in the months that were open at the last clean run recorded (and
// the charges those sets name), and every month closed before them
// against its seal (seals.go); the checks that need every posting are
// left to a full run and named in the report (scope.go). With no clean
// run recorded it runs in full.
func RunIncremental(ctx context.Context, db *sqlx.DB) (Report, error) {
	return runMode(ctx, db, true)
}

func runMode(ctx context.Context, db *sqlx.DB, incremental bool) (Report, error) {
	want, err := embeddedSchema()
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	started := time.Now()
	r, rec, err := runChecks(ctx, db, want, incremental)
	if err != nil {
		return Report{}, err
	}
	if err := record(ctx, db, &r, rec, started); err != nil {
		return Report{}, err
	}
	return r, nil
}

// recording is what a run leaves for record: the snapshot it read, and
// the seals to store if it is clean.
type recording struct {
	snapshot   string
	lastClosed *periods.Month
	fresh      []seal
}

// run is a full run against want, not recorded.
func run(ctx context.Context, db *sqlx.DB, want wantSchema) (Report, error) {
	r, _, err := runChecks(ctx, db, want, false)
	return r, err
}

func runChecks(ctx context.Context, db *sqlx.DB, want wantSchema, incremental bool) (Report, recording, error) {
	var rec recording
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return Report{}, rec, fmt.Errorf("verify: begin: %w", err)
	}
	defer tx.Rollback()
	// The checks hash and group the whole ledger; with the default 4 MB
	// they spill to disk. One session, for the length of verify.
	if _, err := tx.ExecContext(ctx, `SET LOCAL work_mem = '64MB'`); err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	schema, err := ledgerSchema(ctx, tx)
	if err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	// pg_catalog first, so that verify's own queries resolve names to the
	// system's functions and operators before anything in the ledger's
	// schema, and pg_temp last, so no temporary table shadows a ledger
	// table. (A closer-typed operator in the schema would still win: the
	// queries compare exactly typed values, and the schema check names any
	// such object.)
	if _, err := tx.ExecContext(ctx, `SELECT set_config('search_path', 'pg_catalog, ' || quote_ident($1) || ', pg_temp', true)`, schema); err != nil {
		return Report{}, rec, fmt.Errorf("verify: set search_path: %w", err)
	}
	r := Report{Mode: ModeFull}
	// A row-level security policy could hide rows from every check: with
	// row_security off, a query a policy would filter fails instead of
	// answering for fewer rows, and the tables with it on are named first.
	if _, err := tx.ExecContext(ctx, `SET LOCAL row_security = off`); err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	rls, err := runSQLChecks(ctx, tx, []sqlCheck{rowSecurityCheck(schema)})
	if err != nil {
		return Report{}, rec, err
	}
	r.Checks = append(r.Checks, rls...)
	if !r.OK() {
		return r, rec, nil // the other checks would read what a policy lets them
	}
	// The snapshot every check reads (repeatable read: the transaction's
	// own), and the last closed month in it: the next incremental run
	// starts after it.
	var last sql.NullTime
	if err := tx.QueryRowxContext(ctx, `SELECT pg_current_snapshot()::text, (SELECT max(month) FROM closed_periods)`).Scan(&rec.snapshot, &last); err != nil {
		return Report{}, rec, fmt.Errorf("verify: read the snapshot: %w", err)
	}
	if last.Valid {
		m := periods.MonthOf(last.Time.UTC())
		rec.lastClosed = &m
	}
	w, prev, err := startingPoint(ctx, tx, incremental)
	if err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	if !w.full {
		r.Mode, r.Since, r.From = ModeIncremental, prev.id, w.from.String()
	}
	if err := countScope(ctx, tx, w, prev, &r); err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	var checks []sqlCheck
	for _, c := range append(append(ledgerChecks(), periodChecks()...), elsewhereCheck(schema)) {
		switch {
		case c.scope == fullOnly && !w.full:
			r.FullOnly = append(r.FullOnly, c.name)
		case c.scope == perSet:
			checks = append(checks, w.in(c))
		default:
			checks = append(checks, c)
		}
	}
	sqlChecks, err := runSQLChecks(ctx, tx, checks)
	if err != nil {
		return Report{}, rec, err
	}
	r.Checks = append(r.Checks, sqlChecks...)
	functions, triggers, foreign, err := schemaChecks(ctx, tx, want, schema)
	if err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	r.Checks = append(r.Checks, listCheck("every ledger function has the body and search_path the migrations define", functions),
		listCheck("every ledger trigger exists, is enabled as the migrations say, and is defined as they define it", triggers),
		listCheck("the ledger's schema holds no function or operator that no migration defines", foreign))
	seals, err := checkSeals(ctx, tx, rec.lastClosed, w)
	if err != nil {
		return Report{}, rec, fmt.Errorf("verify: %w", err)
	}
	r.MonthsSealed, rec.fresh = seals.checked, seals.fresh
	r.Checks = append(r.Checks, listCheck("every closed month's sets, postings and snapshot are those a clean run sealed", seals.breaches))
	snapshots, err := snapshotCheck(ctx, tx, w)
	if err != nil && r.OK() {
		return Report{}, rec, err
	}
	r.Checks = append(r.Checks, snapshots)
	sums, err := monthSumsCheck(ctx, tx, w)
	if err != nil && r.OK() {
		return Report{}, rec, err
	}
	r.Checks = append(r.Checks, sums)
	return r, rec, nil
}

// monthSumsCheck compares the month sums the reports read with the
// postings (CheckMonthSums), as snapshotCheck does snapshots.
func monthSumsCheck(ctx context.Context, tx *sqlx.Tx, w window) (Check, error) {
	return mismatchCheck(ctx, tx, "month sums equal their postings", "read",
		func(ctx context.Context, q sqlx.QueryerContext) ([]Mismatch, error) { return checkMonthSums(ctx, q, w) })
}

// snapshotCheck compares every closed month's snapshot with its postings
// (CheckSnapshots).
func snapshotCheck(ctx context.Context, tx *sqlx.Tx, w window) (Check, error) {
	return mismatchCheck(ctx, tx, "closed months' snapshots equal their postings", "snapshot",
		func(ctx context.Context, q sqlx.QueryerContext) ([]Mismatch, error) {
			var out []Mismatch
			err := read(ctx, q, func(q sqlx.QueryerContext) error {
				var err error
				out, err = checkSnapshots(ctx, q, w)
				return err
			})
			return out, err
		})
}

// mismatchCheck runs a comparison of stored figures with the postings as
// the check name, each mismatch a breach. A breached ledger (a sum beyond
// int64, say) can stop the comparison itself: that is a breach of the
// check, and the error is returned beside it so that a clean ledger does
// not hide it. stored names the figure compared with the ledger's.
func mismatchCheck(ctx context.Context, tx *sqlx.Tx, name, stored string,
	compare func(context.Context, sqlx.QueryerContext) ([]Mismatch, error)) (Check, error) {
	check := Check{Name: name}
	mismatches, err := compare(ctx, tx)
	if err != nil {
		check.Breaches = 1
		check.Examples = []string{fmt.Sprintf("could not compare: %v", err)}
	}
	for _, m := range mismatches {
		check.Breaches++
		if len(check.Examples) < maxExamples {
			check.Examples = append(check.Examples, fmt.Sprintf("%s %s: %s %d, ledger %d", m.Month, m.What, stored, m.Snapshot, m.Ledger))
		}
	}
	return check, err
}

// runSQLChecks runs each check's query, counting every breach and keeping
// the first maxExamples lines.
func runSQLChecks(ctx context.Context, tx *sqlx.Tx, checks []sqlCheck) ([]Check, error) {
	var out []Check
	for _, c := range checks {
		var rows []struct {
			Line  string `db:"line"`
			Total int64  `db:"total"`
		}
		// The window counts every breach before LIMIT keeps the first few.
		q := `SELECT b.line, count(*) OVER () AS total FROM (` + c.query + `) AS b (line) LIMIT ` + fmt.Sprint(maxExamples)
		if err := tx.SelectContext(ctx, &rows, q, c.args...); err != nil {
			return nil, fmt.Errorf("verify %q: %w", c.name, err)
		}
		check := Check{Name: c.name}
		for _, row := range rows {
			check.Breaches = row.Total
			check.Examples = append(check.Examples, row.Line)
		}
		out = append(out, check)
	}
	return out, nil
}
