package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/partners"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// The service's role, from docs/razao-role.sql, can run the business but
// has no right to rewrite the ledger: the database says no before any
// trigger is asked.
func TestServiceRoleCannotUpdateOrDeleteLedger(t *testing.T) {
	t.Parallel()
	owner, ownerURL := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, ownerURL)
	svc := r.Connect(r.Service())

	// The business path works as the service role.
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(svc, cal)
	sale, _ := postings.Sale("c1", "BRL", 4990, 0, time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC))
	if _, err := l.Post(context.Background(), sale); err != nil {
		t.Fatalf("post as service role: %v", err)
	}
	comm, _, _ := postings.CommissionSet("c1", "p1", "BRL", 4990, 1000, time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC))
	if _, err := l.Post(context.Background(), comm); err != nil {
		t.Fatalf("post with a new partner account as service role: %v", err)
	}
	if _, err := partners.Payout(context.Background(), svc, l, partners.PayoutRequest{Partner: "p1", IdempotencyKey: "po-1",
		Amount: 100, At: time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatalf("payout as service role: %v", err)
	}
	if err := periods.Close(context.Background(), svc, l.Calendar(), periods.Month{Year: 2026, Month: 8}, time.Date(2026, 9, 2, 0, 0, 0, 0, time.UTC), "", monthsums.Closing); err != nil {
		t.Fatalf("close a month as service role: %v", err)
	}
	// Rewriting the ledger does not.
	for _, stmt := range []string{
		`UPDATE postings SET amount = amount + 1`,
		`DELETE FROM postings`,
		`UPDATE posting_sets SET amount = 1`,
		`DELETE FROM posting_sets`,
		`TRUNCATE postings`,
		`DELETE FROM closed_periods`,
		`UPDATE accounts SET code = 'x'`,
	} {
		_, err := svc.Exec(stmt)
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
			t.Errorf("%s: got %v, want permission denied (42501)", stmt, err)
		}
	}
}

// Every table the migrations create is one the service role has some
// right on, given by docs/razao-role.sql: a table added without its grant
// leaves the service failing with "permission denied" where it is used
// (without inbox_bodies', every callback of several events; without
// refund_aliases' or the reconciliation tables', every reconciliation
// run). A partition (of posting_sets and postings, sql/0056) is read and
// written through its parent: it has no grant of its own.
func TestRoleDocumentGrantsEveryTable(t *testing.T) {
	t.Parallel()
	owner, ownerURL := pgtest.NewWithURL(t)
	r := pgtest.NewRoles(t, owner, ownerURL)
	role := r.Service()
	var bare []string
	if err := owner.Select(&bare, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND NOT has_table_privilege($1, c.oid, 'SELECT, INSERT, UPDATE, DELETE')
		ORDER BY 1`, role); err != nil {
		t.Fatal(err)
	}
	if len(bare) > 0 {
		t.Errorf("docs/razao-role.sql grants the service role nothing on %v", bare)
	}
}
