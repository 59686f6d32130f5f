package main

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/verify"
)

// postAs books a sale of amount in August 2026 as db's role.
func postAs(t *testing.T, db *sqlx.DB, charge string, amount int64) {
	t.Helper()
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	sale, err := postings.Sale(charge, "BRL", amount, 0, time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := postings.New(db, cal).Post(context.Background(), sale); err != nil {
		t.Fatal(err)
	}
}

// monthSumsAgree fails the test unless the stored month sums are the
// postings' own figures.
func monthSumsAgree(t *testing.T, owner *sqlx.DB, what string) {
	t.Helper()
	bad, err := verify.CheckMonthSums(context.Background(), owner)
	if err != nil || len(bad) != 0 {
		t.Fatalf("%s: month sums against the postings: %v, %+v", what, err, bad)
	}
}

// The service role of docs/razao-role.sql may not write the month sums
// (the reports' cache) itself: a forged sum would be read by every report
// of an open month. It refreshes them through month_sums_refresh, which
// computes them from the postings as the owner.
func TestServiceRoleWritesMonthSumsOnlyThroughTheRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, ownerURL := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, ownerURL)
	svc := r.Connect(r.Service())
	postAs(t, svc, "c1", 10000)
	if n, err := monthsums.Refresh(ctx, svc); err != nil || n != 1 {
		t.Fatalf("refresh as the service role: %d months, %v; want August", n, err)
	}
	monthSumsAgree(t, owner, "first refresh")
	postAs(t, svc, "c2", 2500)
	if n, err := monthsums.Refresh(ctx, svc); err != nil || n != 1 {
		t.Fatalf("refresh after a new sale: %d months, %v; want August", n, err)
	}
	monthSumsAgree(t, owner, "refreshed with a new sale")
	var stored int
	if err := owner.Get(&stored, `SELECT count(*) FROM month_sum_lines WHERE month = '2026-08-01'`); err != nil || stored == 0 {
		t.Fatalf("August's stored lines: %d, %v", stored, err)
	}

	for _, stmt := range []string{
		`INSERT INTO month_sums (month, snapshot) VALUES ('2026-09-01', pg_current_snapshot())`,
		`UPDATE month_sums SET computed_at = now()`,
		`DELETE FROM month_sums`,
		`TRUNCATE month_sums`,
		`INSERT INTO month_sum_lines (month, account_id, kind, debits, credits, sets) VALUES ('2026-08-01', 0, 'sale', 1, 0, 1)`,
		`UPDATE month_sum_lines SET debits = debits + 1`,
		`DELETE FROM month_sum_lines`,
		`TRUNCATE month_sum_lines`,
		`SELECT 1 FROM month_sums FOR UPDATE`,
	} {
		_, err := svc.Exec(stmt)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
			t.Errorf("%s: got %v, want permission denied (42501)", stmt, err)
		}
	}
	monthSumsAgree(t, owner, "after the refused writes")
}

// The refresh cannot be steered by the session that calls it: temporary
// tables named month_sums and month_sum_lines (pg_temp is searched first
// by default, and the service role may create temporary tables) neither
// take its rows nor lend it their forged lines, since the function
// resolves names with pg_temp last; and it refuses to run outside
// REPEATABLE READ, where its sums and the snapshot it stores with them
// would be of different moments (a set committed in between would be
// counted as summed and never summed).
func TestTempMonthSumsCannotDivertTheRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, ownerURL := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, ownerURL)
	svc := r.Connect(r.Service())
	postAs(t, svc, "c1", 10000)
	if _, err := monthsums.Refresh(ctx, svc); err != nil {
		t.Fatal(err)
	}
	postAs(t, svc, "c2", 2500) // the next refresh adds it to the stored lines

	conn, err := svc.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{
		`CREATE TEMP TABLE month_sums (LIKE public.month_sums INCLUDING ALL)`,
		`CREATE TEMP TABLE month_sum_lines (LIKE public.month_sum_lines INCLUDING ALL)`,
		// Stored sums "of now" with forged lines: read as the month's, they
		// would stand for every set of August.
		`INSERT INTO month_sums (month, snapshot) VALUES ('2026-08-01', pg_current_snapshot())`,
		`INSERT INTO month_sum_lines (month, account_id, kind, debits, credits, sets)
			SELECT '2026-08-01', id, 'sale', 999999, 0, 0 FROM public.accounts`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	var forged string
	if err := conn.GetContext(ctx, &forged, `SELECT snapshot::text || ' ' || computed_at::text FROM pg_temp.month_sums`); err != nil {
		t.Fatal(err)
	}

	var pqErr *pq.Error
	if _, err := conn.ExecContext(ctx, `SELECT month_sums_refresh('2026-08-01')`); !errors.As(err, &pqErr) || pqErr.Code != "25000" {
		t.Fatalf("refresh at READ COMMITTED: %v, want it refused (25000)", err)
	}
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var outcome string
	if err := tx.GetContext(ctx, &outcome, `SELECT month_sums_refresh('2026-08-01')`); err != nil {
		t.Fatalf("refresh as the service role, with temporary tables named like the sums': %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if outcome != "stored" {
		t.Fatalf("refresh: %q, want stored", outcome)
	}
	// The refresh reached the month's own sums: they now cover c2 too.
	var unsummed int
	if err := owner.Get(&unsummed, `SELECT count(*) FROM posting_sets s JOIN month_sums m ON m.month = s.competence_month
		WHERE NOT pg_visible_in_snapshot(s.created_xid, m.snapshot)`); err != nil {
		t.Fatal(err)
	}
	if unsummed != 0 {
		t.Fatalf("%d sets of August outside its stored sums after the refresh: it wrote elsewhere", unsummed)
	}
	monthSumsAgree(t, owner, "refreshed beside the temporary tables")
	var shadow struct {
		Sums  string `db:"sums"`
		Lines int    `db:"lines"`
		All   int    `db:"all_lines"`
	}
	if err := conn.GetContext(ctx, &shadow, `SELECT (SELECT snapshot::text || ' ' || computed_at::text FROM pg_temp.month_sums) AS sums,
		(SELECT count(*) FROM pg_temp.month_sum_lines WHERE debits = 999999) AS lines,
		(SELECT count(*) FROM pg_temp.month_sum_lines) AS all_lines`); err != nil {
		t.Fatal(err)
	}
	var accounts int
	if err := owner.Get(&accounts, `SELECT count(*) FROM accounts`); err != nil {
		t.Fatal(err)
	}
	if shadow.Sums != forged || shadow.Lines != accounts || shadow.All != accounts {
		t.Fatalf("the temporary tables changed: month_sums %q (was %q), %d lines of which %d forged (were %d, all forged)",
			shadow.Sums, forged, shadow.All, shadow.Lines, accounts)
	}
}
