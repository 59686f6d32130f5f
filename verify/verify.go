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

	"github.com/jmoiron/sqlx"
)

// Run runs every check over the whole ledger in one repeatable-read
// snapshot, so the checks agree with each other. An error means a check
// could not run; a breach is in the Report.
func Run(ctx context.Context, db *sqlx.DB) (Report, error) {
	want, err := embeddedSchema()
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	return run(ctx, db, want)
}

func run(ctx context.Context, db *sqlx.DB, want wantSchema) (Report, error) {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return Report{}, fmt.Errorf("verify: begin: %w", err)
	}
	defer tx.Rollback()
	// The checks hash and group the whole ledger; with the default 4 MB
	// they spill to disk. One session, for the length of verify.
	if _, err := tx.ExecContext(ctx, `SET LOCAL work_mem = '64MB'`); err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	schema, err := ledgerSchema(ctx, tx)
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	// pg_catalog first, so that verify's own queries resolve names to the
	// system's functions and operators before anything in the ledger's
	// schema, and pg_temp last, so no temporary table shadows a ledger
	// table. (A closer-typed operator in the schema would still win: the
	// queries compare exactly typed values, and the schema check names any
	// such object.)
	if _, err := tx.ExecContext(ctx, `SELECT set_config('search_path', 'pg_catalog, ' || quote_ident($1) || ', pg_temp', true)`, schema); err != nil {
		return Report{}, fmt.Errorf("verify: set search_path: %w", err)
	}
	var r Report
	// A row-level security policy could hide rows from every check: with
	// row_security off, a query a policy would filter fails instead of
	// answering for fewer rows, and the tables with it on are named first.
	if _, err := tx.ExecContext(ctx, `SET LOCAL row_security = off`); err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	rls, err := runSQLChecks(ctx, tx, []sqlCheck{rowSecurityCheck(schema)})
	if err != nil {
		return Report{}, err
	}
	r.Checks = append(r.Checks, rls...)
	if !r.OK() {
		return r, nil // the other checks would read what a policy lets them
	}
	if err := tx.QueryRowxContext(ctx, `SELECT (SELECT count(*) FROM posting_sets), (SELECT count(*) FROM postings)`).Scan(&r.Sets, &r.Postings); err != nil {
		return Report{}, fmt.Errorf("verify: count: %w", err)
	}
	sqlChecks, err := runSQLChecks(ctx, tx, append(append(ledgerChecks(), periodChecks()...), elsewhereCheck(schema)))
	if err != nil {
		return Report{}, err
	}
	r.Checks = append(r.Checks, sqlChecks...)
	functions, triggers, foreign, err := schemaChecks(ctx, tx, want, schema)
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	r.Checks = append(r.Checks, listCheck("every ledger function has the body and search_path the migrations define", functions),
		listCheck("every ledger trigger exists, is enabled as the migrations say, and is defined as they define it", triggers),
		listCheck("the ledger's schema holds no function or operator that no migration defines", foreign))
	snapshots, err := snapshotCheck(ctx, tx)
	if err != nil && r.OK() {
		return Report{}, err
	}
	r.Checks = append(r.Checks, snapshots)
	sums, err := monthSumsCheck(ctx, tx)
	if err != nil && r.OK() {
		return Report{}, err
	}
	r.Checks = append(r.Checks, sums)
	return r, nil
}

// monthSumsCheck compares the month sums the reports read with the
// postings (CheckMonthSums), as snapshotCheck does snapshots.
func monthSumsCheck(ctx context.Context, tx *sqlx.Tx) (Check, error) {
	return mismatchCheck(ctx, tx, "month sums equal their postings", "read", CheckMonthSums)
}

// snapshotCheck compares every closed month's snapshot with its postings
// (CheckSnapshots).
func snapshotCheck(ctx context.Context, tx *sqlx.Tx) (Check, error) {
	return mismatchCheck(ctx, tx, "closed months' snapshots equal their postings", "snapshot", CheckSnapshots)
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
